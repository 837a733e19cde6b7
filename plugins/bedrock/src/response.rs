//! Complete answers: a Converse response to a `chat.completion`, and the usage and finish
//! reason that streams share.

use serde::Deserialize;
use serde_json::value::RawValue;
use wasmgate_plugin_sdk::chat::{
    FinishReason, assistant_message, compact_json, completion_body, tool_call_json, unix_now,
};
use wasmgate_plugin_sdk::{Completion, PluginError, RequestInfo, Usage};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConverseResponse {
    output: Output,
    stop_reason: Option<String>,
    #[serde(default)]
    usage: TokenUsage,
}

#[derive(Deserialize)]
struct Output {
    message: OutputMessage,
}

#[derive(Deserialize)]
struct OutputMessage {
    #[serde(default)]
    content: Vec<OutputBlock>,
}

/// A content block: one key names its kind. Reasoning, citations and kinds added later have no
/// place in OpenAI's message.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct OutputBlock {
    text: Option<String>,
    tool_use: Option<OutputToolUse>,
}

/// The raw `input` keeps the key order the model wrote the arguments in.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct OutputToolUse {
    tool_use_id: String,
    name: String,
    input: Option<Box<RawValue>>,
}

/// Converse's `TokenUsage`. `inputTokens` leaves out the tokens read from or written to the
/// prompt cache.
#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    pub cache_read_input_tokens: Option<u64>,
    pub cache_write_input_tokens: Option<u64>,
}

impl TokenUsage {
    /// As the gateway counts it: input includes the cache reads and writes.
    pub fn to_usage(self) -> Usage {
        let read = self.cache_read_input_tokens.unwrap_or(0);
        let written = self.cache_write_input_tokens.unwrap_or(0);
        Usage {
            input_tokens: self.input_tokens + read + written,
            output_tokens: self.output_tokens,
            cached_input_tokens: read,
            cache_write_tokens: written,
            // Converse's `TokenUsage` has no reasoning count: thinking is in `outputTokens`.
            reasoning_tokens: 0,
            images: 0,
            search_units: 0,
            audio_ms: 0,
            characters: 0,
        }
    }
}

/// OpenAI's finish reason for a `stopReason`.
pub fn finish_reason(stop_reason: Option<&str>, called_tools: bool) -> FinishReason {
    match stop_reason {
        Some("max_tokens" | "model_context_window_exceeded") => FinishReason::Length,
        Some("tool_use") if called_tools => FinishReason::ToolCalls,
        Some("guardrail_intervened" | "content_filtered") => FinishReason::ContentFilter,
        // end_turn, stop_sequence, and reasons added later.
        _ => FinishReason::Stop,
    }
}

/// The answer's id: Bedrock sends none in the body, so the request id of the response headers.
pub fn completion_id(headers: &[(String, String)]) -> String {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("x-amzn-requestid"))
        .map_or_else(
            || "chatcmpl-bedrock".to_owned(),
            |(_, id)| format!("chatcmpl-{id}"),
        )
}

pub fn parse(
    request: &RequestInfo,
    headers: &[(String, String)],
    body: &[u8],
) -> Result<Completion, PluginError> {
    let response: ConverseResponse = serde_json::from_slice(body).map_err(|_| {
        PluginError::upstream("Bedrock answered with a body that is not a Converse response")
    })?;
    let mut text = String::new();
    let mut calls = Vec::new();
    for block in response.output.message.content {
        if let Some(part) = block.text {
            text.push_str(&part);
        }
        if let Some(call) = block.tool_use {
            let arguments = call.input.as_deref().map_or("{}", RawValue::get);
            calls.push(tool_call_json(
                &call.tool_use_id,
                &call.name,
                &compact_json(arguments),
            ));
        }
    }
    let finish = finish_reason(response.stop_reason.as_deref(), !calls.is_empty());
    let usage = response.usage.to_usage();
    let text = (!text.is_empty()).then_some(text);
    let body = completion_body(
        &completion_id(headers),
        &request.model,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finish_reasons() {
        let cases = [
            (Some("end_turn"), false, FinishReason::Stop),
            (Some("stop_sequence"), false, FinishReason::Stop),
            (Some("max_tokens"), false, FinishReason::Length),
            (Some("tool_use"), true, FinishReason::ToolCalls),
            (Some("tool_use"), false, FinishReason::Stop),
            (
                Some("guardrail_intervened"),
                false,
                FinishReason::ContentFilter,
            ),
            (None, false, FinishReason::Stop),
        ];
        for (reason, called, want) in cases {
            assert_eq!(finish_reason(reason, called), want, "{reason:?}");
        }
    }
}
