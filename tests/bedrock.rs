//! The `bedrock` plugin through the real gateway, driven by the async-openai client against a
//! mock Bedrock runtime (tests/common/mock_bedrock.rs) that speaks Converse JSON and
//! ConverseStream's binary event stream, sent in 1–13 byte pieces: answers and usage translated
//! back, streams reassembled, tool calls out and tool results back in Converse's shape, every
//! request SigV4-signed, and Bedrock's errors in OpenAI's error shape.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use async_openai::types::chat::{
    ChatCompletionRequestSystemMessageArgs, ChatCompletionRequestUserMessageArgs,
    ChatCompletionStreamOptions, CreateChatCompletionRequestArgs, FinishReason,
};
use common::gateway::{Gateway, Provider};
use common::mock_bedrock::{
    self, ACCESS_KEY_ID, CACHE_READ_TOKENS, CACHE_WRITE_TOKENS, INPUT_TOKENS, OUTPUT_TOKENS,
    REGION, SECRET_ACCESS_KEY, STREAM_DELTAS, TEXT, TOOL_USE_ID,
};
use common::mock_providers::MockProvider;
use common::{TestGateway, http};
use futures_util::StreamExt;
use serde_json::{Value, json};

const MODEL: &str = "anthropic.claude-sonnet-4-5-20250929-v1:0";

/// Every prompt token, as OpenAI counts them: the fresh ones, cache reads and cache writes.
const PROMPT_TOKENS: u64 = INPUT_TOKENS + CACHE_READ_TOKENS + CACHE_WRITE_TOKENS;

fn id(model: &str) -> String {
    format!("bedrock/{model}")
}

async fn gateway_with_key(mock: &MockProvider, key_id: &str, secret: &str) -> TestGateway {
    let entry = Provider::at("bedrock", &mock.base_url(), &format!("{key_id}:{secret}"))
        .models([MODEL, "error-429", "error-400", "stream-throttled"])
        .timeout_ms(5000)
        .options(&format!("{{ region: {REGION} }}"));
    Gateway::builder().provider("bedrock", entry).start().await
}

async fn setup() -> (MockProvider, TestGateway) {
    let mock = MockProvider::bedrock().await;
    let gw = gateway_with_key(&mock, ACCESS_KEY_ID, SECRET_ACCESS_KEY).await;
    (mock, gw)
}

fn weather_tool() -> Value {
    json!({"type": "function", "function": {
        "name": "get_weather", "description": "Get the current weather in a given location",
        "parameters": {"type": "object", "properties": {"location": {"type": "string"},
                                                        "unit": {"type": "string"}},
                       "required": ["location"]}}})
}

const QUESTION: &str = "What's the weather in Seattle?";

#[test]
fn the_mocks_crc_is_crc32_ieee() {
    // The check value of CRC-32/ISO-HDLC, the CRC the event stream format uses.
    assert_eq!(mock_bedrock::crc32(b"123456789"), 0xCBF4_3926);
}

#[tokio::test]
async fn bedrock_chat_returns_the_text_and_usage_counting_cache_tokens_as_prompt() {
    let (mock, gw) = setup().await;
    let request = CreateChatCompletionRequestArgs::default()
        .model(id(MODEL))
        .messages([
            ChatCompletionRequestSystemMessageArgs::default()
                .content("You are terse.")
                .build()
                .unwrap()
                .into(),
            ChatCompletionRequestUserMessageArgs::default()
                .content("Hello there")
                .build()
                .unwrap()
                .into(),
        ])
        .max_completion_tokens(64u32)
        .temperature(0.5)
        .build()
        .unwrap();
    let response = gw.openai().chat().create(request).await.unwrap();
    let choice = &response.choices[0];
    assert_eq!(choice.message.content.as_deref(), Some(TEXT));
    assert_eq!(choice.finish_reason, Some(FinishReason::Stop));
    assert_eq!(
        response.id,
        format!("chatcmpl-{}", mock_bedrock::REQUEST_ID)
    );
    let usage = response.usage.unwrap();
    assert_eq!(u64::from(usage.prompt_tokens), PROMPT_TOKENS);
    assert_eq!(u64::from(usage.completion_tokens), OUTPUT_TOKENS);
    assert_eq!(
        usage
            .prompt_tokens_details
            .and_then(|d| d.cached_tokens)
            .map(u64::from),
        Some(CACHE_READ_TOKENS)
    );

    let sent = mock.last_request().await;
    // The model id travels in the path, its `:` percent-encoded.
    assert_eq!(sent.path, format!("/model/{MODEL}/converse"));
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(sent.body["system"], json!([{"text": "You are terse."}]));
    assert_eq!(
        sent.body["messages"],
        json!([{"role": "user", "content": [{"text": "Hello there"}]}])
    );
    assert_eq!(sent.body["inferenceConfig"]["maxTokens"], 64);
    assert_eq!(sent.body["inferenceConfig"]["temperature"], 0.5);
    assert!(sent.body.get("model").is_none(), "{}", sent.body);
}

/// The parts of `AWS4-HMAC-SHA256 Credential=<id>/<date>/<region>/<service>/aws4_request,
/// SignedHeaders=<h1;h2;...>, Signature=<hex>`.
struct Authorization {
    credential: Vec<String>,
    signed_headers: Vec<String>,
    signature: String,
}

fn parse_authorization(value: &str) -> Authorization {
    let rest = value
        .strip_prefix("AWS4-HMAC-SHA256 ")
        .unwrap_or_else(|| panic!("not SigV4: {value}"));
    let parts: Vec<&str> = rest.split(", ").collect();
    assert_eq!(parts.len(), 3, "{value}");
    let field = |i: usize, name: &str| {
        parts[i]
            .strip_prefix(name)
            .unwrap_or_else(|| panic!("no {name} in {value}"))
            .to_owned()
    };
    Authorization {
        credential: field(0, "Credential=")
            .split('/')
            .map(str::to_owned)
            .collect(),
        signed_headers: field(1, "SignedHeaders=")
            .split(';')
            .map(str::to_owned)
            .collect(),
        signature: field(2, "Signature="),
    }
}

#[tokio::test]
async fn bedrock_requests_carry_a_well_formed_sigv4_authorization() {
    let (mock, gw) = setup().await;
    for text in ["first", "second"] {
        let _: Value = gw
            .openai()
            .chat()
            .create_byot(json!({"model": id(MODEL),
                                "messages": [{"role": "user", "content": text}]}))
            .await
            .unwrap();
    }
    let requests = mock.requests().await;
    assert_eq!(requests.len(), 2);
    let mut signatures = Vec::new();
    for sent in &requests {
        let amz_date = sent.header("x-amz-date").expect("x-amz-date");
        // 20261122T190000Z
        assert_eq!(amz_date.len(), 16, "{amz_date}");
        assert!(
            amz_date.as_bytes()[8] == b'T' && amz_date.ends_with('Z'),
            "{amz_date}"
        );
        assert!(
            amz_date
                .bytes()
                .enumerate()
                .all(|(i, b)| i == 8 || i == 15 || b.is_ascii_digit()),
            "{amz_date}"
        );
        let auth = parse_authorization(sent.header("authorization").expect("authorization"));
        assert_eq!(
            auth.credential,
            [
                ACCESS_KEY_ID,
                &amz_date[..8],
                REGION,
                "bedrock",
                "aws4_request"
            ]
        );
        for needed in ["content-type", "host", "x-amz-date"] {
            assert!(
                auth.signed_headers.iter().any(|h| h == needed),
                "{needed} is signed: {:?}",
                auth.signed_headers
            );
        }
        let mut sorted = auth.signed_headers.clone();
        sorted.sort();
        assert_eq!(auth.signed_headers, sorted, "signed headers are sorted");
        assert!(
            auth.signed_headers
                .iter()
                .all(|h| *h == h.to_ascii_lowercase()),
            "{:?}",
            auth.signed_headers
        );
        assert_eq!(auth.signature.len(), 64, "{}", auth.signature);
        assert!(
            auth.signature
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
            "{}",
            auth.signature
        );
        assert!(
            !sent.headers.contains_key("x-api-key")
                && sent.header("x-amz-security-token").is_none()
        );
        signatures.push(auth.signature);
    }
    // The signature covers the body: two requests never share one.
    assert_ne!(signatures[0], signatures[1]);
}

#[tokio::test]
async fn bedrock_stream_reassembles_text_split_across_every_kind_of_boundary() {
    let (mock, gw) = setup().await;
    let mut request = CreateChatCompletionRequestArgs::default()
        .model(id(MODEL))
        .messages([ChatCompletionRequestUserMessageArgs::default()
            .content("Hello there")
            .build()
            .unwrap()
            .into()])
        .build()
        .unwrap();
    request.stream = Some(true);
    request.stream_options = Some(ChatCompletionStreamOptions {
        include_usage: Some(true),
        include_obfuscation: None,
    });
    let mut stream = gw.openai().chat().create_stream(request).await.unwrap();
    let (mut text, mut usage, mut finish, mut role) = (String::new(), None, None, None);
    let mut chunks = 0;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.unwrap();
        chunks += 1;
        if let Some(choice) = chunk.choices.first() {
            text.push_str(choice.delta.content.as_deref().unwrap_or(""));
            finish = choice.finish_reason.or(finish);
            role = choice.delta.role.or(role);
        }
        usage = chunk.usage.or(usage);
    }
    assert_eq!(text, STREAM_DELTAS.concat());
    assert!(chunks >= STREAM_DELTAS.len() + 2, "{chunks} chunks");
    assert!(role.is_some(), "a role chunk first");
    assert_eq!(finish, Some(FinishReason::Stop));
    let usage = usage.expect("a usage chunk for include_usage");
    assert_eq!(u64::from(usage.prompt_tokens), PROMPT_TOKENS);
    assert_eq!(u64::from(usage.completion_tokens), OUTPUT_TOKENS);

    let sent = mock.last_request().await;
    assert_eq!(sent.path, format!("/model/{MODEL}/converse-stream"));
    assert!(
        sent.body.get("stream").is_none() && sent.body.get("stream_options").is_none(),
        "no OpenAI-only fields: {}",
        sent.body
    );
    assert!(sent.header("authorization").is_some());
}

#[tokio::test]
async fn bedrock_stream_without_include_usage_ends_with_done_and_no_usage() {
    let (_mock, gw) = setup().await;
    let response = http()
        .post(gw.url("/v1/chat/completions"))
        .json(&json!({"model": id(MODEL), "stream": true,
                      "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let body = response.text().await.unwrap();
    assert!(body.ends_with("data: [DONE]\n\n"), "{body}");
    assert!(!body.contains("\"usage\":{"), "{body}");
}

#[tokio::test]
async fn bedrock_tool_use_becomes_tool_calls_and_the_result_goes_back_as_tool_result() {
    let (mock, gw) = setup().await;
    let response: Value = gw
        .openai()
        .chat()
        .create_byot(json!({
            "model": id(MODEL),
            "messages": [{"role": "user", "content": QUESTION}],
            "tools": [weather_tool()]
        }))
        .await
        .unwrap();
    let choice = &response["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls", "{response}");
    let message = choice["message"].clone();
    let call = &message["tool_calls"][0];
    assert_eq!(call["id"], TOOL_USE_ID);
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["name"], "get_weather");
    let arguments: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(
        arguments,
        json!({"location": "Seattle, WA", "unit": "celsius"})
    );
    let sent = mock.last_request().await.body;
    let spec = &sent["toolConfig"]["tools"][0]["toolSpec"];
    assert_eq!(spec["name"], "get_weather");
    assert_eq!(
        spec["inputSchema"]["json"],
        weather_tool()["function"]["parameters"]
    );

    let response: Value = gw
        .openai()
        .chat()
        .create_byot(json!({
            "model": id(MODEL),
            "messages": [
                {"role": "user", "content": QUESTION},
                message,
                {"role": "tool", "tool_call_id": TOOL_USE_ID, "content": "12 degrees"}
            ],
            "tools": [weather_tool()]
        }))
        .await
        .unwrap();
    assert_eq!(response["choices"][0]["message"]["content"], TEXT);
    let messages = mock.last_request().await.body["messages"].clone();
    assert_eq!(messages.as_array().unwrap().len(), 3, "{messages}");
    assert_eq!(messages[1]["role"], "assistant");
    let tool_use = messages[1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|b| b.get("toolUse"))
        .unwrap_or_else(|| panic!("no toolUse block: {messages}"));
    assert_eq!(tool_use["toolUseId"], TOOL_USE_ID);
    assert_eq!(tool_use["name"], "get_weather");
    assert_eq!(tool_use["input"]["location"], "Seattle, WA");
    assert_eq!(messages[2]["role"], "user");
    let result = &messages[2]["content"][0]["toolResult"];
    assert_eq!(result["toolUseId"], TOOL_USE_ID, "{messages}");
    assert_eq!(result["content"][0]["text"], "12 degrees", "{messages}");
}

#[tokio::test]
async fn bedrock_streamed_tool_use_arrives_as_tool_call_deltas() {
    let (_mock, gw) = setup().await;
    let mut stream = gw
        .openai()
        .chat()
        .create_stream_byot::<_, Value>(json!({
            "model": id(MODEL), "stream": true,
            "messages": [{"role": "user", "content": QUESTION}],
            "tools": [weather_tool()]
        }))
        .await
        .unwrap();
    let (mut text, mut call_id, mut name, mut arguments) =
        (String::new(), String::new(), String::new(), String::new());
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
            assert_eq!(call["index"], 0, "one tool call, at index 0: {chunk}");
            call_id.push_str(call["id"].as_str().unwrap_or(""));
            name.push_str(call["function"]["name"].as_str().unwrap_or(""));
            arguments.push_str(call["function"]["arguments"].as_str().unwrap_or(""));
        }
        if !choice["finish_reason"].is_null() {
            finish = choice["finish_reason"].clone();
        }
    }
    assert_eq!(text, STREAM_DELTAS.concat());
    assert_eq!(call_id, TOOL_USE_ID);
    assert_eq!(name, "get_weather");
    let arguments: Value = serde_json::from_str(&arguments).unwrap();
    assert_eq!(
        arguments,
        json!({"location": "Seattle, WA", "unit": "celsius"})
    );
    assert_eq!(finish, "tool_calls");
}

/// The status and OpenAI-shaped `error` object of a chat request for `model`.
async fn error_of(gateway: &TestGateway, model: &str, stream: bool) -> (u16, Value) {
    let response = http()
        .post(gateway.url("/v1/chat/completions"))
        .json(&json!({"model": id(model), "stream": stream,
                      "messages": [{"role": "user", "content": "Hi"}]}))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json"),
        "an error before the stream is a JSON error"
    );
    let body: Value = response.json().await.unwrap();
    let error = body["error"].clone();
    assert!(
        error["message"].is_string() && error.get("type").is_some(),
        "OpenAI's error shape: {body}"
    );
    (status, error)
}

#[tokio::test]
async fn bedrock_errors_keep_their_meaning_in_openais_error_shape() {
    let (_mock, gw) = setup().await;
    for stream in [false, true] {
        let (status, error) = error_of(&gw, "error-429", stream).await;
        assert_eq!(status, 429, "{error}");
        assert_eq!(error["type"], "rate_limit_error");
        assert_eq!(error["code"], "ThrottlingException", "{error}");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains("Too many requests"),
            "{error}"
        );
    }
    let (status, error) = error_of(&gw, "error-400", false).await;
    assert_eq!(status, 400, "{error}");
    assert_eq!(error["type"], "invalid_request_error");
    assert_eq!(error["code"], "ValidationException", "{error}");

    let mock = MockProvider::bedrock().await;
    let other = gateway_with_key(&mock, "AKIDSOMEONEELSE", "secret").await;
    let (status, error) = error_of(&other, MODEL, false).await;
    // Bedrock answers a key it does not know with 403; the gateway keeps an upstream's 4xx.
    assert_eq!(status, 403, "{error}");
    assert_eq!(error["type"], "authentication_error");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("security token included in the request is invalid"),
        "{error}"
    );
}

#[tokio::test]
async fn a_bedrock_exception_mid_stream_becomes_an_openai_error_event() {
    let (_mock, gw) = setup().await;
    let response = http()
        .post(gw.url("/v1/chat/completions"))
        .json(&json!({"model": id("stream-throttled"), "stream": true,
                      "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body = response.text().await.unwrap();
    assert!(
        body.contains(&format!("\"content\":\"{}\"", STREAM_DELTAS[0])),
        "the delta before the exception is relayed: {body}"
    );
    assert!(!body.contains("[DONE]"), "{body}");
    let last: Value = body
        .split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .last()
        .map(|e| serde_json::from_str(e).unwrap())
        .unwrap();
    assert_eq!(last["error"]["code"], "throttlingException", "{body}");
    assert!(
        last["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Too many tokens"),
        "{body}"
    );
}
