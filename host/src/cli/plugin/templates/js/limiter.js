// {{name}}: a wasmgate limiter. At most `per_minute` requests a minute per scope.
import { o } from 'wasmgate-plugin/options';
import { allow, defineLimiter, deny, Exceeded, ratelimitHeaders, Reservation } from 'wasmgate-plugin/limiter';

export const limiter = defineLimiter({
  options: o.object({ per_minute: o.integer({ min: 1 }) }),
  check(options, request) {
    let counter;
    try {
      counter = new Reservation().add(`req:${request.scopeKey}`, 'minute', 1, options.per_minute);
    } catch (over) {
      if (!(over instanceof Exceeded)) throw over;
      return deny(`${options.per_minute} requests a minute: try again shortly`, over.resetsInMs);
    }
    return allow(ratelimitHeaders('requests', options.per_minute, options.per_minute - counter.value, counter.resetsInMs));
  },
});
