//! The Responses API's WebSocket mode upstream: a client socket's turn routed to an entry whose
//! plugin lists [`DIALECT`] in `native-dialects` goes up on a socket to `{base_url}/responses`
//! instead of an HTTP stream. The rest of the pipeline does not see the difference: the turn's
//! events come back as the server-sent events the HTTP stream would carry, for the same
//! decoder, guards, record and limits.
//!
//! A client socket has one upstream socket per entry ([`Lanes`]), opened on the first turn
//! routed there and kept until the client socket closes. The reference runs one response at a
//! time on a connection, as the client socket runs its turns. A turn's events end at its
//! `response.completed`, `.failed` or `.incomplete`, or an `error`: then the socket is free
//! for the next turn. A turn cut before its end takes the socket with it (its events would
//! reach the next turn); the next turn opens another.
//!
//! The upstream socket keeps its last response, so a turn that the client socket's chain had
//! expanded (see `server::responses_ws::chain`) goes up as the client sent it, with only its
//! new input and `previous_response_id` ([`Chained`]), when the socket it goes on answered
//! that response. An entry whose socket cannot be opened gets its turns over HTTP, and is not
//! tried again on this client socket.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use axum::body::Bytes;
use futures_util::stream::{self, BoxStream};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Map, Value};
use tokio_tungstenite::tungstenite::Message;

use super::upstream_socket::{self, OpenError, Opening};
use crate::error::ApiError;
use crate::gateway::Provider;
use crate::plugins::{HttpResponse, RequestInfo};
use crate::redact::Redactor;
use crate::upstream::Admitted;
use crate::upstream::websocket::Socket;

/// The name a provider lists in `native-dialects` when its Responses endpoint takes WebSocket
/// mode (beside `responses`, which it must serve natively too).
pub const DIALECT: &str = "openai-responses-websocket";

/// The largest upstream message taken: a `response.completed` repeats the request's tools and
/// the whole output, which an HTTP stream's event carries unbounded too.
const MESSAGE_MAX: usize = 64 << 20;

/// Headers of the plugin's request the socket is opened with (besides its credentials, which
/// the plugin gives again for the socket): a beta client's protocol choice.
const FORWARDED: [&str; 1] = ["openai-beta"];

/// Fields of a `POST` body the socket's `response.create` does not take (the socket streams
/// every response; the reference refuses `background` there).
const TRANSPORT_FIELDS: [&str; 3] = ["stream", "stream_options", "background"];

/// Whether `provider`'s Responses endpoint takes WebSocket mode.
pub fn takes(provider: &Provider) -> bool {
    provider.native.iter().any(|d| d == DIALECT)
}

/// The upstream sockets of one client socket, by entry. Cheap to clone.
#[derive(Clone, Default)]
pub struct Lanes {
    by_entry: Arc<Mutex<HashMap<Arc<str>, Lane>>>,
}

#[derive(Default)]
struct Lane {
    /// Free for a turn; `None` while a turn holds it, or before it is opened.
    socket: Option<Socket>,
    /// The id of the last response it completed.
    last: Option<String>,
    /// It could not be opened: turns go over HTTP.
    refused: bool,
}

/// How the client socket's chain expanded a turn: the last response's context put before
/// its input in place of `previous_response_id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chained {
    /// The response the client named.
    pub previous: String,
    /// Items of context put before the client's input.
    pub prefix: usize,
}

/// One turn of a client socket, as the pipeline carries it.
#[derive(Clone)]
pub struct SocketTurn {
    pub lanes: Lanes,
    pub chained: Option<Chained>,
}

/// What the upstream socket made of a turn.
pub enum Went {
    /// The turn's events, as server-sent events (`event: <type>`, `data: <json>`).
    Events(BoxStream<'static, Result<Bytes, String>>),
    /// The upstream refused the turn with an `error` event before any other: the HTTP error
    /// it stands for (its status, and `{"error": ...}`), for the plugin to read.
    Refused(HttpResponse),
    /// The turn is not for a socket, or the entry has none: it goes over HTTP.
    Http,
}

/// The headers the events are decoded under, as an HTTP stream's would be.
pub fn event_headers() -> Vec<(String, String)> {
    vec![("content-type".to_owned(), "text/event-stream".to_owned())]
}

impl Lanes {
    /// Closes every upstream socket that is free (a turn cut mid-way has dropped its own).
    pub async fn close(&self) {
        let sockets: Vec<Socket> = {
            let mut lanes = self.lock();
            lanes.values_mut().filter_map(|l| l.socket.take()).collect()
        };
        for mut socket in sockets {
            let _ = socket.close(None).await;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Arc<str>, Lane>> {
        self.by_entry.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The entry's free socket and its last response; `None` if it was refused.
    fn take(&self, entry: &Arc<str>) -> Option<(Option<Socket>, Option<String>)> {
        let mut lanes = self.lock();
        let lane = lanes.entry(Arc::clone(entry)).or_default();
        if lane.refused {
            return None;
        }
        Some((lane.socket.take(), lane.last.take()))
    }

    fn give_back(&self, entry: &Arc<str>, socket: Socket, last: Option<String>) {
        let mut lanes = self.lock();
        let lane = lanes.entry(Arc::clone(entry)).or_default();
        lane.socket = Some(socket);
        lane.last = last;
    }

    fn refuse(&self, entry: &Arc<str>) {
        self.lock().entry(Arc::clone(entry)).or_default().refused = true;
    }
}

/// Sends the turn `prepared` (the `POST` the plugin built) on `provider`'s socket when `turn`
/// comes from a client socket, the request is passed natively (`info`) and the entry takes
/// WebSocket mode; else [`Went::Http`].
pub async fn send(
    turn: Option<&SocketTurn>,
    provider: &Provider,
    info: &RequestInfo,
    prepared: &Admitted,
    redactor: &Redactor,
) -> Result<Went, ApiError> {
    // A client socket's turn is its dialect's `POST` (the upgrade's path): passed natively to
    // an entry that takes WebSocket mode, it is a Responses `create`. The host names no dialect
    // (tests/dialect_names.rs).
    let native = info.native.is_some();
    let Some(turn) = turn.filter(|_| native && info.stream && takes(provider)) else {
        return Ok(Went::Http);
    };
    let Ok(Value::Object(fields)) = serde_json::from_slice::<Value>(prepared.body()) else {
        return Ok(Went::Http);
    };
    let Some((socket, last)) = turn.lanes.take(&provider.name) else {
        return Ok(Went::Http);
    };
    // Boxed: the socket's opening, send and first read make a large future, and the attempt
    // of every request, from a client socket or not, would be sized by it. (Bound first: a
    // temporary of the awaiting statement is kept in the state, though moved.)
    let went = Box::pin(send_on(
        turn, provider, prepared, redactor, fields, socket, last,
    ));
    went.await
}

/// [`send`] on the entry's socket (`socket`, kept from an earlier turn with its `last`
/// response, or opened now).
async fn send_on(
    turn: &SocketTurn,
    provider: &Provider,
    prepared: &Admitted,
    redactor: &Redactor,
    fields: Map<String, Value>,
    socket: Option<Socket>,
    last: Option<String>,
) -> Result<Went, ApiError> {
    let entry = &provider.name;
    // A socket kept from an earlier turn may have been closed by the upstream since (the
    // reference ends a connection after an hour): a send that fails on it is tried once on a
    // new one.
    let mut kept = socket.map(|socket| (socket, last));
    loop {
        let reused = kept.is_some();
        let (mut socket, last) = match kept.take() {
            Some(kept) => kept,
            None => match open(provider, prepared, redactor).await {
                Ok(socket) => (socket, None),
                Err(OpenError::Refused(error) | OpenError::Failed(error)) => {
                    tracing::info!(
                        provider = &**entry,
                        "no Responses WebSocket upstream, the turns go over HTTP: {error}"
                    );
                    turn.lanes.refuse(entry);
                    return Ok(Went::Http);
                }
            },
        };
        let message = create_event(fields.clone(), turn.chained.as_ref(), last.as_deref());
        if let Err(error) = socket.send(Message::text(message)).await {
            if reused {
                continue;
            }
            return Err(unreachable(provider, &error.to_string()));
        }
        let first = tokio::time::timeout(provider.timeout, next_event(&mut socket)).await;
        let first = match first {
            Err(_) => {
                return Err(ApiError::UpstreamTimeout {
                    provider: entry.to_string(),
                });
            }
            Ok(Err(detail)) => return Err(unreachable(provider, &detail)),
            Ok(Ok(first)) => first,
        };
        if first.kind == "error" {
            // The connection lives on, with the response it held.
            turn.lanes.give_back(entry, socket, last);
            return Ok(Went::Refused(refusal(&first.value)));
        }
        return Ok(Went::Events(events(
            turn.lanes.clone(),
            Arc::clone(entry),
            socket,
            first,
        )));
    }
}

async fn open(
    provider: &Provider,
    prepared: &Admitted,
    redactor: &Redactor,
) -> Result<Socket, OpenError> {
    let forwarded = (prepared.headers().iter())
        .filter(|(name, _)| FORWARDED.iter().any(|f| name.eq_ignore_ascii_case(f)))
        .cloned()
        .collect();
    let opening = Opening {
        path: "/responses",
        query: &[],
        forwarded,
        max_message: MESSAGE_MAX,
    };
    upstream_socket::open(provider, opening, redactor).await
}

fn unreachable(provider: &Provider, detail: &str) -> ApiError {
    ApiError::UpstreamUnreachable {
        provider: provider.name.to_string(),
        detail: detail.to_owned(),
    }
}

/// The `response.create` event for the `POST` body `fields`: without the transport's fields,
/// and, when the socket's last response is the one the chain expanded the turn from, with only
/// the client's own input and its `previous_response_id` again.
fn create_event(
    mut fields: Map<String, Value>,
    chained: Option<&Chained>,
    last: Option<&str>,
) -> String {
    for field in TRANSPORT_FIELDS {
        fields.remove(field);
    }
    if let Some(chained) = chained.filter(|c| Some(c.previous.as_str()) == last)
        && let Some(Value::Array(input)) = fields.get_mut("input")
        && input.len() >= chained.prefix
    {
        input.drain(..chained.prefix);
        fields.insert(
            "previous_response_id".to_owned(),
            Value::String(chained.previous.clone()),
        );
    }
    let mut event = Map::with_capacity(fields.len() + 1);
    event.insert("type".to_owned(), Value::from("response.create"));
    event.extend(fields);
    Value::Object(event).to_string()
}

/// One event the upstream sent.
struct Event {
    kind: String,
    value: Value,
}

impl Event {
    /// Whether it is the last of its turn.
    fn ends(&self) -> bool {
        matches!(
            self.kind.as_str(),
            "response.completed" | "response.failed" | "response.incomplete" | "error"
        )
    }

    /// As a server-sent event.
    fn sse(&self) -> Bytes {
        Bytes::from(format!("event: {}\ndata: {}\n\n", self.kind, self.value))
    }
}

/// The next event on `socket` (pings pass); why there is none.
async fn next_event(socket: &mut Socket) -> Result<Event, String> {
    loop {
        let text = match socket.next().await {
            Some(Ok(Message::Text(text))) => text,
            Some(Ok(Message::Binary(bytes))) => String::from_utf8_lossy(&bytes).into_owned().into(),
            Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => continue,
            Some(Ok(Message::Close(_))) | None => {
                return Err("the upstream closed its socket in a turn".to_owned());
            }
            Some(Err(error)) => return Err(format!("the upstream socket failed: {error}")),
        };
        let value: Value = serde_json::from_str(text.as_str())
            .map_err(|_| "the upstream sent a message that is not JSON".to_owned())?;
        let kind = value["type"].as_str().unwrap_or_default().to_owned();
        return Ok(Event { kind, value });
    }
}

/// The HTTP error an `error` event stands for: its `status` (502 without one) and its error
/// object as an error body.
fn refusal(event: &Value) -> HttpResponse {
    let status = (event["status"].as_u64())
        .and_then(|s| u16::try_from(s).ok())
        .filter(|s| (400..600).contains(s))
        .unwrap_or(502);
    let body = serde_json::json!({"error": event["error"]}).to_string();
    HttpResponse {
        status,
        headers: vec![("content-type".to_owned(), "application/json".to_owned())],
        body: body.into_bytes(),
    }
}

/// The turn's events from `first` to its last, as server-sent events; the socket goes back to
/// `lanes` after the last.
fn events(
    lanes: Lanes,
    entry: Arc<str>,
    socket: Socket,
    first: Event,
) -> BoxStream<'static, Result<Bytes, String>> {
    struct Reading {
        lanes: Lanes,
        entry: Arc<str>,
        socket: Option<Socket>,
        first: Option<Event>,
    }
    let reading = Reading {
        lanes,
        entry,
        socket: Some(socket),
        first: Some(first),
    };
    stream::unfold(reading, |mut reading| async move {
        let mut socket = reading.socket.take()?;
        let event = match reading.first.take() {
            Some(first) => first,
            None => match next_event(&mut socket).await {
                Ok(event) => event,
                // The socket is dropped: the stream ends with its failure.
                Err(detail) => return Some((Err(detail), reading)),
            },
        };
        let bytes = event.sse();
        if event.ends() {
            let last = (event.kind == "response.completed")
                .then(|| {
                    event
                        .value
                        .pointer("/response/id")?
                        .as_str()
                        .map(str::to_owned)
                })
                .flatten();
            reading.lanes.give_back(&reading.entry, socket, last);
        } else {
            reading.socket = Some(socket);
        }
        Some((Ok(bytes), reading))
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value, json};

    // By its full path: `super` reads as the folder's `mod.rs` to the import checker.
    use crate::pipeline::forward::socket::{Chained, create_event, refusal};

    fn fields(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    #[test]
    fn a_turn_expanded_from_the_sockets_last_response_goes_up_with_its_own_input() {
        let body = json!({"model": "m", "stream": true, "store": false, "background": false,
            "input": [{"role": "user", "content": "hi"}, {"type": "message", "role": "assistant"},
                      {"type": "function_call_output", "call_id": "c", "output": "42"}]});
        let chained = Chained {
            previous: "resp_1".to_owned(),
            prefix: 2,
        };
        let event = |last| -> Value {
            serde_json::from_str(&create_event(fields(body.clone()), Some(&chained), last))
                .unwrap_or_default()
        };
        let on_it = event(Some("resp_1"));
        assert_eq!(
            on_it,
            json!({"type": "response.create", "model": "m", "store": false,
                "previous_response_id": "resp_1",
                "input": [{"type": "function_call_output", "call_id": "c", "output": "42"}]})
        );
        // Another socket (or one that answered another response since) gets it expanded.
        for last in [None, Some("resp_0")] {
            let expanded = event(last);
            assert_eq!(expanded["input"], body["input"]);
            assert!(expanded.get("previous_response_id").is_none());
            assert!(expanded.get("stream").is_none());
        }
    }

    #[test]
    fn an_error_event_is_the_http_error_it_stands_for() {
        let event = json!({"type": "error", "status": 400, "error": {"type": "invalid_request_error",
            "code": "previous_response_not_found", "message": "no"}});
        let response = refusal(&event);
        assert_eq!(response.status, 400);
        let body: Value = serde_json::from_slice(&response.body).unwrap_or_default();
        assert_eq!(body["error"]["code"], "previous_response_not_found");
        assert_eq!(refusal(&json!({"type": "error", "error": {}})).status, 502);
    }
}
