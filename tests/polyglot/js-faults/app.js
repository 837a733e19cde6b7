// A router that misbehaves on demand (request metadata `fault`): `trap` throws an uncaught error,
// `loop` never returns, `grab` allocates without end. Otherwise: config order.
import { defineRouter } from 'wasmgate-plugin/router';

export const router = defineRouter({
  route(options, request, targets) {
    const fault = new Map(request.metadata).get('fault');
    if (fault === 'trap') throw new Error('a bug in the plugin');
    if (fault === 'loop') for (;;);
    if (fault === 'grab') {
      const hoard = [];
      for (;;) hoard.push(new Uint8Array(1 << 20).fill(1));
    }
    return targets.map((_, i) => i);
  },
});
