//! Counts by Gemini's own tokenizer: a canonical chat request (a Messages `count_tokens` or a
//! Responses `input_tokens` routed to a Gemini model) translated as for `generateContent` and
//! sent to `models/{model}:countTokens` as its `generateContentRequest`, so that the system
//! instruction and tools are counted too (plain `contents` would leave them out). The answer is
//! `{"totalTokens": N, ...}`. Reference: <https://ai.google.dev/api/tokens>.

use serde::Deserialize;
use serde_json::{Value, json};
use wasmgate_plugin_sdk::chat::ChatRequest;
use wasmgate_plugin_sdk::{HttpResponse, PluginError};

use crate::{errors, request};

/// The body of `:countTokens` for `chat` (OpenAI's chat completions JSON); `model` is the
/// model's resource name (`models/<name>`).
pub fn body(chat: &str, model: &str) -> Result<Value, PluginError> {
    let chat = ChatRequest::parse(chat)?;
    let mut generate = serde_json::to_value(request::build(&chat)?)
        .map_err(|_| PluginError::upstream("could not write the upstream request"))?;
    generate["model"] = Value::from(model);
    Ok(json!({ "generateContentRequest": generate }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Counted {
    /// Absent when the prompt is empty (proto3 leaves zero out).
    #[serde(default)]
    total_tokens: u64,
}

/// The count in `:countTokens`' answer.
pub fn parse(response: HttpResponse) -> Result<u64, PluginError> {
    if !response.is_success() {
        return Err(errors::http_error(response.status, &response.body));
    }
    serde_json::from_slice::<Counted>(&response.body)
        .map(|counted| counted.total_tokens)
        .map_err(|_| PluginError::upstream("the counting endpoint answered something unreadable"))
}
