// {{name}}: a wasmgate router. Premium users get the targets in config order, everyone else the
// healthy targets from the cheapest input price up.
import { o } from 'wasmgate-plugin/options';
import { defineRouter, healthy, rank } from 'wasmgate-plugin/router';

export const router = defineRouter({
  options: o.object({ premium_tag: o.optional(o.string(), 'premium') }),
  route(options, request, targets) {
    if (request.userTags.includes(options.premium_tag)) return healthy(targets).map(([i]) => i);
    return rank(targets, (t) => t.inputPrice);
  },
});
