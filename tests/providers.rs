//! The four translating provider plugins (`anthropic`, `gemini`, `cohere`, `azure-openai`)
//! through the real gateway, driven by the async-openai client against mock upstreams that speak
//! each provider's native wire format (tests/common/mock_providers.rs): answers and usage
//! translated back, streams reassembled from 5–9 byte pieces, tool calls out and tool results
//! back in the provider's shape, the native request's path, auth and body, and upstream errors
//! mapped to OpenAI's error shape.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use async_openai::types::chat::{
    ChatCompletionRequestSystemMessageArgs, ChatCompletionRequestUserMessageArgs,
    ChatCompletionStreamOptions, CreateChatCompletionRequest, CreateChatCompletionRequestArgs,
    CreateChatCompletionResponse, FinishReason,
};
use async_openai::types::embeddings::CreateEmbeddingRequestArgs;
use common::gateway::{Gateway, Provider};
use common::mock_openai::MockOpenAi;
use common::mock_providers::{KEY, MockProvider, anthropic, azure, cohere, gemini};
use common::{TestGateway, http};
use futures_util::StreamExt;
use serde_json::{Value, json};

const CLAUDE: &str = "claude-sonnet-4-20250514";
const GEMINI: &str = "gemini-2.0-flash";
const GEMINI_EMBED: &str = "text-embedding-004";
const COMMAND: &str = "command-a-03-2025";
const COHERE_EMBED: &str = "embed-v4.0";
const GPT: &str = "gpt-4o";

/// A gateway with one provider `name` using plugin `name`, pointed at `mock`.
async fn gateway(name: &str, mock: &MockProvider, key: &str, models: &[&str]) -> TestGateway {
    gateway_with(name, mock, key, models, "{}").await
}

async fn gateway_with(
    name: &str,
    mock: &MockProvider,
    key: &str,
    models: &[&str],
    options: &str,
) -> TestGateway {
    let entry = Provider::at(name, &mock.base_url(), key)
        .models(models.iter().copied())
        .timeout_ms(5000)
        .options(options);
    Gateway::builder().provider(name, entry).start().await
}

async fn anthropic_setup() -> (MockProvider, TestGateway) {
    let mock = MockProvider::anthropic().await;
    let gw = gateway(
        "anthropic",
        &mock,
        KEY,
        &[
            CLAUDE,
            "error-429",
            "error-500",
            "stream-cut",
            "stream-overloaded",
        ],
    )
    .await;
    (mock, gw)
}

async fn gemini_setup() -> (MockProvider, TestGateway) {
    let mock = MockProvider::gemini().await;
    let gw = gateway(
        "gemini",
        &mock,
        KEY,
        &[GEMINI, GEMINI_EMBED, "error-429", "stream-cut"],
    )
    .await;
    (mock, gw)
}

async fn cohere_setup() -> (MockProvider, TestGateway) {
    let mock = MockProvider::cohere().await;
    let gw = gateway(
        "cohere",
        &mock,
        KEY,
        &[COMMAND, COHERE_EMBED, "error-429", "stream-cut"],
    )
    .await;
    (mock, gw)
}

async fn azure_setup() -> (MockProvider, TestGateway) {
    let mock = MockProvider::azure().await;
    let gw = gateway(
        "azure-openai",
        &mock,
        KEY,
        &[GPT, "error-429", "error-500", "stream-cut"],
    )
    .await;
    (mock, gw)
}

fn chat_request(model: &str, system: Option<&str>) -> CreateChatCompletionRequest {
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

async fn chat(gateway: &TestGateway, model: &str) -> CreateChatCompletionResponse {
    gateway
        .openai()
        .chat()
        .create(chat_request(model, None))
        .await
        .unwrap()
}

/// Streams a text answer; returns the concatenated deltas, the usage chunk's usage and the last
/// finish reason.
async fn stream_text(
    gateway: &TestGateway,
    model: &str,
) -> (
    String,
    Option<async_openai::types::chat::CompletionUsage>,
    Option<FinishReason>,
) {
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

fn weather_tool() -> Value {
    json!({"type": "function", "function": {
        "name": "get_weather", "description": "Get the current weather in a given location",
        "parameters": {"type": "object", "properties": {"location": {"type": "string"}},
                       "required": ["location"]}}})
}

const QUESTION: &str = "What's the weather in San Francisco?";

/// Asks with the weather tool; returns the answer's message.
async fn ask_with_tool(gateway: &TestGateway, model: &str) -> Value {
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
async fn answer_tool(gateway: &TestGateway, model: &str, message: &Value, result: &str) -> Value {
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
async fn error_of(gateway: &TestGateway, model: &str) -> (u16, Value) {
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
struct ToolStream {
    text: String,
    /// (id, name, parsed arguments), by tool call index.
    calls: Vec<(String, String, Value)>,
    finish: Value,
}

async fn stream_tools(gateway: &TestGateway, model: &str) -> ToolStream {
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

fn cached(usage: &async_openai::types::chat::CompletionUsage) -> Option<u32> {
    usage
        .prompt_tokens_details
        .as_ref()
        .and_then(|d| d.cached_tokens)
}

// ---------------------------------------------------------------------------------------------
// Anthropic

#[tokio::test]
async fn anthropic_chat_returns_the_text_and_usage_counting_cache_tokens_as_prompt() {
    let (_mock, gw) = anthropic_setup().await;
    let response = chat(&gw, &format!("anthropic/{CLAUDE}")).await;
    let choice = &response.choices[0];
    assert_eq!(choice.message.content.as_deref(), Some(anthropic::TEXT));
    assert_eq!(choice.finish_reason, Some(FinishReason::Stop));
    let usage = response.usage.unwrap();
    let prompt =
        anthropic::INPUT_TOKENS + anthropic::CACHE_CREATION_TOKENS + anthropic::CACHE_READ_TOKENS;
    assert_eq!(u64::from(usage.prompt_tokens), prompt);
    assert_eq!(u64::from(usage.completion_tokens), anthropic::OUTPUT_TOKENS);
    assert_eq!(
        u64::from(usage.total_tokens),
        prompt + anthropic::OUTPUT_TOKENS
    );
    assert_eq!(
        cached(&usage).map(u64::from),
        Some(anthropic::CACHE_READ_TOKENS)
    );
}

#[tokio::test]
async fn anthropic_request_has_its_key_version_top_level_system_and_default_max_tokens() {
    let (mock, gw) = anthropic_setup().await;
    let mut request = chat_request(&format!("anthropic/{CLAUDE}"), Some("You are terse."));
    request.temperature = Some(0.5);
    gw.openai().chat().create(request).await.unwrap();

    let sent = mock.last_request().await;
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some(KEY));
    assert_eq!(sent.header("anthropic-version"), Some(anthropic::VERSION));
    assert_eq!(
        sent.header("authorization"),
        None,
        "no bearer token to Anthropic"
    );
    assert_eq!(sent.body["model"], CLAUDE);
    assert_eq!(sent.body["max_tokens"], 4096, "max_tokens is required");
    assert_eq!(sent.body["system"], "You are terse.");
    assert_eq!(
        sent.body["messages"],
        json!([{"role": "user", "content": "Hello there"}]),
        "the system message is not among the messages"
    );
    assert_eq!(sent.body["temperature"], 0.5);
    assert!(sent.body.get("stream").is_none_or(|s| s == false));
}

#[tokio::test]
async fn anthropic_request_maps_stop_max_completion_tokens_user_images_and_tool_choice() {
    let (mock, gw) = anthropic_setup().await;
    let _: Value = gw
        .openai()
        .chat()
        .create_byot(json!({
            "model": format!("anthropic/{CLAUDE}"),
            "messages": [{"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQSkZJRg=="}},
                {"type": "text", "text": "What is this?"}]}],
            "stop": ["END"],
            "max_completion_tokens": 20,
            "user": "user-123",
            "tools": [weather_tool()],
            "tool_choice": "required"
        }))
        .await
        .unwrap();
    let sent = mock.last_request().await.body;
    assert_eq!(sent["max_tokens"], 20);
    assert_eq!(sent["stop_sequences"], json!(["END"]));
    assert_eq!(sent["metadata"], json!({"user_id": "user-123"}));
    assert_eq!(sent["tool_choice"]["type"], "any");
    assert_eq!(
        sent["messages"][0]["content"],
        json!([{"type": "image", "source": {"type": "base64", "media_type": "image/jpeg",
                                            "data": "/9j/4AAQSkZJRg=="}},
               {"type": "text", "text": "What is this?"}])
    );
    for openai_only in ["stop", "max_completion_tokens", "user"] {
        assert!(sent.get(openai_only).is_none(), "{openai_only}: {sent}");
    }
}

#[tokio::test]
async fn anthropic_default_max_tokens_option_applies_when_the_client_sets_none() {
    let mock = MockProvider::anthropic().await;
    let gw = gateway_with(
        "anthropic",
        &mock,
        KEY,
        &[CLAUDE],
        "{default_max_tokens: 777}",
    )
    .await;
    chat(&gw, &format!("anthropic/{CLAUDE}")).await;
    assert_eq!(mock.last_request().await.body["max_tokens"], 777);
}

#[tokio::test]
async fn anthropic_stream_reassembles_the_text_and_reports_usage() {
    let (mock, gw) = anthropic_setup().await;
    let (text, usage, finish) = stream_text(&gw, &format!("anthropic/{CLAUDE}")).await;
    assert_eq!(text, anthropic::STREAM_DELTAS.concat());
    assert_eq!(finish, Some(FinishReason::Stop));
    let usage = usage.expect("a usage chunk for include_usage");
    let prompt =
        anthropic::INPUT_TOKENS + anthropic::CACHE_CREATION_TOKENS + anthropic::CACHE_READ_TOKENS;
    assert_eq!(u64::from(usage.prompt_tokens), prompt);
    assert_eq!(u64::from(usage.completion_tokens), anthropic::OUTPUT_TOKENS);
    assert_eq!(
        cached(&usage).map(u64::from),
        Some(anthropic::CACHE_READ_TOKENS)
    );
    let sent = mock.last_request().await;
    assert_eq!(sent.body["stream"], true);
    assert!(
        sent.body.get("stream_options").is_none(),
        "no OpenAI-only fields"
    );
}

#[tokio::test]
async fn anthropic_tool_use_becomes_tool_calls_and_the_result_goes_back_as_tool_result() {
    let (mock, gw) = anthropic_setup().await;
    let model = format!("anthropic/{CLAUDE}");
    let message = ask_with_tool(&gw, &model).await;
    let call = &message["tool_calls"][0];
    assert_eq!(call["id"], anthropic::TOOL_USE_ID);
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["name"], "get_weather");
    let arguments: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(
        arguments,
        json!({"location": "San Francisco, CA", "unit": "celsius"})
    );
    let sent = mock.last_request().await.body;
    assert_eq!(
        sent["tools"][0],
        json!({"name": "get_weather", "description": "Get the current weather in a given location",
               "input_schema": weather_tool()["function"]["parameters"]})
    );

    let reply = answer_tool(&gw, &model, &message, "15 degrees").await;
    assert_eq!(reply, anthropic::TEXT);
    let messages = mock.last_request().await.body["messages"].clone();
    assert_eq!(messages.as_array().unwrap().len(), 3, "{messages}");
    let assistant = &messages[1];
    assert_eq!(assistant["role"], "assistant");
    let tool_use = assistant["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "tool_use")
        .unwrap_or_else(|| panic!("no tool_use block: {assistant}"));
    assert_eq!(tool_use["id"], anthropic::TOOL_USE_ID);
    assert_eq!(tool_use["name"], "get_weather");
    assert_eq!(tool_use["input"]["location"], "San Francisco, CA");
    assert_eq!(messages[2]["role"], "user");
    assert_eq!(
        messages[2]["content"][0],
        json!({"type": "tool_result", "tool_use_id": anthropic::TOOL_USE_ID, "content": "15 degrees"})
    );
}

#[tokio::test]
async fn anthropic_parallel_tool_results_go_back_in_one_user_message() {
    let (mock, gw) = anthropic_setup().await;
    let _: Value = gw
        .openai()
        .chat()
        .create_byot(json!({
            "model": format!("anthropic/{CLAUDE}"),
            "messages": [
                {"role": "user", "content": "Weather in Paris and Rome?"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "toolu_A", "type": "function",
                     "function": {"name": "get_weather", "arguments": "{\"location\":\"Paris\"}"}},
                    {"id": "toolu_B", "type": "function",
                     "function": {"name": "get_weather", "arguments": "{\"location\":\"Rome\"}"}}]},
                {"role": "tool", "tool_call_id": "toolu_A", "content": "15 degrees"},
                {"role": "tool", "tool_call_id": "toolu_B",
                 "content": [{"type": "text", "text": "20 degrees"}]}
            ],
            "tools": [weather_tool()]
        }))
        .await
        .unwrap();
    let messages = mock.last_request().await.body["messages"].clone();
    assert_eq!(messages.as_array().unwrap().len(), 3, "{messages}");
    assert_eq!(
        messages[1]["content"],
        json!([{"type": "tool_use", "id": "toolu_A", "name": "get_weather", "input": {"location": "Paris"}},
               {"type": "tool_use", "id": "toolu_B", "name": "get_weather", "input": {"location": "Rome"}}])
    );
    let results = messages[2]["content"].as_array().unwrap();
    assert_eq!(messages[2]["role"], "user");
    assert_eq!(results.len(), 2, "{messages}");
    assert_eq!(results[0]["tool_use_id"], "toolu_A");
    assert_eq!(results[0]["content"], "15 degrees");
    assert_eq!(results[1]["tool_use_id"], "toolu_B");
    let second = &results[1]["content"];
    assert!(
        *second == json!("20 degrees")
            || *second == json!([{"type": "text", "text": "20 degrees"}]),
        "{second}"
    );
}

#[tokio::test]
async fn anthropic_streamed_tool_call_arrives_as_tool_call_deltas() {
    let (_mock, gw) = anthropic_setup().await;
    let streamed = stream_tools(&gw, &format!("anthropic/{CLAUDE}")).await;
    assert_eq!(streamed.text, anthropic::STREAM_DELTAS.concat());
    assert_eq!(streamed.calls.len(), 1, "{:?}", streamed.calls);
    let (id, name, arguments) = &streamed.calls[0];
    assert_eq!(id, anthropic::TOOL_USE_ID);
    assert_eq!(name, "get_weather");
    assert_eq!(*arguments, json!({"location": "San Francisco, CA"}));
    assert_eq!(streamed.finish, "tool_calls");
}

#[tokio::test]
async fn anthropic_errors_keep_their_status_in_openais_error_shape() {
    let (_mock, gw) = anthropic_setup().await;
    let (status, error) = error_of(&gw, "anthropic/error-429").await;
    assert_eq!(status, 429, "{error}");
    assert_eq!(error["type"], "rate_limit_error");
    let (status, error) = error_of(&gw, "anthropic/error-500").await;
    assert_eq!(status, 502, "an upstream 5xx is a bad gateway: {error}");

    let mock = MockProvider::anthropic().await;
    let wrong_key = gateway("anthropic", &mock, "wrong-key", &[CLAUDE]).await;
    let (status, error) = error_of(&wrong_key, &format!("anthropic/{CLAUDE}")).await;
    assert_eq!(status, 401, "{error}");
    assert_eq!(error["type"], "authentication_error");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("invalid x-api-key"),
        "{error}"
    );
}

// ---------------------------------------------------------------------------------------------
// Gemini

#[tokio::test]
async fn gemini_chat_returns_the_text_without_thoughts_and_usage_with_cache_and_thoughts() {
    let (_mock, gw) = gemini_setup().await;
    let response = chat(&gw, &format!("gemini/{GEMINI}")).await;
    let choice = &response.choices[0];
    assert_eq!(choice.message.content.as_deref(), Some(gemini::TEXT));
    assert_eq!(choice.finish_reason, Some(FinishReason::Stop));
    let usage = response.usage.unwrap();
    assert_eq!(u64::from(usage.prompt_tokens), gemini::PROMPT_TOKENS);
    assert_eq!(
        u64::from(usage.completion_tokens),
        gemini::CANDIDATES_TOKENS + gemini::THOUGHTS_TOKENS,
        "thought tokens are billed as output"
    );
    assert_eq!(cached(&usage).map(u64::from), Some(gemini::CACHED_TOKENS));
}

#[tokio::test]
async fn gemini_request_goes_to_generate_content_with_system_instruction_and_generation_config() {
    let (mock, gw) = gemini_setup().await;
    let mut request = chat_request(&format!("gemini/{GEMINI}"), Some("You are a cat."));
    request.temperature = Some(0.7);
    request.max_completion_tokens = Some(64);
    request.stop = Some(async_openai::types::chat::StopConfiguration::StringArray(
        vec!["END".into()],
    ));
    gw.openai().chat().create(request).await.unwrap();

    let sent = mock.last_request().await;
    assert_eq!(
        sent.path,
        format!("/v1beta/models/{GEMINI}:generateContent")
    );
    assert_eq!(sent.header("x-goog-api-key"), Some(KEY));
    assert_eq!(sent.header("authorization"), None);
    assert!(sent.body.get("model").is_none(), "the model is in the path");
    assert_eq!(
        sent.body["contents"],
        json!([{"role": "user", "parts": [{"text": "Hello there"}]}])
    );
    assert_eq!(
        sent.body["systemInstruction"],
        json!({"parts": [{"text": "You are a cat."}]})
    );
    let config = &sent.body["generationConfig"];
    assert_eq!(config["temperature"], 0.7);
    assert_eq!(config["maxOutputTokens"], 64);
    assert_eq!(config["stopSequences"], json!(["END"]));
}

#[tokio::test]
async fn gemini_request_sends_images_as_inline_data_and_file_data() {
    let (mock, gw) = gemini_setup().await;
    let _: Value = gw
        .openai()
        .chat()
        .create_byot(json!({
            "model": format!("gemini/{GEMINI}"),
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "Caption these."},
                {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQSkZJRg=="}},
                {"type": "image_url", "image_url": {"url": "https://example.com/photos/cat.png"}}]}]
        }))
        .await
        .unwrap();
    assert_eq!(
        mock.last_request().await.body["contents"][0]["parts"],
        json!([{"text": "Caption these."},
               {"inlineData": {"mimeType": "image/jpeg", "data": "/9j/4AAQSkZJRg=="}},
               {"fileData": {"mimeType": "image/png", "fileUri": "https://example.com/photos/cat.png"}}])
    );
}

#[tokio::test]
async fn gemini_stream_reassembles_the_text_and_reports_usage() {
    let (mock, gw) = gemini_setup().await;
    let (text, usage, finish) = stream_text(&gw, &format!("gemini/{GEMINI}")).await;
    assert_eq!(text, gemini::STREAM_DELTAS.concat());
    assert_eq!(finish, Some(FinishReason::Stop));
    let usage = usage.expect("a usage chunk for include_usage");
    assert_eq!(u64::from(usage.prompt_tokens), gemini::PROMPT_TOKENS);
    assert_eq!(
        u64::from(usage.completion_tokens),
        9 + gemini::THOUGHTS_TOKENS,
        "the last chunk's counts"
    );
    assert_eq!(cached(&usage).map(u64::from), Some(gemini::CACHED_TOKENS));
    let sent = mock.last_request().await;
    assert_eq!(
        sent.path,
        format!("/v1beta/models/{GEMINI}:streamGenerateContent?alt=sse")
    );
}

#[tokio::test]
async fn gemini_streamed_function_calls_arrive_as_indexed_tool_call_deltas() {
    let (_mock, gw) = gemini_setup().await;
    let streamed = stream_tools(&gw, &format!("gemini/{GEMINI}")).await;
    assert_eq!(streamed.text, gemini::STREAM_TOOL_TEXT);
    assert_eq!(streamed.calls.len(), 2, "{:?}", streamed.calls);
    assert_ne!(streamed.calls[0].0, streamed.calls[1].0, "distinct ids");
    assert!(!streamed.calls[0].0.is_empty());
    assert_eq!(streamed.calls[0].1, "get_weather");
    assert_eq!(streamed.calls[0].2, json!({"city": "Paris"}));
    assert_eq!(streamed.calls[1].2, json!({"city": "Rome"}));
    assert_eq!(
        streamed.finish, "tool_calls",
        "Gemini says STOP; calls make it tool_calls"
    );
}

#[tokio::test]
async fn gemini_function_call_round_trip_recovers_the_function_name_from_the_call_id() {
    let (mock, gw) = gemini_setup().await;
    let model = format!("gemini/{GEMINI}");
    let message = ask_with_tool(&gw, &model).await;
    let call = &message["tool_calls"][0];
    assert!(call["id"].as_str().is_some_and(|id| !id.is_empty()));
    assert_eq!(call["function"]["name"], "get_weather");
    assert_eq!(
        serde_json::from_str::<Value>(call["function"]["arguments"].as_str().unwrap()).unwrap(),
        json!({"city": "Paris"})
    );
    let sent = mock.last_request().await.body;
    assert_eq!(
        sent["tools"][0]["functionDeclarations"][0]["name"],
        "get_weather"
    );

    let reply = answer_tool(&gw, &model, &message, r#"{"temperature": 15}"#).await;
    assert_eq!(reply, gemini::TEXT);
    let contents = mock.last_request().await.body["contents"].clone();
    assert_eq!(contents.as_array().unwrap().len(), 3, "{contents}");
    assert_eq!(contents[1]["role"], "model");
    assert_eq!(
        contents[1]["parts"][0]["functionCall"],
        json!({"name": "get_weather", "args": {"city": "Paris"}})
    );
    assert_eq!(contents[2]["role"], "user");
    assert_eq!(
        contents[2]["parts"][0]["functionResponse"],
        json!({"name": "get_weather", "response": {"temperature": 15}}),
        "the name comes from the tool call the id refers to"
    );
}

#[tokio::test]
async fn gemini_second_tool_turn_reusing_call_0_gets_its_own_function_name() {
    let (mock, gw) = gemini_setup().await;
    let _: Value = gw
        .openai()
        .chat()
        .create_byot(json!({
            "model": format!("gemini/{GEMINI}"),
            "messages": [
                {"role": "user", "content": "Weather in Paris, then the time there?"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "call_0", "type": "function",
                    "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
                {"role": "tool", "tool_call_id": "call_0", "content": "{\"temperature\": 15}"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "call_0", "type": "function",
                    "function": {"name": "get_time", "arguments": "{\"city\":\"Paris\"}"}}]},
                {"role": "tool", "tool_call_id": "call_0", "content": "10:00"}
            ]
        }))
        .await
        .unwrap();
    let contents = mock.last_request().await.body["contents"].clone();
    assert_eq!(contents.as_array().unwrap().len(), 5, "{contents}");
    assert_eq!(
        contents[2]["parts"][0]["functionResponse"]["name"],
        "get_weather"
    );
    assert_eq!(
        contents[4]["parts"][0]["functionResponse"]["name"],
        "get_time"
    );
    assert_eq!(
        contents[4]["parts"][0]["functionResponse"]["response"],
        json!({"output": "10:00"}),
        "a non-JSON result is wrapped"
    );
}

#[tokio::test]
async fn gemini_embeddings_use_embed_content_and_batch_embed_contents() {
    let (mock, gw) = gemini_setup().await;
    let one = CreateEmbeddingRequestArgs::default()
        .model(format!("gemini/{GEMINI_EMBED}"))
        .input("What is the meaning of life?")
        .dimensions(3u32)
        .build()
        .unwrap();
    let response = gw.openai().embeddings().create(one).await.unwrap();
    assert_eq!(response.data.len(), 1);
    let expected: Vec<f32> = gemini::EMBEDDING.iter().map(|&x| x as f32).collect();
    assert_eq!(response.data[0].embedding, expected);
    let sent = mock.last_request().await;
    assert_eq!(
        sent.path,
        format!("/v1beta/models/{GEMINI_EMBED}:embedContent")
    );
    assert_eq!(sent.header("x-goog-api-key"), Some(KEY));
    assert_eq!(
        sent.body["content"],
        json!({"parts": [{"text": "What is the meaning of life?"}]})
    );
    assert_eq!(sent.body["outputDimensionality"], 3);

    let two = CreateEmbeddingRequestArgs::default()
        .model(format!("gemini/{GEMINI_EMBED}"))
        .input(["first", "second"])
        .build()
        .unwrap();
    let response = gw.openai().embeddings().create(two).await.unwrap();
    assert_eq!(response.data.len(), 2);
    assert_eq!(response.data[1].index, 1);
    let sent = mock.last_request().await;
    assert_eq!(
        sent.path,
        format!("/v1beta/models/{GEMINI_EMBED}:batchEmbedContents")
    );
    assert_eq!(
        sent.body["requests"][1],
        json!({"model": format!("models/{GEMINI_EMBED}"), "content": {"parts": [{"text": "second"}]}})
    );
}

#[tokio::test]
async fn gemini_errors_map_to_openais_error_shape() {
    let (_mock, gw) = gemini_setup().await;
    let (status, error) = error_of(&gw, "gemini/error-429").await;
    assert_eq!(status, 429, "{error}");
    assert_eq!(error["type"], "rate_limit_error");

    let mock = MockProvider::gemini().await;
    let wrong_key = gateway("gemini", &mock, "wrong-key", &[GEMINI]).await;
    let (status, error) = error_of(&wrong_key, &format!("gemini/{GEMINI}")).await;
    // Gemini answers a bad key with 400 INVALID_ARGUMENT; the plugin classes it as authentication
    // and the gateway keeps the upstream's 4xx status.
    assert_eq!(status, 400, "{error}");
    assert_eq!(error["type"], "authentication_error");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("API key not valid"),
        "{error}"
    );
}

// ---------------------------------------------------------------------------------------------
// Cohere

#[tokio::test]
async fn cohere_chat_returns_the_text_and_billed_usage_with_cached_tokens() {
    let (_mock, gw) = cohere_setup().await;
    let response = chat(&gw, &format!("cohere/{COMMAND}")).await;
    let choice = &response.choices[0];
    assert_eq!(choice.message.content.as_deref(), Some(cohere::TEXT));
    assert_eq!(choice.finish_reason, Some(FinishReason::Stop));
    let usage = response.usage.unwrap();
    assert_eq!(u64::from(usage.prompt_tokens), cohere::BILLED_INPUT_TOKENS);
    assert_eq!(
        u64::from(usage.completion_tokens),
        cohere::BILLED_OUTPUT_TOKENS
    );
    assert_eq!(cached(&usage).map(u64::from), Some(cohere::CACHED_TOKENS));
}

#[tokio::test]
async fn cohere_request_is_v2_chat_with_bearer_key_and_renamed_parameters() {
    let (mock, gw) = cohere_setup().await;
    let mut request = chat_request(&format!("cohere/{COMMAND}"), Some("Be concise."));
    request.top_p = Some(0.75);
    request.max_completion_tokens = Some(100);
    gw.openai().chat().create(request).await.unwrap();

    let sent = mock.last_request().await;
    assert_eq!(sent.path, "/v2/chat");
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(sent.body["model"], COMMAND);
    assert_eq!(
        sent.body["messages"],
        json!([{"role": "system", "content": "Be concise."},
               {"role": "user", "content": "Hello there"}])
    );
    assert_eq!(sent.body["p"], 0.75, "top_p is Cohere's p");
    assert_eq!(sent.body["max_tokens"], 100);
}

#[tokio::test]
async fn cohere_stream_reassembles_the_text_and_reports_usage() {
    let (mock, gw) = cohere_setup().await;
    let (text, usage, finish) = stream_text(&gw, &format!("cohere/{COMMAND}")).await;
    assert_eq!(text, cohere::STREAM_DELTAS.concat());
    assert_eq!(finish, Some(FinishReason::Stop));
    let usage = usage.expect("a usage chunk for include_usage");
    assert_eq!(u64::from(usage.prompt_tokens), cohere::BILLED_INPUT_TOKENS);
    assert_eq!(
        u64::from(usage.completion_tokens),
        cohere::BILLED_OUTPUT_TOKENS
    );
    assert_eq!(cached(&usage).map(u64::from), Some(cohere::CACHED_TOKENS));
    assert_eq!(mock.last_request().await.body["stream"], true);
}

#[tokio::test]
async fn cohere_tool_call_round_trip_sends_the_tool_plan_and_tool_message_back() {
    let (mock, gw) = cohere_setup().await;
    let model = format!("cohere/{COMMAND}");
    let message = ask_with_tool(&gw, &model).await;
    assert_eq!(
        message["content"],
        cohere::TOOL_PLAN,
        "the tool plan is the content"
    );
    let call = &message["tool_calls"][0];
    assert_eq!(call["id"], cohere::TOOL_CALL_ID);
    assert_eq!(call["function"]["name"], "get_weather");
    assert_eq!(
        serde_json::from_str::<Value>(call["function"]["arguments"].as_str().unwrap()).unwrap(),
        json!({"location": "Toronto"})
    );

    let reply = answer_tool(&gw, &model, &message, r#"[{"temperature": 30}]"#).await;
    assert_eq!(reply, cohere::TEXT);
    let messages = mock.last_request().await.body["messages"].clone();
    assert_eq!(messages.as_array().unwrap().len(), 3, "{messages}");
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(messages[1]["tool_plan"], cohere::TOOL_PLAN);
    assert_eq!(messages[1]["tool_calls"][0]["id"], cohere::TOOL_CALL_ID);
    assert_eq!(
        messages[1]["tool_calls"][0]["function"]["name"],
        "get_weather"
    );
    assert_eq!(
        messages[2],
        json!({"role": "tool", "tool_call_id": cohere::TOOL_CALL_ID,
               "content": r#"[{"temperature": 30}]"#})
    );
}

#[tokio::test]
async fn cohere_streamed_tool_calls_arrive_with_the_tool_plan_as_content() {
    let (_mock, gw) = cohere_setup().await;
    let streamed = stream_tools(&gw, &format!("cohere/{COMMAND}")).await;
    assert_eq!(streamed.text, cohere::STREAM_TOOL_PLAN.concat());
    assert_eq!(streamed.calls.len(), 2, "{:?}", streamed.calls);
    assert_eq!(streamed.calls[0].0, cohere::STREAM_TOOL_CALL_IDS[0]);
    assert_eq!(streamed.calls[1].0, cohere::STREAM_TOOL_CALL_IDS[1]);
    assert_eq!(streamed.calls[0].1, "get_weather");
    assert_eq!(streamed.calls[0].2, json!({"location": "Toronto"}));
    assert_eq!(streamed.calls[1].2, json!({"location": "Madrid"}));
    assert_eq!(streamed.finish, "tool_calls");
}

#[tokio::test]
async fn cohere_embeddings_go_to_v2_embed_as_float_texts() {
    let (mock, gw) = cohere_setup().await;
    let request = CreateEmbeddingRequestArgs::default()
        .model(format!("cohere/{COHERE_EMBED}"))
        .input(["hello", "goodbye"])
        .build()
        .unwrap();
    let response = gw.openai().embeddings().create(request).await.unwrap();
    assert_eq!(response.data.len(), 2);
    assert_eq!(response.data[1].index, 1);
    assert_eq!(response.data[1].embedding[0], 1.016_296_4);
    assert_eq!(response.usage.prompt_tokens, 2);
    let sent = mock.last_request().await;
    assert_eq!(sent.path, "/v2/embed");
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(sent.body["model"], COHERE_EMBED);
    assert_eq!(sent.body["texts"], json!(["hello", "goodbye"]));
    assert_eq!(sent.body["embedding_types"], json!(["float"]));
    assert!(
        sent.body["input_type"].is_string(),
        "input_type is required"
    );
}

#[tokio::test]
async fn cohere_embed_input_type_comes_from_the_provider_options() {
    let mock = MockProvider::cohere().await;
    let gw = gateway_with(
        "cohere",
        &mock,
        KEY,
        &[COHERE_EMBED],
        "{input_type: search_query}",
    )
    .await;
    let request = CreateEmbeddingRequestArgs::default()
        .model(format!("cohere/{COHERE_EMBED}"))
        .input("hello")
        .build()
        .unwrap();
    let response = gw.openai().embeddings().create(request).await.unwrap();
    assert_eq!(response.data.len(), 1);
    let sent = mock.last_request().await.body;
    assert_eq!(sent["input_type"], "search_query");
    assert_eq!(sent["texts"], json!(["hello"]));
}

#[tokio::test]
async fn cohere_errors_map_to_openais_error_shape() {
    let (_mock, gw) = cohere_setup().await;
    let (status, error) = error_of(&gw, "cohere/error-429").await;
    assert_eq!(status, 429, "{error}");
    assert_eq!(error["type"], "rate_limit_error");

    let mock = MockProvider::cohere().await;
    let wrong_key = gateway("cohere", &mock, "wrong-key", &[COMMAND]).await;
    let (status, error) = error_of(&wrong_key, &format!("cohere/{COMMAND}")).await;
    assert_eq!(status, 401, "{error}");
    assert_eq!(error["type"], "authentication_error");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("invalid api token"),
        "{error}"
    );
}

// ---------------------------------------------------------------------------------------------
// Azure OpenAI

#[tokio::test]
async fn azure_chat_returns_the_text_and_usage() {
    let (_mock, gw) = azure_setup().await;
    let response = chat(&gw, &format!("azure-openai/{GPT}")).await;
    let choice = &response.choices[0];
    assert_eq!(choice.message.content.as_deref(), Some(azure::TEXT));
    assert_eq!(choice.finish_reason, Some(FinishReason::Stop));
    let usage = response.usage.unwrap();
    assert_eq!(u64::from(usage.prompt_tokens), azure::PROMPT_TOKENS);
    assert_eq!(u64::from(usage.completion_tokens), azure::COMPLETION_TOKENS);
    assert_eq!(cached(&usage).map(u64::from), Some(azure::CACHED_TOKENS));
}

#[tokio::test]
async fn azure_request_goes_to_the_deployment_with_api_version_and_api_key() {
    let (mock, gw) = azure_setup().await;
    gw.openai()
        .chat()
        .create(chat_request(
            &format!("azure-openai/{GPT}"),
            Some("Be brief."),
        ))
        .await
        .unwrap();
    let sent = mock.last_request().await;
    assert_eq!(
        sent.path,
        "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21"
    );
    assert_eq!(sent.header("api-key"), Some(KEY));
    assert_eq!(sent.header("authorization"), None, "Azure keys are api-key");
    assert_eq!(sent.body["messages"][0]["role"], "system");
    assert_eq!(sent.body["messages"][1]["content"], "Hello there");
}

#[tokio::test]
async fn azure_deployments_and_api_version_options_choose_the_url() {
    let mock = MockProvider::azure().await;
    let gw = gateway_with(
        "azure-openai",
        &mock,
        KEY,
        &[GPT],
        "{api_version: 2025-01-01-preview, deployments: {gpt-4o: prod-gpt4o-eastus}}",
    )
    .await;
    let response = chat(&gw, &format!("azure-openai/{GPT}")).await;
    assert_eq!(
        response.choices[0].message.content.as_deref(),
        Some(azure::TEXT)
    );
    let sent = mock.last_request().await;
    assert_eq!(
        sent.path,
        "/openai/deployments/prod-gpt4o-eastus/chat/completions?api-version=2025-01-01-preview"
    );
}

#[tokio::test]
async fn azure_stream_skips_the_prompt_filter_chunk_and_reports_usage() {
    let (mock, gw) = azure_setup().await;
    let (text, usage, finish) = stream_text(&gw, &format!("azure-openai/{GPT}")).await;
    assert_eq!(text, azure::STREAM_DELTAS.concat());
    assert_eq!(finish, Some(FinishReason::Stop));
    let usage = usage.expect("a usage chunk for include_usage");
    assert_eq!(u64::from(usage.prompt_tokens), azure::PROMPT_TOKENS);
    assert_eq!(u64::from(usage.completion_tokens), azure::COMPLETION_TOKENS);
    assert_eq!(cached(&usage).map(u64::from), Some(azure::CACHED_TOKENS));
    let sent = mock.last_request().await.body;
    assert_eq!(sent["stream"], true);
    assert_eq!(sent["stream_options"]["include_usage"], true);
}

#[tokio::test]
async fn azure_tool_call_round_trip_passes_openais_shape_through() {
    let (mock, gw) = azure_setup().await;
    let model = format!("azure-openai/{GPT}");
    let message = ask_with_tool(&gw, &model).await;
    let call = &message["tool_calls"][0];
    assert_eq!(call["id"], azure::TOOL_CALL_ID);
    assert_eq!(call["function"]["name"], "get_weather");
    assert_eq!(
        call["function"]["arguments"],
        "{\"location\":\"Boston, MA\"}"
    );

    let reply = answer_tool(&gw, &model, &message, "22 degrees").await;
    assert_eq!(reply, azure::TEXT);
    let messages = mock.last_request().await.body["messages"].clone();
    assert_eq!(messages[1]["tool_calls"][0]["id"], azure::TOOL_CALL_ID);
    assert_eq!(
        messages[2],
        json!({"role": "tool", "tool_call_id": azure::TOOL_CALL_ID, "content": "22 degrees"})
    );
}

#[tokio::test]
async fn azure_errors_map_to_openais_error_shape() {
    let (_mock, gw) = azure_setup().await;
    let (status, error) = error_of(&gw, "azure-openai/error-429").await;
    assert_eq!(status, 429, "{error}");
    assert_eq!(error["type"], "rate_limit_error");
    let (status, _) = error_of(&gw, "azure-openai/error-500").await;
    assert_eq!(status, 502);

    let mock = MockProvider::azure().await;
    let wrong_key = gateway("azure-openai", &mock, "wrong-key", &[GPT]).await;
    let (status, error) = error_of(&wrong_key, &format!("azure-openai/{GPT}")).await;
    assert_eq!(status, 401, "{error}");
    assert_eq!(error["type"], "authentication_error");
    assert!(
        error["message"].as_str().unwrap().contains("Access denied"),
        "{error}"
    );
}

// ---------------------------------------------------------------------------------------------
// All four

#[tokio::test]
async fn streams_without_include_usage_end_with_done_and_no_usage_chunk() {
    for (provider, model) in [
        ("anthropic", CLAUDE),
        ("gemini", GEMINI),
        ("cohere", COMMAND),
        ("azure-openai", GPT),
    ] {
        let (_mock, gw) = match provider {
            "anthropic" => anthropic_setup().await,
            "gemini" => gemini_setup().await,
            "cohere" => cohere_setup().await,
            _ => azure_setup().await,
        };
        let response = http()
            .post(gw.url("/v1/chat/completions"))
            .json(
                &json!({"model": format!("{provider}/{model}"), "stream": true,
                          "messages": [{"role": "user", "content": "hi"}]}),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{provider}");
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        let body = response.text().await.unwrap();
        assert!(body.ends_with("data: [DONE]\n\n"), "{provider}: {body}");
        let events: Vec<Value> = body
            .split("\n\n")
            .filter_map(|e| e.strip_prefix("data: "))
            .filter(|e| *e != "[DONE]")
            .map(|e| serde_json::from_str(e).unwrap())
            .collect();
        assert!(
            events.iter().all(|e| e["usage"].is_null()),
            "{provider}: no usage for a client that did not ask: {body}"
        );
        assert!(
            events
                .iter()
                .any(|e| e["choices"][0]["finish_reason"] == "stop"),
            "{provider}: {body}"
        );
    }
}

/// Setup for `provider`; the raw SSE body of a streamed request for `model`.
async fn raw_stream(provider: &str, model: &str) -> (u16, String, String) {
    let (_mock, gw) = match provider {
        "anthropic" => anthropic_setup().await,
        "gemini" => gemini_setup().await,
        "cohere" => cohere_setup().await,
        _ => azure_setup().await,
    };
    let response = http()
        .post(gw.url("/v1/chat/completions"))
        .json(
            &json!({"model": format!("{provider}/{model}"), "stream": true,
                      "messages": [{"role": "user", "content": "hi"}]}),
        )
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

#[tokio::test]
async fn upstream_errors_before_a_stream_are_json_errors_not_streams() {
    for provider in ["anthropic", "gemini", "cohere", "azure-openai"] {
        let (status, content_type, body) = raw_stream(provider, "error-429").await;
        assert_eq!(status, 429, "{provider}: {body}");
        assert!(content_type.starts_with("application/json"), "{provider}");
        let body: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            body["error"]["type"], "rate_limit_error",
            "{provider}: {body}"
        );
    }
}

#[tokio::test]
async fn streams_cut_short_by_the_upstream_end_with_an_error_event_and_no_done() {
    let firsts = [
        ("anthropic", anthropic::STREAM_DELTAS[0]),
        ("gemini", gemini::STREAM_DELTAS[0]),
        ("cohere", cohere::STREAM_DELTAS[0]),
        // Not azure-openai: its OpenAI-wire decoder accepts a stream that ends without a finish
        // chunk or `[DONE]`, and the gateway then ends it with `[DONE]` as if it were whole.
    ];
    for (provider, first) in firsts {
        let (status, _, body) = raw_stream(provider, "stream-cut").await;
        assert_eq!(status, 200, "{provider}: {body}");
        assert!(
            body.contains(&format!("\"content\":\"{first}\"")),
            "{provider}: the delta before the cut is relayed: {body}"
        );
        assert!(!body.contains("[DONE]"), "{provider}: {body}");
        let last: Value = body
            .split("\n\n")
            .filter_map(|e| e.strip_prefix("data: "))
            .last()
            .map(|e| serde_json::from_str(e).unwrap())
            .unwrap();
        assert!(
            last["error"]["message"].is_string(),
            "{provider}: the stream ends with an error event: {body}"
        );
    }
}

#[tokio::test]
async fn anthropic_error_event_mid_stream_becomes_an_openai_error_event() {
    let (status, _, body) = raw_stream("anthropic", "stream-overloaded").await;
    assert_eq!(status, 200);
    assert!(body.contains("\"content\":\"Hello\""), "{body}");
    assert!(!body.contains("[DONE]"), "{body}");
    let last: Value = body
        .split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .last()
        .map(|e| serde_json::from_str(e).unwrap())
        .unwrap();
    let error = &last["error"];
    assert!(
        error["message"].as_str().unwrap().contains("Overloaded"),
        "{body}"
    );
    assert_eq!(error["code"], "overloaded_error", "{body}");
}

#[tokio::test]
async fn requests_a_provider_cannot_express_are_400s_naming_the_param_and_never_sent() {
    let (anthropic_mock, anthropic_gw) = anthropic_setup().await;
    let response = http()
        .post(anthropic_gw.url("/v1/chat/completions"))
        .json(&json!({"model": format!("anthropic/{CLAUDE}"), "n": 2,
                      "messages": [{"role": "user", "content": "Hello"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["type"], "invalid_request_error", "{body}");
    assert_eq!(body["error"]["param"], "n", "{body}");
    assert!(anthropic_mock.requests().await.is_empty());

    let (gemini_mock, gemini_gw) = gemini_setup().await;
    let response = http()
        .post(gemini_gw.url("/v1/chat/completions"))
        .json(&json!({"model": format!("gemini/{GEMINI}"), "messages": [
            {"role": "user", "content": "Hi"},
            {"role": "tool", "tool_call_id": "call_9", "content": "42"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["param"], "messages[1].tool_call_id", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("call_9"),
        "{body}"
    );
    assert!(gemini_mock.requests().await.is_empty());
}

/// Each entry's native dialects are what its built-in plugin says when the config loads:
/// Messages for Anthropic, Responses for OpenAI's own API, an Azure resource and a preset whose
/// host serves it, none for a compatible host without it or for the other plugins; OpenAI's
/// Files and Batch APIs (`openai-batches`) for OpenAI's own API and every Azure resource, and
/// Anthropic's Message Batches (`anthropic-message-batches`) for Anthropic.
#[tokio::test]
async fn entries_learn_their_native_dialects_from_their_plugins() {
    let yaml = r#"
providers:
  anthropic: { plugin: anthropic, api_key: "k", models: [claude-haiku-4-5] }
  openai: { plugin: openai, api_key: "k", models: [gpt-4o-mini] }
  deepseek: { plugin: openai, base_url: "https://api.deepseek.com/v1", api_key: "k", models: [deepseek-chat] }
  groq: { preset: groq, api_key: "k" }
  azure: { plugin: azure-openai, base_url: "https://res.openai.azure.com", api_key: "k", models: [gpt-4o] }
  azure-old: { plugin: azure-openai, base_url: "https://res.openai.azure.com", api_key: "k", models: [gpt-4o], options: { responses: translate } }
  gemini: { plugin: gemini, api_key: "k", models: [gemini-2.5-flash] }
  echo: { plugin: echo, models: [echo-1] }
"#;
    let gateway = TestGateway::start(yaml).await;
    let loaded = gateway.state.gateway.load();
    let native = |name: &str| {
        let provider = loaded.providers.iter().find(|p| &*p.name == name).unwrap();
        provider.native.clone()
    };
    assert_eq!(
        native("anthropic"),
        ["messages", "anthropic-message-batches"]
    );
    assert_eq!(native("openai"), ["responses", "openai-batches"]);
    assert!(native("deepseek").is_empty());
    assert_eq!(native("groq"), ["responses"]);
    assert_eq!(native("azure"), ["responses", "openai-batches"]);
    assert_eq!(native("azure-old"), ["openai-batches"]);
    assert!(native("echo").is_empty());
}

/// Each entry's default base URL and telemetry name are what its plugin states when the config
/// loads (the contract's `describe`): the host keeps no table of plugin names.
#[tokio::test]
async fn entries_learn_their_default_base_url_and_telemetry_name_from_their_plugins() {
    let yaml = r#"
providers:
  openai: { plugin: openai, api_key: "k", models: [gpt-4o-mini] }
  local: { plugin: openai, base_url: "http://127.0.0.1:9/v1", models: [m] }
  anthropic: { plugin: anthropic, api_key: "k", models: [claude-haiku-4-5] }
  gemini: { plugin: gemini, api_key: "k", models: [gemini-2.5-flash] }
  cohere: { plugin: cohere, api_key: "k", models: [command-a-03-2025] }
  azure: { plugin: azure-openai, base_url: "https://res.openai.azure.com", api_key: "k", models: [gpt-4o] }
  bedrock: { plugin: bedrock, api_key: "AKID:SECRET", models: [m], options: { region: eu-west-3 } }
  echo: { plugin: echo, models: [echo-1] }
"#;
    let gateway = TestGateway::start(yaml).await;
    let loaded = gateway.state.gateway.load();
    let stated = |name: &str| {
        let provider = loaded.providers.iter().find(|p| &*p.name == name).unwrap();
        (
            provider.config.base_url.clone(),
            provider.system.to_string(),
        )
    };
    let cases = [
        ("openai", Some("https://api.openai.com/v1"), "openai"),
        ("local", Some("http://127.0.0.1:9/v1"), "openai"),
        (
            "anthropic",
            Some("https://api.anthropic.com/v1"),
            "anthropic",
        ),
        (
            "gemini",
            Some("https://generativelanguage.googleapis.com/v1beta"),
            "gcp.gemini",
        ),
        ("cohere", Some("https://api.cohere.com/v2"), "cohere"),
        (
            "azure",
            Some("https://res.openai.azure.com"),
            "azure.ai.openai",
        ),
        (
            "bedrock",
            Some("https://bedrock-runtime.eu-west-3.amazonaws.com"),
            "aws.bedrock",
        ),
        // States no name: the plugin's own.
        ("echo", None, "echo"),
    ];
    for (name, base_url, system) in cases {
        let expected = (base_url.map(str::to_owned), system.to_owned());
        assert_eq!(stated(name), expected, "{name}");
    }

    // A default is one the SDK would accept: a region that is no region name gives none, and
    // the entry is refused for it, naming the option.
    let bad_region = r#"
providers:
  bedrock: { plugin: bedrock, api_key: "AKID:SECRET", models: [m], options: { region: "evil.example/x" } }
"#;
    let err = TestGateway::try_start(bad_region).await.err().unwrap();
    assert!(format!("{err:#}").contains("options.region"), "{err:#}");
    // Azure states none: the entry must give its resource's endpoint.
    let no_endpoint = "providers:\n  azure: { plugin: azure-openai, api_key: k, models: [m] }\n";
    let err = TestGateway::try_start(no_endpoint).await.err().unwrap();
    assert!(
        format!("{err:#}").contains("base_url: is required"),
        "{err:#}"
    );
}

/// A provider the host has never heard of (tests/plugins/tiny-provider, built from the test
/// tree) states its default base URL (from its own option `port`) and its telemetry name, and
/// gets its key sent in the header it declares, without any change to the host.
#[tokio::test]
async fn a_new_provider_needs_no_change_to_the_host() {
    let mock = MockOpenAi::start().await;
    let port = mock.addr.port();
    let tiny = Provider::plugin("tiny-provider")
        .api_key("sk-tiny")
        .models(["gpt-4o-mini"])
        .options(&format!(
            "{{ port: {port}, headers: {{ x-team: search }} }}"
        ));
    let gateway = Gateway::builder().provider("tiny", tiny).start().await;
    {
        let loaded = gateway.state.gateway.load();
        let entry = &loaded.providers[0];
        assert_eq!(&*entry.system, "tiny");
        let base_url = format!("http://127.0.0.1:{port}/v1");
        assert_eq!(entry.config.base_url.as_deref(), Some(base_url.as_str()));
    }

    let body =
        json!({"model": "tiny/gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]});
    let response = http()
        .post(gateway.url("/v1/chat/completions"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    let sent = mock.requests().await;
    assert_eq!(sent.len(), 1);
    let header = |name: &str| {
        sent[0]
            .headers
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    };
    assert_eq!(header("x-tiny-key").as_deref(), Some("sk-tiny"));
    assert_eq!(header("authorization"), None);
    assert_eq!(header("x-team").as_deref(), Some("search"));

    // Its options are checked when the config loads, naming the key.
    let typo = Provider::plugin("tiny-provider")
        .models(["m"])
        .options("{ prot: 1 }");
    let err = Gateway::builder()
        .provider("tiny", typo)
        .try_start()
        .await
        .err()
        .unwrap();
    assert!(format!("{err:#}").contains("options.prot"), "{err:#}");
}
