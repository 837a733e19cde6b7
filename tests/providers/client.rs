//! A gateway on one provider's mock, and the requests the provider tests send through it, read
//! back into what they assert on.

use async_openai::types::chat::{
    ChatCompletionRequestSystemMessageArgs, ChatCompletionRequestUserMessageArgs,
    ChatCompletionStreamOptions, CompletionUsage, CreateChatCompletionRequest,
    CreateChatCompletionRequestArgs, CreateChatCompletionResponse, FinishReason,
};
use futures_util::StreamExt;
use serde_json::{Value, json};

use super::rows::{Row, weather_tool};
use crate::common::gateway::{Gateway, Provider};
use crate::common::mock_providers::{KEY, MockProvider};
use crate::common::{TestGateway, http};

/// The row's mock, and a gateway with one entry of the row's plugin pointed at it.
pub async fn setup(row: &Row) -> (MockProvider, TestGateway) {
    setup_with(row, KEY, "{}").await
}

/// [`setup`] with the entry sending `key` and taking `options` (YAML).
pub async fn setup_with(row: &Row, key: &str, options: &str) -> (MockProvider, TestGateway) {
    let mock = row.mock.start().await;
    let models = [row.model, "error-429", "error-500", "stream-cut"];
    let entry = Provider::at(row.plugin, &mock.base_url(), key)
        .models(models.into_iter().chain(row.more_models.iter().copied()))
        .timeout_ms(5000)
        .options(options);
    let gateway = Gateway::builder().provider(row.plugin, entry).start().await;
    (mock, gateway)
}

pub fn chat_request(model: &str, system: Option<&str>) -> CreateChatCompletionRequest {
    let mut messages = Vec::new();
    if let Some(system) = system {
        messages.push(
            ChatCompletionRequestSystemMessageArgs::default()
                .content(system)
                .build()
                .unwrap()
                .into(),
        );
    }
    messages.push(
        ChatCompletionRequestUserMessageArgs::default()
            .content("Hello there")
            .build()
            .unwrap()
            .into(),
    );
    CreateChatCompletionRequestArgs::default()
        .model(model)
        .messages(messages)
        .build()
        .unwrap()
}

pub async fn chat(gateway: &TestGateway, model: &str) -> CreateChatCompletionResponse {
    gateway
        .openai()
        .chat()
        .create(chat_request(model, None))
        .await
        .unwrap()
}

/// Streams a text answer; returns the concatenated deltas, the usage chunk's usage and the last
/// finish reason.
pub async fn stream_text(
    gateway: &TestGateway,
    model: &str,
) -> (String, Option<CompletionUsage>, Option<FinishReason>) {
    let mut request = chat_request(model, None);
    // With async-openai's `byot` feature on, `create_stream` leaves `stream` as given.
    request.stream = Some(true);
    request.stream_options = Some(ChatCompletionStreamOptions {
        include_usage: Some(true),
        include_obfuscation: None,
    });
    let mut stream = gateway
        .openai()
        .chat()
        .create_stream(request)
        .await
        .unwrap();
    let mut text = String::new();
    let mut usage = None;
    let mut finish = None;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.unwrap();
        if let Some(choice) = chunk.choices.first() {
            text.push_str(choice.delta.content.as_deref().unwrap_or(""));
            finish = choice.finish_reason.or(finish);
        }
        usage = chunk.usage.or(usage);
    }
    (text, usage, finish)
}

pub const QUESTION: &str = "What's the weather in San Francisco?";

/// Asks with the weather tool; returns the answer's message.
pub async fn ask_with_tool(gateway: &TestGateway, model: &str) -> Value {
    let response: Value = gateway
        .openai()
        .chat()
        .create_byot(json!({
            "model": model,
            "messages": [{"role": "user", "content": QUESTION}],
            "tools": [weather_tool()]
        }))
        .await
        .unwrap();
    assert_eq!(
        response["choices"][0]["finish_reason"], "tool_calls",
        "{response}"
    );
    response["choices"][0]["message"].clone()
}

/// Sends the tool call `message` back with `result` as the tool's answer; returns the reply text.
pub async fn answer_tool(
    gateway: &TestGateway,
    model: &str,
    message: &Value,
    result: &str,
) -> Value {
    let call_id = message["tool_calls"][0]["id"].clone();
    let response: Value = gateway
        .openai()
        .chat()
        .create_byot(json!({
            "model": model,
            "messages": [
                {"role": "user", "content": QUESTION},
                message,
                {"role": "tool", "tool_call_id": call_id, "content": result}
            ],
            "tools": [weather_tool()]
        }))
        .await
        .unwrap();
    response["choices"][0]["message"]["content"].clone()
}

/// The status and OpenAI-shaped `error` object of a chat request for `model`.
pub async fn error_of(gateway: &TestGateway, model: &str) -> (u16, Value) {
    let response = http()
        .post(gateway.url("/v1/chat/completions"))
        .json(&json!({"model": model, "messages": [{"role": "user", "content": "Hi"}]}))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    let error = body["error"].clone();
    assert!(
        error["message"].is_string() && error.get("type").is_some(),
        "OpenAI's error shape: {body}"
    );
    (status, error)
}

/// What a streamed answer to a request with the weather tool carried.
pub struct ToolStream {
    pub text: String,
    /// (id, name, parsed arguments), by tool call index.
    pub calls: Vec<(String, String, Value)>,
    pub finish: Value,
}

pub async fn stream_tools(gateway: &TestGateway, model: &str) -> ToolStream {
    let mut stream = gateway
        .openai()
        .chat()
        .create_stream_byot::<_, Value>(json!({
            "model": model, "stream": true,
            "messages": [{"role": "user", "content": QUESTION}],
            "tools": [weather_tool()]
        }))
        .await
        .unwrap();
    let mut text = String::new();
    let mut calls: Vec<(String, String, String)> = Vec::new();
    let mut finish = Value::Null;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.unwrap();
        let Some(choice) = chunk["choices"].get(0) else {
            continue;
        };
        text.push_str(choice["delta"]["content"].as_str().unwrap_or(""));
        for call in choice["delta"]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let index = usize::try_from(call["index"].as_u64().expect("an index")).unwrap();
            if index == calls.len() {
                calls.push(Default::default());
            }
            let entry = &mut calls[index];
            if let Some(id) = call["id"].as_str() {
                entry.0.push_str(id);
            }
            if let Some(name) = call["function"]["name"].as_str() {
                entry.1.push_str(name);
            }
            entry
                .2
                .push_str(call["function"]["arguments"].as_str().unwrap_or(""));
        }
        if !choice["finish_reason"].is_null() {
            finish = choice["finish_reason"].clone();
        }
    }
    let calls = calls
        .into_iter()
        .map(|(id, name, arguments)| {
            let arguments = serde_json::from_str(&arguments)
                .unwrap_or_else(|e| panic!("arguments {arguments:?}: {e}"));
            (id, name, arguments)
        })
        .collect();
    ToolStream {
        text,
        calls,
        finish,
    }
}

/// The raw answer to a streamed request for `model` without `include_usage`: status,
/// content type and body.
pub async fn raw_stream(gateway: &TestGateway, model: &str) -> (u16, String, String) {
    let response = http()
        .post(gateway.url("/v1/chat/completions"))
        .json(&json!({"model": model, "stream": true,
                      "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    (status, content_type, response.text().await.unwrap())
}

/// The JSON events of an SSE body, `[DONE]` left out.
pub fn events(body: &str) -> Vec<Value> {
    body.split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .filter(|e| *e != "[DONE]")
        .map(|e| serde_json::from_str(e).unwrap())
        .collect()
}

pub fn cached(usage: &CompletionUsage) -> Option<u32> {
    usage
        .prompt_tokens_details
        .as_ref()
        .and_then(|d| d.cached_tokens)
}
