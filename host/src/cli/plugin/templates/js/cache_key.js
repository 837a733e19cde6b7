// {{name}}: a wasmgate cache-key policy. Requests to the models in `never` are not cached; the
// others are keyed without their `temperature` when it is 0 (0 and absent answer alike).
import { o } from 'wasmgate-plugin/options';
import { bypass, defineCacheKey, keep, replace } from 'wasmgate-plugin/cache_key';

export const cacheKey = defineCacheKey({
  options: o.object({ never: o.optional(o.list(o.string()), []) }),
  key(options, request) {
    if (options.never.includes(request.model)) return bypass();
    if (request.fields.temperature === 0) {
      const { temperature, ...fields } = request.fields;
      return replace(fields);
    }
    return keep();
  },
});
