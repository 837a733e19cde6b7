// js-limiter: a daily token quota per user, with a message that says when it comes back.
import { o } from 'wasmgate-plugin/options';
import { adjust, allow, defineLimiter, deny, Exceeded, ratelimitHeaders, Reservation } from 'wasmgate-plugin/limiter';

const key = (request) => `tokens:${request.userId ?? request.scopeKey}`;
// What `check` reserves: the prompt and the output cap (or a default), counted again in `settle`.
const estimate = (request) => request.estimatedInputTokens + (request.maxOutputTokens ?? 1000);

export const limiter = defineLimiter({
  options: o.object({ daily_tokens: o.integer({ min: 1 }) }),
  check(options, request) {
    let counter;
    try {
      counter = new Reservation().add(key(request), 'day', estimate(request), options.daily_tokens);
    } catch (over) {
      if (!(over instanceof Exceeded)) throw over;
      const hours = Math.ceil(over.resetsInMs / 3600000);
      return deny(
        `You have used ${over.used} of your ${options.daily_tokens} tokens for today. ` +
          `Your quota comes back at midnight UTC, in about ${hours} hour${hours === 1 ? '' : 's'}.`,
        over.resetsInMs,
        { code: 'insufficient-quota' },
      );
    }
    return allow(ratelimitHeaders('tokens', options.daily_tokens, options.daily_tokens - counter.value, counter.resetsInMs));
  },
  settle(options, request, usage) {
    const used = usage.succeeded ? usage.inputTokens + usage.outputTokens : 0;
    adjust(key(request), 'day', used - estimate(request));
  },
});
