//! Stand-ins for the host's interfaces outside the sandbox. Every `wasmgate:plugin/*` import
//! resolves here, so each interface's functions are exported under their WIT names.

/** Lines logged, as `[level, message]`. */
export const logged = [];

export function log(level, message) {
  logged.push([level, message]);
}

export function countTokens(text) {
  return Math.ceil(new TextEncoder().encode(text).length / 4);
}

/** Counters by `period:key`; they never reset (a test controls time by the keys it uses). */
export const counters = new Map();

export function add(key, period, delta) {
  const k = `${period}:${key}`;
  const value = (counters.get(k) ?? 0n) + BigInt(delta);
  counters.set(k, value);
  return { value, resetsInMs: period === 'total' ? 0n : 60000n };
}

export function get(key, period) {
  return add(key, period, 0n);
}
