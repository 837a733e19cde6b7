//! Streamed chat completions: events relayed through the plugin's decoder (the mock splits them
//! into 7-byte pieces), usage asked of the upstream, tool-call deltas, and client disconnects.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use async_openai::types::chat::{
    ChatCompletionRequestUserMessageArgs, ChatCompletionStreamOptions,
    CreateChatCompletionRequestArgs,
};
use common::gateway::Gateway;
use common::mock_openai::{self, MockOpenAi};
use common::{TestGateway, http};
use futures_util::StreamExt;
use serde_json::{Value, json};

fn request(
    model: &str,
    include_usage: Option<bool>,
) -> async_openai::types::chat::CreateChatCompletionRequest {
    let mut args = CreateChatCompletionRequestArgs::default();
    // With async-openai's `byot` feature on, `create_stream` leaves `stream` as given.
    args.model(model)
        .stream(true)
        .messages([ChatCompletionRequestUserMessageArgs::default()
            .content("Stream me a greeting")
            .build()
            .unwrap()
            .into()]);
    if let Some(include_usage) = include_usage {
        args.stream_options(ChatCompletionStreamOptions {
            include_usage: Some(include_usage),
            include_obfuscation: None,
        });
    }
    args.build().unwrap()
}

#[tokio::test]
async fn a_typed_client_reads_the_whole_stream_and_its_usage() {
    let mock = MockOpenAi::start().await;
    let gateway = Gateway::standard(&mock.base_url()).start().await;
    let mut stream = gateway
        .openai()
        .chat()
        .create_stream(request("openai/gpt-4o-mini", Some(true)))
        .await
        .unwrap();
    let mut text = String::new();
    let mut usage = None;
    let mut finish = None;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.unwrap();
        if let Some(choice) = chunk.choices.first() {
            text.push_str(choice.delta.content.as_deref().unwrap_or(""));
            finish = finish.or(choice.finish_reason);
        }
        usage = usage.or(chunk.usage);
    }
    assert_eq!(text, mock_openai::REPLY);
    assert!(finish.is_some());
    let usage = usage.expect("the usage chunk reaches a client that asked for it");
    assert_eq!(u64::from(usage.prompt_tokens), mock_openai::PROMPT_TOKENS);
    let sent = mock.last_request().await.body;
    assert_eq!(sent["stream"], true);
    assert_eq!(sent["stream_options"]["include_usage"], true);
}

#[tokio::test]
async fn usage_is_always_asked_of_the_upstream_but_only_shown_to_clients_that_asked() {
    let mock = MockOpenAi::start().await;
    let gateway = Gateway::standard(&mock.base_url()).start().await;
    let response = http()
        .post(gateway.url("/v1/chat/completions"))
        .json(&json!({"model": "openai/gpt-4o-mini", "stream": true,
                      "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let body = response.text().await.unwrap();
    assert!(body.ends_with("data: [DONE]\n\n"), "{body}");
    let events: Vec<Value> = body
        .split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .filter(|e| *e != "[DONE]")
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    // role chunk + one per word + finish chunk; no usage-only chunk
    assert_eq!(
        events.len(),
        1 + mock_openai::REPLY.split(' ').count() + 1,
        "{body}"
    );
    assert!(
        events
            .iter()
            .all(|e| !e["choices"].as_array().unwrap().is_empty())
    );
    assert_eq!(
        mock.last_request().await.body["stream_options"]["include_usage"],
        true
    );
}

#[tokio::test]
async fn streamed_tool_calls_arrive_as_openai_deltas() {
    let mock = MockOpenAi::start().await;
    let gateway = Gateway::standard(&mock.base_url()).start().await;
    let mut stream = gateway
        .openai()
        .chat()
        .create_stream_byot::<_, Value>(json!({
            "model": "openai/gpt-4o-mini", "stream": true,
            "messages": [{"role": "user", "content": "weather in Paris?"}],
            "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
        }))
        .await
        .unwrap();
    let mut name = String::new();
    let mut arguments = String::new();
    let mut finish = String::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.unwrap();
        let choice = &chunk["choices"][0];
        if let Some(call) = choice["delta"]["tool_calls"].get(0) {
            name.push_str(call["function"]["name"].as_str().unwrap_or(""));
            arguments.push_str(call["function"]["arguments"].as_str().unwrap_or(""));
        }
        if let Some(f) = choice["finish_reason"].as_str() {
            finish = f.to_owned();
        }
    }
    assert_eq!(name, "get_weather");
    assert_eq!(arguments, "{\"city\":\"Paris\"}");
    assert_eq!(finish, "tool_calls");
}

#[tokio::test]
async fn echo_streams_locally_with_usage() {
    let gateway = TestGateway::start(wasmgate::config::DEFAULT_CONFIG).await;
    let mut stream = gateway
        .openai()
        .chat()
        .create_stream(request("echo/echo-1", Some(true)))
        .await
        .unwrap();
    let mut text = String::new();
    let mut chunks = 0;
    let mut usage = None;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.unwrap();
        chunks += 1;
        if let Some(choice) = chunk.choices.first() {
            text.push_str(choice.delta.content.as_deref().unwrap_or(""));
        }
        usage = usage.or(chunk.usage);
    }
    assert_eq!(text, "Stream me a greeting");
    assert!(
        chunks >= 5,
        "one chunk per word plus role, finish and usage: {chunks}"
    );
    let usage = usage.unwrap();
    assert_eq!(
        usage.completion_tokens,
        wasmgate::tokenizer::Tokenizer.count("Stream me a greeting")
    );
}

#[tokio::test]
async fn a_client_that_disconnects_mid_stream_cancels_the_upstream() {
    let mock = MockOpenAi::start().await;
    let gateway = Gateway::standard(&mock.base_url()).start().await;
    let mut stream = gateway
        .openai()
        .chat()
        .create_stream(request("openai/endless", None))
        .await
        .unwrap();
    for _ in 0..3 {
        stream.next().await.unwrap().unwrap();
    }
    assert_eq!(mock.shared.started_streams.load(Ordering::SeqCst), 1);
    assert_eq!(mock.shared.cancelled_streams.load(Ordering::SeqCst), 0);
    drop(stream);

    let deadline = Instant::now() + Duration::from_secs(5);
    while mock.shared.cancelled_streams.load(Ordering::SeqCst) == 0 {
        assert!(
            Instant::now() < deadline,
            "the upstream stream was never cancelled"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The gateway carries on.
    let response = gateway
        .openai()
        .chat()
        .create_stream(request("openai/gpt-4o-mini", None))
        .await
        .unwrap();
    assert!(response.count().await >= 3);
}
