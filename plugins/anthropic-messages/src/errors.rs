//! Errors in Anthropic's shape: `{"type": "error", "error": {"type", "message"}}`, as a response
//! body and as a stream's `error` event.

use serde_json::{Value, json};

/// Anthropic's error type for an HTTP status; statuses it does not name go by their class.
pub fn error_type(status: u16) -> &'static str {
    match status {
        401 => "authentication_error",
        402 => "billing_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        504 => "timeout_error",
        529 => "overloaded_error",
        400..=499 => "invalid_request_error",
        0..=399 | 500..=u16::MAX => "api_error",
    }
}

/// The error document for `status` with `message`.
pub fn error_json(status: u16, message: &str) -> Value {
    json!({"type": "error", "error": {"type": error_type(status), "message": message}})
}

/// The body of an error response.
pub fn body(status: u16, message: &str) -> String {
    error_json(status, message).to_string()
}
