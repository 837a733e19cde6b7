//! Anthropic's errors, `{"type": "error", "error": {"type", "message"}}`, as typed errors. The
//! same body comes with an error status, and as an `error` event inside a stream.

use serde::Deserialize;
use wasmgate_plugin_sdk::{ErrorKind, PluginError, error_kind_for_status, openai_error};

#[derive(Deserialize)]
struct Envelope {
    error: ErrorBody,
}

#[derive(Debug, Deserialize)]
pub struct ErrorBody {
    #[serde(rename = "type")]
    kind: String,
    message: String,
}

/// The error of a response with a non-success status.
pub fn http_error(status: u16, body: &[u8]) -> PluginError {
    match serde_json::from_slice::<Envelope>(body) {
        Ok(envelope) => {
            let kind = kind_of(&envelope.error.kind).unwrap_or(error_kind_for_status(status));
            to_error(envelope.error, kind).with_upstream_status(status)
        }
        // Not Anthropic's shape (a proxy's page, say): the generic reading of status and body.
        Err(_) => openai_error(status, body),
    }
}

/// The error of an `error` event in a stream. There is no status to go by, only the type.
pub fn stream_error(error: ErrorBody) -> PluginError {
    let kind = kind_of(&error.kind).unwrap_or(ErrorKind::Upstream);
    to_error(error, kind)
}

fn to_error(error: ErrorBody, kind: ErrorKind) -> PluginError {
    PluginError::new(kind, error.message).with_code(error.kind)
}

/// The kind of each documented error type. `overloaded_error` (HTTP 529) and `api_error` are
/// Anthropic's own failures; a new type falls back to the status.
fn kind_of(error_type: &str) -> Option<ErrorKind> {
    Some(match error_type {
        "invalid_request_error" | "request_too_large" => ErrorKind::InvalidRequest,
        "authentication_error" => ErrorKind::Authentication,
        "permission_error" => ErrorKind::PermissionDenied,
        "not_found_error" => ErrorKind::NotFound,
        "rate_limit_error" => ErrorKind::RateLimited,
        "api_error" | "overloaded_error" => ErrorKind::Upstream,
        "timeout_error" => ErrorKind::Timeout,
        _ => return None,
    })
}
