//! Provider plugins: translate between OpenAI's API and one upstream's wire format.
//!
//! ```js
//! import { defineProvider, joinUrl, postJson, upstream } from 'wasmgate-plugin/provider';
//!
//! export const provider = defineProvider({
//!   defaultBaseUrl: 'https://api.example.com/v1',
//!   prepare(entry, request) {
//!     return upstream(postJson(joinUrl(entry.baseUrl, 'chat/completions'), request.body, entry.bearer()));
//!   },
//! });
//! ```
//!
//! `parseResponse` and the stream decoder default to OpenAI's format. The host calls a provider
//! on a fresh instance per request and does all network I/O; the plugin describes requests and
//! reads responses. A request is `{ operation: 'chat-completions'|'embeddings'|
//! 'image-generations'|'list-models'|'completions'|'moderations'|'rerank'|..., model, body (JSON
//! text), stream }` (the audio operations need `upstream-form`/`upstream-raw`: see wit/provider.wit).

import { ConfigError, NoOptions, parseOptions } from './options.js';
import { asTrap, configErrorPayload, witError } from './_export.js';
import { PluginError } from './errors.js';
import { OpenAiStream, parseOpenAiResponse } from './openai.js';

export { ConfigError } from './options.js';
export { PluginError, kindForStatus } from './errors.js';
export { OpenAiStream, SseParser, openaiError, openaiUsage, parseOpenAiResponse, tokens } from './openai.js';
export { countTokens, log } from './host.js';

const encoder = new TextEncoder();

/** The provider's config entry, read: `name`, `baseUrl` (the entry's, else `defaultBaseUrl`),
 * `apiKey` (send it only upstream), `models`, `options` (read with the plugin's schema). */
class Entry {
  #apiKey;
  constructor(config, baseUrl, options) {
    this.name = config.name;
    this.baseUrl = baseUrl;
    this.#apiKey = config.apiKey;
    this.models = config.models;
    this.options = options;
  }

  /** The entry's API key, if any. Kept off the object's enumerable fields so that logging the
   * entry does not print it. */
  get apiKey() {
    return this.#apiKey;
  }

  /** `[['authorization', 'Bearer <key>']]` when the entry has a key, else `[]`. */
  bearer() {
    return this.#apiKey ? [['authorization', `Bearer ${this.#apiKey}`]] : [];
  }
}

function readEntry(plugin, config) {
  const baseUrl = config.baseUrl ?? plugin.defaultBaseUrl;
  if (baseUrl === undefined) throw new ConfigError('this provider needs a base_url', 'base_url');
  if (!isHttpUrl(baseUrl)) throw new ConfigError('must be an absolute http:// or https:// URL', 'base_url');
  return new Entry(config, baseUrl, parseOptions(config.options, plugin.options ?? NoOptions));
}

const asWit = (err) => (err instanceof PluginError ? witError(err.toWit()) : asTrap(err));

/**
 * The `provider` export of a component: `export const provider = defineProvider({...})`.
 * `nativeOperations(entry)` lists the client dialects (`'messages'`, `'responses'`) the entry's
 * upstream serves itself; the default is none, so every dialect arrives translated.
 * @param {{ options?: Function, defaultBaseUrl?: string, validate?: (entry: Entry) => void,
 *           nativeOperations?: (entry: Entry) => string[],
 *           prepare: (entry: Entry, request: object) => object,
 *           parseResponse?: (entry: Entry, request: object, response: object) => object,
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
    nativeOperations(config) {
      let read;
      try {
        read = readEntry(plugin, config);
      } catch (err) {
        if (err instanceof ConfigError) return []; // `validate` refuses the entry
        throw asTrap(err);
      }
      return plugin.nativeOperations?.(read) ?? [];
    },
    // Dialects besides Messages and Responses served natively: none from JavaScript yet.
    nativeDialects() {
      return [];
    },
    // Pass-through routes: none from JavaScript yet (the host then answers 404).
    passthrough(config) {
      throw witError(new PluginError('not-found', `provider \`${config.name}\` offers no pass-through route`).toWit());
    },
    passthroughUsage() {
      return undefined;
    },
    validate(config) {
      try {
        const entry = readEntry(plugin, config);
        plugin.validate?.(entry);
      } catch (err) {
        if (err instanceof ConfigError) throw witError(configErrorPayload(err));
        throw asTrap(err);
      }
    },
    prepare(config, request) {
      try {
        return plugin.prepare(entry(config), request);
      } catch (err) {
        throw asWit(err);
      }
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
