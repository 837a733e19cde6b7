//! Complete answers: an Anthropic `message` to a `chat.completion`.

use serde::Deserialize;
use serde_json::value::RawValue;
use wasmgate_plugin_sdk::chat::{
    FinishReason, assistant_message, compact_json, completion_body, tool_call_json, unix_now,
};
use wasmgate_plugin_sdk::{Completion, PluginError, RequestInfo, Usage};

use crate::JSON_TOOL;

#[derive(Deserialize)]
struct MessageResponse {
    id: String,
    model: Option<String>,
    content: Vec<ResponseBlock>,
    stop_reason: Option<String>,
    #[serde(default)]
    usage: AnthropicUsage,
}

/// A content block. A struct rather than a tagged enum: serde cannot read a [`RawValue`] through
/// an enum's buffering, and the raw `input` keeps the key order the model wrote the arguments in.
/// Thinking, server tool results and block types added later have no place in OpenAI's message.
#[derive(Deserialize)]
struct ResponseBlock {
    #[serde(rename = "type")]
    kind: String,
    text: Option<String>,
    id: Option<String>,
    name: Option<String>,
    input: Option<Box<RawValue>>,
}

/// Anthropic's usage. `input_tokens` counts only the tokens after the last cache breakpoint;
/// the cache reads and writes come on top.
#[derive(Clone, Copy, Debug, Default, Deserialize)]
pub struct AnthropicUsage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    pub cache_creation_input_tokens: Option<u64>,
    pub cache_read_input_tokens: Option<u64>,
}

/// The counts in `message_delta` are running totals; newer API versions repeat the input ones.
#[derive(Clone, Copy, Debug, Default, Deserialize)]
pub struct DeltaUsage {
    output_tokens: Option<u64>,
    input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
}

impl AnthropicUsage {
    /// Takes the counts a `message_delta` reports, each replacing the one before it.
    pub fn merge(&mut self, delta: &DeltaUsage) {
        self.output_tokens = delta.output_tokens.unwrap_or(self.output_tokens);
        self.input_tokens = delta.input_tokens.unwrap_or(self.input_tokens);
        self.cache_creation_input_tokens = delta
            .cache_creation_input_tokens
            .or(self.cache_creation_input_tokens);
        self.cache_read_input_tokens = delta
            .cache_read_input_tokens
            .or(self.cache_read_input_tokens);
    }

    /// As the gateway counts it: input includes the cache reads and writes.
    pub fn to_usage(self) -> Usage {
        let read = self.cache_read_input_tokens.unwrap_or(0);
        let written = self.cache_creation_input_tokens.unwrap_or(0);
        Usage {
            input_tokens: self.input_tokens + read + written,
            output_tokens: self.output_tokens,
            cached_input_tokens: read,
            cache_write_tokens: written,
            // Anthropic counts thinking in `output_tokens` without saying how much of it.
            reasoning_tokens: 0,
            images: 0,
            search_units: 0,
            audio_ms: 0,
            characters: 0,
        }
    }
}

/// OpenAI's finish reason for a `stop_reason`. `tool_use` is `stop` when the only tool used was
/// the JSON-output tool, whose input became the text.
pub fn finish_reason(stop_reason: Option<&str>, called_tools: bool) -> FinishReason {
    match stop_reason {
        Some("max_tokens" | "model_context_window_exceeded") => FinishReason::Length,
        Some("tool_use") if called_tools => FinishReason::ToolCalls,
        Some("refusal") => FinishReason::ContentFilter,
        // end_turn, stop_sequence, pause_turn, and reasons added later.
        _ => FinishReason::Stop,
    }
}

pub fn parse(request: &RequestInfo, body: &[u8]) -> Result<Completion, PluginError> {
    let message: MessageResponse = serde_json::from_slice(body).map_err(|_| {
        PluginError::upstream("Anthropic answered with a body that is not a message")
    })?;
    let mut text = String::new();
    let mut calls = Vec::new();
    for block in message.content {
        match (block.kind.as_str(), block.name.as_deref()) {
            ("text", _) => text.push_str(block.text.as_deref().unwrap_or_default()),
            ("tool_use", Some(JSON_TOOL)) => {
                text.push_str(&compact_json(
                    block.input.as_deref().map_or("{}", RawValue::get),
                ));
            }
            ("tool_use", Some(name)) => {
                let id = block.id.as_deref().unwrap_or_default();
                let arguments = block.input.as_deref().map_or("{}", RawValue::get);
                calls.push(tool_call_json(id, name, &compact_json(arguments)));
            }
            _ => {}
        }
    }
    let finish = finish_reason(message.stop_reason.as_deref(), !calls.is_empty());
    let usage = message.usage.to_usage();
    let text = (!text.is_empty()).then_some(text);
    let model = message.model.as_deref().unwrap_or(&request.model);
    let body = completion_body(
        &message.id,
        model,
        unix_now(),
        assistant_message(text, calls),
        finish,
        Some(&usage),
    );
    Ok(Completion {
        body,
        usage: Some(usage),
    })
}
