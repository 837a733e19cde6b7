//! Streamed chat completions: OpenAI's SSE chunks are already canonical, so each `data:` event
//! passes through unchanged; the decoder only watches for usage, errors and `[DONE]`.

use serde::Deserialize;
use serde_json::Value;
use wasmgate_plugin_sdk::sse::{SseEvent, SseParser};
use wasmgate_plugin_sdk::{
    PluginError, ProviderConfig, RequestInfo, StreamDecoder, StreamOutput, Usage, openai_usage,
};

pub struct Decoder {
    sse: SseParser,
    done: bool,
    usage: Option<Usage>,
    /// An error found after some events of the same push: those events go out first.
    pending_error: Option<PluginError>,
}

/// The fields of a chunk the decoder looks at; serde skips the rest (the choices) unbuilt.
#[derive(Deserialize)]
struct Probe {
    usage: Option<Value>,
    error: Option<Value>,
}

impl StreamDecoder for Decoder {
    fn new(_: ProviderConfig, _: RequestInfo, _: &[(String, String)]) -> Self {
        Decoder {
            sse: SseParser::new(),
            done: false,
            usage: None,
            pending_error: None,
        }
    }

    fn push(&mut self, bytes: &[u8]) -> Result<StreamOutput, PluginError> {
        if let Some(err) = self.pending_error.take() {
            return Err(err);
        }
        let events = self.sse.push(bytes);
        self.translate(events)
    }

    fn finish(&mut self) -> Result<StreamOutput, PluginError> {
        if let Some(err) = self.pending_error.take() {
            return Err(err);
        }
        let last = self.sse.finish();
        let out = self.translate(last)?;
        match self.pending_error.take() {
            // No later call will come to report it: the error wins over the last events.
            Some(err) => Err(err),
            None => Ok(out),
        }
    }
}

impl Decoder {
    fn translate(
        &mut self,
        events: impl IntoIterator<Item = SseEvent>,
    ) -> Result<StreamOutput, PluginError> {
        let mut out = Vec::new();
        for event in events {
            if self.done {
                break; // anything after `[DONE]` is not part of the answer
            }
            match self.read(event) {
                Ok(Some(data)) => out.push(data),
                Ok(None) => {}
                Err(err) if out.is_empty() => return Err(err),
                Err(err) => {
                    self.pending_error = Some(err);
                    break;
                }
            }
        }
        Ok(StreamOutput {
            events: out,
            usage: self.usage,
        })
    }

    /// The event to pass on, if any.
    fn read(&mut self, event: SseEvent) -> Result<Option<String>, PluginError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(None);
        }
        if data.is_empty() {
            return Ok(None);
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
        Ok(Some(event.data))
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
