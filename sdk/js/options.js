//! A config entry's `options` (JSON text from the host) read and checked against a schema, so a
//! misspelt or mistyped option fails when the config loads, naming its key.
//!
//! ```js
//! import { o } from 'wasmgate-plugin/options';
//! const Options = o.object({
//!   daily_tokens: o.integer({ min: 1 }),
//!   message: o.optional(o.string(), 'You have used your tokens for today.'),
//!   exempt: o.optional(o.list(o.string()), []),
//! });
//! ```

/** Why the options are refused: `key` is the dotted path of the option at fault. */
export class ConfigError extends Error {
  /** @param {string} message @param {string=} key */
  constructor(message, key) {
    super(message);
    this.name = 'ConfigError';
    this.key = key;
  }
}

const at = (path, key) => (typeof key === 'number' ? `${path}[${key}]` : path ? `${path}.${key}` : key);
const fail = (path, message) => new ConfigError(path ? message : `options: ${message}`, path || undefined);
const describe = (v) =>
  v === null ? 'null' : Array.isArray(v) ? 'a list' : typeof v === 'object' ? 'a mapping' : `a ${typeof v}`;

/** Schema builders. Each returns a function `(value, path) => parsed` that throws `ConfigError`. */
export const o = {
  /** A string; `{ oneOf: [...] }` restricts it to some values. */
  string({ oneOf } = {}) {
    return (v, path) => {
      if (typeof v !== 'string') throw fail(path, `expected a string, got ${describe(v)}`);
      if (oneOf && !oneOf.includes(v)) {
        throw fail(path, `unknown variant \`${v}\`, expected one of ${oneOf.map((x) => `\`${x}\``).join(', ')}`);
      }
      return v;
    };
  },
  /** A number, within `{ min, max }` when given. */
  number({ min, max } = {}) {
    return (v, path) => {
      if (typeof v !== 'number' || !Number.isFinite(v)) throw fail(path, `expected a number, got ${describe(v)}`);
      if (min !== undefined && v < min) throw fail(path, `must be at least ${min}`);
      if (max !== undefined && v > max) throw fail(path, `must be at most ${max}`);
      return v;
    };
  },
  /** An integer, within `{ min, max }` when given. */
  integer({ min, max } = {}) {
    const number = o.number({ min, max });
    return (v, path) => {
      if (!Number.isSafeInteger(v)) throw fail(path, `expected an integer, got ${describe(v)}`);
      return number(v, path);
    };
  },
  /** `true` or `false`. */
  boolean() {
    return (v, path) => {
      if (typeof v !== 'boolean') throw fail(path, `expected a boolean, got ${describe(v)}`);
      return v;
    };
  },
  /** A list of `item`. */
  list(item) {
    return (v, path) => {
      if (!Array.isArray(v)) throw fail(path, `expected a list, got ${describe(v)}`);
      return v.map((x, i) => item(x, at(path, i)));
    };
  },
  /** A mapping of any keys to `item`. */
  map(item) {
    return (v, path) => {
      if (v === null || typeof v !== 'object' || Array.isArray(v)) throw fail(path, `expected a mapping, got ${describe(v)}`);
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, item(x, at(path, k))]));
    };
  },
  /** A mapping with exactly these `fields` (unknown keys are refused). */
  object(fields) {
    return (v, path = '') => {
      if (v === null || typeof v !== 'object' || Array.isArray(v)) throw fail(path, `expected a mapping, got ${describe(v)}`);
      for (const key of Object.keys(v)) {
        if (!Object.hasOwn(fields, key)) {
          const allowed = Object.keys(fields).map((k) => `\`${k}\``).join(', ') || 'none';
          throw fail(at(path, key), `unknown field \`${key}\`, expected one of: ${allowed}`);
        }
      }
      const out = {};
      for (const [key, field] of Object.entries(fields)) {
        if (!Object.hasOwn(v, key) || v[key] === undefined) {
          if (field.optional) {
            if (field.fallback !== undefined) out[key] = structuredClone(field.fallback);
            continue;
          }
          throw fail(path, `missing field \`${key}\``);
        }
        out[key] = v[key] === null && field.optional ? field.fallback : field(v[key], at(path, key));
      }
      return out;
    };
  },
  /** `schema`, or absent (then `fallback`, when given). */
  optional(schema, fallback) {
    const f = (v, path) => schema(v, path);
    f.optional = true;
    f.fallback = fallback;
    return f;
  },
  /** `schema`, then `check(value)`, which returns an error message or nothing. */
  check(schema, check) {
    const f = (v, path) => {
      const parsed = schema(v, path);
      const problem = check(parsed);
      if (problem) throw fail(path, problem);
      return parsed;
    };
    f.optional = schema.optional;
    f.fallback = schema.fallback;
    return f;
  },
};

/** The options of a plugin that takes none: any key is refused. */
export const NoOptions = o.object({});

/**
 * Reads `text` (a JSON object; empty or `null` reads as `{}`) with `schema`.
 * @param {string} text
 * @param {(value: unknown, path: string) => any} schema
 */
export function parseOptions(text, schema) {
  const trimmed = (text ?? '').trim();
  let value;
  try {
    value = trimmed ? JSON.parse(trimmed) : null;
  } catch (err) {
    throw new ConfigError(`options are not valid JSON: ${err.message}`);
  }
  if (value === null) value = {};
  if (typeof value !== 'object' || Array.isArray(value)) throw new ConfigError('options must be a mapping');
  return schema(value, '');
}

/** The last options text and its reading, frozen: a virtual model or rule passes the same text on
 * every call, and warm instances serve many calls. Never holds anything of a request. */
export function optionsCache(schema) {
  let text;
  let value;
  return (t) => {
    if (t !== text) {
      value = deepFreeze(parseOptions(t, schema));
      text = t;
    }
    return value;
  };
}

function deepFreeze(value) {
  if (value && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
