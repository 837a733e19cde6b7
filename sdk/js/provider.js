//! Provider plugins: translate between OpenAI's API and one upstream's wire format.
//!
//! ```js
//! import { defineProvider, postJson, upstream } from 'wasmgate-plugin/provider';
//!
//! export const provider = defineProvider({
//!   defaultBaseUrl: 'https://api.example.com/v1',
//!   system: 'example',
//!   prepare(entry, request) {
//!     return upstream(postJson(entry.url('chat/completions'), request.body));
//!   },
//! });
//! ```
//!
//! `parseResponse` and the stream decoder default to OpenAI's format. The host calls a provider
//! on a fresh instance per request and does all network I/O; the plugin describes requests and
//! reads responses. The SDK reads the config entry for each call: the options with the plugin's
//! schema (errors naming the key), the base URL (the entry's, else `defaultBaseUrl`, checked),
//! and the `headers` and `auth_header` options every provider takes; it adds the key and those
//! headers to each upstream request `prepare` returns. A request is `{ operation: 'chat-completions'|'embeddings'|
//! 'image-generations'|'list-models'|'completions'|'moderations'|'rerank'|..., model, body (JSON
//! text), stream }` (the audio operations need `upstream-form`/`upstream-raw`: see wit/provider.wit).

import { ConfigError, NoOptions, o, parseOptions } from './options.js';
import { asTrap, configErrorPayload, witError } from './_export.js';
import { PluginError } from './errors.js';
import { OpenAiStream, parseOpenAiResponse } from './openai.js';
import { readUsage, unsupported } from './passthrough.js';

export { ConfigError } from './options.js';
export { PluginError, kindForStatus } from './errors.js';
export { OpenAiStream, SseParser, openaiError, openaiUsage, parseOpenAiResponse, tokens } from './openai.js';
export { countTokens, log } from './host.js';
export { readUsage, unsupported, withDefault } from './passthrough.js';

const encoder = new TextEncoder();

const COMMON = ['headers', 'auth_header'];

/** The provider's config entry, read: `name`, `baseUrl` (the entry's, else `defaultBaseUrl`;
 * `''` for a `local` provider given none), `apiKey` (send it only upstream; the SDK does),
 * `models`, `options` (read with the plugin's schema). */
class Entry {
  #apiKey;
  #keyHeader;
  #headers;
  constructor(config, baseUrl, options, keyHeader, headers) {
    this.name = config.name;
    this.baseUrl = baseUrl;
    this.#apiKey = config.apiKey || undefined;
    this.models = config.models;
    this.options = options;
    this.#keyHeader = keyHeader;
    this.#headers = headers;
  }

  /** The entry's API key, if any. Kept off the object's enumerable fields so that logging the
   * entry does not print it. */
  get apiKey() {
    return this.#apiKey;
  }

  /** `path` under the entry's base URL, with one `/` between them. */
  url(path) {
    return joinUrl(this.baseUrl, path);
  }

  /** `[['authorization', 'Bearer <key>']]` when the entry has a key, else `[]`. The SDK adds the
   * key itself to what `prepare` returns: this is for requests built elsewhere. */
  bearer() {
    return this.#apiKey ? [['authorization', `Bearer ${this.#apiKey}`]] : [];
  }

  /** Sets the key (in the provider's `authHeader`, or the entry's `auth_header`) and the entry's
   * `headers` on `http`, replacing headers of the same names. The SDK does this to every upstream
   * request `prepare` returns, after the plugin's own headers. */
  authorize(http) {
    if (this.#keyHeader && this.#apiKey) {
      setHeader(http, this.#keyHeader, this.#keyHeader === 'authorization' ? `Bearer ${this.#apiKey}` : this.#apiKey);
    }
    for (const [name, value] of this.#headers) setHeader(http, name, value);
  }

  /** What the SDK adds to a pass-through request by default: `{ headers, query }` with the key
   * and the entry's `headers`, as `authorize` sets them. For a `passthrough` that adds more. */
  passthroughAuth() {
    const http = get('');
    this.authorize(http);
    return { headers: http.headers, query: [] };
  }
}

function setHeader(http, name, value) {
  http.headers = [...http.headers.filter(([n]) => n.toLowerCase() !== name.toLowerCase()), [name, value]];
}

/** The entry's `options` without the common keys, read with the plugin's schema. */
function pluginOptions(plugin, text) {
  const all = parseOptions(text, (value) => value);
  const own = Object.fromEntries(Object.entries(all).filter(([key]) => !COMMON.includes(key)));
  return [(plugin.options ?? NoOptions)(own, ''), all];
}

function defaultBaseUrl(plugin, options) {
  return typeof plugin.defaultBaseUrl === 'function' ? plugin.defaultBaseUrl(options) : plugin.defaultBaseUrl;
}

function readEntry(plugin, config) {
  const [options, all] = pluginOptions(plugin, config.options);
  const headers = all.headers == null ? [] : Object.entries(o.map(o.string())(all.headers, 'headers'));
  for (const [name, value] of headers) {
    const problem = checkHeader(name, value);
    if (problem) throw new ConfigError(problem, `headers.${name}`);
  }
  let keyHeader = plugin.authHeader === undefined ? 'authorization' : plugin.authHeader;
  if (all.auth_header !== undefined) {
    if (keyHeader === null) throw new ConfigError('this provider uses the key itself and sends it in no header', 'auth_header');
    keyHeader = o.string()(all.auth_header, 'auth_header').toLowerCase();
    const problem = checkHeader(keyHeader, '');
    if (problem) throw new ConfigError(problem, 'auth_header');
  }
  // Never echo the key.
  if (config.apiKey && checkHeader('x', config.apiKey)) throw new ConfigError('contains a control character', 'api_key');
  const baseUrl = config.baseUrl ?? defaultBaseUrl(plugin, options) ?? '';
  if (baseUrl && (!isHttpUrl(baseUrl) || /[?#]/.test(baseUrl))) {
    throw new ConfigError('must be an absolute http:// or https:// URL without a query', 'base_url');
  }
  return new Entry(config, baseUrl, options, keyHeader, headers);
}

const asWit = (err) => (err instanceof PluginError ? witError(err.toWit()) : asTrap(err));

/** The credentials of a pass-through request by default: the key as `authHeader` sends it and
 * the entry's `headers`, as on every request. A `local` provider, or one that uses the key itself
 * (`authHeader: null`, it signs requests), refuses: its upstream cannot take a body the plugin
 * never sees. */
function defaultPassthrough(plugin) {
  return (entry) => {
    if (plugin.local || plugin.authHeader === null) throw unsupported(entry.name);
    return entry.passthroughAuth();
  };
}

/** The usage of a pass-through answer by default: what a success reports, read the common ways. */
function defaultPassthroughUsage(_entry, _call, response, whole) {
  return response.status >= 200 && response.status < 300 ? readUsage(response.body, whole) : undefined;
}

/** The upstream request inside a `prepare` result, if it goes upstream. */
function upstreamRequest(prepared) {
  if (prepared.tag === 'upstream') return prepared.val;
  if (prepared.tag === 'upstream-form' || prepared.tag === 'upstream-raw') return prepared.val.request;
  return undefined;
}

/**
 * The `provider` export of a component: `export const provider = defineProvider({...})`.
 * `nativeDialects(entry)` lists the client dialects, by their declared names (`'messages'`,
 * `'responses'`, `'gemini'`), the entry's upstream serves itself: their requests reach `prepare`
 * with `request.native` set. The default is none, so every dialect arrives translated.
 * `defaultBaseUrl` is a string, or a function of the options returning one; `system` is the
 * upstream's OpenTelemetry `gen_ai.provider.name`; `authHeader` the header the key goes in
 * (`'authorization'`, the default, sends `Bearer <key>`; `null`: the plugin uses the key itself);
 * `local: true` for a provider that answers everything itself and needs no base URL.
 * Pass-through routes (`/passthrough/<entry>/<path>`) work with no code: `passthrough(entry, call)`
 * returns the `{ headers, query }` to add (by default the key and the entry's `headers`, as on
 * every request; add a version header with `withDefault`, throw a `PluginError` to refuse), and
 * `passthroughUsage(entry, call, response, whole)` the `{ model, usage }` an answer reports (by
 * default read the common ways by `readUsage`), or `undefined`.
 * @param {{ options?: Function, defaultBaseUrl?: string | ((options: object) => string | undefined),
 *           system?: string, authHeader?: string | null, local?: boolean,
 *           validate?: (entry: Entry) => void,
 *           nativeDialects?: (entry: Entry) => string[],
 *           prepare: (entry: Entry, request: object) => object,
 *           parseResponse?: (entry: Entry, request: object, response: object) => object,
 *           passthrough?: (entry: Entry, call: object) => { headers: [string, string][], query: [string, string][] },
 *           passthroughUsage?: (entry: Entry, call: object, response: object, whole: boolean) => object | undefined,
 *           Decoder?: new (entry: Entry, request: object, headers: [string, string][]) => object }} plugin
 */
export function defineProvider(plugin) {
  const entry = (config) => {
    try {
      return readEntry(plugin, config);
    } catch (err) {
      if (err instanceof ConfigError) throw witError(PluginError.upstream(`provider \`${config.name}\` is misconfigured`).toWit());
      throw asTrap(err);
    }
  };
  const Decoder = plugin.Decoder ?? OpenAiStream;
  return {
    describe(config) {
      let defaultUrl;
      try {
        defaultUrl = defaultBaseUrl(plugin, pluginOptions(plugin, config.options)[0]);
      } catch (err) {
        if (!(err instanceof ConfigError)) throw asTrap(err); // else `validate` says what is wrong
      }
      // No plain operations: every request reaches the plugin.
      return { defaultBaseUrl: defaultUrl, system: plugin.system, plain: [] };
    },
    nativeDialects(config) {
      let read;
      try {
        read = readEntry(plugin, config);
      } catch (err) {
        if (err instanceof ConfigError) return []; // `validate` refuses the entry
        throw asTrap(err);
      }
      return plugin.nativeDialects?.(read) ?? [];
    },
    // No counting endpoint from JavaScript yet: the host counts with its own tokenizer.
    prepareCount() {
      return undefined;
    },
    parseCount(config) {
      throw witError(PluginError.upstream(`provider \`${config.name}\` has no counting endpoint`).toWit());
    },
    passthrough(config, call) {
      const read = entry(config);
      try {
        return (plugin.passthrough ?? defaultPassthrough(plugin))(read, call);
      } catch (err) {
        throw asWit(err);
      }
    },
    passthroughUsage(config, call, response, whole) {
      let read;
      try {
        read = readEntry(plugin, config);
      } catch (err) {
        if (err instanceof ConfigError) return undefined; // the config accepted it: nothing to read with
        throw asTrap(err);
      }
      return (plugin.passthroughUsage ?? defaultPassthroughUsage)(read, call, response, whole);
    },
    validate(config) {
      try {
        const read = readEntry(plugin, config);
        plugin.validate?.(read);
        if (!read.baseUrl && !plugin.local) throw new ConfigError('is required: this provider has no default', 'base_url');
      } catch (err) {
        if (err instanceof ConfigError) throw witError(configErrorPayload(err));
        throw asTrap(err);
      }
    },
    prepare(config, request) {
      const read = entry(config);
      let prepared;
      try {
        prepared = plugin.prepare(read, request);
      } catch (err) {
        throw asWit(err);
      }
      const http = upstreamRequest(prepared);
      if (http) read.authorize(http);
      return prepared;
    },
    parseResponse(config, request, response) {
      try {
        return (plugin.parseResponse ?? ((_, r, res) => parseOpenAiResponse(r.operation, res)))(entry(config), request, response);
      } catch (err) {
        throw asWit(err);
      }
    },
    StreamDecoder: class {
      #decoder;
      constructor(config, request, headers) {
        this.#decoder = new Decoder(readEntry(plugin, config), request, headers);
      }
      push(bytes) {
        try {
          return this.#decoder.push(bytes);
        } catch (err) {
          throw asWit(err);
        }
      }
      finish() {
        try {
          return this.#decoder.finish();
        } catch (err) {
          throw asWit(err);
        }
      }
    },
  };
}

/** Send `http` upstream, then parse its answer. */
export function upstream(http) {
  return { tag: 'upstream', val: http };
}

/** Answer at once with `body` (OpenAI's JSON, as text or an object). */
export function local(body, usage) {
  return { tag: 'local', val: { body: typeof body === 'string' ? body : JSON.stringify(body), usage } };
}

/** Answer a streamed request at once with these chunk events. */
export function localStream(events, usage) {
  return { tag: 'local-stream', val: { events: events.map((e) => (typeof e === 'string' ? e : JSON.stringify(e))), usage } };
}

/** OpenAI's `chat.completion` object answering with `content`. */
export function chatCompletion(model, content, { id = 'chatcmpl-local' } = {}) {
  return {
    id, object: 'chat.completion', created: 0, model,
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
  };
}

/** `base` and `path` with exactly one `/` between them. */
export function joinUrl(base, path) {
  return `${base.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`;
}

/** Whether `url` is an absolute `http://` or `https://` URL with a host. */
export function isHttpUrl(url) {
  const m = /^https?:\/\/(.*)$/.exec(url);
  return !!m && m[1].length > 0 && !m[1].startsWith('/');
}

/** Why `name: value` is not a safe header, or `undefined`. */
export function checkHeader(name, value) {
  if (!/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(name)) return `\`${name}\` is not a valid header name`;
  if (/[\x00-\x08\x0a-\x1f\x7f]/.test(value)) return `the value of header \`${name}\` contains a control character`;
  return undefined;
}

/** A `POST` of a JSON body (text or an object) with `content-type: application/json`. */
export function postJson(url, body, headers = []) {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return { method: 'POST', url, headers: [['content-type', 'application/json'], ...headers], body: encoder.encode(text) };
}

/** A `GET` with no body. */
export function get(url, headers = []) {
  return { method: 'GET', url, headers, body: new Uint8Array() };
}
