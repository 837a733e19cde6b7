//! Streamed answers: ConverseStream's event-stream messages to OpenAI chunks.
//!
//! Each message's `:event-type` header names the event and its payload is the event's JSON.
//! `messageStart` becomes the role chunk; `contentBlockStart` with a `toolUse` starts a tool call
//! (Bedrock's block index maps to OpenAI's tool-call index, counted over tool calls only);
//! `contentBlockDelta` carries text or a piece of the tool input; `messageStop` gives the stop
//! reason (the finish chunk) and `metadata` the usage (the last chunk, with no choices). A
//! message whose `:message-type` is `exception` or `error` ends the stream with its error.
//!
//! The response's `content-type` is not checked: a body in any other format fails the prelude
//! checksum of its first bytes.

use std::collections::BTreeMap;

use serde::Deserialize;
use wasmgate_plugin_sdk::chat::{ChunkWriter, unix_now};
use wasmgate_plugin_sdk::{PluginError, ProviderConfig, RequestInfo, StreamDecoder, StreamOutput};

use crate::errors::stream_error;
use crate::eventstream::{self, Message};
use crate::response::{TokenUsage, completion_id, finish_reason};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BlockStart {
    content_block_index: u64,
    start: Option<StartKind>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StartKind {
    tool_use: Option<StartToolUse>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StartToolUse {
    tool_use_id: String,
    name: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BlockDelta {
    content_block_index: u64,
    delta: Delta,
}

/// Text, a piece of tool input, or a kind with no place in OpenAI's chunks (reasoning).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Delta {
    text: Option<String>,
    tool_use: Option<ToolUseDelta>,
}

#[derive(Deserialize)]
struct ToolUseDelta {
    #[serde(default)]
    input: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MessageStop {
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
struct Metadata {
    usage: Option<TokenUsage>,
}

pub struct Events {
    frames: eventstream::Decoder,
    writer: ChunkWriter,
    started: bool,
    stopped: bool,
    done: bool,
    /// OpenAI tool-call index of each tool-use block.
    tools: BTreeMap<u64, u32>,
    usage: Option<TokenUsage>,
    /// An error met after some chunks of the same call: those went out first.
    pending_error: Option<PluginError>,
}

fn read<'a, T: Deserialize<'a>>(message: &'a Message, event: &str) -> Result<T, PluginError> {
    serde_json::from_slice(&message.payload).map_err(|_| {
        PluginError::upstream(format!(
            "Bedrock sent a `{event}` event that could not be read"
        ))
    })
}

impl Events {
    fn event(&mut self, message: &Message, out: &mut Vec<String>) -> Result<(), PluginError> {
        match message.header(":message-type") {
            Some("event") | None => {}
            Some("exception") => {
                return Err(stream_error(
                    message.header(":exception-type"),
                    &message.payload,
                ));
            }
            Some("error") => {
                let mut err = stream_error(message.header(":error-code"), b"");
                if let Some(text) = message.header(":error-message") {
                    err.message = text.to_owned();
                }
                return Err(err);
            }
            Some(_) => return Ok(()),
        }
        if self.done {
            return Ok(());
        }
        let event = message.header(":event-type").unwrap_or_default();
        match event {
            "messageStart" if !self.started => {
                self.started = true;
                out.push(self.writer.role());
            }
            "contentBlockStart" => {
                let start: BlockStart = read(message, event)?;
                if let Some(tool) = start.start.and_then(|s| s.tool_use) {
                    let n = u32::try_from(self.tools.len()).unwrap_or(u32::MAX);
                    self.tools.insert(start.content_block_index, n);
                    out.push(
                        self.writer
                            .tool_call_start(n, &tool.tool_use_id, &tool.name, ""),
                    );
                }
            }
            "contentBlockDelta" => {
                let delta: BlockDelta = read(message, event)?;
                if let Some(text) = delta.delta.text.filter(|t| !t.is_empty()) {
                    out.push(self.writer.content(&text));
                }
                let index = self.tools.get(&delta.content_block_index).copied();
                if let (Some(n), Some(tool)) = (index, delta.delta.tool_use)
                    && !tool.input.is_empty()
                {
                    out.push(self.writer.tool_call_arguments(n, &tool.input));
                }
            }
            "messageStop" => {
                let stop: MessageStop = read(message, event)?;
                let reason = finish_reason(stop.stop_reason.as_deref(), !self.tools.is_empty());
                out.push(self.writer.finish(reason));
                self.stopped = true;
            }
            "metadata" => {
                let metadata: Metadata = read(message, event)?;
                let usage = metadata.usage.unwrap_or_default();
                self.usage = Some(usage);
                out.push(self.writer.usage(&usage.to_usage()));
                self.done = true;
            }
            // contentBlockStop, and event types added later.
            _ => {}
        }
        Ok(())
    }

    fn decode(&mut self, bytes: &[u8], end: bool) -> Result<StreamOutput, PluginError> {
        if let Some(err) = self.pending_error.clone() {
            return Err(err);
        }
        let mut out = Vec::new();
        let mut result = self.frames.push(bytes).and_then(|messages| {
            messages
                .iter()
                .try_for_each(|message| self.event(message, &mut out))
        });
        if end && result.is_ok() {
            result = self.end();
        }
        match result {
            Ok(()) => {}
            // No later call will come to report it after `finish`: the error wins there.
            Err(err) if out.is_empty() || end => {
                self.pending_error = Some(err.clone());
                return Err(err);
            }
            Err(err) => self.pending_error = Some(err),
        }
        Ok(StreamOutput {
            events: out,
            usage: self.usage.map(TokenUsage::to_usage),
        })
    }

    fn end(&self) -> Result<(), PluginError> {
        if self.frames.has_partial() {
            Err(PluginError::upstream(
                "Bedrock's event stream ended inside a message",
            ))
        } else if self.stopped {
            // `metadata` (the usage) normally follows `messageStop`; without it there is no
            // usage to report, but the answer itself is complete.
            Ok(())
        } else if self.started {
            Err(PluginError::upstream(
                "Bedrock's stream ended before the message was complete",
            ))
        } else {
            Err(PluginError::upstream(
                "Bedrock's stream ended without a message",
            ))
        }
    }
}

impl StreamDecoder for Events {
    fn new(_: ProviderConfig, request: RequestInfo, headers: &[(String, String)]) -> Self {
        Events {
            frames: eventstream::Decoder::default(),
            writer: ChunkWriter::new(completion_id(headers), request.model, unix_now()),
            started: false,
            stopped: false,
            done: false,
            tools: BTreeMap::new(),
            usage: None,
            pending_error: None,
        }
    }

    fn push(&mut self, bytes: &[u8]) -> Result<StreamOutput, PluginError> {
        self.decode(bytes, false)
    }

    fn finish(&mut self) -> Result<StreamOutput, PluginError> {
        self.decode(&[], true)
    }
}
