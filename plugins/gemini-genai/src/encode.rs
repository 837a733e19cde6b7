//! Complete answers: a canonical `chat.completion` as a `GenerateContentResponse`.

use serde::Serialize;
use serde_json::value::RawValue;
use wasmgate_plugin_sdk::canonical::{ChatAnswer, Finish};
use wasmgate_plugin_sdk::{AnswerInfo, Failure, Usage};

/// Google's `finishReason`. Gemini reports `STOP` when the model called functions.
pub fn finish_reason(finish: Finish) -> &'static str {
    match finish {
        Finish::Stop | Finish::ToolCalls => "STOP",
        Finish::Length => "MAX_TOKENS",
        Finish::ContentFilter => "SAFETY",
    }
}

/// `usageMetadata`. `promptTokenCount` includes the cached tokens, which are also reported
/// apart; `candidatesTokenCount` leaves out the thinking tokens, which Google counts apart.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageMetadata {
    prompt_token_count: u64,
    candidates_token_count: u64,
    total_token_count: u64,
    #[serde(skip_serializing_if = "is_zero")]
    cached_content_token_count: u64,
    #[serde(skip_serializing_if = "is_zero")]
    thoughts_token_count: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl UsageMetadata {
    pub fn new(usage: &Usage) -> Self {
        UsageMetadata {
            prompt_token_count: usage.input_tokens,
            candidates_token_count: usage.output_tokens.saturating_sub(usage.reasoning_tokens),
            total_token_count: usage.input_tokens + usage.output_tokens,
            cached_content_token_count: usage.cached_input_tokens,
            thoughts_token_count: usage.reasoning_tokens,
        }
    }
}

/// One part of an answer. Written from types, so that a call's `args` keep the model's order.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PartOut {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub thought: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub function_call: Option<CallOut>,
}

#[derive(Serialize)]
pub struct CallOut {
    pub id: String,
    pub name: String,
    pub args: Box<RawValue>,
}

impl PartOut {
    pub fn text(text: String, thought: bool) -> Self {
        PartOut {
            text: Some(text),
            thought,
            function_call: None,
        }
    }

    /// A function call; arguments that are not a JSON object become `{}`.
    pub fn call(id: String, name: String, arguments: &str) -> Self {
        let args = serde_json::from_str::<Box<RawValue>>(arguments)
            .ok()
            .filter(|raw| raw.get().trim_start().starts_with('{'))
            .unwrap_or_else(empty_object);
        PartOut {
            text: None,
            thought: false,
            function_call: Some(CallOut { id, name, args }),
        }
    }
}

fn empty_object() -> Box<RawValue> {
    RawValue::from_string("{}".to_owned()).unwrap_or_else(|_| RawValue::NULL.to_owned())
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContentOut {
    pub role: &'static str,
    pub parts: Vec<PartOut>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CandidateOut {
    pub content: ContentOut,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<&'static str>,
    pub index: u32,
}

/// A `GenerateContentResponse`: a whole answer, or one event of a stream.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResponseOut<'a> {
    pub candidates: Vec<CandidateOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage_metadata: Option<UsageMetadata>,
    pub model_version: &'a str,
    pub response_id: &'a str,
}

impl ResponseOut<'_> {
    pub fn to_json(&self) -> Result<String, Failure> {
        serde_json::to_string(self).map_err(|_| Failure::upstream("could not write the answer"))
    }
}

pub fn encode(
    info: &AnswerInfo,
    completion: &str,
    usage: Option<Usage>,
) -> Result<String, Failure> {
    let answer = ChatAnswer::parse(completion)?;
    let usage = usage.or_else(|| answer.usage.map(|u| u.to_usage()));
    let (message, finish) = answer.into_message();
    let mut parts = Vec::new();
    if let Some(reasoning) = message.reasoning_content.filter(|t| !t.is_empty()) {
        parts.push(PartOut::text(reasoning, true));
    }
    if let Some(text) = message.content.filter(|t| !t.is_empty()) {
        parts.push(PartOut::text(text, false));
    }
    if let Some(refusal) = message.refusal.filter(|t| !t.is_empty()) {
        parts.push(PartOut::text(refusal, false));
    }
    for call in message.tool_calls.unwrap_or_default() {
        parts.push(PartOut::call(
            call.id,
            call.function.name,
            &call.function.arguments,
        ));
    }
    ResponseOut {
        candidates: vec![CandidateOut {
            content: ContentOut {
                role: "model",
                parts,
            },
            finish_reason: Some(finish_reason(finish)),
            index: 0,
        }],
        usage_metadata: usage.as_ref().map(UsageMetadata::new),
        model_version: &info.model,
        response_id: &info.id,
    }
    .to_json()
}
