//! Complete answers: a `GenerateContentResponse` to a `chat.completion`. The types here also
//! read each event of a stream, which carries the same object.

use serde::Deserialize;
use serde_json::value::RawValue;
use wasmgate_plugin_sdk::chat::{
    FinishReason, assistant_message, compact_json, completion_body, tool_call_json, unix_now,
};
use wasmgate_plugin_sdk::{Completion, PluginError, RequestInfo, Usage};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GenerateContentResponse {
    #[serde(default)]
    pub candidates: Vec<Candidate>,
    pub usage_metadata: Option<UsageMetadata>,
    pub prompt_feedback: Option<PromptFeedback>,
    pub model_version: Option<String>,
    pub response_id: Option<String>,
}

/// Only the usage of a response or stream event (of a native stream, passed on as it is).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageOnly {
    pub usage_metadata: Option<UsageMetadata>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Candidate {
    pub content: Option<CandidateContent>,
    pub finish_reason: Option<String>,
}

#[derive(Deserialize)]
pub struct CandidateContent {
    #[serde(default)]
    pub parts: Vec<ResponsePart>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResponsePart {
    pub text: Option<String>,
    /// A thought summary of a thinking model: not part of the answer.
    #[serde(default)]
    pub thought: bool,
    pub function_call: Option<FunctionCall>,
}

#[derive(Deserialize)]
pub struct FunctionCall {
    pub id: Option<String>,
    pub name: String,
    /// Raw, to keep the argument order the model wrote.
    pub args: Option<Box<RawValue>>,
}

impl FunctionCall {
    /// The arguments as OpenAI's JSON text; the call id Gemini gave, or `call_<n>`.
    pub fn to_openai(&self, n: u32) -> (String, String) {
        let id = self.id.clone().unwrap_or_else(|| format!("call_{n}"));
        let args = self.args.as_deref().map_or("{}", RawValue::get);
        (id, compact_json(args))
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptFeedback {
    pub block_reason: Option<String>,
}

/// `promptTokenCount` already includes `cachedContentTokenCount`; thinking tokens are billed as
/// output but counted apart from `candidatesTokenCount`, and tool-use prompt tokens (from code
/// execution or search) are billed as input.
#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageMetadata {
    #[serde(default)]
    prompt_token_count: u64,
    #[serde(default)]
    candidates_token_count: u64,
    #[serde(default)]
    cached_content_token_count: u64,
    #[serde(default)]
    thoughts_token_count: u64,
    #[serde(default)]
    tool_use_prompt_token_count: u64,
}

impl UsageMetadata {
    pub fn to_usage(self) -> Usage {
        Usage {
            input_tokens: self.prompt_token_count + self.tool_use_prompt_token_count,
            output_tokens: self.candidates_token_count + self.thoughts_token_count,
            cached_input_tokens: self.cached_content_token_count,
            cache_write_tokens: 0,
            reasoning_tokens: self.thoughts_token_count,
            images: 0,
            search_units: 0,
            audio_ms: 0,
            characters: 0,
        }
    }
}

/// OpenAI's finish reason. Gemini says `STOP` when it called functions, too.
pub fn finish_reason(reason: Option<&str>, called_tools: bool) -> FinishReason {
    match reason {
        Some("MAX_TOKENS") => FinishReason::Length,
        Some(
            "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY",
        ) => FinishReason::ContentFilter,
        _ if called_tools => FinishReason::ToolCalls,
        // STOP, and reasons added later.
        _ => FinishReason::Stop,
    }
}

pub fn parse(request: &RequestInfo, body: &[u8]) -> Result<Completion, PluginError> {
    let response: GenerateContentResponse = serde_json::from_slice(body)
        .map_err(|_| PluginError::upstream("Gemini answered with a body that could not be read"))?;
    let candidate = response.candidates.first();
    let mut text = String::new();
    let mut calls = Vec::new();
    let parts = candidate
        .and_then(|c| c.content.as_ref())
        .map(|c| &c.parts[..]);
    for part in parts.unwrap_or_default().iter().filter(|p| !p.thought) {
        if let Some(piece) = &part.text {
            text.push_str(piece);
        }
        if let Some(call) = &part.function_call {
            let n = u32::try_from(calls.len()).unwrap_or(u32::MAX);
            let (id, arguments) = call.to_openai(n);
            calls.push(tool_call_json(&id, &call.name, &arguments));
        }
    }
    // No candidate at all means the prompt itself was blocked.
    let blocked = candidate.is_none()
        && response
            .prompt_feedback
            .as_ref()
            .is_some_and(|f| f.block_reason.is_some());
    let finish = if blocked {
        FinishReason::ContentFilter
    } else {
        let reason = candidate.and_then(|c| c.finish_reason.as_deref());
        finish_reason(reason, !calls.is_empty())
    };
    let usage = response.usage_metadata.map(UsageMetadata::to_usage);
    let id = response.response_id.as_deref().unwrap_or("gemini");
    let model = response.model_version.as_deref().unwrap_or(&request.model);
    let text = (!text.is_empty()).then_some(text);
    let body = completion_body(
        id,
        model,
        unix_now(),
        assistant_message(text, calls),
        finish,
        usage.as_ref(),
    );
    Ok(Completion { body, usage })
}
