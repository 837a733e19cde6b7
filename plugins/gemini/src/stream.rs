//! Streamed answers: each SSE event of `streamGenerateContent?alt=sse` is a whole
//! `GenerateContentResponse` holding the next parts. Text parts become content chunks; a
//! function call arrives whole, so it becomes one tool-call chunk with all its arguments. The
//! last event has the finish reason and the final usage; the finish and usage chunks are sent
//! when the body ends.

use serde::Deserialize;
use serde_json::value::RawValue;
use wasmgate_plugin_sdk::chat::{ChunkWriter, unix_now};
use wasmgate_plugin_sdk::sse::SseEvent;
use wasmgate_plugin_sdk::sse_stream::EventTranslator;
use wasmgate_plugin_sdk::{PluginError, ProviderConfig, RequestInfo, Usage};

use crate::errors::{GoogleError, google_error};
use crate::response::{GenerateContentResponse, UsageMetadata, finish_reason};

pub struct Events {
    writer: ChunkWriter,
    started: bool,
    tool_calls: u32,
    finish_reason: Option<String>,
    usage: Option<UsageMetadata>,
    /// Google's own events for a client of its API: passed on as they are, usage read.
    native: bool,
}

/// An event is either a response or, when the upstream fails mid-stream, an error.
#[derive(Deserialize)]
struct ErrorProbe {
    error: Option<Box<RawValue>>,
}

impl EventTranslator for Events {
    fn new(_: ProviderConfig, request: RequestInfo, _: &[(String, String)]) -> Self {
        Events {
            writer: ChunkWriter::new("gemini", request.model, unix_now()),
            started: false,
            tool_calls: 0,
            finish_reason: None,
            usage: None,
            native: request.native.is_some(),
        }
    }

    fn event(&mut self, event: SseEvent, out: &mut Vec<String>) -> Result<(), PluginError> {
        let unreadable =
            || PluginError::upstream("Gemini sent a stream event that could not be read");
        let probe: ErrorProbe = serde_json::from_str(&event.data).map_err(|_| unreadable())?;
        if let Some(error) = probe.error {
            let error: GoogleError = serde_json::from_str(error.get()).map_err(|_| unreadable())?;
            return Err(google_error(error, None));
        }
        if self.native {
            let response: crate::response::UsageOnly =
                serde_json::from_str(&event.data).map_err(|_| unreadable())?;
            if let Some(usage) = response.usage_metadata {
                self.usage = Some(usage);
            }
            out.push(event.data);
            return Ok(());
        }
        let response: GenerateContentResponse =
            serde_json::from_str(&event.data).map_err(|_| unreadable())?;
        if !self.started {
            self.started = true;
            if let Some(id) = response.response_id {
                self.writer.id = id;
            }
            if let Some(model) = response.model_version {
                self.writer.model = model;
            }
            out.push(self.writer.role());
        }
        if let Some(candidate) = response.candidates.into_iter().next() {
            let parts = candidate.content.map(|c| c.parts).unwrap_or_default();
            for part in parts.into_iter().filter(|p| !p.thought) {
                if let Some(text) = part.text.filter(|t| !t.is_empty()) {
                    out.push(self.writer.content(&text));
                }
                if let Some(call) = part.function_call {
                    let (id, arguments) = call.to_openai(self.tool_calls);
                    out.push(self.writer.tool_call_start(
                        self.tool_calls,
                        &id,
                        &call.name,
                        &arguments,
                    ));
                    self.tool_calls += 1;
                }
            }
            if candidate.finish_reason.is_some() {
                self.finish_reason = candidate.finish_reason;
            }
        } else if response
            .prompt_feedback
            .is_some_and(|f| f.block_reason.is_some())
        {
            self.finish_reason = Some("SAFETY".to_owned());
        }
        // Every event repeats the running totals; the last is the final count.
        if let Some(usage) = response.usage_metadata {
            self.usage = Some(usage);
        }
        Ok(())
    }

    fn end(&mut self, out: &mut Vec<String>) -> Result<(), PluginError> {
        if self.native {
            return Ok(());
        }
        if self.finish_reason.is_none() {
            return Err(PluginError::upstream(
                "Gemini's stream ended before the answer was complete",
            ));
        }
        let reason = finish_reason(self.finish_reason.as_deref(), self.tool_calls > 0);
        out.push(self.writer.finish(reason));
        out.push(
            self.writer
                .usage(&self.usage.unwrap_or_default().to_usage()),
        );
        Ok(())
    }

    fn usage(&self) -> Option<Usage> {
        self.usage.map(UsageMetadata::to_usage)
    }
}
