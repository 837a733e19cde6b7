//! Streamed answers: canonical chunks as Responses events, each with its `sequence_number`.
//!
//! The first chunk opens the response (`response.created`, `response.in_progress`). The text
//! is one message item, opened at its first delta; each tool call is a function-call item,
//! opened at its first piece. Items stay open until the end, so that an upstream that sends a
//! call's arguments after the next call started loses nothing; `finish` closes them in output
//! order (`…done` events with the whole text or arguments) and ends with `response.completed`
//! (`response.incomplete` when cut at the token limit) carrying the whole response.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use wasmgate_plugin_sdk::canonical::{ChatChunk, ChatUsage, ChunkToolCall, Finish};
use wasmgate_plugin_sdk::{AnswerInfo, Event, Failure, StreamEncoder, Usage, count_tokens};

use crate::errors::response_error;
use crate::response::{
    Status, call_item, echo, item_id, message_item, response_json, text_part, usage_json, usage_of,
};

enum Item {
    Message {
        id: String,
        text: String,
    },
    Call {
        id: String,
        call_id: String,
        name: String,
        arguments: String,
    },
}

pub struct Encoder {
    info: AnswerInfo,
    echo: BTreeMap<String, Value>,
    sequence: u64,
    started: bool,
    ended: bool,
    items: Vec<Item>,
    /// The output index of the message item, once opened.
    message: Option<usize>,
    /// The output index of each tool call, by canonical index.
    calls: BTreeMap<u32, usize>,
    finish: Option<Finish>,
    usage: Option<ChatUsage>,
}

impl Encoder {
    /// An event: its name is its type, and it gets the next sequence number.
    fn event(&mut self, mut data: Value, out: &mut Vec<Event>) {
        let name = data["type"].as_str().unwrap_or_default().to_owned();
        data["sequence_number"] = json!(self.sequence);
        self.sequence += 1;
        out.push(Event {
            name,
            data: data.to_string(),
        });
    }

    fn start(&mut self, out: &mut Vec<Event>) {
        if self.started {
            return;
        }
        self.started = true;
        for kind in ["response.created", "response.in_progress"] {
            let response = response_json(
                &self.info,
                &self.echo,
                Status::InProgress,
                Vec::new(),
                None,
                None,
            );
            self.event(json!({"type": kind, "response": response}), out);
        }
    }

    fn text(&mut self, text: &str, out: &mut Vec<Event>) {
        let index = match self.message {
            Some(index) => index,
            None => {
                let index = self.items.len();
                let id = item_id(&self.info, "msg", index);
                self.event(
                    json!({"type": "response.output_item.added", "output_index": index,
                    "item": message_item(&id, "", "in_progress")}),
                    out,
                );
                self.event(
                    json!({"type": "response.content_part.added", "item_id": id,
                    "output_index": index, "content_index": 0, "part": text_part("")}),
                    out,
                );
                self.items.push(Item::Message {
                    id,
                    text: String::new(),
                });
                self.message = Some(index);
                index
            }
        };
        let Some(Item::Message { id, text: all }) = self.items.get_mut(index) else {
            return;
        };
        all.push_str(text);
        // One per upstream token, the stream's most frequent event: written from typed fields
        // rather than a `Value` tree.
        #[derive(serde::Serialize)]
        struct TextDelta<'a> {
            r#type: &'static str,
            item_id: &'a str,
            output_index: usize,
            content_index: u32,
            delta: &'a str,
            logprobs: [(); 0],
            sequence_number: u64,
        }
        let data = TextDelta {
            r#type: "response.output_text.delta",
            item_id: id,
            output_index: index,
            content_index: 0,
            delta: text,
            logprobs: [],
            sequence_number: self.sequence,
        };
        self.sequence += 1;
        out.push(Event {
            name: data.r#type.to_owned(),
            data: serde_json::to_string(&data).unwrap_or_default(),
        });
    }

    fn tool_call(&mut self, call: ChunkToolCall, out: &mut Vec<Event>) {
        let function = call.function.unwrap_or_default();
        let index = match self.calls.get(&call.index) {
            Some(&index) => index,
            None => {
                let index = self.items.len();
                let id = item_id(&self.info, "fc", index);
                let call_id = call
                    .id
                    .unwrap_or_else(|| format!("call_{}_{}", self.info.id, call.index));
                let name = function.name.clone().unwrap_or_default();
                self.event(
                    json!({"type": "response.output_item.added", "output_index": index,
                    "item": call_item(&id, &call_id, &name, "", "in_progress")}),
                    out,
                );
                self.items.push(Item::Call {
                    id,
                    call_id,
                    name,
                    arguments: String::new(),
                });
                self.calls.insert(call.index, index);
                index
            }
        };
        let Some(arguments) = function.arguments.filter(|a| !a.is_empty()) else {
            return;
        };
        let Some(Item::Call {
            id, arguments: all, ..
        }) = self.items.get_mut(index)
        else {
            return;
        };
        all.push_str(&arguments);
        let id = id.clone();
        self.event(
            json!({"type": "response.function_call_arguments.delta", "item_id": id,
            "output_index": index, "delta": arguments}),
            out,
        );
    }

    /// The output items as they stand, with `status`.
    fn output(&self, status: &str) -> Vec<Value> {
        self.items
            .iter()
            .map(|item| match item {
                Item::Message { id, text } => message_item(id, text, status),
                Item::Call {
                    id,
                    call_id,
                    name,
                    arguments,
                } => call_item(id, call_id, name, arguments, status),
            })
            .collect()
    }

    /// What was generated, to estimate the output tokens of a stream that ended without usage.
    fn generated(&self) -> String {
        self.items
            .iter()
            .map(|item| match item {
                Item::Message { text, .. } => text.as_str(),
                Item::Call { arguments, .. } => arguments.as_str(),
            })
            .collect()
    }
}

impl StreamEncoder for Encoder {
    fn new(info: AnswerInfo) -> Self {
        Encoder {
            echo: echo(&info),
            info,
            sequence: 0,
            started: false,
            ended: false,
            items: Vec::new(),
            message: None,
            calls: BTreeMap::new(),
            finish: None,
            usage: None,
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
        for text in [delta.content, delta.refusal].into_iter().flatten() {
            if !text.is_empty() {
                self.text(&text, &mut out);
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
        self.ended = true;
        let mut out = Vec::new();
        self.start(&mut out);
        let status = Status::of(self.finish.unwrap_or(Finish::Stop));
        let item_status = status.item_status();
        let done = self.output(item_status);
        let items = std::mem::take(&mut self.items);
        for ((index, item), done) in items.iter().enumerate().zip(&done) {
            match item {
                Item::Message { id, text } => {
                    self.event(
                        json!({"type": "response.output_text.done", "item_id": id,
                        "output_index": index, "content_index": 0, "text": text, "logprobs": []}),
                        &mut out,
                    );
                    self.event(
                        json!({"type": "response.content_part.done", "item_id": id,
                        "output_index": index, "content_index": 0, "part": text_part(text)}),
                        &mut out,
                    );
                }
                Item::Call {
                    id,
                    name,
                    arguments,
                    ..
                } => {
                    self.event(
                        json!({"type": "response.function_call_arguments.done", "item_id": id,
                        "output_index": index, "name": name, "arguments": arguments}),
                        &mut out,
                    );
                }
            }
            self.event(
                json!({"type": "response.output_item.done", "output_index": index, "item": done}),
                &mut out,
            );
        }
        self.items = items;
        let reasoning = self.usage.and_then(|u| u.reasoning_tokens());
        let usage = match (usage, self.usage) {
            (None, None) => Usage::tokens(
                u64::from(self.info.estimated_input_tokens),
                u64::from(count_tokens(&self.generated())),
            ),
            (host, answer) => usage_of(host, answer),
        };
        let response = response_json(
            &self.info,
            &self.echo,
            status,
            done,
            Some(usage_json(&usage, reasoning)),
            None,
        );
        let kind = match status {
            Status::Incomplete(_) => "response.incomplete",
            Status::InProgress | Status::Completed | Status::Failed => "response.completed",
        };
        self.event(json!({"type": kind, "response": response}), &mut out);
        Ok(out)
    }

    fn fail(&mut self, _status: u16, error: &Failure) -> Vec<Event> {
        if self.ended {
            return Vec::new();
        }
        self.ended = true;
        let mut out = Vec::new();
        self.start(&mut out);
        self.event(
            json!({"type": "error", "code": error.code, "message": error.message,
            "param": error.param}),
            &mut out,
        );
        let output = self.output(Status::Failed.item_status());
        let response = response_json(
            &self.info,
            &self.echo,
            Status::Failed,
            output,
            None,
            Some(response_error(error)),
        );
        self.event(
            json!({"type": "response.failed", "response": response}),
            &mut out,
        );
        out
    }
}
