//! Streamed answers: Cohere's typed events to OpenAI chunks.
//!
//! `message-start` gives the id (sent with the role chunk); `content-delta` and
//! `tool-plan-delta` become content; `tool-call-start` opens a tool call with its id and name,
//! `tool-call-delta` adds argument pieces; `message-end` gives the finish reason and usage,
//! sent as the finish chunk and the usage chunk. Citation events have no OpenAI counterpart.

use serde::Deserialize;
use wasmgate_plugin_sdk::chat::{ChunkWriter, unix_now};
use wasmgate_plugin_sdk::sse::SseEvent;
use wasmgate_plugin_sdk::sse_stream::EventTranslator;
use wasmgate_plugin_sdk::{PluginError, ProviderConfig, RequestInfo, Usage};

use crate::response::{CohereUsage, finish_reason};

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
enum StreamEvent {
    MessageStart {
        id: Option<String>,
    },
    ContentDelta {
        delta: Delta,
    },
    ToolPlanDelta {
        delta: Delta,
    },
    ToolCallStart {
        delta: Delta,
    },
    ToolCallDelta {
        delta: Delta,
    },
    MessageEnd {
        delta: EndDelta,
    },
    /// `content-start`, `content-end`, `tool-call-end`, citations, and later additions.
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct Delta {
    message: DeltaMessage,
}

#[derive(Deserialize)]
struct DeltaMessage {
    content: Option<DeltaContent>,
    tool_plan: Option<String>,
    /// One call per event, despite the plural name.
    tool_calls: Option<DeltaToolCall>,
}

#[derive(Deserialize)]
struct DeltaContent {
    /// Absent in `thinking` deltas of reasoning models, which carry `thinking` instead.
    text: Option<String>,
}

#[derive(Deserialize)]
struct DeltaToolCall {
    id: Option<String>,
    function: Option<DeltaFunction>,
}

#[derive(Deserialize)]
struct DeltaFunction {
    name: Option<String>,
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct EndDelta {
    finish_reason: Option<String>,
    usage: Option<CohereUsage>,
}

pub struct Events {
    writer: ChunkWriter,
    started: bool,
    ended: bool,
    /// Tool calls opened so far; the open one is the last.
    tool_calls: u32,
    usage: Option<CohereUsage>,
}

impl EventTranslator for Events {
    fn new(_: ProviderConfig, request: RequestInfo, _: &[(String, String)]) -> Self {
        Events {
            writer: ChunkWriter::new("cohere", request.model, unix_now()),
            started: false,
            ended: false,
            tool_calls: 0,
            usage: None,
        }
    }

    fn event(&mut self, event: SseEvent, out: &mut Vec<String>) -> Result<(), PluginError> {
        if self.ended {
            return Ok(());
        }
        let event: StreamEvent = serde_json::from_str(&event.data).map_err(|_| {
            PluginError::upstream("Cohere sent a stream event that could not be read")
        })?;
        // Cohere always starts with `message-start`; be lenient if a proxy dropped it.
        if !self.started {
            self.started = true;
            if let StreamEvent::MessageStart { id: Some(id) } = &event {
                self.writer.id.clone_from(id);
            }
            out.push(self.writer.role());
        }
        match event {
            StreamEvent::MessageStart { .. } | StreamEvent::Other => {}
            StreamEvent::ContentDelta { delta } => {
                if let Some(text) = delta.message.content.and_then(|c| c.text) {
                    out.push(self.writer.content(&text));
                }
            }
            StreamEvent::ToolPlanDelta { delta } => {
                if let Some(plan) = delta.message.tool_plan {
                    out.push(self.writer.content(&plan));
                }
            }
            StreamEvent::ToolCallStart { delta } => {
                let call = delta.message.tool_calls;
                let function = call.as_ref().and_then(|c| c.function.as_ref());
                let id = call
                    .as_ref()
                    .and_then(|c| c.id.as_deref())
                    .unwrap_or_default();
                let name = function.and_then(|f| f.name.as_deref()).unwrap_or_default();
                let arguments = function.and_then(|f| f.arguments.as_deref()).unwrap_or("");
                out.push(
                    self.writer
                        .tool_call_start(self.tool_calls, id, name, arguments),
                );
                self.tool_calls += 1;
            }
            StreamEvent::ToolCallDelta { delta } => {
                let fragment = delta
                    .message
                    .tool_calls
                    .and_then(|c| c.function)
                    .and_then(|f| f.arguments)
                    .filter(|a| !a.is_empty());
                if let (Some(fragment), Some(open)) = (fragment, self.tool_calls.checked_sub(1)) {
                    out.push(self.writer.tool_call_arguments(open, &fragment));
                }
            }
            StreamEvent::MessageEnd { delta } => {
                self.ended = true;
                self.usage = delta.usage.or(self.usage);
                let reason = finish_reason(delta.finish_reason.as_deref())?;
                out.push(self.writer.finish(reason));
                out.push(
                    self.writer
                        .usage(&self.usage.unwrap_or_default().to_usage()),
                );
            }
        }
        Ok(())
    }

    fn end(&mut self, _: &mut Vec<String>) -> Result<(), PluginError> {
        if self.ended {
            Ok(())
        } else {
            Err(PluginError::upstream(
                "Cohere's stream ended before the message was complete",
            ))
        }
    }

    fn usage(&self) -> Option<Usage> {
        self.usage.map(CohereUsage::to_usage)
    }
}
