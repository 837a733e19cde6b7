//! The dialect plugin's encodings on the way out: a whole canonical answer, the stream
//! encoder, an error body, and the end of a native stream that broke.

use super::dialect_call::answered;
use super::translation::Translation;
use crate::error::{ApiError, Dialect};
use crate::pipeline::context::Context;
use crate::plugins::{DialectEvent, DialectPlugin, DialectStream, Failure, SlotKind, Usage};

/// Encodes a whole canonical answer in the client's dialect.
pub(super) async fn encode(
    cx: &mut Context,
    completion: &str,
    usage: Option<Usage>,
) -> Result<String, ApiError> {
    let tokens = cx.prompt_tokens();
    let Some(translation) = &cx.translation else {
        return Ok(completion.to_owned());
    };
    let info = translation.info(&cx.request.model, tokens);
    let mut call = translation
        .plugin
        .start(SlotKind::Call)
        .await
        .map_err(ApiError::plugin)?;
    answered(call.encode(&info, completion, usage).await)
}

/// A stream encoder for the client's dialect; `None` for Chat Completions.
pub(super) async fn encoder(cx: &mut Context) -> Result<Option<DialectStream>, ApiError> {
    let tokens = cx.prompt_tokens();
    let Some(translation) = &cx.translation else {
        return Ok(None);
    };
    let info = translation.info(&cx.request.model, tokens);
    let call = translation
        .plugin
        .start(SlotKind::Stream)
        .await
        .map_err(ApiError::plugin)?;
    call.open_stream(&info)
        .await
        .map(Some)
        .map_err(ApiError::plugin)
}

/// The body of an error in the client's dialect, written by its plugin; the host's own
/// rendering of the same shape when the plugin cannot.
pub async fn error_body(
    plugin: Option<DialectPlugin>,
    dialect: Dialect,
    error: &ApiError,
) -> String {
    let (status, fallback) = error.render(dialect);
    let Some(plugin) = plugin else {
        return fallback;
    };
    let written = match plugin.start(SlotKind::Call).await {
        Ok(mut call) => call.encode_error(status.as_u16(), &error.failure()).await,
        Err(failure) => Err(failure),
    };
    match written {
        Ok(body) if serde_json::from_str::<serde::de::IgnoredAny>(&body).is_ok() => body,
        Ok(_) => fallback,
        Err(failure) => {
            tracing::warn!("the dialect plugin could not write an error: {failure}");
            fallback
        }
    }
}

impl Translation {
    /// The events that end a native stream which broke, in the dialect's shape: its plugin's
    /// stream encoder's `fail`, as for a translated stream.
    pub async fn native_failure(
        &self,
        model: &str,
        status: u16,
        failure: &Failure,
    ) -> Option<Vec<DialectEvent>> {
        let call = self.plugin.start(SlotKind::Call).await.ok()?;
        let mut encoder = call.open_stream(&self.info(model, 0)).await.ok()?;
        encoder.fail(status, failure).await.ok()
    }
}
