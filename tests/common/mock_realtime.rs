//! A strict mock of OpenAI's Realtime API (the GA protocol, from OpenAI's public reference):
//! `GET /v1/realtime?model=` upgraded with the upstream key as a bearer key (anything else is
//! refused with 401 and OpenAI's error body). On connect it sends `session.created`; it takes
//! `session.update`, `conversation.item.create`, `input_audio_buffer.append`/`commit` and
//! `response.create`, and answers a response with `response.created`, the output item, text
//! deltas (`response.output_text.delta`) or audio deltas (`response.output_audio.delta`,
//! base64 pcm16) with their transcript (`response.output_audio_transcript.delta`), and
//! the part's `response.content_part.done`, the item's `response.output_item.done` and
//! `response.done` with its usage; any other event type gets an `error` event. A user text that
//! starts with [`SAY`] makes the rest of it the text (or transcript) of the answers that follow;
//! one that starts with [`CALL`] makes the next text answer a call of the session's first
//! function tool (`session.tools`), its `arguments` `{"text": <the rest>}` streamed in
//! `response.function_call_arguments.delta`s of [`CALL_DELTA_CHARS`] characters (a session with
//! no function tool gets an `error` event instead). A session with server VAD
//! (`audio.input.turn_detection`) takes each `input_audio_buffer.append` as one utterance:
//! speech started and stopped, the buffer committed, and (unless `create_response: false`) a
//! response it starts itself.
//! Each response is sent whole before the next event is read, so a `response.cancel` always
//! finds none active and gets the reference's `error` for that.
//!
//! The usage it reports follows from what it was sent: prompt text tokens are the words of the
//! conversation's text and instructions, audio tokens one per 480 bytes of pcm16 (10 ms at
//! 24 kHz), each response after the first reads the previous prompt from its cache; answer
//! tokens are its deltas (text) and its audio bytes likewise. Model `gpt-realtime-flood`
//! answers with `FLOOD_DELTAS` audio deltas of `FLOOD_BYTES` each, counting those sent; model
//! `gpt-realtime-slow` waits `SLOW_DELTA` before each text delta.
//!
//! Azure OpenAI's v1 form is served too: `/openai/v1/realtime?model=<deployment>` with the key
//! in `api-key`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use tokio::sync::Mutex;

use super::gateway::UPSTREAM_KEY;

/// The text of every text answer, one delta a word.
pub const ANSWER: &str = "Hello from the realtime mock.";
/// A user text starting so names the answers' text from then on.
pub const SAY: &str = "Say: ";
/// A user text starting so makes the next text answer a function call with the rest as its
/// argument `text`.
pub const CALL: &str = "Call: ";
/// Characters of the arguments in each `response.function_call_arguments.delta`.
pub const CALL_DELTA_CHARS: usize = 5;
/// The transcript of every audio answer, one delta a word, each with a chunk of audio.
pub const TRANSCRIPT: &str = "Hi there, spoken.";
/// Bytes of pcm16 audio sent with each transcript word.
pub const AUDIO_CHUNK_BYTES: usize = 4800;
/// The flood model's audio deltas, and the pcm16 bytes of each.
pub const FLOOD_DELTAS: usize = 1500;
pub const FLOOD_BYTES: usize = 48_000;
/// The slow model's pause before each text delta.
pub const SLOW_DELTA: std::time::Duration = std::time::Duration::from_millis(300);

#[derive(Default)]
struct Shared {
    /// Every client event, as received.
    received: Mutex<Vec<Value>>,
    /// The `model` of each socket opened.
    models: Mutex<Vec<String>>,
    /// Server events sent so far (all sockets).
    sent: AtomicUsize,
}

pub struct MockRealtime {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
}

impl MockRealtime {
    pub async fn start() -> Self {
        let shared = Arc::new(Shared::default());
        let app = Router::new()
            .route("/v1/realtime", get(upgrade))
            .route("/openai/v1/realtime", get(upgrade_azure))
            .with_state(Arc::clone(&shared));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.ok() });
        Self { addr, shared }
    }

    /// The base URL an `openai` entry takes.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Every client event received so far.
    pub async fn received(&self) -> Vec<Value> {
        self.shared.received.lock().await.clone()
    }

    /// The model each socket was opened for.
    pub async fn models(&self) -> Vec<String> {
        self.shared.models.lock().await.clone()
    }

    /// Server events sent so far.
    pub fn sent(&self) -> usize {
        self.shared.sent.load(Ordering::SeqCst)
    }
}

fn refuse(status: StatusCode, code: &str, message: &str) -> Response {
    let body = json!({"error": {"type": "invalid_request_error", "code": code,
        "message": message, "param": null}});
    (status, axum::Json(body)).into_response()
}

async fn upgrade(
    State(shared): State<Arc<Shared>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    upgrade: WebSocketUpgrade,
) -> Response {
    let bearer = format!("Bearer {UPSTREAM_KEY}");
    let keyed = headers.get("authorization").and_then(|v| v.to_str().ok()) == Some(bearer.as_str());
    opened(shared, query, keyed, upgrade).await
}

/// Azure OpenAI's v1 form: the key in `api-key`, never a bearer key.
async fn upgrade_azure(
    State(shared): State<Arc<Shared>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    upgrade: WebSocketUpgrade,
) -> Response {
    let keyed = headers.get("api-key").and_then(|v| v.to_str().ok()) == Some(UPSTREAM_KEY)
        && !headers.contains_key("authorization");
    opened(shared, query, keyed, upgrade).await
}

async fn opened(
    shared: Arc<Shared>,
    query: Option<String>,
    keyed: bool,
    upgrade: WebSocketUpgrade,
) -> Response {
    if !keyed {
        return refuse(
            StatusCode::UNAUTHORIZED,
            "invalid_api_key",
            "Incorrect API key provided.",
        );
    }
    let model = form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .find(|(k, _)| k == "model")
        .map(|(_, v)| v.into_owned());
    let Some(model) = model else {
        return refuse(
            StatusCode::BAD_REQUEST,
            "missing_model",
            "You must provide a model parameter.",
        );
    };
    shared.models.lock().await.push(model.clone());
    upgrade
        .max_message_size(64 << 20)
        .on_upgrade(move |socket| serve(shared, socket, model))
}

/// One session's state.
struct Conversation {
    model: String,
    session: Value,
    /// Words of the conversation's text so far, and bytes of its audio.
    words: u64,
    audio_bytes: u64,
    /// Bytes appended and not yet committed.
    buffered: u64,
    /// The previous response's prompt (text, audio), which the next one reads from cache.
    cached: (u64, u64),
    items: u64,
    /// The text the client asked the answers to say ([`SAY`]).
    said: Option<String>,
    /// The argument the client asked the next answer to call a tool with ([`CALL`]).
    call: Option<String>,
}

fn id(prefix: &str, shared: &Shared) -> String {
    format!("{prefix}_{:06}", shared.sent.load(Ordering::SeqCst))
}

async fn send(socket: &mut WebSocket, shared: &Shared, mut event: Value) -> bool {
    event["event_id"] = json!(id("event", shared));
    let sent = socket.send(Message::text(event.to_string())).await.is_ok();
    if sent {
        shared.sent.fetch_add(1, Ordering::SeqCst);
    }
    sent
}

fn words(text: &str) -> u64 {
    text.split_whitespace().count() as u64
}

async fn serve(shared: Arc<Shared>, mut socket: WebSocket, model: String) {
    let mut conv = Conversation {
        session: json!({"id": id("sess", &shared), "object": "realtime.session",
            "type": "realtime", "model": model, "output_modalities": ["audio"],
            "instructions": "", "audio": {"input": {"format": {"type": "audio/pcm", "rate": 24000}},
                "output": {"format": {"type": "audio/pcm", "rate": 24000}, "voice": "marin"}}}),
        model,
        words: 0,
        audio_bytes: 0,
        buffered: 0,
        cached: (0, 0),
        items: 0,
        said: None,
        call: None,
    };
    let created = json!({"type": "session.created", "session": conv.session});
    if !send(&mut socket, &shared, created).await {
        return;
    }
    while let Some(Ok(message)) = socket.recv().await {
        let Message::Text(text) = message else {
            continue;
        };
        let Ok(event) = serde_json::from_str::<Value>(&text) else {
            let error = error_event("invalid_json", "The message is not JSON.", None);
            if !send(&mut socket, &shared, error).await {
                return;
            }
            continue;
        };
        shared.received.lock().await.push(event.clone());
        let client_event = event["event_id"].as_str().map(str::to_owned);
        let answered = match event["type"].as_str().unwrap_or_default() {
            "session.update" => {
                if let (Some(into), Some(from)) =
                    (conv.session.as_object_mut(), event["session"].as_object())
                {
                    for (k, v) in from {
                        into.insert(k.clone(), v.clone());
                    }
                }
                let updated = json!({"type": "session.updated", "session": conv.session});
                send(&mut socket, &shared, updated).await
            }
            "conversation.item.create" => {
                let item = &event["item"];
                for part in item["content"].as_array().into_iter().flatten() {
                    let text = part["text"].as_str().unwrap_or_default();
                    conv.words += words(text);
                    if let Some(said) = text.strip_prefix(SAY) {
                        conv.said = Some(said.to_owned());
                    }
                    if let Some(call) = text.strip_prefix(CALL) {
                        conv.call = Some(call.to_owned());
                    }
                    if let Some(audio) = part["audio"].as_str() {
                        conv.audio_bytes += STANDARD.decode(audio).map_or(0, |b| b.len() as u64);
                    }
                }
                conv.items += 1;
                let mut item = item.clone();
                item["id"] = json!(format!("item_{}", conv.items));
                item["object"] = json!("realtime.item");
                item["status"] = json!("completed");
                send(
                    &mut socket,
                    &shared,
                    json!({"type": "conversation.item.added",
                    "previous_item_id": null, "item": item}),
                )
                .await
                    && send(
                        &mut socket,
                        &shared,
                        json!({"type": "conversation.item.done",
                        "previous_item_id": null, "item": item}),
                    )
                    .await
            }
            "input_audio_buffer.append" => {
                match STANDARD.decode(event["audio"].as_str().unwrap_or_default()) {
                    Ok(bytes) => {
                        conv.buffered += bytes.len() as u64;
                        match vad(&conv.session) {
                            Some(create) => turn(&mut socket, &shared, &mut conv, create).await,
                            None => true,
                        }
                    }
                    Err(_) => {
                        let error =
                            error_event("invalid_value", "`audio` is not base64.", client_event);
                        send(&mut socket, &shared, error).await
                    }
                }
            }
            "input_audio_buffer.commit" => commit(&mut socket, &shared, &mut conv).await,
            "response.create" => respond(&mut socket, &shared, &mut conv, &event).await,
            "response.cancel" => {
                let error = json!({"type": "error", "error": {"type": "invalid_request_error",
                    "code": "response_cancel_not_active",
                    "message": "Cancellation failed: no active response found.",
                    "param": null, "event_id": client_event}});
                send(&mut socket, &shared, error).await
            }
            other => {
                let message = format!("Invalid value: '{other}'. Supported values are: ...");
                let error = error_event("invalid_value", &message, client_event);
                send(&mut socket, &shared, error).await
            }
        };
        if !answered {
            return;
        }
    }
}

/// Commits the audio buffered: its `input_audio_buffer.committed`.
async fn commit(socket: &mut WebSocket, shared: &Shared, conv: &mut Conversation) -> bool {
    conv.audio_bytes += std::mem::take(&mut conv.buffered);
    conv.items += 1;
    let item_id = format!("item_{}", conv.items);
    send(
        socket,
        shared,
        json!({"type": "input_audio_buffer.committed",
        "previous_item_id": null, "item_id": item_id}),
    )
    .await
}

/// Whether the session detects turns itself (`audio.input.turn_detection` of type `server_vad`
/// or `semantic_vad`), and if so whether it starts a response at each turn's end
/// (`create_response`, true unless set false).
fn vad(session: &Value) -> Option<bool> {
    let detection = session.pointer("/audio/input/turn_detection")?;
    let kind = detection["type"].as_str()?;
    matches!(kind, "server_vad" | "semantic_vad")
        .then(|| detection["create_response"].as_bool().unwrap_or(true))
}

/// A turn server VAD found in the audio just appended (each append is one utterance here):
/// speech started and stopped, the buffer committed, then, when `create`, a response the
/// server starts itself, with no `response.create`.
async fn turn(
    socket: &mut WebSocket,
    shared: &Shared,
    conv: &mut Conversation,
    create: bool,
) -> bool {
    let item_id = format!("item_{}", conv.items + 1);
    let ok = send(
        socket,
        shared,
        json!({"type": "input_audio_buffer.speech_started", "audio_start_ms": 0,
            "item_id": item_id}),
    )
    .await
        && send(
            socket,
            shared,
            json!({"type": "input_audio_buffer.speech_stopped",
                "audio_end_ms": conv.buffered / 48, "item_id": item_id}),
        )
        .await
        && commit(socket, shared, conv).await;
    ok && (!create || respond(socket, shared, conv, &json!({"type": "response.create"})).await)
}

fn error_event(code: &str, message: &str, client_event: Option<String>) -> Value {
    json!({"type": "error", "error": {"type": "invalid_request_error", "code": code,
        "message": message, "param": "type", "event_id": client_event}})
}

/// One response: its events, then `response.done` with the usage it reports.
async fn respond(
    socket: &mut WebSocket,
    shared: &Shared,
    conv: &mut Conversation,
    event: &Value,
) -> bool {
    let modalities = event["response"]["output_modalities"]
        .as_array()
        .or(conv.session["output_modalities"].as_array())
        .cloned()
        .unwrap_or_default();
    let audio = modalities.iter().any(|m| m == "audio");
    if !audio && let Some(argument) = conv.call.take() {
        return call(socket, shared, conv, &modalities, &argument).await;
    }
    let response_id = id("resp", shared);
    let item_id = id("item", shared);
    let response = json!({"id": response_id, "object": "realtime.response",
        "status": "in_progress", "output": [], "usage": null,
        "output_modalities": modalities});
    let (text_in, audio_in) = (
        conv.words + words(conv.session["instructions"].as_str().unwrap_or_default()),
        conv.audio_bytes / 480,
    );
    let at = json!({"response_id": response_id, "item_id": item_id, "output_index": 0,
        "content_index": 0});
    let with = |mut fields: Value, kind: &str| {
        fields["type"] = json!(kind);
        for (k, v) in at.as_object().unwrap() {
            fields[k] = v.clone();
        }
        fields
    };
    let item = json!({"id": item_id, "object": "realtime.item", "type": "message",
        "status": "in_progress", "role": "assistant", "content": []});
    let mut ok = send(
        socket,
        shared,
        json!({"type": "response.created", "response": response}),
    )
    .await
        && send(
            socket,
            shared,
            json!({"type": "response.output_item.added",
            "response_id": response_id, "output_index": 0, "item": item}),
        )
        .await;
    let (text_out, audio_out, part) = if conv.model == "gpt-realtime-flood" {
        let chunk = STANDARD.encode(vec![0u8; FLOOD_BYTES]);
        for _ in 0..FLOOD_DELTAS {
            ok = ok
                && send(
                    socket,
                    shared,
                    with(json!({"delta": chunk}), "response.output_audio.delta"),
                )
                .await;
            if !ok {
                return false;
            }
        }
        (
            0,
            (FLOOD_DELTAS * FLOOD_BYTES / 480) as u64,
            json!({"type": "output_audio", "transcript": ""}),
        )
    } else if audio {
        let transcript = conv.said.clone().unwrap_or_else(|| TRANSCRIPT.to_owned());
        let chunk = STANDARD.encode(pcm16(AUDIO_CHUNK_BYTES));
        for word in transcript.split_inclusive(' ') {
            ok = ok
                && send(
                    socket,
                    shared,
                    with(json!({"delta": chunk}), "response.output_audio.delta"),
                )
                .await
                && send(
                    socket,
                    shared,
                    with(
                        json!({"delta": word}),
                        "response.output_audio_transcript.delta",
                    ),
                )
                .await;
        }
        ok = ok
            && send(
                socket,
                shared,
                with(json!({}), "response.output_audio.done"),
            )
            .await
            && send(
                socket,
                shared,
                with(
                    json!({"transcript": transcript}),
                    "response.output_audio_transcript.done",
                ),
            )
            .await;
        let deltas = transcript.split_inclusive(' ').count();
        (
            deltas as u64,
            (deltas * AUDIO_CHUNK_BYTES / 480) as u64,
            json!({"type": "output_audio", "transcript": transcript}),
        )
    } else {
        let answer = conv.said.clone().unwrap_or_else(|| ANSWER.to_owned());
        for word in answer.split_inclusive(' ') {
            if conv.model == "gpt-realtime-slow" {
                tokio::time::sleep(SLOW_DELTA).await;
            }
            ok = ok
                && send(
                    socket,
                    shared,
                    with(json!({"delta": word}), "response.output_text.delta"),
                )
                .await;
        }
        ok = ok
            && send(
                socket,
                shared,
                with(json!({"text": answer}), "response.output_text.done"),
            )
            .await;
        (
            answer.split_inclusive(' ').count() as u64,
            0,
            json!({"type": "output_text", "text": answer}),
        )
    };
    ok = ok
        && send(
            socket,
            shared,
            // The reference's part here names its type `text` or `audio`, not the item's.
            with(
                json!({"part": content_part(&part)}),
                "response.content_part.done",
            ),
        )
        .await;
    let mut done_item = item.clone();
    done_item["status"] = json!("completed");
    done_item["content"] = json!([part]);
    ok = ok
        && send(
            socket,
            shared,
            json!({"type": "response.output_item.done",
            "response_id": response_id, "output_index": 0, "item": done_item}),
        )
        .await;
    let usage = usage(conv, (text_in, audio_in), (text_out, audio_out));
    let done = json!({"type": "response.done", "response": {"id": response_id,
        "object": "realtime.response", "status": "completed", "status_details": null,
        "output": [done_item], "conversation_id": "conv_1", "output_modalities": modalities,
        "max_output_tokens": "inf", "metadata": null, "usage": usage}});
    ok && send(socket, shared, done).await
}

/// A response that calls the session's first function tool with `{"text": argument}`: the
/// item added, its arguments streamed and done, the item done, `response.done` with usage.
async fn call(
    socket: &mut WebSocket,
    shared: &Shared,
    conv: &mut Conversation,
    modalities: &[Value],
    argument: &str,
) -> bool {
    let tools = conv.session["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let Some(name) = (tools.iter())
        .find(|t| t["type"] == "function")
        .and_then(|t| t["name"].as_str())
    else {
        let error = error_event("invalid_value", "The session has no function tool.", None);
        return send(socket, shared, error).await;
    };
    let response_id = id("resp", shared);
    let item_id = id("item", shared);
    let call_id = id("call", shared);
    let arguments = json!({"text": argument}).to_string();
    let item = json!({"id": item_id, "object": "realtime.item", "type": "function_call",
        "status": "in_progress", "name": name, "call_id": call_id, "arguments": ""});
    let at = json!({"response_id": response_id, "item_id": item_id, "output_index": 0,
        "call_id": call_id});
    let with = |mut fields: Value, kind: &str| {
        fields["type"] = json!(kind);
        for (k, v) in at.as_object().unwrap() {
            fields[k] = v.clone();
        }
        fields
    };
    let response = json!({"id": response_id, "object": "realtime.response",
        "status": "in_progress", "output": [], "usage": null, "output_modalities": modalities});
    let mut ok = send(
        socket,
        shared,
        json!({"type": "response.created", "response": response}),
    )
    .await
        && send(
            socket,
            shared,
            json!({"type": "response.output_item.added", "response_id": response_id,
                "output_index": 0, "item": item}),
        )
        .await;
    let chars: Vec<char> = arguments.chars().collect();
    for piece in chars.chunks(CALL_DELTA_CHARS) {
        let delta: String = piece.iter().collect();
        ok = ok
            && send(
                socket,
                shared,
                with(
                    json!({"delta": delta}),
                    "response.function_call_arguments.delta",
                ),
            )
            .await;
    }
    ok = ok
        && send(
            socket,
            shared,
            with(
                json!({"name": name, "arguments": arguments}),
                "response.function_call_arguments.done",
            ),
        )
        .await;
    let mut done_item = item.clone();
    done_item["status"] = json!("completed");
    done_item["arguments"] = json!(arguments);
    ok = ok
        && send(
            socket,
            shared,
            json!({"type": "response.output_item.done", "response_id": response_id,
                "output_index": 0, "item": done_item}),
        )
        .await;
    let text_in = conv.words + words(conv.session["instructions"].as_str().unwrap_or_default());
    let audio_in = conv.audio_bytes / 480;
    let text_out = chars.len().div_ceil(CALL_DELTA_CHARS) as u64;
    let usage = usage(conv, (text_in, audio_in), (text_out, 0));
    let done = json!({"type": "response.done", "response": {"id": response_id,
        "object": "realtime.response", "status": "completed", "status_details": null,
        "output": [done_item], "conversation_id": "conv_1", "output_modalities": modalities,
        "max_output_tokens": "inf", "metadata": null, "usage": usage}});
    ok && send(socket, shared, done).await
}

/// The usage `response.done` reports for a prompt of `(text, audio)` tokens and an answer of
/// `(text, audio)` tokens, the previous prompt read from cache; this prompt is cached for the
/// next.
fn usage(
    conv: &mut Conversation,
    (text_in, audio_in): (u64, u64),
    (text_out, audio_out): (u64, u64),
) -> Value {
    let (cached_text, cached_audio) = conv.cached;
    conv.cached = (text_in, audio_in);
    json!({
        "total_tokens": text_in + audio_in + text_out + audio_out,
        "input_tokens": text_in + audio_in,
        "output_tokens": text_out + audio_out,
        "input_token_details": {"text_tokens": text_in, "audio_tokens": audio_in,
            "image_tokens": 0, "cached_tokens": cached_text + cached_audio,
            "cached_tokens_details": {"text_tokens": cached_text, "audio_tokens": cached_audio,
                "image_tokens": 0}},
        "output_token_details": {"text_tokens": text_out, "audio_tokens": audio_out},
    })
}

/// An item's content part as `response.content_part.done` writes it.
fn content_part(part: &Value) -> Value {
    match part["type"].as_str() {
        Some("output_audio") => json!({"type": "audio", "transcript": part["transcript"]}),
        _ => json!({"type": "text", "text": part["text"]}),
    }
}

/// `bytes` of a 440 Hz tone as pcm16 at 24 kHz, little-endian.
pub fn pcm16(bytes: usize) -> Vec<u8> {
    (0..bytes / 2)
        .flat_map(|i| {
            let t = i as f64 / 24_000.0;
            let sample = ((t * 440.0 * std::f64::consts::TAU).sin() * 8_000.0) as i16;
            sample.to_le_bytes()
        })
        .collect()
}
