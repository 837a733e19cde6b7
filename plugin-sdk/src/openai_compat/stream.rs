//! Streamed OpenAI chat completions: each `data:` event is already a canonical chunk and passes
//! through unchanged; the translator only watches for usage, errors and `[DONE]`.

use serde::Deserialize;
use serde_json::Value;

use crate::sse::SseEvent;
use crate::sse_stream::{EventTranslator, SseStream};
use crate::{PluginError, ProviderConfig, RequestInfo, Usage, openai_usage};

/// The decoder of an OpenAI-format stream.
pub type OpenAiStream = SseStream<OpenAiEvents>;

/// The [`EventTranslator`] of an OpenAI-format stream: see the [module docs](self).
#[derive(Debug, Default)]
pub struct OpenAiEvents {
    done: bool,
    usage: Option<Usage>,
}

/// The fields of a chunk looked at; serde skips the rest (the choices) unbuilt.
#[derive(Deserialize)]
struct Probe {
    usage: Option<Value>,
    error: Option<Value>,
}

impl EventTranslator for OpenAiEvents {
    fn new(_: ProviderConfig, _: RequestInfo, _: &[(String, String)]) -> Self {
        OpenAiEvents::default()
    }

    fn event(&mut self, event: SseEvent, out: &mut Vec<String>) -> Result<(), PluginError> {
        if self.done {
            return Ok(()); // anything after `[DONE]` is not part of the answer
        }
        let data = event.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        if event.event.as_deref() == Some("error") {
            let error = serde_json::from_str(data).unwrap_or(Value::Null);
            return Err(stream_error(error.get("error").unwrap_or(&error)));
        }
        let probe: Probe = serde_json::from_str(data).map_err(|_| {
            PluginError::upstream("upstream sent a stream event that is not a JSON object")
        })?;
        if let Some(error) = probe.error.filter(|e| !e.is_null()) {
            return Err(stream_error(&error));
        }
        if let Some(usage) = probe.usage.as_ref().and_then(openai_usage) {
            self.usage = Some(usage);
        }
        out.push(event.data);
        Ok(())
    }

    fn end(&mut self, _: &mut Vec<String>) -> Result<(), PluginError> {
        // Some compatible servers end without `[DONE]`; the chunks already sent are the answer.
        Ok(())
    }

    fn usage(&self) -> Option<Usage> {
        self.usage
    }
}

/// An error the upstream reported inside a stream that had started with a success status.
fn stream_error(error: &Value) -> PluginError {
    let message = match error {
        Value::String(s) => Some(s.as_str()),
        _ => error.get("message").and_then(Value::as_str),
    };
    let mut err = PluginError::upstream(message.unwrap_or("upstream failed during the stream"));
    err.code = error.get("code").and_then(|c| match c {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    });
    err
}
