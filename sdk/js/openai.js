//! OpenAI's wire format, which most upstreams share: error bodies, usage objects, pass-through
//! responses and streams, and an incremental Server-Sent-Events parser.

import { PluginError, kindForStatus } from './errors.js';

const SNIPPET = 200;
const decoder = new TextDecoder();
const text = (v) => (typeof v === 'string' && v ? v : typeof v === 'number' ? String(v) : undefined);

/** A non-2xx upstream response (`body` as bytes) as a `PluginError` whose kind follows the status. */
export function openaiError(status, body) {
  const raw = decoder.decode(body);
  let parsed;
  try {
    parsed = JSON.parse(raw);
  } catch {
    parsed = undefined;
  }
  let message;
  let param;
  let code;
  if (parsed && typeof parsed === 'object') {
    const error = parsed.error;
    if (error && typeof error === 'object') [message, param, code] = [text(error.message), text(error.param), text(error.code)];
    else if (typeof error === 'string' && error) message = error;
    else message = text(parsed.message) ?? text(parsed.detail);
  }
  if (message === undefined) {
    const snippet = raw.split(/\s+/).filter(Boolean).join(' ');
    message = `upstream returned HTTP ${status}`;
    if (snippet) message += `: ${snippet.slice(0, SNIPPET)}${snippet.length > SNIPPET ? '…' : ''}`;
    param = code = undefined;
  }
  return new PluginError(kindForStatus(status), message, { param, code, upstreamStatus: status });
}

/** An OpenAI `usage` object as the WIT usage (`prompt_tokens`/`completion_tokens` or the
 * `input_`/`output_` names, cached and reasoning tokens); `undefined` when it has no counts. */
export function openaiUsage(usage) {
  if (!usage || typeof usage !== 'object') return undefined;
  const count = (...names) => names.map((n) => usage[n]).find((v) => Number.isSafeInteger(v) && v >= 0);
  const input = count('prompt_tokens', 'input_tokens');
  const output = count('completion_tokens', 'output_tokens');
  if (input === undefined && output === undefined) return undefined;
  const details = usage.prompt_tokens_details ?? usage.input_tokens_details;
  const cached = Number.isSafeInteger(details?.cached_tokens) ? details.cached_tokens : 0;
  const out = usage.completion_tokens_details ?? usage.output_tokens_details;
  const reasoning = Number.isSafeInteger(out?.reasoning_tokens) ? out.reasoning_tokens : 0;
  return tokens(input ?? 0, output ?? 0, cached, reasoning);
}

/** A WIT usage from token counts. */
export function tokens(input, output, cached = 0, reasoning = 0) {
  return {
    inputTokens: BigInt(input), outputTokens: BigInt(output), cachedInputTokens: BigInt(cached),
    cacheWriteTokens: 0n, reasoningTokens: BigInt(reasoning), images: 0,
    searchUnits: 0n, audioMs: 0n, characters: 0n,
  };
}

/** An upstream's OpenAI-format answer: an error status throws `openaiError`, a success passes
 * through unchanged with its usage read (images counted from `data`). */
export function parseOpenAiResponse(operation, response) {
  if (response.status < 200 || response.status > 299) throw openaiError(response.status, response.body);
  const body = decoder.decode(response.body);
  let parsed;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw PluginError.upstream('upstream answered with a body that is not JSON');
  }
  let usage = openaiUsage(parsed?.usage);
  if (operation === 'image-generations') {
    usage = usage ?? tokens(0, 0);
    usage.images = Array.isArray(parsed?.data) ? parsed.data.length : 0;
  }
  return { body, usage };
}

/** Splits a byte stream into Server-Sent Events (`{ event?, data }`), whatever the chunking: a
 * line is decoded only once its `\n` has arrived. */
export class SseParser {
  #pending = [];
  #event;
  #data = [];

  /** Takes the next bytes; returns the events they complete. */
  push(chunk) {
    const events = [];
    let start = 0;
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, start)) {
      this.#pending.push(chunk.subarray(start, i));
      const event = this.#line(this.#take());
      if (event) events.push(event);
      start = i + 1;
    }
    if (start < chunk.length) this.#pending.push(chunk.slice(start));
    return events;
  }

  /** The body ended: the last event, if no blank line followed it. */
  finish() {
    if (this.#pending.length) this.#line(this.#take());
    return this.#line('');
  }

  #take() {
    const parts = this.#pending;
    this.#pending = [];
    const bytes = parts.length === 1 ? parts[0] : concat(parts);
    return decoder.decode(bytes).replace(/\r$/, '');
  }

  #line(line) {
    if (line === '') {
      if (!this.#data.length && this.#event === undefined) return undefined;
      const event = { event: this.#event, data: this.#data.join('\n') };
      this.#event = undefined;
      this.#data = [];
      return event;
    }
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const name = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (name === 'data') this.#data.push(value);
    else if (name === 'event') this.#event = value;
    return undefined;
  }
}

function concat(parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** The decoder of an OpenAI-format stream: each `data:` event already is a canonical chunk and
 * passes through; usage, errors and `[DONE]` are read on the way. */
export class OpenAiStream {
  #sse = new SseParser();
  #done = false;
  #usage;

  push(chunk) {
    return this.#output(this.#sse.push(chunk));
  }

  finish() {
    const last = this.#sse.finish();
    return this.#output(last ? [last] : []);
  }

  #output(events) {
    const out = [];
    for (const event of events) {
      if (this.#done) break;
      const data = event.data.trim();
      if (data === '[DONE]') {
        this.#done = true;
        break;
      }
      if (!data) continue;
      let chunk;
      try {
        chunk = JSON.parse(data);
      } catch {
        throw PluginError.upstream('upstream sent a stream event that is not JSON');
      }
      if (event.event === 'error' || chunk?.error) {
        const detail = chunk?.error ?? chunk;
        const message = typeof detail === 'string' ? detail : detail?.message;
        throw PluginError.upstream(typeof message === 'string' ? message : 'upstream failed during the stream');
      }
      const usage = openaiUsage(chunk?.usage);
      if (usage) this.#usage = usage;
      out.push(event.data);
    }
    return { events: out, usage: this.#usage };
  }
}
