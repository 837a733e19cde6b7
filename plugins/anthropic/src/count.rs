//! Counts by Anthropic's own tokenizer: a canonical chat request (a Responses `input_tokens`
//! or Google `:countTokens` routed to a Claude model) translated as for `POST /messages`, then
//! sent to `POST /messages/count_tokens`, which takes the prompt's fields only and answers
//! `{"input_tokens": N}`. Reference: <https://docs.anthropic.com/en/api/messages-count-tokens>.

use serde::Deserialize;
use serde_json::Value;
use wasmgate_plugin_sdk::chat::ChatRequest;
use wasmgate_plugin_sdk::http::json_body;
use wasmgate_plugin_sdk::{Entry, HttpRequest, HttpResponse, PluginError};

use crate::settings::Settings;
use crate::{errors, request};

/// The fields of a Messages body that `count_tokens` takes (the sampling and output ones,
/// `max_tokens` included, it refuses).
const PROMPT_FIELDS: [&str; 5] = ["model", "messages", "system", "tools", "tool_choice"];

/// The counting request for `chat` (OpenAI's chat completions JSON).
pub fn prepare(entry: &Entry<Settings>, chat: &str) -> Result<HttpRequest, PluginError> {
    let settings = &entry.settings;
    let chat = ChatRequest::parse(chat)?;
    let body = request::build(&chat, false, settings.default_max_tokens())?;
    let mut body = serde_json::to_value(&body)
        .map_err(|_| PluginError::upstream("could not write the upstream request"))?;
    if let Value::Object(fields) = &mut body {
        fields.retain(|key, _| PROMPT_FIELDS.contains(&key.as_str()));
    }
    let mut http = HttpRequest::post_json(entry.url("messages/count_tokens"), json_body(&body)?)
        .header("anthropic-version", settings.version.as_str());
    if !settings.beta.is_empty() {
        http.set_header("anthropic-beta", settings.beta.join(","));
    }
    Ok(http)
}

#[derive(Deserialize)]
struct Counted {
    input_tokens: u64,
}

/// The count in `count_tokens`' answer.
pub fn parse(response: HttpResponse) -> Result<u64, PluginError> {
    if !response.is_success() {
        return Err(errors::http_error(response.status, &response.body));
    }
    serde_json::from_slice::<Counted>(&response.body)
        .map(|counted| counted.input_tokens)
        .map_err(|_| PluginError::upstream("the counting endpoint answered without `input_tokens`"))
}
