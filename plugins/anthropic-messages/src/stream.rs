//! Streamed answers: canonical chunks as Messages events.
//!
//! The first chunk opens the message (`message_start`, with the host's estimate of the input
//! tokens, as Anthropic reports them before any output, then a `ping`). Reasoning, text and each
//! tool call are content blocks, one open at a time: a delta of another kind (or a new tool call)
//! closes the open block and starts the next. `finish` closes the last block and reports the
//! stop reason and usage (`message_delta`), then `message_stop`.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use wasmgate_plugin_sdk::canonical::{ChatChunk, ChatUsage, ChunkToolCall, Finish};
use wasmgate_plugin_sdk::{AnswerInfo, Event, Failure, StreamEncoder, Usage, count_tokens};

use crate::encode::{MessageUsage, stop_reason, usage_of};
use crate::errors::error_json;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Thinking,
    Text,
    /// A tool call, by its canonical index.
    Tool(u32),
}

pub struct Encoder {
    info: AnswerInfo,
    started: bool,
    ended: bool,
    /// The open block: its index and kind.
    open: Option<(u32, Kind)>,
    blocks: u32,
    /// Block index of each tool call, by canonical index.
    tools: BTreeMap<u32, u32>,
    finish: Option<Finish>,
    usage: Option<ChatUsage>,
    /// What was generated, to estimate the output tokens of a stream that ends without usage.
    generated: String,
}

/// The `delta` of a `content_block_delta`, by block kind.
#[derive(serde::Serialize)]
#[serde(tag = "type")]
enum Delta<'a> {
    #[serde(rename = "thinking_delta")]
    Thinking { thinking: &'a str },
    #[serde(rename = "text_delta")]
    Text { text: &'a str },
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: &'a str },
}

fn event(data: Value) -> Event {
    let name = data["type"].as_str().unwrap_or_default().to_owned();
    Event {
        name,
        data: data.to_string(),
    }
}

impl Encoder {
    fn start(&mut self, out: &mut Vec<Event>) {
        if self.started {
            return;
        }
        self.started = true;
        let usage = Usage::tokens(u64::from(self.info.estimated_input_tokens), 0);
        out.push(event(json!({
            "type": "message_start",
            "message": {
                "id": self.info.id,
                "type": "message",
                "role": "assistant",
                "model": self.info.model,
                "content": [],
                "stop_reason": null,
                "stop_sequence": null,
                "usage": MessageUsage::new(&usage),
            },
        })));
        out.push(event(json!({"type": "ping"})));
    }

    fn close(&mut self, out: &mut Vec<Event>) {
        if let Some((index, _)) = self.open.take() {
            out.push(event(json!({"type": "content_block_stop", "index": index})));
        }
    }

    /// Opens a block of `kind` unless it is the open one; returns its index.
    fn open(&mut self, kind: Kind, block: Value, out: &mut Vec<Event>) -> u32 {
        match self.open {
            Some((index, open)) if open == kind => index,
            _ => {
                self.close(out);
                let index = self.blocks;
                self.blocks += 1;
                out.push(event(json!({
                    "type": "content_block_start",
                    "index": index,
                    "content_block": block,
                })));
                self.open = Some((index, kind));
                index
            }
        }
    }

    /// A `content_block_delta`, written from typed fields: one per upstream token, the
    /// stream's most frequent event, so it skips building a `Value` tree.
    fn delta(index: u32, delta: Delta<'_>, out: &mut Vec<Event>) {
        #[derive(serde::Serialize)]
        struct BlockDelta<'a> {
            r#type: &'static str,
            index: u32,
            delta: Delta<'a>,
        }
        let data = BlockDelta {
            r#type: "content_block_delta",
            index,
            delta,
        };
        out.push(Event {
            name: "content_block_delta".to_owned(),
            data: serde_json::to_string(&data).unwrap_or_default(),
        });
    }

    fn tool_call(&mut self, call: ChunkToolCall, out: &mut Vec<Event>) {
        let function = call.function.unwrap_or_default();
        let index = match self.tools.get(&call.index) {
            Some(&index) => index,
            None => {
                let id = call
                    .id
                    .unwrap_or_else(|| format!("toolu_{}_{}", self.info.id, call.index));
                let name = function.name.unwrap_or_default();
                let block = json!({"type": "tool_use", "id": id, "name": name, "input": {}});
                let index = self.open(Kind::Tool(call.index), block, out);
                self.tools.insert(call.index, index);
                index
            }
        };
        if let Some(arguments) = function.arguments.filter(|a| !a.is_empty()) {
            // An upstream that went back to an earlier call after starting the next (none
            // known does) gets its deltas on the earlier block's index: late, but not lost.
            self.generated.push_str(&arguments);
            Self::delta(
                index,
                Delta::InputJson {
                    partial_json: &arguments,
                },
                out,
            );
        }
    }
}

impl StreamEncoder for Encoder {
    fn new(info: AnswerInfo) -> Self {
        Encoder {
            info,
            started: false,
            ended: false,
            open: None,
            blocks: 0,
            tools: BTreeMap::new(),
            finish: None,
            usage: None,
            generated: String::new(),
        }
    }

    fn push(&mut self, chunk: &str) -> Result<Vec<Event>, Failure> {
        if self.ended {
            return Ok(Vec::new());
        }
        let chunk = ChatChunk::parse(chunk)?;
        let mut out = Vec::new();
        self.start(&mut out);
        if let Some(usage) = chunk.usage {
            self.usage = Some(usage);
        }
        let Some((delta, finish)) = chunk.into_delta() else {
            return Ok(out);
        };
        if let Some(thinking) = delta.reasoning_content.filter(|t| !t.is_empty()) {
            let index = self.open(
                Kind::Thinking,
                json!({"type": "thinking", "thinking": "", "signature": ""}),
                &mut out,
            );
            self.generated.push_str(&thinking);
            Self::delta(
                index,
                Delta::Thinking {
                    thinking: &thinking,
                },
                &mut out,
            );
        }
        for text in [delta.content, delta.refusal].into_iter().flatten() {
            if !text.is_empty() {
                let index = self.open(Kind::Text, json!({"type": "text", "text": ""}), &mut out);
                self.generated.push_str(&text);
                Self::delta(index, Delta::Text { text: &text }, &mut out);
            }
        }
        for call in delta.tool_calls.unwrap_or_default() {
            self.tool_call(call, &mut out);
        }
        if finish.is_some() {
            self.finish = finish;
        }
        Ok(out)
    }

    fn finish(&mut self, usage: Option<Usage>) -> Result<Vec<Event>, Failure> {
        if self.ended {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        self.start(&mut out);
        self.close(&mut out);
        let usage = match (usage, self.usage) {
            (None, None) => Usage::tokens(
                u64::from(self.info.estimated_input_tokens),
                u64::from(count_tokens(&self.generated)),
            ),
            (host, answer) => usage_of(host, answer),
        };
        let reason = stop_reason(self.finish.unwrap_or(Finish::Stop), !self.tools.is_empty());
        out.push(event(json!({
            "type": "message_delta",
            "delta": {"stop_reason": reason, "stop_sequence": null},
            "usage": MessageUsage::new(&usage),
        })));
        out.push(event(json!({"type": "message_stop"})));
        self.ended = true;
        Ok(out)
    }

    fn fail(&mut self, status: u16, error: &Failure) -> Vec<Event> {
        self.ended = true;
        vec![event(error_json(status, &error.message))]
    }
}
