//! The typed error a provider throws, and the class of an upstream HTTP status.

/**
 * A failure the client sees in OpenAI's error shape. `kind` decides the status:
 * `'invalid-request'` 400, `'authentication'` 401, `'permission-denied'` 403, `'not-found'` 404,
 * `'rate-limited'` 429, `'upstream'` 502, `'timeout'` 504. Never put secrets in `message`.
 */
export class PluginError extends Error {
  constructor(kind, message, { param, code, upstreamStatus } = {}) {
    super(message);
    this.name = 'PluginError';
    this.kind = kind;
    this.param = param;
    this.code = code;
    this.upstreamStatus = upstreamStatus;
  }

  /** The request is malformed or unsupported (400). */
  static invalidRequest(message, param) {
    return new PluginError('invalid-request', message, { param });
  }

  /** The upstream failed or answered something unreadable (502). */
  static upstream(message) {
    return new PluginError('upstream', message);
  }

  /** The WIT `plugin-error` record. */
  toWit() {
    return { kind: this.kind, message: this.message, param: this.param, code: this.code, upstreamStatus: this.upstreamStatus };
  }
}

/** The error class of an upstream HTTP status, by the meaning OpenAI gives each. */
export function kindForStatus(status) {
  if (status === 401) return 'authentication';
  if (status === 403) return 'permission-denied';
  if (status === 404) return 'not-found';
  if (status === 429) return 'rate-limited';
  if (status === 408 || status === 504) return 'timeout';
  if (status >= 400 && status < 500) return 'invalid-request';
  return 'upstream';
}
