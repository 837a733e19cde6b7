//! Complete answers: a v2 chat response to a `chat.completion`.

use serde::Deserialize;
use wasmgate_plugin_sdk::chat::{
    FinishReason, assistant_message, compact_json, completion_body, tool_call_json, unix_now,
};
use wasmgate_plugin_sdk::{Completion, PluginError, RequestInfo, Usage};

#[derive(Deserialize)]
struct ChatResponse {
    id: String,
    finish_reason: Option<String>,
    message: ResponseMessage,
    usage: Option<CohereUsage>,
}

#[derive(Deserialize)]
struct ResponseMessage {
    #[serde(default)]
    content: Vec<ContentItem>,
    tool_plan: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ResponseToolCall>,
}

/// Text, or `thinking` from a reasoning model, which OpenAI's message has no place for.
#[derive(Deserialize)]
struct ContentItem {
    #[serde(rename = "type")]
    kind: String,
    text: Option<String>,
}

#[derive(Deserialize)]
struct ResponseToolCall {
    id: String,
    function: ResponseFunction,
}

#[derive(Deserialize)]
struct ResponseFunction {
    name: String,
    #[serde(default)]
    arguments: String,
}

/// `billed_units` are what Cohere charges for; `tokens` also count the prompt template Cohere
/// adds. The ledger prices what is billed, so `billed_units` win when present.
#[derive(Clone, Copy, Debug, Default, Deserialize)]
pub struct CohereUsage {
    billed_units: Option<Counts>,
    tokens: Option<Counts>,
    cached_tokens: Option<u64>,
}

#[derive(Clone, Copy, Debug, Default, Deserialize)]
struct Counts {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
}

impl CohereUsage {
    pub fn to_usage(self) -> Usage {
        let counts = self.billed_units.or(self.tokens).unwrap_or_default();
        Usage {
            cached_input_tokens: self.cached_tokens.unwrap_or(0),
            ..Usage::tokens(
                counts.input_tokens.unwrap_or(0),
                counts.output_tokens.unwrap_or(0),
            )
        }
    }
}

/// OpenAI's finish reason. `ERROR` and `TIMEOUT` mean Cohere failed: an error, not an answer.
pub fn finish_reason(reason: Option<&str>) -> Result<FinishReason, PluginError> {
    Ok(match reason {
        Some("MAX_TOKENS") => FinishReason::Length,
        Some("TOOL_CALL") => FinishReason::ToolCalls,
        Some("ERROR") => return Err(PluginError::upstream("Cohere failed while generating")),
        Some("TIMEOUT") => return Err(PluginError::timeout("Cohere timed out while generating")),
        // COMPLETE, STOP_SEQUENCE, and reasons added later.
        _ => FinishReason::Stop,
    })
}

pub fn parse(request: &RequestInfo, body: &[u8]) -> Result<Completion, PluginError> {
    let response: ChatResponse = serde_json::from_slice(body)
        .map_err(|_| PluginError::upstream("Cohere answered with a body that could not be read"))?;
    let message = response.message;
    let mut text: String = message
        .content
        .iter()
        .filter(|c| c.kind == "text")
        .filter_map(|c| c.text.as_deref())
        .collect();
    // A tool-calling answer has no text, only the plan: that is what the model said.
    if text.is_empty() {
        text = message.tool_plan.unwrap_or_default();
    }
    let calls = message
        .tool_calls
        .iter()
        .map(|c| {
            tool_call_json(
                &c.id,
                &c.function.name,
                &compact_json(&c.function.arguments),
            )
        })
        .collect();
    let finish = finish_reason(response.finish_reason.as_deref())?;
    let usage = response.usage.map(CohereUsage::to_usage);
    let body = completion_body(
        &response.id,
        &request.model,
        unix_now(),
        assistant_message((!text.is_empty()).then_some(text), calls),
        finish,
        usage.as_ref(),
    );
    Ok(Completion { body, usage })
}
