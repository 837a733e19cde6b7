//! Errors in OpenAI's shape, `{"error": {"message", "type", "param", "code"}}`, and the error of
//! a failed response.

use serde_json::{Value, json};
use wasmgate_plugin_sdk::{ErrorKind, Failure, error_kind_for_status, openai_type};

/// The body of an error response with HTTP `status`. A failure without an OpenAI type gets the
/// one its status means.
pub fn body(status: u16, error: &Failure) -> String {
    let kind = if error.openai_type.is_empty() {
        openai_type(error_kind_for_status(status))
    } else {
        error.openai_type.as_str()
    };
    json!({"error": {
        "message": error.message,
        "type": kind,
        "param": error.param,
        "code": error.code,
    }})
    .to_string()
}

/// The `error` of a failed response object: a code from the API's list, and the message.
pub fn response_error(error: &Failure) -> Value {
    let code = error.code.clone().unwrap_or_else(|| {
        match error.kind {
            ErrorKind::RateLimited => "rate_limit_exceeded",
            ErrorKind::InvalidRequest
            | ErrorKind::Authentication
            | ErrorKind::PermissionDenied
            | ErrorKind::NotFound
            | ErrorKind::Upstream
            | ErrorKind::Timeout => "server_error",
        }
        .to_owned()
    });
    json!({"code": code, "message": error.message})
}
