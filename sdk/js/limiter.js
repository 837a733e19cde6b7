//! Limiter plugins: admit or refuse a request before it is forwarded, settle it afterwards.
//!
//! ```js
//! import { o } from 'wasmgate-plugin/options';
//! import { allow, defineLimiter, deny, Exceeded, Reservation } from 'wasmgate-plugin/limiter';
//!
//! export const limiter = defineLimiter({
//!   options: o.object({ per_minute: o.integer({ min: 1 }) }),
//!   check(options, request) {
//!     try {
//!       new Reservation().add(`req:${request.scopeKey}`, 'minute', 1, options.per_minute);
//!     } catch (over) {
//!       if (over instanceof Exceeded) return deny(`${options.per_minute} requests a minute`, over.resetsInMs);
//!       throw over;
//!     }
//!     return allow();
//!   },
//! });
//! ```
//!
//! A request is `{ scopeKey, project, apiKeyId?, userId?, model, estimatedInputTokens,
//! maxOutputTokens?, estimatedCostMicros? }` and a settlement `{ inputTokens, outputTokens,
//! costMicros?, succeeded }`, all counts as numbers. A limiter keeps no state of its own: what
//! outlives a call goes in the host's counters (`add`, `get`), atomic across requests and
//! replicas, in UTC windows: `'minute'`, `'hour'`, `'day'`, `'month'`, `'total'`.

import * as counters from 'wasmgate:plugin/counters@0.1.0';
import { NoOptions, optionsCache } from './options.js';
import { checkOptions } from './_export.js';

export { ConfigError } from './options.js';
export { countTokens, log } from './host.js';

const num = (v) => (v === undefined ? undefined : Number(v));

/**
 * The `limiter` export of a component: `export const limiter = defineLimiter({...})`.
 * @param {{ options?: Function, validate?: (options: any) => void,
 *           check: (options: any, request: object) => object,
 *           settle?: (options: any, request: object, usage: object) => void }} plugin
 */
export function defineLimiter(plugin) {
  const schema = plugin.options ?? NoOptions;
  // Options the config accepted cannot fail here; if they do, the call traps and the host
  // refuses the request as a failed limiter.
  const options = optionsCache(schema);
  const request = (r) => ({ ...r, estimatedCostMicros: num(r.estimatedCostMicros) });
  return {
    validate(text) {
      checkOptions(text, schema, (parsed) => plugin.validate?.(parsed));
    },
    check(text, r) {
      return plugin.check(options(text), request(r));
    },
    settle(text, r, usage) {
      const settled = {
        inputTokens: Number(usage.inputTokens),
        outputTokens: Number(usage.outputTokens),
        costMicros: num(usage.costMicros),
        succeeded: usage.succeeded,
      };
      plugin.settle?.(options(text), request(r), settled);
    },
  };
}

/** Lets the request through, with these `x-ratelimit-*` headers (`[name, value]`) on its response. */
export function allow(headers = []) {
  return { tag: 'allow', val: headers };
}

/**
 * Refuses the request with a 429 carrying `message` and `Retry-After`. `code` is
 * `'rate-limit-exceeded'` (default) or `'insufficient-quota'` for a spent budget.
 */
export function deny(message, retryAfterMs, { code = 'rate-limit-exceeded', headers = [] } = {}) {
  return {
    tag: 'deny',
    val: { code, message: String(message), retryAfterMs: BigInt(Math.max(0, Math.ceil(retryAfterMs))), headers },
  };
}

// ComponentizeJS (0.19 to 0.23) traps when a component passes a negative `s64` to an import
// (bytecodealliance/ComponentizeJS#343), so `counters.add(key, period, -n)` cannot be sent. A key's
// subtractions go to a second counter instead, and its value is the difference of the two: one
// more host call per update, and a value read while another request's subtraction lands between
// the two calls may be that subtraction low (never high).
const MINUS = 'minus\u0000';

/** Adds `delta` (may be negative) to the counter `key` in the current window of `period`,
 * atomically; returns `{ value, resetsInMs }`. */
export function add(key, period, delta) {
  const amount = BigInt(Math.trunc(delta));
  if (amount >= 0n) {
    const plus = counters.add(key, period, amount);
    const minus = counters.get(MINUS + key, period);
    return { value: Number(plus.value - minus.value), resetsInMs: Number(plus.resetsInMs) };
  }
  const minus = counters.add(MINUS + key, period, -amount);
  const plus = counters.get(key, period);
  return { value: Number(plus.value - minus.value), resetsInMs: Number(minus.resetsInMs) };
}

/** Reads the counter `key` in the current window of `period`. */
export function get(key, period) {
  const plus = counters.get(key, period);
  const minus = counters.get(MINUS + key, period);
  return { value: Number(plus.value - minus.value), resetsInMs: Number(plus.resetsInMs) };
}

/** `add`, but a negative `delta` takes the counter down to 0 at most: a reservation whose window
 * ended before it settled is not given back twice. */
export function adjust(key, period, delta) {
  const c = add(key, period, delta);
  if (delta >= 0 || c.value >= 0) return c;
  return add(key, period, Math.min(-c.value, -delta));
}

/** A `Reservation.add` that would have gone over its limit (and was taken back). */
export class Exceeded extends Error {
  constructor(used, requested, resetsInMs) {
    super(`${used} used, ${requested} requested`);
    this.used = used;
    this.requested = requested;
    this.resetsInMs = resetsInMs;
  }
}

/** Additions to several counters that stand or fall together: a refused request leaves no trace. */
export class Reservation {
  #added = [];

  /** Adds `delta` to `key` if the result stays within `limit` and returns the counter; else takes
   * everything back and throws `Exceeded`. */
  add(key, period, delta, limit) {
    const c = add(key, period, delta);
    const used = c.value - delta;
    if (c.value > limit || used >= limit) {
      if (delta) add(key, period, -delta);
      this.undo();
      throw new Exceeded(used, delta, c.resetsInMs);
    }
    if (delta) this.#added.push([key, period, delta]);
    return c;
  }

  /** Takes back every addition made so far. */
  undo() {
    for (const [key, period, delta] of this.#added.splice(0).reverse()) add(key, period, -delta);
  }
}

/** `ms` as OpenAI's `x-ratelimit-reset-*` headers write it: `12ms`, `1.5s`, `6m0s`, `1h0m0s`. */
export function resetHeader(ms) {
  if (ms <= 0) return '0s';
  if (ms < 1000) return `${ms}ms`;
  const [h, m, s, milli] = [Math.floor(ms / 3600000), Math.floor(ms / 60000) % 60, Math.floor(ms / 1000) % 60, ms % 1000];
  const secs = milli === 0 ? `${s}` : `${s}.${String(milli).padStart(3, '0').replace(/0+$/, '')}`;
  if (h) return `${h}h${m}m${secs}s`;
  if (m) return `${m}m${secs}s`;
  return `${secs}s`;
}

/** OpenAI's `x-ratelimit-limit-<kind>`, `-remaining-` and `-reset-` headers. */
export function ratelimitHeaders(kind, limit, remaining, resetsInMs) {
  const headers = [
    [`x-ratelimit-limit-${kind}`, String(limit)],
    [`x-ratelimit-remaining-${kind}`, String(Math.max(0, remaining))],
  ];
  if (resetsInMs !== undefined) headers.push([`x-ratelimit-reset-${kind}`, resetHeader(resetsInMs)]);
  return headers;
}

/** A limit request for unit tests: `request({ userId: 'u1' })`. */
export function request(facts = {}) {
  return {
    scopeKey: 'global', project: 'default', apiKeyId: undefined, userId: undefined, model: 'm',
    estimatedInputTokens: 0, maxOutputTokens: undefined, estimatedCostMicros: undefined, ...facts,
  };
}

/** A settlement for unit tests, as the host passes it (counts as bigints). */
export function settlement({ inputTokens = 0, outputTokens = 0, succeeded = true, costMicros } = {}) {
  return {
    inputTokens: BigInt(inputTokens), outputTokens: BigInt(outputTokens),
    costMicros: costMicros === undefined ? undefined : BigInt(costMicros), succeeded,
  };
}
