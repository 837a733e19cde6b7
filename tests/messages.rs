//! `POST /v1/messages` (Anthropic's Messages API) end to end: passed through to an `anthropic`
//! entry (the strict mock refuses anything the real API would), translated to an OpenAI or
//! Gemini entry and back, whole and streamed; tools; errors in Anthropic's shape; `x-api-key`;
//! `count_tokens` answered by Anthropic's own endpoint for an `anthropic` entry, by the gateway
//! otherwise; a `routing:` virtual model; one ledger record per
//! request at its exact catalog price, also for a stream the client leaves.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::cost::{self, Tokens};
use common::gateway::{Gateway, Upstreams, endless_catalog};
use common::mock_openai::{self, MockOpenAi};
use common::mock_providers::{KEY, MockProvider, anthropic, gemini};
use common::sse::{self, Event};
use common::{TestGateway, http};
use serde_json::{Value, json};

const CLAUDE: &str = "claude-sonnet-4-5";
const GPT: &str = "gpt-4o-mini";
const GEMINI: &str = "gemini-3.5-flash";
/// The prices the config gives the mock's never-ending model, in USD per million tokens.
const ENDLESS_INPUT_PRICE: i64 = 1000;
const ENDLESS_OUTPUT_PRICE: i64 = 2000;

struct Setup {
    anthropic: MockProvider,
    openai: MockOpenAi,
    gemini: MockProvider,
    gateway: TestGateway,
}

/// An `anthropic`, an `openai` and a `gemini` entry on their mocks, and `extra` config.
async fn setup(extra: &str) -> Setup {
    let mocks = Upstreams::start().await;
    let gateway = Gateway::builder()
        .provider(
            "anthropic",
            mocks.anthropic([CLAUDE, "error-429", "error-500"]),
        )
        .provider("openai", mocks.openai([GPT, "endless"]))
        .provider("gemini", mocks.gemini([GEMINI]))
        .yaml(&endless_catalog(ENDLESS_INPUT_PRICE, ENDLESS_OUTPUT_PRICE))
        .yaml(extra)
        .start()
        .await;
    let Upstreams {
        openai,
        anthropic,
        gemini,
    } = mocks;
    Setup {
        anthropic,
        openai,
        gemini,
        gateway,
    }
}

struct Answer {
    status: u16,
    headers: reqwest::header::HeaderMap,
    text: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text))
    }

    fn events(&self) -> Vec<Event> {
        assert!(
            self.headers
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.starts_with("text/event-stream")),
            "a stream: {:?}",
            self.headers
        );
        sse::events(&self.text)
    }
}

/// POSTs `body` to `path` with the Anthropic version header, `id` as the request id, and
/// `headers`.
async fn post(
    gateway: &TestGateway,
    path: &str,
    id: &str,
    headers: &[(&str, &str)],
    body: &Value,
) -> Answer {
    let mut request = http()
        .post(gateway.url(path))
        .header("anthropic-version", anthropic::VERSION)
        .header("x-request-id", id)
        .json(body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    Answer {
        status: response.status().as_u16(),
        headers: response.headers().clone(),
        text: response.text().await.unwrap(),
    }
}

fn hello(model: &str, stream: bool) -> Value {
    json!({"model": model, "max_tokens": 256, "stream": stream, "system": "You are terse.",
           "messages": [{"role": "user", "content": "Say hello."}]})
}

fn weather_tool() -> Value {
    json!({"name": "get_weather", "description": "The weather in a city",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
                            "required": ["city"]}})
}

fn text_of(message: &Value) -> String {
    message["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "text")
        .map(|b| b["text"].as_str().unwrap())
        .collect()
}

/// The record of request `id`: one `messages` record, 200, from `provider`/`model`, with
/// `tokens` (as the ledger keeps them) at their catalog price.
async fn assert_recorded(
    gateway: &TestGateway,
    id: &str,
    provider: &str,
    model: &str,
    tokens: Tokens,
) {
    let record = gateway.record_of(id).await;
    assert_eq!(record.operation, "messages", "{id}: {record:?}");
    assert_eq!(record.status, 200, "{id}: {record:?}");
    assert_eq!(record.provider.as_deref(), Some(provider), "{id}");
    assert_eq!(record.model.as_deref(), Some(model), "{id}");
    assert_eq!(
        (
            record.input_tokens,
            record.output_tokens,
            record.cached_input_tokens
        ),
        (tokens.input, tokens.output, tokens.cached),
        "{id}: {record:?}"
    );
    assert_eq!(
        record.cost_micros,
        Some(cost::builtin(provider, model, tokens)),
        "{id}: {record:?}"
    );
    assert!(!record.estimated, "{id}: the upstream's usage");
}

/// Asserts an error of `status` in Anthropic's shape: `{"type":"error","error":{"type","message"}}`.
fn assert_error(answer: &Answer, status: u16, kind: &str) {
    assert_eq!(answer.status, status, "{}", answer.text);
    let body = answer.json();
    assert_eq!(body["type"], "error", "{body}");
    assert_eq!(body["error"]["type"], kind, "{body}");
    assert!(
        !body["error"]["message"].as_str().unwrap().is_empty(),
        "{body}"
    );
}

/// The mock Anthropic usage when no cache_control is sent, as the ledger keeps it.
fn anthropic_tokens() -> Tokens {
    Tokens {
        input: anthropic::INPUT_TOKENS
            + anthropic::CACHE_CREATION_TOKENS
            + anthropic::CACHE_READ_TOKENS,
        output: anthropic::OUTPUT_TOKENS,
        cached: anthropic::CACHE_READ_TOKENS,
        written: anthropic::CACHE_CREATION_TOKENS,
    }
}

/// The events' order as Anthropic defines it: `message_start` first, `message_stop` last, one
/// `message_delta` just before it, and each content block opened, filled and closed in turn.
fn assert_message_sequence(events: &[Event]) {
    sse::assert_named_by_type(events);
    let types = sse::types(events);
    assert_eq!(
        types.first().map(String::as_str),
        Some("message_start"),
        "{types:?}"
    );
    assert_eq!(
        types.last().map(String::as_str),
        Some("message_stop"),
        "{types:?}"
    );
    assert_eq!(
        types.get(types.len().wrapping_sub(2)).map(String::as_str),
        Some("message_delta"),
        "{types:?}"
    );
    let mut open: Option<u64> = None;
    let mut next_index = 0;
    for event in events {
        let index = event.data["index"].as_u64();
        match event.data["type"].as_str().unwrap() {
            "content_block_start" => {
                assert_eq!(open, None, "a block opened inside another: {types:?}");
                assert_eq!(index, Some(next_index), "blocks numbered in order");
                open = index;
                next_index += 1;
            }
            "content_block_delta" => assert_eq!(index, open, "a delta outside its block"),
            "content_block_stop" => {
                assert_eq!(index, open, "a block closed that was not open");
                open = None;
            }
            "message_start" | "message_delta" | "message_stop" | "ping" => {}
            other => panic!("an event Anthropic does not send: {other}"),
        }
    }
    assert_eq!(open, None, "a block left open");
    assert!(next_index > 0, "no content block: {types:?}");
}

/// The text of a stream's `text_delta`s, and how many there were.
fn streamed_text(events: &[Event]) -> (String, usize) {
    let deltas: Vec<&str> = events
        .iter()
        .filter(|e| e.data["delta"]["type"] == "text_delta")
        .map(|e| e.data["delta"]["text"].as_str().unwrap())
        .collect();
    (deltas.concat(), deltas.len())
}

#[tokio::test]
async fn native_messages_pass_through_with_the_model_rewritten_and_the_headers_forwarded() {
    let s = setup("").await;
    let key = s.gateway.api_key("acme").await;
    let beta = "claude-code-20250219,interleaved-thinking-2025-05-14";
    let answer = post(
        &s.gateway,
        "/v1/messages?beta=true",
        "native-whole",
        &[("x-api-key", &key), ("anthropic-beta", beta)],
        &hello(&format!("anthropic/{CLAUDE}"), false),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let message = answer.json();
    // The mock's answer, untouched.
    assert_eq!(message["id"], anthropic::MESSAGE_ID, "{message}");
    assert_eq!(message["type"], "message");
    assert_eq!(
        message["content"],
        json!([{"type": "text", "text": anthropic::TEXT}])
    );
    assert_eq!(message["stop_reason"], "end_turn");
    assert_eq!(
        message["usage"]["cache_read_input_tokens"],
        anthropic::CACHE_READ_TOKENS
    );

    let sent = s.anthropic.last_request().await;
    assert!(sent.path.starts_with("/v1/messages"), "{}", sent.path);
    assert_eq!(sent.body["model"], CLAUDE, "the model rewritten");
    assert_eq!(sent.body["system"], "You are terse.");
    assert_eq!(sent.header("anthropic-version"), Some(anthropic::VERSION));
    assert_eq!(
        sent.header("anthropic-beta"),
        Some(beta),
        "beta flags as sent"
    );
    // The upstream sees the entry's key, never the client's.
    let upstream_keys = format!(
        "{:?} {:?}",
        sent.header("x-api-key"),
        sent.header("authorization")
    );
    assert!(upstream_keys.contains(KEY), "{upstream_keys}");
    assert!(
        !upstream_keys.contains(&key),
        "the gateway key leaked upstream"
    );

    assert_recorded(
        &s.gateway,
        "native-whole",
        "anthropic",
        CLAUDE,
        anthropic_tokens(),
    )
    .await;
    // The x-api-key decided the project.
    assert_eq!(s.gateway.record_of("native-whole").await.project, "acme");
    // 10 × 3 + 5 × 0.3 + 3 × 3.75 + 12 × 15 = 222.75 micro-USD.
    assert_eq!(
        s.gateway.record_of("native-whole").await.cost_micros,
        Some(223)
    );
    // The request log names the dialect.
    let shown: Value = http()
        .get(s.gateway.url("/usage/requests/native-whole"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(shown["dialect"], "anthropic.messages", "{shown}");
}

#[tokio::test]
async fn a_native_stream_is_relayed_event_for_event() {
    let s = setup("").await;
    let answer = post(
        &s.gateway,
        "/v1/messages",
        "native-stream",
        &[],
        &hello(CLAUDE, true),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let events = answer.events();
    assert_message_sequence(&events);
    assert_eq!(
        sse::types(&events),
        [
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    assert_eq!(
        events[0].data["message"]["usage"]["input_tokens"],
        anthropic::INPUT_TOKENS
    );
    assert_eq!(streamed_text(&events).0, anthropic::STREAM_DELTAS.concat());
    assert_eq!(s.anthropic.last_request().await.body["stream"], true);
    assert_recorded(
        &s.gateway,
        "native-stream",
        "anthropic",
        CLAUDE,
        anthropic_tokens(),
    )
    .await;
}

#[tokio::test]
async fn thinking_comes_back_with_its_signature_through_a_native_tool_round_trip() {
    let s = setup("").await;
    let question = json!({"role": "user", "content": "Weather in Paris?"});
    let mut request = json!({"model": CLAUDE, "max_tokens": 4096,
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "tools": [weather_tool()], "messages": [question]});
    let first = post(&s.gateway, "/v1/messages", "thinking-1", &[], &request).await;
    assert_eq!(first.status, 200, "{}", first.text);
    let first = first.json();
    assert_eq!(first["content"][0]["type"], "thinking", "{first}");
    assert_eq!(
        first["content"][0]["signature"],
        anthropic::signature(anthropic::THINKING)
    );
    let use_id = first["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "tool_use")
        .expect("a tool_use")["id"]
        .clone();
    // The mock refuses the follow-up unless the thinking block comes back as it was signed.
    request["messages"] = json!([question,
        {"role": "assistant", "content": first["content"]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use_id, "content": "18 degrees"}]}]);
    let second = post(&s.gateway, "/v1/messages", "thinking-2", &[], &request).await;
    assert_eq!(second.status, 200, "{}", second.text);
    assert_eq!(text_of(&second.json()), anthropic::TEXT);
    let record = s.gateway.record_of("thinking-2").await;
    assert_eq!(
        record.output_tokens,
        anthropic::OUTPUT_TOKENS + anthropic::THINKING_TOKENS
    );
}

#[tokio::test]
async fn messages_are_translated_to_an_openai_entry_and_back() {
    let s = setup("").await;
    let answer = post(
        &s.gateway,
        "/v1/messages",
        "to-openai",
        &[],
        &hello(&format!("openai/{GPT}"), false),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let message = answer.json();
    assert_eq!(message["type"], "message", "{message}");
    assert_eq!(message["role"], "assistant");
    assert!(
        message["id"].as_str().unwrap().starts_with("msg_"),
        "{message}"
    );
    assert_eq!(
        message["content"],
        json!([{"type": "text", "text": mock_openai::REPLY}])
    );
    assert_eq!(message["stop_reason"], "end_turn");
    let usage = &message["usage"];
    let prompt = usage["input_tokens"].as_u64().unwrap()
        + usage["cache_read_input_tokens"].as_u64().unwrap_or(0)
        + usage["cache_creation_input_tokens"].as_u64().unwrap_or(0);
    assert_eq!(prompt, mock_openai::PROMPT_TOKENS, "{usage}");
    assert_eq!(usage["output_tokens"], mock_openai::COMPLETION_TOKENS);

    // Chat Completions upstream: the system prompt as a system message.
    let sent = s.openai.last_request().await;
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.body["model"], GPT);
    let messages = sent.body["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "system", "{}", sent.body);
    assert_eq!(messages.last().unwrap()["role"], "user");
    assert!(
        sent.body
            .get("max_tokens")
            .or(sent.body.get("max_completion_tokens"))
            == Some(&json!(256)),
        "max_tokens carried over: {}",
        sent.body
    );
    assert_recorded(
        &s.gateway,
        "to-openai",
        "openai",
        GPT,
        Tokens {
            input: mock_openai::PROMPT_TOKENS,
            output: mock_openai::COMPLETION_TOKENS,
            cached: mock_openai::CACHED_TOKENS,
            written: 0,
        },
    )
    .await;
}

#[tokio::test]
async fn a_translated_stream_is_a_messages_stream_with_usage_in_message_start() {
    let s = setup("").await;
    let answer = post(
        &s.gateway,
        "/v1/messages",
        "to-openai-stream",
        &[],
        &hello(&format!("openai/{GPT}"), true),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let events = answer.events();
    assert_message_sequence(&events);
    // Claude Code reads the prompt's size here: 0 is the bug other gateways have.
    let started = &events[0].data["message"];
    assert_eq!(started["role"], "assistant", "{started}");
    assert!(
        started["usage"]["input_tokens"].as_u64().unwrap() > 0,
        "input usage in message_start: {started}"
    );
    let (text, deltas) = streamed_text(&events);
    assert_eq!(text, mock_openai::REPLY);
    assert!(deltas > 1, "the text arrives in pieces");
    let delta = &events[events.len() - 2].data;
    assert_eq!(delta["delta"]["stop_reason"], "end_turn", "{delta}");
    assert_eq!(
        delta["usage"]["output_tokens"],
        mock_openai::COMPLETION_TOKENS
    );
    assert_eq!(s.openai.last_request().await.body["stream"], true);
    assert_recorded(
        &s.gateway,
        "to-openai-stream",
        "openai",
        GPT,
        Tokens {
            input: mock_openai::PROMPT_TOKENS,
            output: mock_openai::COMPLETION_TOKENS,
            cached: mock_openai::CACHED_TOKENS,
            written: 0,
        },
    )
    .await;
}

#[tokio::test]
async fn a_tool_round_trip_is_translated_both_ways_whole_and_streamed() {
    let s = setup("").await;
    let question = json!({"role": "user", "content": "Weather in Paris?"});
    let request = json!({"model": format!("openai/{GPT}"), "max_tokens": 512,
                         "tools": [weather_tool()], "messages": [question]});
    let first = post(&s.gateway, "/v1/messages", "tool-1", &[], &request).await;
    assert_eq!(first.status, 200, "{}", first.text);
    let first = first.json();
    assert_eq!(first["stop_reason"], "tool_use", "{first}");
    let call = first["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "tool_use")
        .cloned()
        .expect("a tool_use block");
    assert_eq!(call["name"], "get_weather");
    assert_eq!(
        call["input"],
        json!({"city": "Paris"}),
        "arguments as an object"
    );
    // The tool went upstream in OpenAI's shape.
    let sent = s.openai.last_request().await.body;
    assert_eq!(sent["tools"][0]["type"], "function", "{sent}");
    assert_eq!(sent["tools"][0]["function"]["name"], "get_weather");
    assert_eq!(
        sent["tools"][0]["function"]["parameters"],
        weather_tool()["input_schema"]
    );

    let mut follow_up = request.clone();
    follow_up["messages"] = json!([question,
        {"role": "assistant", "content": first["content"]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"],
                                      "content": "18 degrees"}]}]);
    let second = post(&s.gateway, "/v1/messages", "tool-2", &[], &follow_up).await;
    assert_eq!(second.status, 200, "{}", second.text);
    assert_eq!(text_of(&second.json()), mock_openai::REPLY);
    let sent = s.openai.last_request().await.body;
    let messages = sent["messages"].as_array().unwrap();
    let assistant = messages
        .iter()
        .find(|m| m["role"] == "assistant")
        .expect("the assistant turn");
    let call_id = &assistant["tool_calls"][0]["id"];
    assert_eq!(
        assistant["tool_calls"][0]["function"]["name"],
        "get_weather"
    );
    let arguments: Value = serde_json::from_str(
        assistant["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(arguments, json!({"city": "Paris"}));
    let result = messages.last().unwrap();
    assert_eq!(result["role"], "tool", "{sent}");
    assert_eq!(
        &result["tool_call_id"], call_id,
        "the result answers the call"
    );
    assert!(
        result["content"].to_string().contains("18 degrees"),
        "{result}"
    );

    // Streamed: the input arrives as input_json_delta pieces of a tool_use block.
    let mut streamed = request.clone();
    streamed["stream"] = json!(true);
    let answer = post(&s.gateway, "/v1/messages", "tool-stream", &[], &streamed).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let events = answer.events();
    assert_message_sequence(&events);
    let start = events
        .iter()
        .find(|e| {
            e.data["type"] == "content_block_start" && e.data["content_block"]["type"] == "tool_use"
        })
        .expect("a tool_use block");
    assert_eq!(start.data["content_block"]["name"], "get_weather");
    let input: String = events
        .iter()
        .filter(|e| e.data["delta"]["type"] == "input_json_delta")
        .map(|e| e.data["delta"]["partial_json"].as_str().unwrap())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&input).unwrap(),
        json!({"city": "Paris"})
    );
    assert_eq!(
        events[events.len() - 2].data["delta"]["stop_reason"],
        "tool_use"
    );
}

#[tokio::test]
async fn messages_are_translated_to_a_gemini_entry_whole_and_streamed() {
    let s = setup("").await;
    let tokens = Tokens {
        input: gemini::PROMPT_TOKENS,
        output: gemini::CANDIDATES_TOKENS + gemini::THOUGHTS_TOKENS,
        cached: gemini::CACHED_TOKENS,
        written: 0,
    };
    let answer = post(
        &s.gateway,
        "/v1/messages",
        "to-gemini",
        &[],
        &hello(&format!("gemini/{GEMINI}"), false),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let message = answer.json();
    assert_eq!(text_of(&message), gemini::TEXT, "{message}");
    assert_eq!(message["stop_reason"], "end_turn");
    assert_eq!(
        message["usage"]["output_tokens"],
        gemini::CANDIDATES_TOKENS + gemini::THOUGHTS_TOKENS
    );
    let sent = s.gemini.last_request().await;
    assert!(
        sent.path.ends_with(&format!("{GEMINI}:generateContent")),
        "{}",
        sent.path
    );
    assert_eq!(
        sent.body["systemInstruction"]["parts"][0]["text"],
        "You are terse."
    );
    assert_recorded(&s.gateway, "to-gemini", "gemini", GEMINI, tokens).await;

    let answer = post(
        &s.gateway,
        "/v1/messages",
        "to-gemini-stream",
        &[],
        &hello(&format!("gemini/{GEMINI}"), true),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let events = answer.events();
    assert_message_sequence(&events);
    assert!(
        events[0].data["message"]["usage"]["input_tokens"]
            .as_u64()
            .unwrap()
            > 0,
        "input usage in message_start: {:?}",
        events[0]
    );
    assert_eq!(streamed_text(&events).0, gemini::STREAM_DELTAS.concat());
    assert_recorded(&s.gateway, "to-gemini-stream", "gemini", GEMINI, tokens).await;
}

#[tokio::test]
async fn errors_come_in_anthropics_shape_with_their_status() {
    let s = setup("").await;
    let unknown = post(
        &s.gateway,
        "/v1/messages",
        "e-404",
        &[],
        &hello("no-such-model", false),
    )
    .await;
    assert_error(&unknown, 404, "not_found_error");

    let response = http()
        .post(s.gateway.url("/v1/messages"))
        .header("content-type", "application/json")
        .header("anthropic-version", anthropic::VERSION)
        .body("{\"model\": \"claude")
        .send()
        .await
        .unwrap();
    let bad = Answer {
        status: response.status().as_u16(),
        headers: response.headers().clone(),
        text: response.text().await.unwrap(),
    };
    assert_error(&bad, 400, "invalid_request_error");

    // The upstream's own refusal keeps its status and shape.
    let upstream = post(
        &s.gateway,
        "/v1/messages",
        "e-up",
        &[],
        &hello("anthropic/error-429", false),
    )
    .await;
    assert_error(&upstream, 429, "rate_limit_error");

    // Two different keys in the two headers: refused rather than guessed at.
    let key = s.gateway.api_key("acme").await;
    let other = s.gateway.api_key("acme").await;
    let both = post(
        &s.gateway,
        "/v1/messages",
        "e-two-keys",
        &[
            ("x-api-key", &key),
            ("authorization", &format!("Bearer {other}")),
        ],
        &hello(CLAUDE, false),
    )
    .await;
    assert_error(&both, 400, "invalid_request_error");
}

#[tokio::test]
async fn a_limit_denial_is_a_429_in_anthropics_shape_and_is_recorded() {
    let s = setup(
        "limits:\n  rules:\n    - { policy: rate-limit, scope: project, options: { requests_per_minute: 1 } }\n",
    )
    .await;
    let allowed = post(
        &s.gateway,
        "/v1/messages",
        "lim-1",
        &[],
        &hello(CLAUDE, false),
    )
    .await;
    assert_eq!(allowed.status, 200, "{}", allowed.text);
    let denied = post(
        &s.gateway,
        "/v1/messages",
        "lim-2",
        &[],
        &hello(CLAUDE, false),
    )
    .await;
    assert_error(&denied, 429, "rate_limit_error");
    assert!(
        denied.headers.contains_key("retry-after"),
        "{:?}",
        denied.headers
    );
    assert_eq!(
        s.anthropic.requests().await.len(),
        1,
        "the denied request stayed here"
    );
    let record = s.gateway.record_of("lim-2").await;
    assert_eq!(
        (record.operation.as_str(), record.status),
        ("messages", 429)
    );
}

#[tokio::test]
async fn with_auth_required_a_key_is_needed_and_x_api_key_is_one() {
    let s = setup("auth: { required: true }").await;
    let missing = post(
        &s.gateway,
        "/v1/messages",
        "no-key",
        &[],
        &hello(CLAUDE, false),
    )
    .await;
    assert_error(&missing, 401, "authentication_error");
    assert!(
        s.anthropic.requests().await.is_empty(),
        "nothing went upstream"
    );

    let wrong = post(
        &s.gateway,
        "/v1/messages",
        "bad-key",
        &[("x-api-key", "wg-not-a-key")],
        &hello(CLAUDE, false),
    )
    .await;
    assert_eq!(wrong.status, 401, "{}", wrong.text);
    assert!(
        !wrong.text.contains("wg-not-a-key"),
        "the key is not echoed"
    );

    let key = s.gateway.api_key("acme").await;
    for (id, header) in [
        ("by-x-api-key", ("x-api-key", key.clone())),
        ("by-bearer", ("authorization", format!("Bearer {key}"))),
    ] {
        let answer = post(
            &s.gateway,
            "/v1/messages",
            id,
            &[(header.0, &header.1)],
            &hello(CLAUDE, false),
        )
        .await;
        assert_eq!(answer.status, 200, "{id}: {}", answer.text);
        assert_eq!(s.gateway.record_of(id).await.project, "acme", "{id}");
    }
}

#[tokio::test]
async fn count_tokens_is_anthropic_s_own_natively_the_gateway_s_otherwise_and_never_recorded() {
    let s = setup("").await;
    let short = json!({"model": CLAUDE, "messages": [{"role": "user", "content": "Hi."}]});
    let long = json!({"model": CLAUDE, "system": "You are a meticulous assistant who explains the weather.",
        "tools": [weather_tool()],
        "messages": [{"role": "user", "content": "What is the weather like in San Francisco, and should I bring a coat tonight?"}]});
    let count = |answer: Answer, counter: &str| {
        assert_eq!(answer.status, 200, "{}", answer.text);
        assert_eq!(answer.headers["x-wasmgate-count"], counter, "who counted");
        let body = answer.json();
        assert_eq!(body.as_object().map(|o| o.len()), Some(1), "{body}");
        body["input_tokens"].as_u64().expect("input_tokens")
    };
    let few = count(
        post(
            &s.gateway,
            "/v1/messages/count_tokens",
            "count-short",
            &[],
            &short,
        )
        .await,
        "upstream",
    );
    let many = count(
        post(
            &s.gateway,
            "/v1/messages/count_tokens?beta=true",
            "count-long",
            &[],
            &long,
        )
        .await,
        "upstream",
    );
    assert!(few > 0, "{few}");
    assert!(
        many > few + 20,
        "the system, the tool and the longer text count: {few} vs {many}"
    );
    // Anthropic's own endpoint counted them, given the client's body under its model name.
    let counted = s.anthropic.requests().await;
    assert_eq!(counted.len(), 2, "{counted:?}");
    assert!(
        counted
            .iter()
            .all(|r| r.path.starts_with("/v1/messages/count_tokens"))
    );
    assert!(counted.iter().all(|r| r.body["model"] == CLAUDE));
    // A translated target has no counting endpoint: the gateway counts, by its own tokenizer.
    let mut on_openai = long.clone();
    on_openai["model"] = json!(format!("openai/{GPT}"));
    let estimated = count(
        post(
            &s.gateway,
            "/v1/messages/count_tokens",
            "count-openai",
            &[],
            &on_openai,
        )
        .await,
        "estimate",
    );
    assert!(estimated > 20, "{estimated}");
    assert!(s.openai.requests().await.is_empty(), "no upstream call");

    // No record: one sent after them is stored, they are not (the writer keeps order).
    let after = post(
        &s.gateway,
        "/v1/messages",
        "after-count",
        &[],
        &hello(CLAUDE, false),
    )
    .await;
    assert_eq!(after.status, 200, "{}", after.text);
    s.gateway.record_of("after-count").await;
    let store = s.gateway.state.ledger.store();
    for id in ["count-short", "count-long", "count-openai"] {
        let (store, id) = (store.clone(), id.to_owned());
        let found = tokio::task::spawn_blocking(move || store.record(&id))
            .await
            .unwrap()
            .unwrap();
        assert!(found.is_none(), "count_tokens was recorded: {found:?}");
    }
}

#[tokio::test]
async fn a_routing_virtual_model_serves_messages_natively_and_falls_back_to_a_translated_target() {
    let s = setup(
        r#"
routing:
  claude:
    policy: fallback
    targets: [anthropic/claude-sonnet-4-5]
  resilient:
    policy: fallback
    targets: [anthropic/error-500, openai/gpt-4o-mini]
    retry: { backoff_ms: 1, max_backoff_ms: 5 }
"#,
    )
    .await;
    let answer = post(
        &s.gateway,
        "/v1/messages",
        "routed",
        &[],
        &hello("claude", false),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.json()["id"], anthropic::MESSAGE_ID, "passed through");
    assert_eq!(s.anthropic.last_request().await.body["model"], CLAUDE);
    assert_recorded(
        &s.gateway,
        "routed",
        "anthropic",
        CLAUDE,
        anthropic_tokens(),
    )
    .await;

    let answer = post(
        &s.gateway,
        "/v1/messages",
        "fell-back",
        &[],
        &hello("resilient", false),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(text_of(&answer.json()), mock_openai::REPLY);
    let header = |name: &str| {
        answer
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    assert_eq!(header("x-wasmgate-provider").as_deref(), Some("openai"));
    assert_eq!(header("x-wasmgate-attempts").as_deref(), Some("2"));
    assert_eq!(s.anthropic.last_request().await.body["model"], "error-500");
}

#[tokio::test]
async fn a_stream_the_client_leaves_is_still_recorded_at_its_price() {
    let s = setup("").await;
    let mut response = http()
        .post(s.gateway.url("/v1/messages"))
        .header("anthropic-version", anthropic::VERSION)
        .header("x-request-id", "left")
        .json(&hello("openai/endless", true))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    // Read until some text has arrived, then leave.
    let mut seen = String::new();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !seen.contains("text_delta") {
        assert!(Instant::now() < deadline, "no text within 5 s: {seen}");
        let chunk = response.chunk().await.unwrap().expect("the stream went on");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(seen.starts_with("event: message_start"), "{seen}");
    drop(response);
    let deadline = Instant::now() + Duration::from_secs(5);
    while s.openai.shared.cancelled_streams.load(Ordering::SeqCst) == 0 {
        assert!(
            Instant::now() < deadline,
            "the upstream stream was never cancelled"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let record = s.gateway.record_of("left").await;
    assert_eq!(record.operation, "messages", "{record:?}");
    assert_eq!(record.model.as_deref(), Some("endless"));
    assert!(
        record.input_tokens > 0 && record.output_tokens > 0,
        "{record:?}"
    );
    assert!(record.estimated, "the upstream never said: {record:?}");
    // No cache prices: every token at the config's price, micro-USD per token.
    let expected = record.input_tokens as i64 * ENDLESS_INPUT_PRICE
        + record.output_tokens as i64 * ENDLESS_OUTPUT_PRICE;
    assert_eq!(record.cost_micros, Some(expected), "{record:?}");
}
