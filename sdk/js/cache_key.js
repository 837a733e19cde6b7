//! Cache-key policy plugins: the operator's say in what goes into the response cache's key.
//!
//! ```js
//! import { o } from 'wasmgate-plugin/options';
//! import { bypass, defineCacheKey, keep } from 'wasmgate-plugin/cache_key';
//!
//! export const cacheKey = defineCacheKey({
//!   options: o.object({ never: o.list(o.string()) }),
//!   key(options, request) {
//!     return options.never.includes(request.model) ? bypass() : keep();
//!   },
//! });
//! ```
//!
//! A request is `{ operation, model, project, fields }`, `fields` the body's top-level fields
//! (parsed) in the client's API's shape. What `key` returns is only hashed; the scope (project,
//! key, namespace, operation, model) stays in the key whatever it says. A plugin that throws or
//! runs out of time makes its request a bypass, never an error. See `wit/cache-key.wit`.

import { NoOptions, optionsCache } from './options.js';
import { asTrap, checkOptions } from './_export.js';

export { ConfigError } from './options.js';
export { countTokens, log } from './host.js';

/** Keys the request by its fields as they are. */
export function keep() {
  return { tag: 'keep' };
}

/** Keys the request by `fields` instead (an object whose top-level fields are hashed). */
export function replace(fields) {
  return { tag: 'replace', val: JSON.stringify(fields) };
}

/** Leaves the request uncached: neither answered from the cache nor kept. */
export function bypass() {
  return { tag: 'bypass' };
}

/**
 * The `cacheKey` export of a component: `export const cacheKey = defineCacheKey({...})`.
 * @param {{ options?: Function, validate?: (options: any) => void,
 *           key: (options: any, request: object) => object }} plugin
 */
export function defineCacheKey(plugin) {
  const schema = plugin.options ?? NoOptions;
  const options = optionsCache(schema);
  return {
    validate(text) {
      checkOptions(text, schema, (parsed) => plugin.validate?.(parsed));
    },
    key(text, request) {
      try {
        const fields = JSON.parse(request.fields);
        return plugin.key(options(text), { ...request, fields });
      } catch (err) {
        throw asTrap(err);
      }
    },
  };
}

/** A request as the host sends it, for unit tests of the exported `cacheKey`. */
export function request(fields, { operation = 'chat.completions', model = 'm', project = 'default' } = {}) {
  return { operation, model, project, fields: JSON.stringify(fields) };
}
