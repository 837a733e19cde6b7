//! How a plugin's errors cross into the component: an export returning `result<_, E>` fails by
//! throwing, and the bindings take the thrown value's `payload` as the `E`. And what every kind's
//! `validate` does with its options text.

import { ConfigError, parseOptions } from './options.js';

/** An error whose `payload` is the WIT error value. */
export function witError(payload) {
  const err = new Error(typeof payload === 'string' ? payload : payload.message);
  err.payload = payload;
  return err;
}

/** The WIT `config-error` for a `ConfigError`. */
export function configErrorPayload(err) {
  return { key: err.key ?? undefined, message: err.message };
}

/** What an unexpected failure is thrown as. componentize-js turns a thrown value into the `E` of a
 * `result` export, so an Error with no `payload` is what makes it trap (failing only this call,
 * as a plugin bug should) rather than pass a bug's text to the client. SpiderMonkey throws
 * out-of-memory as the bare string "out of memory", which is wrapped here for the same reason. */
export function asTrap(err) {
  if (err instanceof Error && err.payload === undefined) return err;
  return new Error(typeof err === 'string' ? err : 'the plugin failed');
}

/**
 * `check`'s answer on `text` read with `schema`: what every kind's `validate` export does. A
 * `ConfigError` (from the reading or from `check`) becomes the WIT `config-error`; anything else
 * traps. The options are read first, so a plugin without a `validate` still has them checked.
 */
export function checkOptions(text, schema, check) {
  try {
    return check(parseOptions(text, schema));
  } catch (err) {
    if (err instanceof ConfigError) throw witError(configErrorPayload(err));
    throw asTrap(err);
  }
}
