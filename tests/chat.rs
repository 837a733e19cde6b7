//! Chat completions through the real server, driven by the async-openai client: the `openai`
//! plugin against a mock OpenAI upstream, and the built-in `echo` plugin.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use async_openai::types::chat::{
    ChatCompletionRequestUserMessageArgs, CreateChatCompletionRequestArgs,
};
use common::gateway::Gateway;
use common::mock_openai::{self, MockOpenAi};
use common::{TestGateway, http};
use serde_json::{Value, json};

fn user(text: &str) -> async_openai::types::chat::ChatCompletionRequestMessage {
    ChatCompletionRequestUserMessageArgs::default()
        .content(text)
        .build()
        .unwrap()
        .into()
}

#[tokio::test]
async fn a_typed_client_gets_the_upstream_answer_and_usage() {
    let mock = MockOpenAi::start().await;
    let gateway = Gateway::standard(&mock.base_url()).start().await;
    let request = CreateChatCompletionRequestArgs::default()
        .model("openai/gpt-4o-mini")
        .messages([user("Say hello")])
        .max_completion_tokens(50u32)
        .build()
        .unwrap();
    let response = gateway.openai().chat().create(request).await.unwrap();

    assert_eq!(
        response.choices[0].message.content.as_deref(),
        Some(mock_openai::REPLY)
    );
    let usage = response.usage.unwrap();
    assert_eq!(u64::from(usage.prompt_tokens), mock_openai::PROMPT_TOKENS);
    assert_eq!(
        u64::from(usage.completion_tokens),
        mock_openai::COMPLETION_TOKENS
    );

    let sent = mock.last_request().await;
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(
        sent.body["model"], "gpt-4o-mini",
        "the provider prefix is stripped"
    );
    assert_eq!(sent.body["messages"][0]["content"], "Say hello");
    assert_eq!(sent.body["max_completion_tokens"], 50);
    assert_eq!(
        sent.headers["authorization"], "Bearer sk-upstream-secret",
        "the provider's key is sent, not the client's"
    );
}

#[tokio::test]
async fn responses_name_the_request_provider_and_model() {
    let mock = MockOpenAi::start().await;
    let gateway = Gateway::standard(&mock.base_url()).start().await;
    let response = http()
        .post(gateway.url("/v1/chat/completions"))
        .json(&json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-wasmgate-provider"], "openai");
    assert_eq!(response.headers()["x-wasmgate-model"], "gpt-4o-mini");
    let id = response.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(id.len(), 36, "a uuid: {id}");

    let echoed = http()
        .post(gateway.url("/v1/chat/completions"))
        .header("x-request-id", "my-trace-42")
        .json(&json!({"model": "echo/echo-1", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(echoed.headers()["x-request-id"], "my-trace-42");
    assert_eq!(echoed.headers()["x-wasmgate-provider"], "echo");
}

#[tokio::test]
async fn tools_response_format_and_image_inputs_reach_the_upstream_unchanged() {
    let mock = MockOpenAi::start().await;
    let gateway = Gateway::standard(&mock.base_url()).start().await;
    let request = json!({
        "model": "openai/gpt-4o-mini",
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": [
                {"type": "text", "text": "What is in this image?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"}}
            ]}
        ],
        "tools": [{"type": "function", "function": {
            "name": "get_weather", "description": "Weather of a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
        "tool_choice": "auto",
        "response_format": {"type": "json_schema", "json_schema": {"name": "w", "schema": {"type": "object"}}},
        "temperature": 0.2,
        "user": "end-user-1",
        "extra": {"user": {"id": "u-1", "tags": ["beta"]}}
    });
    let response: Value = gateway
        .openai()
        .chat()
        .create_byot(request.clone())
        .await
        .unwrap();
    let call = &response["choices"][0]["message"]["tool_calls"][0];
    assert_eq!(call["function"]["name"], "get_weather");
    assert_eq!(call["function"]["arguments"], "{\"city\":\"Paris\"}");
    assert_eq!(response["choices"][0]["finish_reason"], "tool_calls");

    let sent = mock.last_request().await.body;
    for key in [
        "messages",
        "tools",
        "tool_choice",
        "response_format",
        "temperature",
        "user",
    ] {
        assert_eq!(sent[key], request[key], "`{key}` is forwarded unchanged");
    }
    assert!(
        sent.get("extra").is_none(),
        "gateway metadata is never forwarded"
    );
}

#[tokio::test]
async fn a_bare_model_name_resolves_when_one_provider_serves_it() {
    let mock = MockOpenAi::start().await;
    let gateway = Gateway::standard(&mock.base_url()).start().await;
    let request = CreateChatCompletionRequestArgs::default()
        .model("echo-1")
        .messages([user("bare name")])
        .build()
        .unwrap();
    let response = gateway.openai().chat().create(request).await.unwrap();
    assert_eq!(
        response.choices[0].message.content.as_deref(),
        Some("bare name")
    );
    assert!(
        mock.requests().await.is_empty(),
        "echo answers without any upstream"
    );
}

#[tokio::test]
async fn echo_answers_locally_with_real_token_counts() {
    let gateway = TestGateway::start(wasmgate::config::DEFAULT_CONFIG).await;
    let text = "The quick brown fox jumps over the lazy dog";
    let request = CreateChatCompletionRequestArgs::default()
        .model("echo/echo-1")
        .messages([user(text)])
        .build()
        .unwrap();
    let response = gateway.openai().chat().create(request).await.unwrap();
    assert_eq!(response.choices[0].message.content.as_deref(), Some(text));
    let usage = response.usage.unwrap();
    let tokens = wasmgate::tokenizer::Tokenizer.count(text);
    assert_eq!(usage.completion_tokens, tokens);
    // OpenAI's cookbook formula: 3 per message + role + content, and 3 to prime the reply.
    let prompt = 3 + wasmgate::tokenizer::Tokenizer.count("user") + tokens + 3;
    assert_eq!(usage.prompt_tokens, prompt);

    let again = gateway
        .openai()
        .chat()
        .create(
            CreateChatCompletionRequestArgs::default()
                .model("echo/echo-1")
                .messages([user(text)])
                .build()
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(again.id, response.id, "echo is deterministic");
}
