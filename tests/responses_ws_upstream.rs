//! The Responses API's WebSocket mode upstream: a client socket's turns routed to an entry with
//! `websocket: true` go to the strict mock on one upstream socket (`GET /v1/responses`
//! upgraded), not as HTTP streams. The Python SDK's chained turns and tool call; a `store:
//! false` chain (Codex's way) that reaches the upstream socket with only its new input and
//! `previous_response_id`, and its context in full when it goes to another entry over HTTP;
//! ledger records at the catalog's price; the redact guard (on requests) on this path; and an upstream that
//! refuses the upgrade, whose turns go over HTTP.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::atomic::Ordering;

use common::cost;
use common::gateway::{Gateway, Upstreams};
use common::mock_openai::responses::socket::RECORDED_PATH;
use common::sdk::{assert_passed, run_client};
use common::websocket::{self, Socket};
use common::{TestGateway, mock_openai::MockOpenAi};
use futures_util::SinkExt;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

const GPT: &str = "gpt-4.1-mini";

/// A gateway in front of the OpenAI mock as `ws` (WebSocket mode) and `http` (the same
/// upstream without it), both serving Responses natively.
async fn setup(guarded: bool) -> (MockOpenAi, TestGateway) {
    let mocks = Upstreams::start().await;
    let mut builder = Gateway::builder()
        .provider(
            "ws",
            mocks
                .openai([GPT])
                .options("{ responses: native, websocket: true }"),
        )
        .provider("http", mocks.openai([GPT]).options("{ responses: native }"));
    if guarded {
        // A request guard: answer guards have a Responses request translated (its native
        // stream has no canonical view), so it goes to Chat Completions, not on a socket.
        builder = builder.guard(common::gateway::Guard::plugin("redact").apply("request"));
    }
    let gateway = builder.start().await;
    (mocks.openai, gateway)
}

/// What the mock received, by socket and over HTTP.
async fn upstream_turns(openai: &MockOpenAi) -> (Vec<Value>, Vec<Value>) {
    let requests = openai.requests().await;
    let on = |path: &str| -> Vec<Value> {
        (requests.iter())
            .filter(|r| r.path == path)
            .map(|r| r.body.clone())
            .collect()
    };
    (on(RECORDED_PATH), on("/v1/responses"))
}

fn upgrades(openai: &MockOpenAi) -> usize {
    openai.shared.socket_upgrades.load(Ordering::SeqCst)
}

/// Sends `create` and reads its events to the last; the last.
async fn turn(socket: &mut Socket, create: Value) -> Value {
    let mut create = create;
    create["type"] = json!("response.create");
    socket
        .send(Message::text(create.to_string()))
        .await
        .unwrap();
    loop {
        let event = websocket::next_event(socket).await;
        if matches!(
            event["type"].as_str(),
            Some("response.completed" | "response.failed" | "response.incomplete" | "error")
        ) {
            return event;
        }
    }
}

fn weather_tool() -> Value {
    json!({"type": "function", "name": "get_weather", "parameters": {"type": "object",
        "properties": {"city": {"type": "string"}}, "required": ["city"]}})
}

/// The types of a request's input items.
fn kinds(body: &Value) -> Vec<&str> {
    (body["input"].as_array().into_iter().flatten())
        .map(|i| i["type"].as_str().unwrap_or("message"))
        .collect()
}

#[tokio::test]
async fn python_sdk_chains_turns_and_a_tool_call_on_one_upstream_socket() {
    let (openai, gateway) = setup(false).await;
    let key = gateway.api_key("ws").await;
    let output = run_client(
        "openai_responses_ws.py",
        &gateway.url("/v1"),
        &key,
        &[
            "--model",
            &format!("ws/{GPT}"),
            "--mock",
            "--only",
            "tool_chain",
        ],
    )
    .await;
    assert_passed(&output, &["tool_chain"]);
    let (socket, http) = upstream_turns(&openai).await;
    assert_eq!(upgrades(&openai), 1, "one upstream socket for the client's");
    assert_eq!(socket.len(), 3, "{socket:#?}");
    assert!(http.is_empty(), "nothing over HTTP: {http:#?}");
    // The SDK's turns are stored: the gateway's store replays the call before its output (an
    // unstored chain goes with its new input alone: the next test).
    assert_eq!(
        kinds(&socket[1]),
        ["message", "function_call", "function_call_output"],
        "{}",
        socket[1]
    );
    assert!(socket.iter().all(|b| b.get("stream").is_none()));
    let records = crate::responses_ws::records(&gateway, &key, 3).await;
    assert_eq!(records.len(), 3, "{records:#?}");
    for record in &records {
        assert_eq!(record["status"], 200, "{record}");
        assert_eq!(record["provider"], "ws", "{record}");
    }
}

/// Codex's way: `store: false`, each later turn only its new input and the last response's
/// id. The gateway's socket expands it for an upstream over HTTP; the upstream socket that
/// answered that response takes it as it came.
#[tokio::test]
async fn an_unstored_chain_goes_up_with_only_its_new_input_and_is_priced() {
    let (openai, gateway) = setup(false).await;
    let key = gateway.api_key("ws").await;
    let mut client = websocket::connect(&gateway, "/v1/responses", Some(&key))
        .await
        .unwrap();
    let model = format!("ws/{GPT}");
    let first = turn(
        &mut client,
        json!({"model": model, "store": false, "input": "Weather in Paris?", "tools": [weather_tool()]}),
    )
    .await;
    assert_eq!(first["type"], "response.completed", "{first}");
    let call = first["response"]["output"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "function_call")
        .cloned()
        .expect("a function call");
    let second = turn(
        &mut client,
        json!({"model": model, "store": false, "previous_response_id": first["response"]["id"],
            "tools": [weather_tool()],
            "input": [{"type": "function_call_output", "call_id": call["call_id"], "output": "18 C"}]}),
    )
    .await;
    assert_eq!(second["type"], "response.completed", "{second}");
    let (socket, http) = upstream_turns(&openai).await;
    assert_eq!(upgrades(&openai), 1);
    assert!(http.is_empty(), "{http:#?}");
    assert_eq!(kinds(&socket[1]), ["function_call_output"], "{}", socket[1]);
    assert_eq!(
        socket[1]["previous_response_id"], first["response"]["id"],
        "{}",
        socket[1]
    );

    // The same chain to another entry (over HTTP, no socket there) carries its context.
    let third = turn(
        &mut client,
        json!({"model": format!("http/{GPT}"), "store": false,
            "previous_response_id": second["response"]["id"], "tools": [weather_tool()],
            "input": [{"role": "user", "content": "And tomorrow?"}]}),
    )
    .await;
    assert_eq!(third["type"], "response.completed", "{third}");
    let (_, http) = upstream_turns(&openai).await;
    assert_eq!(http.len(), 1);
    assert!(http[0].get("previous_response_id").is_none(), "{}", http[0]);
    assert_eq!(
        kinds(&http[0]),
        [
            "message",
            "function_call",
            "function_call_output",
            "message",
            "message"
        ],
        "{}",
        http[0]
    );

    // Each socket turn is recorded at the catalog's price of the usage it reported.
    let records = crate::responses_ws::records(&gateway, &key, 3).await;
    for done in [&first, &second] {
        let usage = &done["response"]["usage"];
        let tokens = crate::responses::tokens_of(usage);
        let record = (records.iter())
            .find(|r| {
                r["provider"] == "ws"
                    && r["input_tokens"] == tokens.input
                    && r["output_tokens"] == tokens.output
            })
            .unwrap_or_else(|| panic!("no record of {usage}: {records:#?}"));
        let micros = (record["cost"].as_f64().unwrap() * 1e6).round() as i64;
        assert_eq!(micros, cost::builtin("openai", GPT, tokens), "{record}");
    }
}

#[tokio::test]
async fn the_redact_guard_rewrites_a_turn_that_goes_on_the_upstream_socket() {
    use crate::guards_routes::{SECRET, assert_clean};
    let (openai, gateway) = setup(true).await;
    let mut client = websocket::connect(&gateway, "/v1/responses", None)
        .await
        .unwrap();
    let done = turn(
        &mut client,
        json!({"model": format!("ws/{GPT}"), "input": SECRET}),
    )
    .await;
    assert_eq!(done["type"], "response.completed", "{done}");
    let (socket, http) = upstream_turns(&openai).await;
    assert_eq!((socket.len(), http.len()), (1, 0));
    assert_clean("a turn on the upstream socket", &socket[0]);
}

#[tokio::test]
async fn an_upstream_that_refuses_the_upgrade_gets_the_turns_over_http() {
    let (openai, gateway) = setup(false).await;
    openai.shared.refuse_sockets.store(true, Ordering::SeqCst);
    let mut client = websocket::connect(&gateway, "/v1/responses", None)
        .await
        .unwrap();
    for input in ["Hello.", "Again."] {
        let done = turn(
            &mut client,
            json!({"model": format!("ws/{GPT}"), "input": input}),
        )
        .await;
        assert_eq!(done["type"], "response.completed", "{done}");
    }
    let (socket, http) = upstream_turns(&openai).await;
    assert_eq!((upgrades(&openai), socket.len(), http.len()), (0, 0, 2));
    // The upgrade was asked once: the entry is not tried again on this client socket.
    let asked = (openai.targets().await.into_iter())
        .filter(|t| t == "/v1/responses")
        .count();
    assert_eq!(asked, 3, "one refused upgrade and two POSTs");
}

/// The upstream's `error` event before any other is the turn's error, as the HTTP error would
/// be; the sockets live on.
#[tokio::test]
async fn an_upstream_error_event_fails_the_turn_and_the_sockets_live_on() {
    let (openai, gateway) = setup(false).await;
    let mut client = websocket::connect(&gateway, "/v1/responses", None)
        .await
        .unwrap();
    let model = format!("ws/{GPT}");
    let failed = turn(
        &mut client,
        json!({"model": model, "previous_response_id": "resp_nowhere", "input": "Hi"}),
    )
    .await;
    assert_eq!(failed["type"], "error", "{failed}");
    assert_eq!(failed["status"], 400, "{failed}");
    assert_eq!(failed["error"]["code"], "previous_response_not_found");
    let done = turn(&mut client, json!({"model": model, "input": "Hi"})).await;
    assert_eq!(done["type"], "response.completed", "{done}");
    assert_eq!(upgrades(&openai), 1);
}
