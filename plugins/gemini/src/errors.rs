//! Google's error body, `{"error": {"code", "message", "status", "details"}}`, as typed errors.
//! The `status` is the gRPC code name, which says more than the HTTP status: a wrong API key is
//! a 400 `INVALID_ARGUMENT` whose details give the reason `API_KEY_INVALID`.

use serde::Deserialize;
use serde_json::Value;
use wasmgate_plugin_sdk::{ErrorKind, PluginError, error_kind_for_status, openai_error};

#[derive(Deserialize)]
#[serde(untagged)]
enum Envelope {
    Object {
        error: GoogleError,
    },
    /// Without `alt=sse`, a stream's error comes as a one-element array.
    Array([ErrorObject; 1]),
}

#[derive(Deserialize)]
struct ErrorObject {
    error: GoogleError,
}

#[derive(Debug, Deserialize)]
pub struct GoogleError {
    message: String,
    status: Option<String>,
    #[serde(default)]
    details: Vec<Value>,
}

pub fn http_error(status: u16, body: &[u8]) -> PluginError {
    match serde_json::from_slice::<Envelope>(body) {
        Ok(Envelope::Object { error } | Envelope::Array([ErrorObject { error }])) => {
            google_error(error, Some(status)).with_upstream_status(status)
        }
        Err(_) => openai_error(status, body),
    }
}

/// The typed error of a Google error object; `http_status` when it came with one.
pub fn google_error(error: GoogleError, http_status: Option<u16>) -> PluginError {
    let reason_is = |reason: &str| {
        error
            .details
            .iter()
            .any(|d| d.get("reason").and_then(Value::as_str) == Some(reason))
    };
    let kind = if reason_is("API_KEY_INVALID") {
        ErrorKind::Authentication
    } else {
        match (error.status.as_deref(), http_status) {
            (Some(status), _) if kind_of(status).is_some() => {
                kind_of(status).unwrap_or(ErrorKind::Upstream)
            }
            (_, Some(code)) => error_kind_for_status(code),
            (_, None) => ErrorKind::Upstream,
        }
    };
    let mut err = PluginError::new(kind, error.message);
    err.code = error.status;
    err
}

/// The kind of each gRPC status Google documents for the Gemini API.
fn kind_of(status: &str) -> Option<ErrorKind> {
    Some(match status {
        "INVALID_ARGUMENT" | "FAILED_PRECONDITION" | "OUT_OF_RANGE" => ErrorKind::InvalidRequest,
        "UNAUTHENTICATED" => ErrorKind::Authentication,
        "PERMISSION_DENIED" => ErrorKind::PermissionDenied,
        "NOT_FOUND" => ErrorKind::NotFound,
        "RESOURCE_EXHAUSTED" => ErrorKind::RateLimited,
        "DEADLINE_EXCEEDED" => ErrorKind::Timeout,
        "INTERNAL" | "UNAVAILABLE" | "UNKNOWN" => ErrorKind::Upstream,
        _ => return None,
    })
}
