//! A dialect plugin's calls outside a request's answer: its outcome as the error the client
//! sees, and a `list-models` or `get-model` route written in the dialect's shape.

use crate::error::ApiError;
use crate::plugins::{Failure, Matched, PluginError, PluginFailure, SlotKind};

/// A dialect plugin call's outcome: its value, or the error the client sees (the plugin
/// failed, or it refused the request in its own terms).
pub fn answered<T>(called: Result<Result<T, Failure>, PluginFailure>) -> Result<T, ApiError> {
    called
        .map_err(ApiError::plugin)?
        .map_err(|failure| ApiError::DialectRejected(plugin_error(failure)))
}

/// A dialect plugin's failure as the host's typed plugin error.
fn plugin_error(failure: Failure) -> PluginError {
    PluginError {
        kind: failure.kind,
        message: failure.message,
        param: failure.param,
        code: failure.code,
        upstream_status: None,
    }
}

/// A `list-models` or `get-model` route's body: the gateway's `list` (OpenAI's JSON) in the
/// dialect's shape.
pub async fn models(edge: &Matched, list: &str) -> Result<String, ApiError> {
    let mut call = edge
        .dialect
        .plugin
        .start(SlotKind::Call)
        .await
        .map_err(ApiError::plugin)?;
    answered(call.encode_models(&edge.route().name, list).await)
}
