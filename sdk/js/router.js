//! Router plugins: order the targets of a virtual model.
//!
//! ```js
//! import { o } from 'wasmgate-plugin/options';
//! import { defineRouter, healthy, RouteError } from 'wasmgate-plugin/router';
//!
//! export const router = defineRouter({
//!   options: o.object({ tag: o.string() }),
//!   route(options, request, targets) {
//!     if (!request.userTags.includes(options.tag)) throw new RouteError('not for you');
//!     return healthy(targets).map(([i]) => i);
//!   },
//! });
//! ```
//!
//! A target is `{ id, provider, model, weight, inputPrice?, outputPrice?, inFlight, latencyMs?,
//! ttftMs?, tokensPerSecond?, errorRate, circuit: 'closed'|'open'|'half-open' }`; a request is
//! `{ model, project, userId?, userName?, userTags, estimatedInputTokens, stream, metadata:
//! [key, value][], random: bigint }`. The host keeps the statistics; the router only decides and
//! keeps no state (warm instances serve many calls).

import { ConfigError, NoOptions, optionsCache } from './options.js';
import { asTrap, checkOptions, witError } from './_export.js';

export { ConfigError } from './options.js';
export { countTokens, log } from './host.js';

/** Fails the request with a 400 carrying this message (e.g. no rule matched). */
export class RouteError extends Error {}

/**
 * The `router` export of a component: `export const router = defineRouter({...})`.
 * @param {{ options?: Function, validate?: (options: any, targets: string[]) => void,
 *           route: (options: any, request: object, targets: object[]) => number[] }} plugin
 */
export function defineRouter(plugin) {
  const schema = plugin.options ?? NoOptions;
  const options = optionsCache(schema);
  return {
    validate(text, targets) {
      checkOptions(text, schema, (parsed) => plugin.validate?.(parsed, targets));
    },
    route(text, request, targets) {
      let parsed;
      try {
        parsed = options(text);
      } catch (err) {
        if (err instanceof ConfigError) throw witError(`the router's options are invalid: ${err.message}`);
        throw asTrap(err);
      }
      try {
        return Uint32Array.from(plugin.route(parsed, request, targets));
      } catch (err) {
        if (err instanceof RouteError) throw witError(err.message);
        throw asTrap(err);
      }
    },
  };
}

/** The targets whose circuit is not open, as `[index, target]`, in config order. */
export function healthy(targets) {
  const out = [];
  targets.forEach((t, i) => t.circuit !== 'open' && out.push([i, t]));
  return out;
}

/** Moves the targets whose circuit is open after the others, keeping each group's order. */
export function openLast(order, targets) {
  const open = (i) => targets[i]?.circuit === 'open';
  return [...order.filter((i) => !open(i)), ...order.filter(open)];
}

/**
 * The healthy targets by ascending `measure` (ties in config order), those without one
 * (`undefined`/NaN) last (or first with `unmeasuredFirst`), then the open ones.
 */
export function rank(targets, measure, { unmeasuredFirst = false } = {}) {
  const measured = [];
  const unknown = [];
  for (const [i, t] of healthy(targets)) {
    const v = measure(t);
    if (v === undefined || v === null || Number.isNaN(v)) unknown.push(i);
    else measured.push([v, i]);
  }
  measured.sort((a, b) => a[0] - b[0]);
  const ranked = measured.map(([, i]) => i);
  const order = unmeasuredFirst ? [...unknown, ...ranked] : [...ranked, ...unknown];
  targets.forEach((t, i) => t.circuit === 'open' && order.push(i));
  return order;
}

/** An index into `weights` picked in proportion to its weight from the host's `request.random`
 * (a bigint); `undefined` when no weight is positive. */
export function weightedPick(weights, random) {
  const usable = weights.map((w) => (Number.isFinite(w) && w > 0 ? w : 0));
  const total = usable.reduce((a, b) => a + b, 0);
  if (!(total > 0 && Number.isFinite(total))) return undefined;
  const point = (Number(BigInt.asUintN(64, BigInt(random)) >> 11n) / 2 ** 53) * total;
  let sum = 0;
  let last;
  for (let i = 0; i < usable.length; i++) {
    if (usable[i] > 0) {
      sum += usable[i];
      last = i;
      if (point < sum) return i;
    }
  }
  return last;
}

/** A target for unit tests: `target('openai/gpt-4o', { latencyMs: 120 })`. */
export function target(id, facts = {}) {
  const [provider, ...model] = id.split('/');
  return {
    id, provider, model: model.join('/'), weight: 1, inputPrice: undefined, outputPrice: undefined,
    inFlight: 0, latencyMs: undefined, ttftMs: undefined, tokensPerSecond: undefined, errorRate: 0,
    circuit: 'closed', ...facts,
  };
}

/** A route request for unit tests: `request({ userTags: ['vip'] })`. */
export function request(facts = {}) {
  return {
    model: 'virtual', project: 'default', userId: undefined, userName: undefined, userTags: [],
    estimatedInputTokens: 0, stream: false, metadata: [], random: 0n, ...facts,
  };
}
