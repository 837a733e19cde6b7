//! Streamed answers: Anthropic's events to OpenAI chunks.
//!
//! `message_start` gives the id and the input usage (sent as the role chunk), each content
//! block's start and deltas become content or tool-call chunks (Anthropic's block index maps to
//! OpenAI's tool-call index, counted over tool calls only), `message_delta` gives the stop
//! reason and output usage, and `message_stop` ends the answer with the finish chunk and the
//! usage chunk.

use std::collections::BTreeMap;

use serde::Deserialize;
use wasmgate_plugin_sdk::chat::{ChunkWriter, unix_now};
use wasmgate_plugin_sdk::sse::SseEvent;
use wasmgate_plugin_sdk::sse_stream::EventTranslator;
use wasmgate_plugin_sdk::{PluginError, ProviderConfig, RequestInfo, Usage};

use crate::JSON_TOOL;
use crate::errors::{ErrorBody, stream_error};
use crate::response::{AnthropicUsage, DeltaUsage, finish_reason};

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StreamEvent {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: u64,
        content_block: StartBlock,
    },
    ContentBlockDelta {
        index: u64,
        delta: Delta,
    },
    MessageDelta {
        delta: MessageDelta,
        usage: Option<DeltaUsage>,
    },
    MessageStop {},
    Error {
        error: ErrorBody,
    },
    /// `ping`, `content_block_stop`, and event types added later, which the docs ask clients
    /// to ignore.
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct StartMessage {
    id: String,
    model: Option<String>,
    #[serde(default)]
    usage: AnthropicUsage,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StartBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type")]
enum Delta {
    #[serde(rename = "text_delta")]
    Text { text: String },
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: String },
    /// Thinking, signatures, citations.
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct MessageDelta {
    stop_reason: Option<String>,
}

/// What a content block turns into.
#[derive(Clone, Copy)]
enum BlockKind {
    Text,
    /// A tool call, with its OpenAI index.
    Tool(u32),
    /// The JSON-output tool: its input is the answer's text.
    Json,
    Ignored,
}

pub struct Events {
    writer: ChunkWriter,
    started: bool,
    stopped: bool,
    blocks: BTreeMap<u64, BlockKind>,
    tool_calls: u32,
    stop_reason: Option<String>,
    usage: Option<AnthropicUsage>,
}

impl EventTranslator for Events {
    fn new(_: ProviderConfig, request: RequestInfo, _: &[(String, String)]) -> Self {
        Events {
            writer: ChunkWriter::new("", request.model, unix_now()),
            started: false,
            stopped: false,
            blocks: BTreeMap::new(),
            tool_calls: 0,
            stop_reason: None,
            usage: None,
        }
    }

    fn event(&mut self, event: SseEvent, out: &mut Vec<String>) -> Result<(), PluginError> {
        if self.stopped {
            return Ok(());
        }
        let event: StreamEvent = serde_json::from_str(&event.data).map_err(|_| {
            PluginError::upstream("Anthropic sent a stream event that could not be read")
        })?;
        match event {
            StreamEvent::MessageStart { message } => {
                self.writer.id = message.id;
                if let Some(model) = message.model {
                    self.writer.model = model;
                }
                self.usage = Some(message.usage);
                self.started = true;
                out.push(self.writer.role());
            }
            StreamEvent::ContentBlockStart {
                index,
                content_block,
            } => {
                let kind = match content_block {
                    StartBlock::Text { text } => {
                        if !text.is_empty() {
                            out.push(self.writer.content(&text));
                        }
                        BlockKind::Text
                    }
                    StartBlock::ToolUse { name, .. } if name == JSON_TOOL => BlockKind::Json,
                    StartBlock::ToolUse { id, name } => {
                        let n = self.tool_calls;
                        self.tool_calls += 1;
                        out.push(self.writer.tool_call_start(n, &id, &name, ""));
                        BlockKind::Tool(n)
                    }
                    StartBlock::Other => BlockKind::Ignored,
                };
                self.blocks.insert(index, kind);
            }
            StreamEvent::ContentBlockDelta { index, delta } => {
                let kind = self
                    .blocks
                    .get(&index)
                    .copied()
                    .unwrap_or(BlockKind::Ignored);
                match (kind, delta) {
                    (BlockKind::Text, Delta::Text { text }) => {
                        out.push(self.writer.content(&text));
                    }
                    (BlockKind::Tool(n), Delta::InputJson { partial_json })
                        if !partial_json.is_empty() =>
                    {
                        out.push(self.writer.tool_call_arguments(n, &partial_json));
                    }
                    (BlockKind::Json, Delta::InputJson { partial_json })
                        if !partial_json.is_empty() =>
                    {
                        out.push(self.writer.content(&partial_json));
                    }
                    _ => {}
                }
            }
            StreamEvent::MessageDelta { delta, usage } => {
                self.stop_reason = delta.stop_reason.or(self.stop_reason.take());
                if let Some(delta) = usage {
                    self.usage
                        .get_or_insert_with(AnthropicUsage::default)
                        .merge(&delta);
                }
            }
            StreamEvent::MessageStop {} => {
                let reason = finish_reason(self.stop_reason.as_deref(), self.tool_calls > 0);
                out.push(self.writer.finish(reason));
                let usage = self.usage.unwrap_or_default().to_usage();
                out.push(self.writer.usage(&usage));
                self.stopped = true;
            }
            StreamEvent::Error { error } => return Err(stream_error(error)),
            StreamEvent::Other => {}
        }
        Ok(())
    }

    fn end(&mut self, _: &mut Vec<String>) -> Result<(), PluginError> {
        if self.stopped {
            Ok(())
        } else if self.started {
            Err(PluginError::upstream(
                "Anthropic's stream ended before the message was complete",
            ))
        } else {
            Err(PluginError::upstream(
                "Anthropic's stream ended without a message",
            ))
        }
    }

    fn usage(&self) -> Option<Usage> {
        self.usage.map(AnthropicUsage::to_usage)
    }
}

#[cfg(test)]
mod tests {
    use wasmgate_plugin_sdk::chat::FinishReason;

    use super::*;

    #[test]
    fn finish_reasons() {
        assert_eq!(finish_reason(Some("end_turn"), false), FinishReason::Stop);
        assert_eq!(
            finish_reason(Some("stop_sequence"), false),
            FinishReason::Stop
        );
        assert_eq!(
            finish_reason(Some("max_tokens"), true),
            FinishReason::Length
        );
        assert_eq!(
            finish_reason(Some("tool_use"), true),
            FinishReason::ToolCalls
        );
        assert_eq!(finish_reason(Some("tool_use"), false), FinishReason::Stop);
        assert_eq!(
            finish_reason(Some("refusal"), false),
            FinishReason::ContentFilter
        );
        assert_eq!(finish_reason(None, false), FinishReason::Stop);
    }
}
