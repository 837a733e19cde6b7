//! Bedrock's errors as typed errors: `{"message": ...}` bodies with an error status (the type in
//! the `x-amzn-errortype` header or the body's `__type`), and `exception` messages of a stream.

use serde::Deserialize;
use wasmgate_plugin_sdk::{
    ErrorKind, HttpResponse, PluginError, error_kind_for_status, openai_error,
};

#[derive(Deserialize)]
struct ErrorBody {
    #[serde(alias = "Message")]
    message: Option<String>,
    #[serde(rename = "__type")]
    kind: Option<String>,
}

/// The error of a response with a non-success status.
pub fn http_error(response: &HttpResponse) -> PluginError {
    let status = response.status;
    let Ok(body) = serde_json::from_slice::<ErrorBody>(&response.body) else {
        // Not Bedrock's shape (a proxy's page, say): the generic reading of status and body.
        return openai_error(status, &response.body);
    };
    // `ValidationException:http://internal.amazon.com/...` or `com.amazon...#ValidationException`.
    let error_type = response
        .header("x-amzn-errortype")
        .map(|t| t.split(':').next().unwrap_or(t))
        .or(body
            .kind
            .as_deref()
            .map(|t| t.rsplit('#').next().unwrap_or(t)))
        .filter(|t| !t.is_empty())
        .map(str::to_owned);
    let Some(message) = body.message.filter(|m| !m.is_empty()) else {
        return openai_error(status, &response.body);
    };
    let kind = error_type
        .as_deref()
        .and_then(kind_of)
        .unwrap_or_else(|| error_kind_for_status(status));
    let mut err = PluginError::new(kind, message).with_upstream_status(status);
    err.code = error_type;
    err
}

/// The error of a stream message whose `:message-type` is `exception` (typed by
/// `:exception-type`, e.g. `throttlingException`) or `error` (`:error-code`, `:error-message`).
pub fn stream_error(error_type: Option<&str>, payload: &[u8]) -> PluginError {
    let message = serde_json::from_slice::<ErrorBody>(payload)
        .ok()
        .and_then(|b| b.message)
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| "Bedrock reported an error in the stream".to_owned());
    let kind = error_type.and_then(kind_of).unwrap_or(ErrorKind::Upstream);
    let err = PluginError::new(kind, message);
    match error_type {
        Some(t) => err.with_code(t),
        None => err,
    }
}

/// The kind of each documented Bedrock runtime exception, compared case-insensitively (streams
/// spell them with a lower-case first letter); a new type falls back to the status.
fn kind_of(error_type: &str) -> Option<ErrorKind> {
    Some(match error_type.to_ascii_lowercase().as_str() {
        "validationexception" | "serializationexception" => ErrorKind::InvalidRequest,
        "unrecognizedclientexception"
        | "invalidsignatureexception"
        | "incompletesignatureexception"
        | "missingauthenticationtokenexception"
        | "expiredtokenexception" => ErrorKind::Authentication,
        "accessdeniedexception" => ErrorKind::PermissionDenied,
        "resourcenotfoundexception" => ErrorKind::NotFound,
        "throttlingexception" | "servicequotaexceededexception" | "modelnotreadyexception" => {
            ErrorKind::RateLimited
        }
        "modeltimeoutexception" => ErrorKind::Timeout,
        "internalserverexception"
        | "serviceunavailableexception"
        | "modelerrorexception"
        | "modelstreamerrorexception" => ErrorKind::Upstream,
        _ => return None,
    })
}
