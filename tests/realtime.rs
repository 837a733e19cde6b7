//! The Realtime API (`GET /v1/realtime?model=` upgraded) end to end against the strict realtime
//! mock: the key checked at the upgrade (refused as HTTP, or taken from a browser's
//! subprotocol), a text turn and an audio turn relayed, one ledger record per response at the
//! catalog's realtime prices with the session's id, a budget spent mid-session closing it with
//! the reference's `error` event, the client's text redacted before it goes upstream and the
//! answers' text and transcripts before they reach the client (a stopping guard ending the
//! response alone, audio output refused unless exempt), a client
//! that stops reading holding the upstream where it is, and the official SDKs' sessions (Python's
//! `client.realtime.connect()`, Node's `OpenAIRealtimeWS`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use common::gateway::{Gateway, GatewayBuilder, Provider};
use common::mock_realtime::{self, MockRealtime};
use common::sdk::{assert_passed, run_client};
use common::{TestGateway, http};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{self, Message};

const MODEL: &str = "gpt-realtime";
const FLOOD: &str = "gpt-realtime-flood";
const SLOW: &str = "gpt-realtime-slow";

use common::websocket::{self, Socket, next_event};

/// A gateway that requires keys, in front of the mock as an `openai` entry, with `more` added.
async fn setup(
    more: impl FnOnce(GatewayBuilder) -> GatewayBuilder,
) -> (MockRealtime, TestGateway, String) {
    let mock = MockRealtime::start().await;
    let builder = Gateway::builder().auth_required().provider(
        "openai",
        Provider::openai(&mock.base_url()).models([MODEL, FLOOD, SLOW]),
    );
    let gateway = more(builder).start().await;
    let key = gateway.api_key("rt").await;
    (mock, gateway, key)
}

/// Opens a socket for `model` with `key` as the bearer key (none if `None`).
async fn connect(
    gateway: &TestGateway,
    model: &str,
    key: Option<&str>,
) -> Result<Socket, tungstenite::Error> {
    websocket::connect(gateway, &format!("/v1/realtime?model={model}"), key).await
}

/// The status and JSON body of an upgrade the gateway refused.
async fn refused(gateway: &TestGateway, model: &str, key: Option<&str>) -> (u16, Value) {
    websocket::refused(gateway, &format!("/v1/realtime?model={model}"), key).await
}

/// A `response.create` asking for `modality` output, named `event_id`.
fn create(event_id: &str, modality: &str) -> Value {
    json!({"type": "response.create", "event_id": event_id,
        "response": {"output_modalities": [modality]}})
}

/// A session open on `model`, its `session.created` read.
async fn session(gateway: &TestGateway, model: &str, key: &str) -> Socket {
    let mut socket = connect(gateway, model, Some(key)).await.unwrap();
    let created = next_event(&mut socket).await;
    assert_eq!(created["type"], "session.created", "{created}");
    socket
}

async fn send(socket: &mut Socket, event: Value) {
    socket.send(Message::text(event.to_string())).await.unwrap();
}

/// The events up to a `response.done` or an `error`.
async fn until_done(socket: &mut Socket) -> Vec<Value> {
    let mut events = Vec::new();
    loop {
        let event = next_event(socket).await;
        let last = matches!(event["type"].as_str(), Some("response.done" | "error"));
        events.push(event);
        if last {
            return events;
        }
    }
}

fn deltas(events: &[Value], kind: &str) -> Vec<String> {
    (events.iter())
        .filter(|e| e["type"] == kind)
        .map(|e| e["delta"].as_str().unwrap().to_owned())
        .collect()
}

/// A text turn: a user message, then a response with text output.
async fn text_turn(socket: &mut Socket, text: &str) -> Vec<Value> {
    send(
        socket,
        json!({"type": "conversation.item.create", "item": {"type": "message",
        "role": "user", "content": [{"type": "input_text", "text": text}]}}),
    )
    .await;
    let added = next_event(socket).await;
    assert_eq!(added["type"], "conversation.item.added", "{added}");
    assert_eq!(next_event(socket).await["type"], "conversation.item.done");
    send(socket, create("evt_text", "text")).await;
    until_done(socket).await
}

/// An audio turn: 0.2 s of pcm16 appended and committed, then a response with audio output.
async fn audio_turn(socket: &mut Socket) -> Vec<Value> {
    let pcm = mock_realtime::pcm16(9600);
    for chunk in pcm.chunks(3200) {
        send(
            socket,
            json!({"type": "input_audio_buffer.append", "audio": STANDARD.encode(chunk)}),
        )
        .await;
    }
    send(socket, json!({"type": "input_audio_buffer.commit"})).await;
    assert_eq!(
        next_event(socket).await["type"],
        "input_audio_buffer.committed"
    );
    send(socket, create("evt_audio", "audio")).await;
    until_done(socket).await
}

/// A page of `key`'s request log for the filters of `query`.
async fn request_log(gateway: &TestGateway, key: &str, query: Value) -> Value {
    http()
        .post(gateway.url("/usage/requests"))
        .bearer_auth(key)
        .json(&query)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// The ledger's records of `key`'s project, once `at_least` are stored (the writer flushes
/// every 200 ms).
async fn records(gateway: &TestGateway, key: &str, at_least: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let page = request_log(gateway, key, json!({"limit": 100})).await;
        let data = page["data"].as_array().cloned().unwrap_or_default();
        if data.len() >= at_least {
            return data;
        }
        assert!(
            Instant::now() < deadline,
            "{} records, not {at_least}: {page}",
            data.len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// What a response with `usage` costs at gpt-realtime's public prices, in micro-USD: text in
/// $4, cached $0.40, out $16; audio in $32, cached $0.40, out $64 (per million tokens).
fn gpt_realtime_micros(usage: &Value) -> i64 {
    let n = |v: &Value| v.as_i64().unwrap_or(0);
    let input = &usage["input_token_details"];
    let cached = &input["cached_tokens_details"];
    let output = &usage["output_token_details"];
    let pico = (n(&input["text_tokens"]) - n(&cached["text_tokens"])) * 4_000_000
        + n(&cached["text_tokens"]) * 400_000
        + (n(&input["audio_tokens"]) - n(&cached["audio_tokens"])) * 32_000_000
        + n(&cached["audio_tokens"]) * 400_000
        + n(&output["text_tokens"]) * 16_000_000
        + n(&output["audio_tokens"]) * 64_000_000;
    (pico + 500_000) / 1_000_000
}

/// Checks that each of `usages` has one record of the session, at its exact price.
fn assert_recorded(records: &[Value], usages: &[Value]) {
    let realtime: Vec<&Value> = records
        .iter()
        .filter(|r| r["operation"] == "realtime" && r["status"] == 200)
        .collect();
    assert_eq!(
        realtime.len(),
        usages.len(),
        "one record a response: {records:#?}"
    );
    let session = realtime[0]["session_id"].as_str().unwrap();
    assert!(session.starts_with("rtsess_"), "{session}");
    let mut costs: Vec<i64> = (realtime.iter())
        .map(|r| {
            assert_eq!(r["status"], 200, "{r}");
            assert_eq!(r["session_id"], session, "one session ties them: {r}");
            assert_eq!(r["model"], MODEL);
            (r["cost"].as_f64().unwrap() * 1e6).round() as i64
        })
        .collect();
    let mut expected: Vec<i64> = usages.iter().map(gpt_realtime_micros).collect();
    costs.sort_unstable();
    expected.sort_unstable();
    assert_eq!(costs, expected, "{records:#?}");
    let mut inputs: Vec<i64> = realtime
        .iter()
        .map(|r| r["input_tokens"].as_i64().unwrap())
        .collect();
    let mut sent: Vec<i64> = usages
        .iter()
        .map(|u| u["input_tokens"].as_i64().unwrap())
        .collect();
    inputs.sort_unstable();
    sent.sort_unstable();
    assert_eq!(inputs, sent);
}

#[tokio::test]
async fn a_refused_key_gets_the_http_error_and_no_socket_and_a_browser_s_key_is_taken() {
    let (mock, gateway, key) = setup(|b| b).await;
    for key in [None, Some("sk-not-a-gateway-key")] {
        let (status, body) = refused(&gateway, MODEL, key).await;
        assert_eq!(status, 401);
        assert_eq!(body["error"]["type"], "invalid_request_error", "{body}");
        assert!(body["error"]["message"].is_string(), "{body}");
    }
    assert!(
        mock.models().await.is_empty(),
        "no upstream socket was opened"
    );
    // A browser cannot set headers on a socket: its key comes as a subprotocol.
    let mut request = format!("ws://{}/v1/realtime?model={MODEL}", gateway.addr)
        .into_client_request()
        .unwrap();
    request.headers_mut().insert(
        "sec-websocket-protocol",
        format!("realtime, openai-insecure-api-key.{key}")
            .parse()
            .unwrap(),
    );
    let (mut socket, response) = tokio_tungstenite::connect_async(request).await.unwrap();
    assert_eq!(response.headers()["sec-websocket-protocol"], "realtime");
    assert_eq!(next_event(&mut socket).await["type"], "session.created");
    assert_eq!(mock.models().await, [MODEL]);
}

#[tokio::test]
async fn a_text_and_an_audio_turn_are_relayed_and_each_response_recorded_at_its_price() {
    let (mock, gateway, key) = setup(|b| b).await;
    let mut socket = session(&gateway, MODEL, &key).await;
    let text = text_turn(&mut socket, "Say hello to the whole world").await;
    assert_eq!(
        deltas(&text, "response.output_text.delta").concat(),
        mock_realtime::ANSWER
    );
    let audio = audio_turn(&mut socket).await;
    let pcm: usize = (deltas(&audio, "response.output_audio.delta").iter())
        .map(|d| STANDARD.decode(d).unwrap().len())
        .sum();
    assert_eq!(pcm % mock_realtime::AUDIO_CHUNK_BYTES, 0);
    assert!(pcm > 0);
    assert_eq!(
        deltas(&audio, "response.output_audio_transcript.delta").concat(),
        mock_realtime::TRANSCRIPT
    );
    // The audio the client appended reached the upstream as it was sent.
    let appended: Vec<Value> = (mock.received().await.into_iter())
        .filter(|e| e["type"] == "input_audio_buffer.append")
        .collect();
    let bytes: usize = appended
        .iter()
        .map(|e| STANDARD.decode(e["audio"].as_str().unwrap()).unwrap().len())
        .sum();
    assert_eq!(bytes, 9600);
    // An event the upstream does not take gets its `error` event; the session lives on.
    send(
        &mut socket,
        json!({"type": "conversation.bogus", "event_id": "evt_bogus"}),
    )
    .await;
    let error = next_event(&mut socket).await;
    assert_eq!(error["type"], "error", "{error}");
    assert_eq!(error["error"]["event_id"], "evt_bogus");
    let usages: Vec<Value> = [&text, &audio]
        .iter()
        .map(|events| events.last().unwrap()["response"]["usage"].clone())
        .collect();
    assert!(
        usages[1]["input_token_details"]["cached_tokens"]
            .as_i64()
            .unwrap()
            > 0
    );
    assert!(
        usages[1]["output_token_details"]["audio_tokens"]
            .as_i64()
            .unwrap()
            > 0
    );
    let records = records(&gateway, &key, 2).await;
    assert_recorded(&records, &usages);
    // The request log finds a session's responses by its id.
    let page = request_log(
        &gateway,
        &key,
        json!({"session_id": records[0]["session_id"]}),
    )
    .await;
    assert_eq!(page["data"].as_array().unwrap().len(), 2, "{page}");
    let page = request_log(&gateway, &key, json!({"session_id": "rtsess_other"})).await;
    assert_eq!(page["data"], json!([]), "{page}");
}

#[tokio::test]
async fn a_spent_budget_closes_the_session_with_an_error_event() {
    // A response may cost 1,024 answer tokens at $16 a million ($0.0164) before it is sent:
    // the first is admitted, and once it has cost anything the second is not.
    let (mock, gateway, key) = setup(|b| b.limit("budget", "global", "{daily_usd: 0.017}")).await;
    let mut socket = session(&gateway, MODEL, &key).await;
    let first = audio_turn(&mut socket).await;
    assert_eq!(first.last().unwrap()["type"], "response.done");
    send(
        &mut socket,
        json!({"type": "response.create", "event_id": "evt_second"}),
    )
    .await;
    let error = next_event(&mut socket).await;
    assert_eq!(error["type"], "error", "{error}");
    assert_eq!(error["error"]["code"], "insufficient_quota", "{error}");
    assert_eq!(error["error"]["event_id"], "evt_second");
    let closed = tokio::time::timeout(Duration::from_secs(10), socket.next())
        .await
        .unwrap();
    match closed {
        Some(Ok(Message::Close(Some(frame)))) => assert_eq!(frame.code, CloseCode::Policy),
        other => panic!("not closed: {other:?}"),
    }
    let creates = (mock.received().await.iter())
        .filter(|e| e["type"] == "response.create")
        .count();
    assert_eq!(
        creates, 1,
        "the refused response.create never went upstream"
    );
    let records = records(&gateway, &key, 2).await;
    let usage = first.last().unwrap()["response"]["usage"].clone();
    assert_recorded(&records, &[usage]);
    let refused: Vec<&Value> = records.iter().filter(|r| r["status"] == 429).collect();
    assert_eq!(refused.len(), 1, "{records:#?}");
    assert_eq!(refused[0]["error_type"], "insufficient_quota");
    assert_eq!(refused[0]["session_id"], records[0]["session_id"]);
}

/// A response the upstream starts itself (server VAD: the end of the client's speech) passes
/// the limit rules as it starts, as a `response.create` does before it goes up: the first is
/// admitted and recorded; once the budget is spent the next is cancelled before any of its
/// answer reaches the client, recorded as refused, and the session closes.
#[tokio::test]
async fn a_response_server_vad_starts_is_admitted_by_the_budget_first() {
    let (mock, gateway, key) = setup(|b| b.limit("budget", "global", "{daily_usd: 0.017}")).await;
    let mut socket = session(&gateway, MODEL, &key).await;
    send(
        &mut socket,
        json!({"type": "session.update", "session": {"type": "realtime",
            "output_modalities": ["text"],
            "audio": {"input": {"turn_detection": {"type": "server_vad"}}}}}),
    )
    .await;
    assert_eq!(next_event(&mut socket).await["type"], "session.updated");
    let speak = || {
        json!({"type": "input_audio_buffer.append",
            "audio": STANDARD.encode(mock_realtime::pcm16(9600))})
    };
    send(&mut socket, speak()).await;
    let first = until_done(&mut socket).await;
    let done = first.last().unwrap();
    assert_eq!(done["type"], "response.done", "{first:#?}");
    assert!(
        first
            .iter()
            .any(|e| e["type"] == "response.output_text.delta"),
        "{first:#?}"
    );
    // The budget is spent now: the next turn's response is refused as it starts.
    send(&mut socket, speak()).await;
    let mut after = Vec::new();
    let close = loop {
        let message = tokio::time::timeout(Duration::from_secs(10), socket.next())
            .await
            .expect("an event or the close within 10 s");
        match message {
            Some(Ok(Message::Text(text))) => {
                after.push(serde_json::from_str::<Value>(&text).unwrap())
            }
            Some(Ok(Message::Close(frame))) => break frame,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(close.map(|f| f.code), Some(CloseCode::Policy), "{after:#?}");
    let error = after
        .iter()
        .find(|e| e["type"] == "error")
        .expect("an error event");
    assert_eq!(error["error"]["code"], "insufficient_quota", "{error}");
    assert!(
        !after
            .iter()
            .any(|e| e["type"] == "response.output_text.delta"),
        "the refused response's answer reached the client: {after:#?}"
    );
    // No client asked for either response (the refused one ended with the session, the
    // upstream's socket closed with it).
    let received = mock.received().await;
    assert!(
        !received.iter().any(|e| e["type"] == "response.create"),
        "{received:#?}"
    );
    let records = records(&gateway, &key, 2).await;
    assert_recorded(&records, &[done["response"]["usage"].clone()]);
    let refused: Vec<&Value> = records.iter().filter(|r| r["status"] == 429).collect();
    assert_eq!(refused.len(), 1, "{records:#?}");
    assert_eq!(refused[0]["error_type"], "insufficient_quota");
}

/// The route's guard test (`guards_every_route.rs`): the text a client writes into the
/// conversation and the session's instructions reach the upstream redacted; audio passes.
#[tokio::test]
pub(crate) async fn the_client_s_text_is_redacted_before_it_goes_upstream() {
    use crate::guards_routes::{SECRET, assert_clean};
    use common::gateway::Guard;
    // A guard on both sides: the client's text is redacted on its way up, the answers on
    // their way down.
    let (mock, gateway, key) = setup(|b| b.guard(Guard::plugin("redact"))).await;
    let mut socket = session(&gateway, MODEL, &key).await;
    send(
        &mut socket,
        json!({"type": "session.update", "session": {"type": "realtime",
        "instructions": SECRET}}),
    )
    .await;
    assert_eq!(next_event(&mut socket).await["type"], "session.updated");
    let events = text_turn(&mut socket, SECRET).await;
    assert_eq!(events.last().unwrap()["type"], "response.done");
    let received = mock.received().await;
    assert!(received.len() >= 3, "{received:#?}");
    for event in &received {
        assert_clean("a realtime event", event);
    }
    let item = received
        .iter()
        .find(|e| e["type"] == "conversation.item.create")
        .unwrap();
    assert!(
        item["item"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("card"),
        "{item}"
    );
    // The rewrites of the client's events are in the record of the response they came before,
    // as an HTTP request's are in its own.
    let records = records(&gateway, &key, 1).await;
    let guards = records[0]["guards"].as_array().unwrap();
    let request = (guards.iter())
        .find(|v| v["side"] == "request")
        .unwrap_or_else(|| panic!("{records:#?}"));
    assert_eq!(request["guard"], "redact", "{request}");
    assert_eq!(request["action"], "rewrite", "{request}");
    assert!(
        request["counts"].as_object().is_some_and(|c| !c.is_empty()),
        "{request}"
    );
    // A refusing guard refuses the event alone: the `error` event, and the session lives on.
    let deny = Guard::plugin("deny")
        .options("{phrases: [forbidden]}")
        .apply("request");
    let (mock, gateway, key) = setup(|b| b.guard(deny)).await;
    let mut socket = session(&gateway, MODEL, &key).await;
    send(
        &mut socket,
        json!({"type": "conversation.item.create", "event_id": "evt_denied", "item": {
            "type": "message", "role": "user",
            "content": [{"type": "input_text", "text": "a forbidden word"}]}}),
    )
    .await;
    let error = next_event(&mut socket).await;
    assert_eq!(error["type"], "error", "{error}");
    assert_eq!(error["error"]["event_id"], "evt_denied", "{error}");
    let events = text_turn(&mut socket, "an allowed word").await;
    assert_eq!(events.last().unwrap()["type"], "response.done");
    let items = (mock.received().await.into_iter())
        .filter(|e| e["type"] == "conversation.item.create")
        .count();
    assert_eq!(items, 1, "the refused item never went upstream");
}

/// The answer the mock says after a `SAY` message: a card number spread over four deltas.
const CARD_ANSWER: &str = "My card is 4111 1111 1111 1111, thanks.";
const CARD_REDACTED: &str = "My card is [CARD], thanks.";

/// A user message the mock's answers say from then on.
async fn say(socket: &mut Socket, text: &str) {
    send(
        socket,
        json!({"type": "conversation.item.create", "item": {"type": "message",
        "role": "user", "content": [{"type": "input_text",
            "text": format!("{}{text}", mock_realtime::SAY)}]}}),
    )
    .await;
    assert_eq!(next_event(socket).await["type"], "conversation.item.added");
    assert_eq!(next_event(socket).await["type"], "conversation.item.done");
}

/// The text of the first content part of each output item of `done` (a `response.done`).
fn done_texts(done: &Value) -> Vec<String> {
    (done["response"]["output"].as_array().unwrap().iter())
        .map(|item| {
            let part = &item["content"][0];
            let text = part["text"].as_str().or(part["transcript"].as_str());
            text.unwrap().to_owned()
        })
        .collect()
}

#[tokio::test]
async fn an_answer_s_card_split_over_deltas_reaches_the_client_redacted() {
    use common::gateway::Guard;
    let redact = Guard::plugin("redact")
        .name("answers")
        .apply("answer")
        .options("{window: 24}");
    let (mock, gateway, key) = setup(|b| b.guard(redact)).await;
    let mut socket = session(&gateway, MODEL, &key).await;
    say(&mut socket, CARD_ANSWER).await;
    send(&mut socket, create("evt_card", "text")).await;
    let events = until_done(&mut socket).await;
    for event in &events {
        assert!(!event.to_string().contains("4111"), "leaked: {event}");
    }
    let pieces = deltas(&events, "response.output_text.delta");
    assert!(pieces.len() > 1, "{pieces:?}");
    assert_eq!(pieces.concat(), CARD_REDACTED);
    let done = events
        .iter()
        .find(|e| e["type"] == "response.output_text.done")
        .unwrap();
    assert_eq!(done["text"], CARD_REDACTED);
    let part = events
        .iter()
        .find(|e| e["type"] == "response.content_part.done")
        .unwrap();
    assert_eq!(part["part"]["text"], CARD_REDACTED);
    let item = events
        .iter()
        .find(|e| e["type"] == "response.output_item.done")
        .unwrap();
    assert_eq!(item["item"]["content"][0]["text"], CARD_REDACTED);
    assert_eq!(done_texts(events.last().unwrap()), [CARD_REDACTED]);
    // The upstream had the text as the client wrote it: the guard checks answers only.
    let said = (mock.received().await.into_iter())
        .find(|e| e["type"] == "conversation.item.create")
        .unwrap();
    assert!(said.to_string().contains("4111"), "{said}");
    // The response's record names the verdict, as the HTTP routes' do.
    let records = records(&gateway, &key, 1).await;
    assert_eq!(
        records[0]["guards"],
        json!([{"guard": "answers", "side": "answer", "action": "rewrite", "counts": {"card": 1}}]),
        "{records:#?}"
    );
}

/// A function call's arguments are an answer's text too: a card the model puts in them,
/// streamed over many deltas, reaches the client redacted in every event that carries them;
/// and the client's tool result (`function_call_output`) and tool descriptions are redacted
/// before they go upstream.
#[tokio::test]
async fn a_function_call_s_arguments_are_guarded_both_ways() {
    use common::gateway::Guard;
    let tools = |description: &str| {
        json!({"type": "session.update", "session": {"type": "realtime",
            "output_modalities": ["text"], "tools": [{"type": "function", "name": "remember",
            "description": description,
            "parameters": {"type": "object", "properties": {"text": {"type": "string"}}}}]}})
    };
    // Answers first: the card reaches the upstream, which calls the tool with it.
    let answers = Guard::plugin("redact").apply("answer");
    let (_mock, gateway, key) = setup(|b| b.guard(answers)).await;
    let mut socket = session(&gateway, MODEL, &key).await;
    send(&mut socket, tools("Keeps a note.")).await;
    assert_eq!(next_event(&mut socket).await["type"], "session.updated");
    let note = format!("{}{CARD_ANSWER}", mock_realtime::CALL);
    send(
        &mut socket,
        json!({"type": "conversation.item.create", "item": {"type": "message",
            "role": "user", "content": [{"type": "input_text", "text": note}]}}),
    )
    .await;
    assert_eq!(
        next_event(&mut socket).await["type"],
        "conversation.item.added"
    );
    send(&mut socket, json!({"type": "response.create"})).await;
    let events = until_done(&mut socket).await;
    // (The conversation's echo of the client's own message carries the card, as it was sent.)
    let answer = (events.iter()).filter(|e| e["type"].as_str().unwrap().starts_with("response."));
    for event in answer {
        assert!(!event.to_string().contains("4111"), "leaked: {event}");
    }
    let redacted = json!({"text": CARD_REDACTED}).to_string();
    let pieces = deltas(&events, "response.function_call_arguments.delta");
    assert!(pieces.len() > 1, "{pieces:?}");
    assert_eq!(pieces.concat(), redacted);
    let done = (events.iter())
        .find(|e| e["type"] == "response.function_call_arguments.done")
        .unwrap();
    assert_eq!(done["arguments"], redacted.as_str(), "{done}");
    assert_eq!(done["name"], "remember", "{done}");
    let item = (events.iter())
        .find(|e| e["type"] == "response.output_item.done")
        .unwrap();
    assert_eq!(item["item"]["arguments"], redacted.as_str(), "{item}");
    let last = events.last().unwrap();
    assert_eq!(last["type"], "response.done", "{last}");
    assert_eq!(
        last["response"]["output"][0]["arguments"],
        redacted.as_str(),
        "{last}"
    );
    // Requests: the tool's description, and the result the client hands back after running
    // it, are redacted on their way up.
    let requests = Guard::plugin("redact").apply("request");
    let (mock, gateway, key) = setup(|b| b.guard(requests)).await;
    let mut socket = session(&gateway, MODEL, &key).await;
    send(
        &mut socket,
        tools("Keeps a note of card 4111 1111 1111 1111."),
    )
    .await;
    assert_eq!(next_event(&mut socket).await["type"], "session.updated");
    let call_id = done["call_id"].as_str().unwrap();
    send(
        &mut socket,
        json!({"type": "conversation.item.create", "item": {"type": "function_call_output",
            "call_id": call_id, "output": "Noted 4111 1111 1111 1111."}}),
    )
    .await;
    assert_eq!(
        next_event(&mut socket).await["type"],
        "conversation.item.added"
    );
    let received = mock.received().await;
    for event in &received {
        assert!(
            !event.to_string().contains("4111"),
            "sent upstream: {event}"
        );
    }
    let output = (received.iter())
        .find(|e| e["item"]["type"] == "function_call_output")
        .unwrap();
    assert_eq!(output["item"]["output"], "Noted [CARD].", "{output}");
    let update = (received.iter())
        .find(|e| e["type"] == "session.update")
        .unwrap();
    assert_eq!(
        update["session"]["tools"][0]["description"], "Keeps a note of card [CARD].",
        "{update}"
    );
}

#[tokio::test]
async fn a_guard_that_stops_an_answer_ends_that_response_alone() {
    use common::gateway::Guard;
    let deny = Guard::plugin("deny")
        .apply("answer")
        .options("{phrases: [Project Falcon]}");
    let (mock, gateway, key) = setup(|b| b.guard(deny)).await;
    let mut socket = session(&gateway, MODEL, &key).await;
    say(
        &mut socket,
        "The first part is fine. Then: Project Falcon launches soon.",
    )
    .await;
    send(&mut socket, create("evt_falcon", "text")).await;
    let mut events = until_done(&mut socket).await;
    let error = events.last().unwrap().clone();
    assert_eq!(error["type"], "error", "{events:#?}");
    assert_eq!(error["error"]["code"], "answer_stopped", "{error}");
    // The response's own end follows, with the text the client saw and nothing after it.
    events.extend(until_done(&mut socket).await);
    let done = events.last().unwrap();
    assert_eq!(done["type"], "response.done", "{events:#?}");
    for event in &events {
        assert!(!event.to_string().contains("Falcon"), "leaked: {event}");
    }
    let seen = deltas(&events, "response.output_text.delta").concat();
    assert_eq!(done_texts(done), [seen]);
    let id = done["response"]["id"].as_str().unwrap().to_owned();
    // The session lives on (the upstream's error for the late cancel is not the client's).
    say(&mut socket, "All is well.").await;
    send(&mut socket, create("evt_fine", "text")).await;
    let events = until_done(&mut socket).await;
    let done = events.last().unwrap();
    assert_eq!(done["type"], "response.done", "{events:#?}");
    assert_eq!(done_texts(done), ["All is well."]);
    // The stopped response was cancelled upstream (before the next turn, which the mock read
    // after it).
    let cancels: Vec<Value> = (mock.received().await.into_iter())
        .filter(|e| e["type"] == "response.cancel")
        .collect();
    assert_eq!(cancels.len(), 1, "{cancels:#?}");
    assert_eq!(cancels[0]["response_id"], id);
    let records = records(&gateway, &key, 2).await;
    let stopped = (records.iter())
        .find(|r| r["guards"][0]["action"] == "stop")
        .unwrap_or_else(|| panic!("{records:#?}"));
    assert_eq!(stopped["guards"][0]["side"], "answer");
}

/// A request guard cannot hear the client's audio: appended audio (or an item's) is refused
/// with an error event unless the guard's entry exempts `realtime`; text still goes.
#[tokio::test]
async fn input_audio_is_refused_under_a_request_guard_unless_exempted() {
    use common::gateway::Guard;
    let (mock, gateway, key) = setup(|b| b.guard(Guard::plugin("redact").apply("request"))).await;
    let mut socket = session(&gateway, MODEL, &key).await;
    let chunk = STANDARD.encode(mock_realtime::pcm16(3200));
    send(
        &mut socket,
        json!({"type": "input_audio_buffer.append", "event_id": "evt_a", "audio": chunk}),
    )
    .await;
    let error = next_event(&mut socket).await;
    assert_eq!(error["type"], "error", "{error}");
    assert_eq!(error["error"]["code"], "guard_cannot_inspect", "{error}");
    assert_eq!(error["error"]["event_id"], "evt_a");
    let item = json!({"type": "conversation.item.create", "item": {"type": "message",
        "role": "user", "content": [{"type": "input_audio", "audio": chunk}]}});
    send(&mut socket, item).await;
    assert_eq!(
        next_event(&mut socket).await["error"]["code"],
        "guard_cannot_inspect"
    );
    assert!(
        (mock.received().await.iter())
            .all(|e| e["type"] != "input_audio_buffer.append"
                && e["type"] != "conversation.item.create"),
        "no audio went upstream"
    );
    let events = text_turn(&mut socket, "hello").await;
    assert_eq!(events.last().unwrap()["type"], "response.done");

    let exempt = Guard::plugin("redact")
        .apply("request")
        .yaml("exempt", "[realtime]");
    let (_mock, gateway, key) = setup(|b| b.guard(exempt)).await;
    let mut socket = session(&gateway, MODEL, &key).await;
    let events = audio_turn(&mut socket).await;
    assert_eq!(events.last().unwrap()["type"], "response.done");
}

#[tokio::test]
async fn audio_output_is_refused_unless_the_answer_guard_exempts_realtime() {
    use common::gateway::Guard;
    let redact = Guard::plugin("redact").apply("answer");
    let (mock, gateway, key) = setup(|b| b.guard(redact)).await;
    let mut socket = session(&gateway, MODEL, &key).await;
    // Asked for: refused before it goes upstream.
    send(&mut socket, create("evt_audio", "audio")).await;
    let error = next_event(&mut socket).await;
    assert_eq!(error["type"], "error", "{error}");
    assert_eq!(error["error"]["code"], "guard_cannot_inspect", "{error}");
    assert_eq!(error["error"]["event_id"], "evt_audio");
    // The session's default (audio): stopped as it starts, its audio never sent.
    send(&mut socket, json!({"type": "response.create"})).await;
    let mut events = until_done(&mut socket).await;
    assert_eq!(
        events.last().unwrap()["error"]["code"],
        "guard_cannot_inspect"
    );
    events.extend(until_done(&mut socket).await);
    assert_eq!(events.last().unwrap()["type"], "response.done");
    assert!(
        (events.iter()).all(|e| e["type"] != "response.output_audio.delta"
            && e["type"] != "response.output_audio_transcript.delta"),
        "{events:#?}"
    );
    assert_eq!(done_texts(events.last().unwrap()), [""]);
    let creates = (mock.received().await.iter())
        .filter(|e| e["type"] == "response.create")
        .count();
    assert_eq!(creates, 1);
    // Text only: guarded whole.
    let events = text_turn(&mut socket, "hello").await;
    assert_eq!(events.last().unwrap()["type"], "response.done");
    // Exempt: the audio passes unread, its transcript redacted.
    let redact = Guard::plugin("redact")
        .apply("answer")
        .yaml("exempt", "[realtime]");
    let (_mock, gateway, key) = setup(|b| b.guard(redact)).await;
    let mut socket = session(&gateway, MODEL, &key).await;
    say(&mut socket, CARD_ANSWER).await;
    send(&mut socket, create("evt_audio", "audio")).await;
    let events = until_done(&mut socket).await;
    assert!(!deltas(&events, "response.output_audio.delta").is_empty());
    let transcript = deltas(&events, "response.output_audio_transcript.delta").concat();
    assert_eq!(transcript, CARD_REDACTED);
    let done = events
        .iter()
        .find(|e| e["type"] == "response.output_audio_transcript.done")
        .unwrap();
    assert_eq!(done["transcript"], CARD_REDACTED);
    assert_eq!(done_texts(events.last().unwrap()), [CARD_REDACTED]);
}

#[tokio::test]
async fn a_client_that_stops_reading_holds_the_upstream_where_it_is() {
    let (mock, gateway, key) =
        setup(|b| b.set_yaml("server.websocket", "{send_timeout_ms: 60000}")).await;
    let mut socket = session(&gateway, FLOOD, &key).await;
    send(&mut socket, json!({"type": "response.create"})).await;
    // The client reads nothing more: the upstream's sends stall once the queue and the sockets'
    // buffers are full.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut last = mock.sent();
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = mock.sent();
        if now == last && now > 1 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the upstream never stalled: {now} events sent"
        );
        last = now;
    }
    let held = mock.sent();
    assert!(
        held < mock_realtime::FLOOD_DELTAS / 2,
        "{held} of {} deltas were sent to a client that reads nothing",
        mock_realtime::FLOOD_DELTAS
    );
    eprintln!(
        "stalled after {held} of {} events of {} KiB",
        mock_realtime::FLOOD_DELTAS,
        mock_realtime::FLOOD_BYTES * 4 / 3 / 1024
    );
    let health: Value = http()
        .get(gateway.url("/health"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(health["websocket_sessions"], 1, "{health}");
    // Reading again drains the rest: nothing was lost.
    let events = until_done(&mut socket).await;
    let audio = events
        .iter()
        .filter(|e| e["type"] == "response.output_audio.delta")
        .count();
    assert_eq!(audio, mock_realtime::FLOOD_DELTAS);
}

#[tokio::test]
async fn python_sdk_text_and_audio_turns_on_one_session() {
    sdk_text_and_audio_turns("openai_realtime.py").await;
}

/// The Node SDK reaches the gateway through a TLS terminator of the script's own: it speaks
/// only `wss://` to the Realtime API.
#[tokio::test]
async fn node_sdk_text_and_audio_turns_on_one_session() {
    sdk_text_and_audio_turns("openai_realtime.mjs").await;
}

/// Runs an SDK's `program` (a text turn, then an audio turn, on one session) and checks each
/// response's usage, as the SDK saw it, against its ledger record and price.
async fn sdk_text_and_audio_turns(program: &str) {
    let (_mock, gateway, key) = setup(|b| b).await;
    let output = run_client(program, &gateway.url("/v1"), &key, &["--model", MODEL]).await;
    assert_passed(&output, &["text_turn", "audio_turn"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let usages: Vec<Value> = stdout
        .lines()
        .find_map(|l| l.strip_prefix("usage "))
        .map(|u| serde_json::from_str(u).unwrap())
        .unwrap();
    assert_eq!(usages.len(), 2);
    assert_recorded(&records(&gateway, &key, 2).await, &usages);
}

#[tokio::test]
async fn a_shutdown_lets_the_response_in_flight_finish_then_closes_the_session() {
    let (_mock, gateway, key) = setup(|b| b).await;
    let mut socket = session(&gateway, SLOW, &key).await;
    let metrics = gateway.metrics().await;
    assert!(
        metrics.contains("wasmgate_websocket_sessions 1"),
        "{metrics}"
    );
    send(&mut socket, create("evt_slow", "text")).await;
    assert_eq!(next_event(&mut socket).await["type"], "response.created");
    let state = gateway.state.clone();
    let stopping = tokio::spawn(gateway.stop());
    let events = until_done(&mut socket).await;
    assert_eq!(events.last().unwrap()["type"], "response.done");
    assert_eq!(
        deltas(&events, "response.output_text.delta").concat(),
        mock_realtime::ANSWER
    );
    let closed = tokio::time::timeout(Duration::from_secs(10), socket.next())
        .await
        .unwrap();
    match closed {
        Some(Ok(Message::Close(Some(frame)))) => assert_eq!(frame.code, CloseCode::Away),
        other => panic!("not closed: {other:?}"),
    }
    tokio::time::timeout(Duration::from_secs(10), stopping)
        .await
        .expect("the gateway stopped")
        .unwrap();
    assert_eq!(state.sockets.open_count(), 0);
}

#[tokio::test]
async fn an_azure_openai_entry_is_reached_at_its_v1_realtime_path_with_its_api_key() {
    let mock = MockRealtime::start().await;
    let azure = Provider::at(
        "azure-openai",
        &format!("http://{}", mock.addr),
        common::gateway::UPSTREAM_KEY,
    )
    .models([MODEL]);
    let gateway = Gateway::builder()
        .auth_required()
        .provider("azure", azure)
        .start()
        .await;
    let key = gateway.api_key("rt-azure").await;
    let mut socket = session(&gateway, &format!("azure/{MODEL}"), &key).await;
    let events = text_turn(&mut socket, "Say hello").await;
    assert_eq!(events.last().unwrap()["type"], "response.done");
    assert_eq!(mock.models().await, [MODEL]);
    let usage = events.last().unwrap()["response"]["usage"].clone();
    let records = records(&gateway, &key, 1).await;
    assert_eq!(records[0]["provider"], "azure");
    assert_eq!(
        (records[0]["cost"].as_f64().unwrap() * 1e6).round() as i64,
        gpt_realtime_micros(&usage),
        "priced at the azure-openai catalog's gpt-realtime"
    );
}

/// An upstream at an `https://` base URL is reached over `wss://`, its certificate checked
/// against the gateway's roots: the real binary, its roots read from `SSL_CERT_FILE`, in front
/// of the mock behind a TLS terminator. Trusted, a text turn completes; with the system's roots
/// alone the self-signed certificate is refused and the upgrade gets a 502.
#[tokio::test]
async fn an_https_upstream_is_reached_over_wss_with_its_certificate_checked() {
    use common::binary;
    use common::gateway::UPSTREAM_KEY;
    use common::tls_front::TlsFront;
    let mock = MockRealtime::start().await;
    let dir = binary::temp_dir("realtime-wss");
    let front = TlsFront::start(mock.addr, &dir).await;
    let config = format!(
        "server: {{ host: 127.0.0.1, port: 0 }}\n\
         plugins: {{ cache_dir: {cache} }}\n\
         ledger: {{ url: 'sqlite://{db}' }}\n\
         providers:\n  openai:\n    plugin: openai\n    base_url: https://{front}/v1\n    \
         api_key: {UPSTREAM_KEY}\n    models: [{MODEL}]\n",
        cache = common::plugin_cache_dir().display(),
        db = dir.join("ledger.db").display(),
        front = front.addr,
    );
    let path = dir.join("config.yaml");
    std::fs::write(&path, config).unwrap();
    let url = |gateway: &binary::Gateway| {
        gateway
            .url(&format!("/v1/realtime?model=openai/{MODEL}"))
            .replacen("http://", "ws://", 1)
    };
    let ca = front.ca.display().to_string();
    let trusting = binary::Gateway::serve_with_env(&dir, &path, &[("SSL_CERT_FILE", &ca)]).await;
    let (mut socket, _) = match tokio_tungstenite::connect_async(url(&trusting)).await {
        Ok(connected) => connected,
        Err(error) => panic!("{error}: {:#?}", trusting.lines()),
    };
    let created = next_event(&mut socket).await;
    assert_eq!(created["type"], "session.created", "{created}");
    let events = text_turn(&mut socket, "Hello over TLS").await;
    assert_eq!(
        events.last().unwrap()["type"],
        "response.done",
        "{events:#?}"
    );
    assert_eq!(mock.models().await, [MODEL]);
    drop((socket, trusting));
    // The system's roots alone: the certificate is no one's, the socket is refused.
    let empty = dir.join("no-roots.pem");
    std::fs::write(&empty, "").unwrap();
    let empty = empty.display().to_string();
    let doubting = binary::Gateway::serve_with_env(&dir, &path, &[("SSL_CERT_FILE", &empty)]).await;
    match tokio_tungstenite::connect_async(url(&doubting)).await {
        Err(tungstenite::Error::Http(response)) => {
            assert_eq!(response.status(), 502);
            let body = String::from_utf8_lossy(response.body().as_deref().unwrap_or_default())
                .into_owned();
            assert!(body.contains("could not be reached"), "{body}");
        }
        other => panic!("an untrusted upstream was reached: {:?}", other.map(|_| ())),
    }
    assert_eq!(mock.models().await, [MODEL], "no second session upstream");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn sessions_per_key_and_message_size_are_bounded() {
    let bounds = "{max_sessions_per_key: 1, max_message_bytes: 1024}";
    let (mock, gateway, key) = setup(|b| b.set_yaml("server.websocket", bounds)).await;
    let mut socket = session(&gateway, MODEL, &key).await;
    let (status, body) = refused(&gateway, MODEL, Some(&key)).await;
    assert_eq!(status, 429);
    assert_eq!(
        body["error"]["code"], "websocket_connection_limit_reached",
        "{body}"
    );
    assert_eq!(
        mock.models().await.len(),
        1,
        "the refused one opened no upstream"
    );
    let big = "x".repeat(2048);
    send(
        &mut socket,
        json!({"type": "conversation.item.create", "item": {"type": "message",
        "role": "user", "content": [{"type": "input_text", "text": big}]}}),
    )
    .await;
    let closed = tokio::time::timeout(Duration::from_secs(10), socket.next())
        .await
        .unwrap();
    match closed {
        Some(Ok(Message::Close(Some(frame)))) => assert_eq!(frame.code, CloseCode::Size),
        other => panic!("not closed as too big: {other:?}"),
    }
    assert!(mock.received().await.is_empty(), "nothing went upstream");
}
