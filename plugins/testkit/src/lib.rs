//! Runs a provider plugin's data-driven cases: a folder per case under `tests/cases/`, each
//! holding what goes in, what the upstream is sent and answers, and what must come out.
//!
//! - `request.json`: `{"operation": "chat-completions" | "embeddings" | ..., "native": a
//!   dialect's declared name ("messages", "responses"), "route": the dialect route's name,
//!   "stream": bool, "config": {"base_url", "api_key", "options", "models"} (all optional),
//!   "headers": {forwarded client headers}, "body": {...} or "raw_body": "text"}`. The model is
//!   the body's `model`; `operation` defaults to `chat-completions`; with `native`, the request
//!   is the client's own in that dialect (its `route` defaults to the dialect's name).
//! - `expected_upstream.json` (absent when `prepare` must fail): `{"method", "url", "headers":
//!   {subset, exact values}, "absent_headers": [names], "body": JSON}`. For a native request
//!   the body sent must also be the request's text byte for byte, unless it sets
//!   `"body_rewritten": true`.
//! - For a native request, a successful answer must be the upstream's body byte for byte, and a
//!   stream's events the upstream's `data:` payloads byte for byte.
//! - `upstream_response.json` (`{"status", "headers", "body": JSON or a string}`) or
//!   `upstream_stream.txt` (a 200 SSE body, replayed in every two-way split and byte by byte).
//! - `expected.json`: `{"body": JSON, "usage": {...}}`, `{"events": [JSON...], "usage": {...}}`,
//!   or `{"error": {"kind", "message", "code", "param", "upstream_status"}}` (a stream error may
//!   come with `events` sent before it).
//!
//! In expected JSON, the string `"<any>"` matches any value (for `created` timestamps).

mod compare;
mod run;

pub use run::run_cases;
