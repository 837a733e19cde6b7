//! Errors in Google's shape: `{"error": {"code", "message", "status"}}`, `status` being the
//! canonical gRPC code name for the HTTP status.

use serde_json::json;

/// Google's `status` for an HTTP status.
pub fn status_name(status: u16) -> &'static str {
    match status {
        400 | 413 | 422 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 | 405 => "NOT_FOUND",
        409 => "ABORTED",
        429 => "RESOURCE_EXHAUSTED",
        499 => "CANCELLED",
        501 => "UNIMPLEMENTED",
        503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        500..=599 => "INTERNAL",
        _ => "FAILED_PRECONDITION",
    }
}

/// The error object, as a whole body and as a stream's last event.
pub fn value(status: u16, message: &str) -> serde_json::Value {
    json!({"error": {"code": status, "message": message, "status": status_name(status)}})
}

pub fn body(status: u16, message: &str) -> String {
    value(status, message).to_string()
}
