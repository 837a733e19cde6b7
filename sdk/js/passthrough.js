//! Pass-through routes (`/passthrough/<entry>/<path>`): the credentials a provider adds to a
//! request the gateway does not model, and the usage read from the end of its answer.
//!
//! The host streams the body both ways and hands the plugin only what it needs: the call
//! (`{ method, path, headers }`) to key, and at the end the answer whole (when small) or its
//! tail. The reading of usage mirrors the Rust SDK's `passthrough::read_usage`, so a provider
//! reports the same usage whichever language it is written in.

import { PluginError } from './errors.js';
import { openaiUsage, tokens } from './openai.js';

const decoder = new TextDecoder();

/** The refusal of a provider whose upstream cannot be passed through to (404). */
export function unsupported(entry) {
  return new PluginError('not-found', `provider \`${entry}\` offers no pass-through route`);
}

/** Adds header `name: value` to `auth` (`{ headers, query }`) unless the client's `call` sent one
 * of that name (a version header the upstream requires, the client's own taking precedence). */
export function withDefault(auth, call, name, value) {
  const lower = name.toLowerCase();
  if (!call.headers.some(([n]) => n.toLowerCase() === lower)) auth.headers.push([name, value]);
  return auth;
}

/**
 * The usage an answer reports (`{ model, usage }`, or `undefined`), read the ways the common APIs
 * write it: a JSON body's `usage` (OpenAI's Chat Completions and Responses, Anthropic's
 * Messages) or `usageMetadata` (Google's), or the same in the last stream event that has one.
 * `body` (bytes) may be a tail (`whole` false): it is then read as events only, since a JSON
 * body cut at its start cannot be parsed.
 */
export function readUsage(body, whole) {
  const text = decoder.decode(body);
  if (whole) {
    const parsed = parse(text);
    if (parsed !== undefined) return metered(parsed);
  }
  const lines = text.split(/\r?\n/).reverse();
  for (const line of lines) {
    if (!line.startsWith('data:')) continue;
    const found = metered(parse(line.slice('data:'.length).trim()));
    if (found) return found;
  }
  return undefined;
}

function parse(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined; // `[DONE]`, an event cut at the tail's start, or not one JSON document
  }
}

/** The usage of one JSON answer or event, and its model. */
function metered(value) {
  if (!value || typeof value !== 'object') return undefined;
  // A Responses stream's last event carries the response, with its usage, inside.
  if (value.response && typeof value.response === 'object' && 'usage' in value.response) value = value.response;
  let usage;
  if (value.usage && typeof value.usage === 'object') usage = anthropicOrOpenai(value.usage);
  else if ('usageMetadata' in value) usage = gemini(value.usageMetadata);
  else usage = anthropicOrOpenai(value.message?.usage); // Anthropic's `message_start` event
  if (!usage) return undefined;
  const model = [value.model, value.modelVersion].find((m) => typeof m === 'string');
  return { model, usage };
}

const count = (usage, name) => (Number.isSafeInteger(usage[name]) && usage[name] >= 0 ? usage[name] : undefined);

/** OpenAI's counts, or Anthropic's (whose cache reads and writes are apart from `input_tokens`). */
function anthropicOrOpenai(usage) {
  const counted = openaiUsage(usage);
  if (!counted) return undefined;
  const read = count(usage, 'cache_read_input_tokens') ?? 0;
  const write = count(usage, 'cache_creation_input_tokens') ?? 0;
  if (read + write > 0) {
    counted.inputTokens += BigInt(read + write);
    counted.cachedInputTokens = BigInt(read);
    counted.cacheWriteTokens = BigInt(write);
  }
  return counted;
}

/** Google's `usageMetadata`. */
function gemini(usage) {
  if (!usage || typeof usage !== 'object') return undefined;
  const input = count(usage, 'promptTokenCount');
  const output = count(usage, 'candidatesTokenCount');
  if (input === undefined && output === undefined) return undefined;
  const thoughts = count(usage, 'thoughtsTokenCount') ?? 0;
  return tokens(input ?? 0, (output ?? 0) + thoughts, count(usage, 'cachedContentTokenCount') ?? 0, thoughts);
}
