//! Streamed answers: canonical chunks as `streamGenerateContent` events, each a whole
//! `GenerateContentResponse` with the next parts and no `event:` name. Text goes out as it
//! comes; a function call goes out whole (Google sends calls whole), in the last event, with
//! the finish reason and the usage.

use wasmgate_plugin_sdk::canonical::{ChatChunk, Finish};
use wasmgate_plugin_sdk::{AnswerInfo, Event, Failure, StreamEncoder, Usage};

use crate::encode::{CandidateOut, ContentOut, PartOut, ResponseOut, UsageMetadata, finish_reason};
use crate::errors;

/// A tool call being streamed: its pieces of arguments joined.
struct PendingCall {
    id: String,
    name: String,
    arguments: String,
}

pub struct Encoder {
    info: AnswerInfo,
    calls: Vec<PendingCall>,
    finish: Option<Finish>,
    usage: Option<Usage>,
}

impl Encoder {
    fn event(
        &self,
        parts: Vec<PartOut>,
        finish: Option<Finish>,
        usage: Option<&Usage>,
    ) -> Result<Event, Failure> {
        let data = ResponseOut {
            candidates: vec![CandidateOut {
                content: ContentOut {
                    role: "model",
                    parts,
                },
                finish_reason: finish.map(finish_reason),
                index: 0,
            }],
            usage_metadata: usage.map(UsageMetadata::new),
            model_version: &self.info.model,
            response_id: &self.info.id,
        }
        .to_json()?;
        Ok(Event {
            name: String::new(),
            data,
        })
    }
}

impl StreamEncoder for Encoder {
    fn new(info: AnswerInfo) -> Self {
        Encoder {
            info,
            calls: Vec::new(),
            finish: None,
            usage: None,
        }
    }

    fn push(&mut self, chunk: &str) -> Result<Vec<Event>, Failure> {
        let chunk = ChatChunk::parse(chunk)?;
        if let Some(usage) = chunk.usage {
            self.usage = Some(usage.to_usage());
        }
        let Some((delta, finish)) = chunk.into_delta() else {
            return Ok(Vec::new());
        };
        if finish.is_some() {
            self.finish = finish;
        }
        let mut parts = Vec::new();
        if let Some(text) = delta.reasoning_content.filter(|t| !t.is_empty()) {
            parts.push(PartOut::text(text, true));
        }
        if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
            parts.push(PartOut::text(text, false));
        }
        if let Some(text) = delta.refusal.filter(|t| !t.is_empty()) {
            parts.push(PartOut::text(text, false));
        }
        for piece in delta.tool_calls.unwrap_or_default() {
            let index = piece.index as usize;
            while self.calls.len() <= index {
                let n = self.calls.len();
                self.calls.push(PendingCall {
                    id: format!("call_{n}"),
                    name: String::new(),
                    arguments: String::new(),
                });
            }
            let call = &mut self.calls[index];
            if let Some(id) = piece.id {
                call.id = id;
            }
            if let Some(function) = piece.function {
                if let Some(name) = function.name {
                    call.name.push_str(&name);
                }
                if let Some(arguments) = function.arguments {
                    call.arguments.push_str(&arguments);
                }
            }
        }
        if parts.is_empty() {
            return Ok(Vec::new());
        }
        Ok(vec![self.event(parts, None, None)?])
    }

    fn finish(&mut self, usage: Option<Usage>) -> Result<Vec<Event>, Failure> {
        let usage = usage.or(self.usage);
        let mut parts: Vec<PartOut> = std::mem::take(&mut self.calls)
            .into_iter()
            .map(|call| PartOut::call(call.id, call.name, &call.arguments))
            .collect();
        if parts.is_empty() {
            // The last event carries the finish reason; Google's always has a part.
            parts.push(PartOut::text(String::new(), false));
        }
        let finish = self.finish.unwrap_or(Finish::Stop);
        Ok(vec![self.event(parts, Some(finish), usage.as_ref())?])
    }

    fn fail(&mut self, status: u16, error: &Failure) -> Vec<Event> {
        vec![Event {
            name: String::new(),
            data: errors::body(status, &error.message),
        }]
    }
}
