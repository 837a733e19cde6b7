//! The Responses API's WebSocket mode (`GET /v1/responses` upgraded) end to end: the official
//! Python SDK's `client.responses.connect()` chaining turns and a tool call on one socket, to a
//! native target (the strict Responses mock) and translated to Anthropic, with a ledger record
//! per turn; the Node SDK's socket for one turn; failed turns as the reference's `error` events on
//! a socket that lives on; the key (and a JWT) checked at the upgrade; and the bounds of
//! `server.websocket`: sessions per key, message size, idle time, the queue of a client that
//! sends and stops reading, `/health` and `/metrics`, and a shutdown that lets the turn in flight
//! finish before it closes the socket.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::gateway::{Gateway, Upstreams};
use common::jwks::{self, JwksServer, SigningKey, claims};
use common::mock_openai::MockOpenAi;
use common::mock_providers::MockProvider;
use common::sdk::{assert_passed, run_client};
use common::{TestGateway, http};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{self, Message};

const GPT: &str = "gpt-4.1-mini";
const CLAUDE: &str = "claude-sonnet-4-5";
/// A Chat Completions model of the OpenAI mock that streams for about 1.5 s.
const PACED: &str = "chat/paced-1500";

use common::websocket::{self, Socket};

struct Setup {
    openai: MockOpenAi,
    anthropic: MockProvider,
    gateway: TestGateway,
    key: String,
}

/// A gateway that requires keys, in front of `openai` (Responses natively), `chat` (the OpenAI
/// mock's Chat Completions, translated) and `anthropic` (translated), with `server.websocket`
/// set to `bounds` (YAML), and a key of project `ws`.
async fn setup(bounds: &str) -> Setup {
    let mocks = Upstreams::start().await;
    let gateway = Gateway::builder()
        .auth_required()
        .provider(
            "openai",
            mocks.openai([GPT]).options("{ responses: native }"),
        )
        .provider("chat", mocks.openai(["paced-1500", "endless"]))
        .provider("anthropic", mocks.anthropic([CLAUDE]))
        .set_yaml("server.websocket", bounds)
        .start()
        .await;
    let key = gateway.api_key("ws").await;
    Setup {
        openai: mocks.openai,
        anthropic: mocks.anthropic,
        gateway,
        key,
    }
}

/// Opens a socket on `gateway` with `key` as the bearer key (none if `None`).
async fn connect(gateway: &TestGateway, key: Option<&str>) -> Result<Socket, tungstenite::Error> {
    websocket::connect(gateway, "/v1/responses", key).await
}

/// The status and JSON body of an upgrade the gateway refused.
async fn refused(gateway: &TestGateway, key: Option<&str>) -> (u16, Value) {
    websocket::refused(gateway, "/v1/responses", key).await
}

fn create(model: &str, input: &str) -> Message {
    Message::text(json!({"type": "response.create", "model": model, "input": input}).to_string())
}

/// The next message, within 10 s.
async fn next(socket: &mut Socket) -> Option<Message> {
    tokio::time::timeout(Duration::from_secs(10), socket.next())
        .await
        .expect("a message within 10 s")
        .map(|m| m.unwrap())
}

/// Reads one turn's events up to its last (`response.completed`, or an `error`).
async fn read_turn(socket: &mut Socket) -> Vec<Value> {
    let mut events = Vec::new();
    loop {
        let Some(Message::Text(text)) = next(socket).await else {
            panic!("the socket ended in a turn: {events:?}");
        };
        let event: Value = serde_json::from_str(&text).unwrap();
        let last = matches!(
            event["type"].as_str(),
            Some("response.completed" | "response.failed" | "error")
        );
        events.push(event);
        if last {
            return events;
        }
    }
}

/// The close frame the socket ends with (skipping any events before it), within 10 s.
async fn close_of(socket: &mut Socket) -> (CloseCode, String) {
    loop {
        match next(socket).await {
            Some(Message::Close(Some(frame))) => return (frame.code, frame.reason.to_string()),
            Some(Message::Close(None)) | None => panic!("the socket ended without a close frame"),
            Some(_) => {}
        }
    }
}

/// `/health`'s count of open sessions.
async fn sessions(gateway: &TestGateway) -> u64 {
    let health: Value = http()
        .get(gateway.url("/health"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    health["websocket_sessions"].as_u64().unwrap()
}

/// Waits up to 10 s for `/health` to count `n` sessions.
async fn await_sessions(gateway: &TestGateway, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while sessions(gateway).await != n {
        assert!(Instant::now() < deadline, "never {n} sessions open");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The ledger's records of `key`'s project, once the writer has stored `at_least` of them
/// (polled, as it flushes every 200 ms) and no more arrive.
pub(crate) async fn records(gateway: &TestGateway, key: &str, at_least: usize) -> Vec<Value> {
    let mut last = usize::MAX;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let page: Value = http()
            .post(gateway.url("/usage/requests"))
            .bearer_auth(key)
            .json(&json!({"limit": 500}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let found = page["data"].as_array().cloned().unwrap_or_default();
        if found.len() >= at_least && found.len() == last {
            return found;
        }
        assert!(
            Instant::now() < deadline,
            "{} records, not {at_least}",
            found.len()
        );
        last = found.len();
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// The number after `turns ` in an SDK program's output: the turns it completed.
fn turns_completed(output: &std::process::Output) -> usize {
    let stdout = String::from_utf8_lossy(&output.stdout);
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("turns "))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no turn count: {stdout}"))
}

/// Asserts each completed turn has a priced `openai.responses` record, and there are `turns`.
fn assert_one_record_a_turn(records: &[Value], turns: usize) {
    let completed: Vec<&Value> = records.iter().filter(|r| r["status"] == 200).collect();
    assert_eq!(completed.len(), turns, "{records:#?}");
    for record in completed {
        assert_eq!(record["dialect"], "openai.responses", "{record}");
        assert!(record["cost"].as_f64().is_some_and(|c| c > 0.0), "{record}");
        assert!(
            record["input_tokens"].as_u64().is_some_and(|t| t > 0),
            "{record}"
        );
    }
}

#[tokio::test]
async fn python_sdk_chains_turns_and_a_tool_call_on_one_socket_natively() {
    let s = setup("{}").await;
    let output = run_client(
        "openai_responses_ws.py",
        &s.gateway.url("/v1"),
        &s.key,
        &["--model", &format!("openai/{GPT}"), "--mock"],
    )
    .await;
    assert_passed(&output, &["tool_chain", "failed_turn"]);
    let turns = turns_completed(&output);
    assert_eq!(turns, 4);
    // Every turn reached the strict mock as the streamed POST it stands for, the later ones
    // with only their new input.
    let upstream: Vec<Value> = s
        .openai
        .requests()
        .await
        .into_iter()
        .filter(|r| r.path == "/v1/responses")
        .map(|r| r.body)
        .collect();
    assert!(
        upstream.iter().all(|b| b["stream"] == true),
        "{upstream:#?}"
    );
    // The client sent the tool's output alone; the upstream got it either chained by its own
    // `previous_response_id` or with the call replayed from the gateway's store before it.
    let kinds = |b: &Value| -> Vec<String> {
        b["input"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|i| i["type"].as_str().map(str::to_owned))
            .collect()
    };
    assert!(
        upstream.iter().any(|b| {
            let kinds = kinds(b);
            kinds.contains(&"function_call_output".to_owned())
                && (b["previous_response_id"].is_string()
                    || kinds.contains(&"function_call".to_owned()))
        }),
        "the tool's output reached the upstream with its call: {upstream:#?}"
    );
    let records = records(&s.gateway, &s.key, turns).await;
    assert_one_record_a_turn(&records, turns);
    assert_eq!(
        sessions(&s.gateway).await,
        0,
        "the SDK's sockets are closed"
    );
}

#[tokio::test]
async fn python_sdk_chains_turns_on_one_socket_translated_to_anthropic() {
    let s = setup("{}").await;
    let output = run_client(
        "openai_responses_ws.py",
        &s.gateway.url("/v1"),
        &s.key,
        &[
            "--model",
            &format!("anthropic/{CLAUDE}"),
            "--only",
            "tool_chain",
        ],
    )
    .await;
    assert_passed(&output, &["tool_chain"]);
    let turns = turns_completed(&output);
    let messages = s.anthropic.requests().await;
    assert_eq!(messages.len(), turns, "one Messages call a turn");
    // The second turn sent only the tool's output; the gateway gave Anthropic the whole
    // conversation, the call answered by its result.
    let second = &messages[1].body["messages"];
    assert!(
        second.to_string().contains("tool_result") && second.to_string().contains("tool_use"),
        "{second}"
    );
    assert!(
        s.openai.requests().await.is_empty(),
        "nothing went to OpenAI"
    );
    let records = records(&s.gateway, &s.key, turns).await;
    assert_one_record_a_turn(&records, turns);
}

#[tokio::test]
async fn node_sdk_completes_a_turn_and_chains_a_tool_call_on_its_socket_natively() {
    let s = setup("{}").await;
    let output = run_client(
        "openai_responses_ws.mjs",
        &s.gateway.url("/v1"),
        &s.key,
        &["--model", &format!("openai/{GPT}"), "--mock"],
    )
    .await;
    assert_passed(&output, &["turn", "tool_chain"]);
    let records = records(&s.gateway, &s.key, 4).await;
    assert_one_record_a_turn(&records, 4);
}

#[tokio::test]
async fn node_sdk_chains_a_tool_call_on_its_socket_translated_to_anthropic() {
    let s = setup("{}").await;
    let output = run_client(
        "openai_responses_ws.mjs",
        &s.gateway.url("/v1"),
        &s.key,
        &[
            "--model",
            &format!("anthropic/{CLAUDE}"),
            "--only",
            "tool_chain",
        ],
    )
    .await;
    assert_passed(&output, &["tool_chain"]);
    // One Messages call a turn, the second with the whole conversation though the client sent
    // only the tool's output.
    let messages = s.anthropic.requests().await;
    assert_eq!(messages.len(), 3, "one Messages call a turn");
    let second = messages[1].body["messages"].to_string();
    assert!(
        second.contains("tool_result") && second.contains("tool_use"),
        "{second}"
    );
    let records = records(&s.gateway, &s.key, 3).await;
    assert_one_record_a_turn(&records, 3);
}

/// A warm-up (`generate: false`, as Codex sends before its first turn) is answered by the
/// gateway: created and completed, no output, nothing sent upstream or recorded; a turn that
/// names it, stored or not, reaches the upstream with the warm-up's input before its own.
#[tokio::test]
async fn a_warm_up_is_answered_here_and_the_turn_naming_it_carries_its_input() {
    let s = setup("{}").await;
    let mut socket = connect(&s.gateway, Some(&s.key)).await.unwrap();
    let model = format!("openai/{GPT}");
    for (n, store) in [(0, false), (1, true)] {
        let warm = json!({"type": "response.create", "model": model, "generate": false,
            "store": store, "instructions": "Be brief.", "stream_id": "lane",
            "input": [{"role": "user", "content": format!("Context number {n}.")}]});
        socket.send(Message::text(warm.to_string())).await.unwrap();
        let events = read_turn(&mut socket).await;
        let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            ["response.created", "response.completed"],
            "{events:#?}"
        );
        let warmed = &events[1]["response"];
        assert_eq!(warmed["status"], "completed", "{warmed}");
        assert_eq!(warmed["output"], json!([]), "{warmed}");
        assert_eq!(warmed["model"], model.as_str(), "{warmed}");
        assert_eq!(events[1]["stream_id"], "lane", "{events:#?}");
        let id = warmed["id"].as_str().unwrap();
        assert_eq!(s.openai.requests().await.len(), n, "a warm-up goes nowhere");
        let turn = json!({"type": "response.create", "model": model, "store": store,
            "previous_response_id": id, "input": "Now answer."});
        socket.send(Message::text(turn.to_string())).await.unwrap();
        let events = read_turn(&mut socket).await;
        assert_eq!(
            events.last().unwrap()["type"],
            "response.completed",
            "{events:#?}"
        );
        let requests = s.openai.requests().await;
        let sent = &requests.last().unwrap().body;
        assert!(sent.get("previous_response_id").is_none(), "{sent}");
        let input = sent["input"].as_array().unwrap();
        assert_eq!(
            input[0]["content"],
            format!("Context number {n}."),
            "{sent}"
        );
        assert_eq!(input.last().unwrap()["content"], "Now answer.", "{sent}");
    }
    // Only the two turns were recorded.
    let records = records(&s.gateway, &s.key, 2).await;
    assert_one_record_a_turn(&records, 2);
    // A `generate` that is not a boolean is refused, and the socket lives on.
    let bad = json!({"type": "response.create", "model": model, "generate": "no", "input": "x"});
    socket.send(Message::text(bad.to_string())).await.unwrap();
    let error = read_turn(&mut socket).await;
    assert_eq!(error[0]["type"], "error", "{error:#?}");
    assert_eq!(error[0]["error"]["param"], "generate", "{error:#?}");
}

#[tokio::test]
async fn a_missing_or_wrong_key_is_refused_at_the_upgrade() {
    let s = setup("{}").await;
    for key in [None, Some("wg-not-a-key")] {
        let (status, body) = refused(&s.gateway, key).await;
        assert_eq!(status, 401, "{key:?}: {body}");
        assert_eq!(body["error"]["type"], "invalid_request_error", "{body}");
        assert!(body["error"]["message"].is_string(), "{body}");
    }
    assert_eq!(sessions(&s.gateway).await, 0);
    // Without an upgrade, the route is the dialect's (which answers GET with its refusal).
    let plain = http()
        .get(s.gateway.url("/v1/responses"))
        .bearer_auth(&s.key)
        .send()
        .await
        .unwrap();
    assert_eq!(plain.status(), 405);
}

#[tokio::test]
async fn a_jwt_client_opens_a_socket_and_a_bad_token_does_not() {
    let mocks = Upstreams::start().await;
    let rsa = SigningKey::rsa("k1");
    let idp = JwksServer::start(&[&rsa]).await;
    let gateway = Gateway::builder()
        .provider(
            "openai",
            mocks.openai([GPT]).options("{ responses: native }"),
        )
        .yaml(&jwks::issuer_yaml(&idp.url))
        .start()
        .await;
    let token = rsa.sign(&claims(
        "ada",
        json!({"project": "team-a", "email": "ada@acme.test"}),
    ));
    let mut socket = connect(&gateway, Some(&token)).await.unwrap();
    socket
        .send(create(&format!("openai/{GPT}"), "Say hello."))
        .await
        .unwrap();
    let events = read_turn(&mut socket).await;
    assert_eq!(
        events.last().unwrap()["type"],
        "response.completed",
        "{events:?}"
    );
    let forged = SigningKey::rsa("k1").sign(&claims("eve", json!({"project": "team-a"})));
    let (status, body) = refused(&gateway, Some(&forged)).await;
    assert_eq!(status, 401, "{body}");
}

#[tokio::test]
async fn sessions_past_the_per_key_bound_are_refused_and_counted_in_health_and_metrics() {
    let s = setup("{ max_sessions_per_key: 2 }").await;
    let mut first = connect(&s.gateway, Some(&s.key)).await.unwrap();
    let _second = connect(&s.gateway, Some(&s.key)).await.unwrap();
    let (status, body) = refused(&s.gateway, Some(&s.key)).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["error"]["code"], "websocket_connection_limit_reached");
    // Another key has its own.
    let other = s.gateway.api_key("ws").await;
    let _third = connect(&s.gateway, Some(&other)).await.unwrap();
    assert_eq!(sessions(&s.gateway).await, 3);
    assert!(
        s.gateway
            .metrics()
            .await
            .contains("\nwasmgate_websocket_sessions 3\n"),
        "the gauge counts them"
    );
    first.close(None).await.unwrap();
    await_sessions(&s.gateway, 2).await;
    let _again = connect(&s.gateway, Some(&s.key)).await.unwrap();
}

#[tokio::test]
async fn an_oversize_message_closes_the_socket_with_1009() {
    let s = setup("{ max_message_bytes: 1024 }").await;
    let mut socket = connect(&s.gateway, Some(&s.key)).await.unwrap();
    socket
        .send(create(&format!("openai/{GPT}"), &"x".repeat(2000)))
        .await
        .unwrap();
    let (code, reason) = close_of(&mut socket).await;
    assert_eq!(code, CloseCode::Size, "{reason}");
    assert!(reason.contains("max_message_bytes"), "{reason}");
    await_sessions(&s.gateway, 0).await;
    assert!(
        s.openai.requests().await.is_empty(),
        "nothing went upstream"
    );
}

#[tokio::test]
async fn an_idle_socket_is_closed() {
    let s = setup("{ idle_timeout_ms: 300 }").await;
    let mut socket = connect(&s.gateway, Some(&s.key)).await.unwrap();
    let opened = Instant::now();
    let (code, reason) = close_of(&mut socket).await;
    assert_eq!(code, CloseCode::Normal, "{reason}");
    assert!(reason.contains("idle_timeout_ms"), "{reason}");
    assert!(opened.elapsed() < Duration::from_secs(5));
    await_sessions(&s.gateway, 0).await;
}

#[tokio::test]
async fn a_client_that_sends_many_turns_and_stops_reading_is_closed_at_the_queue_bound() {
    let s = setup("{ max_queued_turns: 2 }").await;
    let mut socket = connect(&s.gateway, Some(&s.key)).await.unwrap();
    // A turn in flight for about 1.5 s (if the runner took one before the queue filled), two
    // queued, and the rest: without reading.
    for _ in 0..50 {
        socket.send(create(PACED, "count")).await.unwrap();
    }
    // The socket ends after the turn in flight; the queued turns never run, nothing more was
    // taken in.
    let started = Instant::now();
    await_sessions(&s.gateway, 0).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    // The close wins over the turns queued: at most the one already in flight ran.
    let upstream = s.openai.requests().await;
    assert!(upstream.len() <= 1, "{} turns ran", upstream.len());
    let (code, reason) = close_of(&mut socket).await;
    assert_eq!(code, CloseCode::Policy, "{reason}");
    assert!(reason.contains("max_queued_turns"), "{reason}");
}

#[tokio::test]
async fn a_shutdown_lets_the_turn_in_flight_finish_then_closes_the_socket() {
    let s = setup("{}").await;
    let mut socket = connect(&s.gateway, Some(&s.key)).await.unwrap();
    socket.send(create(PACED, "count")).await.unwrap();
    let Some(Message::Text(first)) = next(&mut socket).await else {
        panic!("no first event");
    };
    assert!(first.contains("response.created"), "{first}");
    let state = s.gateway.state.clone();
    let stopping = tokio::spawn(s.gateway.stop());
    let events = read_turn(&mut socket).await;
    let last = events.last().unwrap();
    assert_eq!(last["type"], "response.completed", "{last}");
    assert!(
        last["response"]["output"].to_string().contains("text"),
        "{last}"
    );
    let (code, reason) = close_of(&mut socket).await;
    assert_eq!(code, CloseCode::Away, "{reason}");
    tokio::time::timeout(Duration::from_secs(10), stopping)
        .await
        .expect("the gateway stopped")
        .unwrap();
    assert_eq!(state.sockets.open_count(), 0);
}

/// A turn on the socket goes through the request guards as the `POST` does: with `redact`,
/// neither the native Responses upstream nor the translated Anthropic one gets the secret.
#[tokio::test]
pub(crate) async fn a_turn_on_the_socket_is_guarded_as_the_post_is() {
    use crate::guards_routes::{SECRET, assert_clean};
    let mocks = Upstreams::start().await;
    let gateway = Gateway::builder()
        .provider(
            "openai",
            mocks.openai([GPT]).options("{ responses: native }"),
        )
        .provider("anthropic", mocks.anthropic([CLAUDE]))
        .guard(common::gateway::Guard::plugin("redact"))
        .start()
        .await;
    let mut socket = connect(&gateway, None).await.unwrap();
    for model in [format!("openai/{GPT}"), format!("anthropic/{CLAUDE}")] {
        socket.send(create(&model, SECRET)).await.unwrap();
        let events = read_turn(&mut socket).await;
        let last = events.last().unwrap();
        assert_eq!(last["type"], "response.completed", "{model}: {events:?}");
    }
    assert_clean("a native turn", &mocks.openai.last_request().await.body);
    assert_clean(
        "a translated turn",
        &mocks.anthropic.last_request().await.body,
    );
}
