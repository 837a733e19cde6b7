//! Guard plugins: a content policy on requests before they leave and on answers as they come
//! back, streamed or whole.
//!
//! ```js
//! import { o } from 'wasmgate-plugin/options';
//! import { allow, defineGuard, refuse, requestTexts } from 'wasmgate-plugin/guard';
//!
//! export const guard = defineGuard({
//!   options: o.object({ words: o.list(o.string()) }),
//!   checkRequest(options, request) {
//!     const texts = requestTexts(request);
//!     if (texts.some((t) => options.words.some((w) => t.includes(w)))) return refuse('this topic is not allowed here');
//!     return allow();
//!   },
//! });
//! ```
//!
//! `validate(options)` may throw `ConfigError` and returns the most text the answer guard holds
//! back (default 0). `answer(options, request)` starts guarding one answer: it returns an object
//! whose `push(events)` returns `release(...)` (the events to send now; the rest is held) or
//! `stop(...)`, and whose `finish()` releases what is held; without `answer`, every event passes.
//!
//! The request is Chat Completions JSON (text); an event is `{ tag: 'text', val: { choice, text } }`,
//! `{ tag: 'tool-call', val: { choice, index, id?, name?, arguments } }`, `{ tag: 'usage', val }`
//! or `{ tag: 'stop', val: { choice, reason } }`. See `wit/guard.wit`.
//!
//! A guard that needs an outside verdict returns `consult(body, context)` (a JSON body the host
//! POSTs to the entry's `endpoint`; plugins get no sockets) from `checkRequest` or an answer's
//! `push`/`finish`; the host then calls `checkRequestReply(options, request, context, reply)` or
//! the answer's `reply(reply)`, where `reply` is `{ tag: 'answered', val: [status, body] }` or
//! `{ tag: 'failed', val: reason }` (`consultAnswer` reads it).

import { NoOptions, optionsCache } from './options.js';
import { asTrap, checkOptions } from './_export.js';

export { ConfigError } from './options.js';
export { countTokens, log } from './host.js';

/** An answer guard that releases every event as it comes: for guards of requests only. */
export function passAnswers() {
  return { push: (events) => release(events), finish: () => release([]) };
}

/**
 * The `guard` export of a component: `export const guard = defineGuard({...})`.
 * @param {{ options?: Function, validate?: (options: any) => number | void,
 *           checkRequest?: (options: any, request: string) => object,
 *           answer?: (options: any, request: string) => { push(events: object[]): object, finish?(): object } }} plugin
 */
export function defineGuard(plugin) {
  const schema = plugin.options ?? NoOptions;
  // Options the config accepted cannot fail here; if they do, the call traps and the host fails
  // the request closed (or open, as the entry says).
  const options = optionsCache(schema);
  const start = plugin.answer ?? passAnswers;

  // componentize-js exports the WIT resource `answer-guard` as the class `AnswerGuard` of the
  // interface's object; the host constructs one per answer.
  class AnswerGuard {
    #answer;
    constructor(text, request) {
      this.#answer = start(options(text), request);
    }
    push(events) {
      return this.#answer.push(events);
    }
    finish() {
      return this.#answer.finish ? this.#answer.finish() : release([]);
    }
    reply(reply) {
      if (!this.#answer.reply) throw new Error('this guard asked for an outside call it does not take the reply of');
      return this.#answer.reply(reply);
    }
  }

  return {
    validate(text) {
      const held = checkOptions(text, schema, (parsed) => plugin.validate?.(parsed)) ?? 0;
      if (!Number.isSafeInteger(held) || held < 0 || held > 0xffffffff) {
        throw asTrap(new Error(`validate returned ${held}, not a count of characters`));
      }
      return { maxHoldChars: held };
    },
    checkRequest(text, request) {
      return plugin.checkRequest ? plugin.checkRequest(options(text), request) : allow();
    },
    checkRequestReply(text, request, context, reply) {
      if (!plugin.checkRequestReply) throw new Error('this guard asked for an outside call it does not take the reply of');
      return plugin.checkRequestReply(options(text), request, context, reply);
    },
    AnswerGuard,
  };
}

const findingList = (findings = {}) => Object.entries(findings).map(([kind, count]) => ({ kind, count: Number(count) }));

/** Sends the request on as it is, recording `findings` (`{ kind: count }`). */
export function allow(findings) {
  return { tag: 'allow', val: findingList(findings) };
}

/** Sends `body` (Chat Completions JSON) instead. */
export function rewrite(body, findings) {
  return { tag: 'rewrite', val: { body: String(body), findings: findingList(findings) } };
}

/** Refuses the request with `reason` and `status`, in the client's own error shape. */
export function refuse(reason, status = 400, findings) {
  return { tag: 'refuse', val: { reason: String(reason), status, findings: findingList(findings) } };
}

/** Sends `events` now; the guard holds `heldChars` of text (at most what it declared), counted in
 * Unicode scalar values: `charCount` counts them (a string's `length` counts UTF-16 units). */
export function release(events, heldChars = 0, findings) {
  return { tag: 'release', val: { events: [...events], heldChars, findings: findingList(findings) } };
}

/** Ends the answer here, with the client's API's own error. */
export function stop(reason, findings) {
  return { tag: 'stop', val: { reason: String(reason), status: 400, findings: findingList(findings) } };
}

/** Asks the host to POST `body` (JSON text, or a value to serialise) to the entry's `endpoint`
 * first: a request verdict or a stream verdict. `context` comes back to `checkRequestReply`. */
export function consult(body, context = '') {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return { tag: 'consult', val: { body: text, context: String(context) } };
}

/** The status and JSON body of an endpoint's answer, or `null` when the call failed (and the entry
 * said to let the check through). */
export function consultAnswer(reply) {
  if (reply?.tag !== 'answered') return null;
  const [status, body] = reply.val;
  try {
    return { status, body: JSON.parse(body) };
  } catch {
    return { status, body: null };
  }
}

/** A text event, for unit tests and for answer guards that write text. */
export function text(value, choice = 0) {
  return { tag: 'text', val: { choice, text: String(value) } };
}

/** The length of `value` in Unicode scalar values, as `heldChars` and `maxHoldChars` count. */
export function charCount(value) {
  let n = 0;
  for (const _ of value) n++;
  return n;
}

// Schema keywords whose strings are structure, not text (a `required` entry names a property key).
const SCHEMA_STRUCTURE = new Set(['type', 'format', '$ref', '$schema', '$id', 'required']);
const isString = (v) => typeof v === 'string';

function isTextType(mediaType) {
  const m = mediaType.trim().toLowerCase();
  return m === '' || m.startsWith('text/') || m === 'application/json' || m === 'application/xml'
    || m === 'application/x-www-form-urlencoded' || m.endsWith('+json') || m.endsWith('+xml');
}

/** The text a `data:` URL of a text type carries (RFC 2397: no type is text/plain), or null. */
function dataUrlText(url) {
  if (!isString(url) || !url.startsWith('data:')) return null;
  const comma = url.indexOf(',');
  if (comma < 0) return null;
  const params = url.slice(5, comma).split(';');
  const data = url.slice(comma + 1);
  if (!isTextType(params[0])) return null;
  try {
    if (params.slice(1).some((p) => p.trim().toLowerCase() === 'base64')) {
      const binary = atob(data.trim());
      return new TextDecoder().decode(Uint8Array.from(binary, (c) => c.charCodeAt(0)));
    }
    return decodeURIComponent(data);
  } catch {
    return null;
  }
}

function schemaTexts(schema, texts) {
  if (isString(schema)) texts.push(schema);
  else if (Array.isArray(schema)) for (const item of schema) schemaTexts(item, texts);
  else if (schema && typeof schema === 'object') {
    for (const [key, value] of Object.entries(schema)) if (!SCHEMA_STRUCTURE.has(key)) schemaTexts(value, texts);
  }
}

function functionTexts(fn, texts) {
  if (!fn || typeof fn !== 'object') return;
  if (isString(fn.description)) texts.push(fn.description);
  for (const key of ['parameters', 'schema']) if (key in fn) schemaTexts(fn[key], texts);
}

function contentTexts(content, texts) {
  if (isString(content)) texts.push(content);
  else if (Array.isArray(content)) {
    for (const part of content) {
      if (!part || typeof part !== 'object') continue;
      if (isString(part.text)) texts.push(part.text);
      for (const url of [part.image_url?.url, part.file?.file_data]) {
        const text = dataUrlText(url);
        if (text !== null) texts.push(text);
      }
    }
  }
}

/** Where the texts of a request stood, when the gateway showed a body of another route (an
 * embeddings input, a pass-through body, a batch line, a count) to the guard as messages:
 * `{route: 'embeddings', at: ['/input/0', ...]}`, the route's name and, for each message in
 * order, the JSON pointer (RFC 6901) of its text in what the route sends (for `passthrough`,
 * under `/body`, `/query/<i>/1` or `/headers/<i>/1`). `null` for a Chat Completions request
 * shown as it is. The same as the Rust SDK's `request_origin`. */
export function requestOrigin(request) {
  const origin = JSON.parse(request)?.wasmgate;
  if (!origin || typeof origin !== 'object' || !isString(origin.route)) return null;
  const at = Array.isArray(origin.at) ? origin.at.filter(isString) : [];
  return { route: origin.route, at };
}

/** The texts of a Chat Completions request a guard reads: each message's content (a string, the
 * text of its parts, the text of a `data:` URL of a text type in an image or file part), its `name`
 * and `refusal`, its tool calls' arguments; each tool's (and legacy function's) description and
 * parameter schema (descriptions, titles, enums, examples, defaults, nested properties);
 * `response_format`'s schema; `prediction`; the top-level `user` and the values of `metadata`.
 * The same texts as the Rust SDK's `request_texts`. */
export function requestTexts(request) {
  const body = JSON.parse(request);
  const texts = [];
  for (const message of body?.messages ?? []) {
    if (!message || typeof message !== 'object') continue;
    contentTexts(message.content, texts);
    for (const key of ['name', 'refusal']) if (isString(message[key])) texts.push(message[key]);
    for (const call of message.tool_calls ?? []) {
      const args = call?.function?.arguments;
      if (isString(args)) texts.push(args);
    }
    if (isString(message.function_call?.arguments)) texts.push(message.function_call.arguments);
  }
  for (const tool of body?.tools ?? []) functionTexts(tool?.function, texts);
  for (const fn of body?.functions ?? []) functionTexts(fn, texts);
  functionTexts(body?.response_format?.json_schema, texts);
  contentTexts(body?.prediction?.content, texts);
  if (isString(body?.user)) texts.push(body.user);
  if (body?.metadata && typeof body.metadata === 'object') {
    for (const value of Object.values(body.metadata)) if (isString(value)) texts.push(value);
  }
  return texts;
}
