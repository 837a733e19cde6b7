//! The host's functions (log, token counts). Outside the sandbox (unit tests under node with
//! `--import wasmgate-plugin/testing`) `wasmgate:plugin/*` resolves to stand-ins instead.

import { countTokens as hostCountTokens, log as hostLog } from 'wasmgate:plugin/host@0.1.0';

const LEVELS = new Set(['debug', 'info', 'warn', 'error']);

/**
 * Writes `message` to the gateway's log at `level`, tagged with the plugin's name and the request
 * id. Never log secrets or prompt text.
 * @param {'debug'|'info'|'warn'|'error'} level
 * @param {string} message
 */
export function log(level, message) {
  if (!LEVELS.has(level)) throw new TypeError(`log level must be debug, info, warn or error, not ${level}`);
  hostLog(level, String(message));
}

/**
 * Counts the tokens of `text` with the host's tokenizer (OpenAI's `o200k_base`).
 * @param {string} text
 * @returns {number}
 */
export function countTokens(text) {
  return hostCountTokens(String(text));
}
