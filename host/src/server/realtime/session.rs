//! One open Realtime session: the client's socket and the upstream's, relayed both ways.
//!
//! Three parts run together. The client side reads the client's events, has them inspected
//! (`client_events`) and sends them upstream, and watches the session's clocks (idle, total
//! duration, the gateway's shutdown): when one runs out it lets the response in flight finish,
//! then the session closes. The upstream side reads the upstream's events, meters them
//! (`meter`) and queues them for the client. The writer sends the queue to the client.
//!
//! The queue is bounded: when a client stops reading, the writer waits on its socket, the
//! queue fills, and the upstream side stops reading the upstream socket, whose own flow
//! control then holds the upstream. Nothing grows; after `send_timeout_ms` without progress
//! the session ends.

use std::borrow::Cow;
use std::pin::pin;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, close_code};
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::{mpsc, watch};
use tokio::time::{Instant, sleep_until, timeout};
use tokio_tungstenite::tungstenite::Message as Upstream;

use super::admission::{admit, ends_the_session};
use super::answers::Answers;
use super::client_events::{Verdict, inspect};
use super::meter::Meter;
use super::refusal::error_event;
use super::upgraded::Session;
use super::upstream;
use crate::error::ApiError;
use crate::pipeline::guard::body::Detached;
use crate::server::responses_ws::session::{Ending, close, read_failed};
use crate::sockets::Seat;

/// Events queued for a client that reads slower than the upstream writes.
const QUEUED_FOR_CLIENT: usize = 16;

/// Serves the session until either side closes; `seat` holds its place in the count meanwhile.
pub async fn serve(session: Session, client: WebSocket, upstream: upstream::Socket, seat: Seat) {
    let _seat = seat;
    let (client_sink, client_stream) = client.split();
    let (upstream_sink, upstream_stream) = upstream.split();
    let (queue, queued) = mpsc::channel::<Message>(QUEUED_FOR_CLIENT);
    let (busy, busy_rx) = watch::channel(false);
    let (cancel, cancels) = mpsc::channel::<String>(QUEUED_FOR_CLIENT);
    let price = (session.gateway.providers.get(session.provider))
        .and_then(|p| p.price(&session.target_model));
    let meter = Mutex::new(Meter::new(price, busy));
    let send_timeout = session.bounds.send_timeout();
    let mut writing = pin!(write(client_sink, queued, send_timeout));
    let relaying = async {
        tokio::select! {
            ending = from_client(&session, client_stream, upstream_sink, queue.clone(), &meter, (busy_rx, cancels)) => ending,
            ending = from_upstream(&session, upstream_stream, queue.clone(), &meter, cancel) => ending,
        }
    };
    let ending = tokio::select! {
        () = &mut writing => return,
        ending = relaying => ending,
    };
    let closing = async move {
        if let Ending::Close(frame) = ending {
            let _ = queue.send(Message::Close(Some(frame))).await;
        }
    };
    // The writer ends with the close frame, or at the send timeout of a client that reads
    // nothing (its queue then closes, and the close frame is dropped).
    let _ = timeout(send_timeout.saturating_mul(2), async {
        tokio::join!(closing, &mut writing)
    })
    .await;
}

/// Sends the queue to the client, each message within `send_timeout`; ends after a close
/// frame, or when the client fails or is too slow.
async fn write(
    mut sink: SplitSink<WebSocket, Message>,
    mut queue: mpsc::Receiver<Message>,
    send_timeout: Duration,
) {
    while let Some(message) = queue.recv().await {
        let last = matches!(message, Message::Close(_));
        match timeout(send_timeout, sink.send(message)).await {
            Ok(Ok(())) if !last => {}
            Ok(Ok(())) => return,
            Ok(Err(error)) => {
                tracing::debug!("a Realtime session ended while sending: {error}");
                return;
            }
            Err(_) => {
                tracing::info!(
                    "closed a Realtime session whose client read nothing for {} ms (server.websocket.send_timeout_ms)",
                    send_timeout.as_millis()
                );
                return;
            }
        }
    }
}

/// Reads the client's events and sends them upstream, with the `response.cancel`s of answers a
/// guard stopped (`cancels`), until the client goes or a clock runs out (after the response in
/// flight).
async fn from_client(
    session: &Session,
    mut stream: SplitStream<WebSocket>,
    mut upstream: SplitSink<upstream::Socket, Upstream>,
    queue: mpsc::Sender<Message>,
    meter: &Mutex<Meter>,
    (mut busy, mut cancels): (watch::Receiver<bool>, mpsc::Receiver<String>),
) -> Ending {
    let bounds = &session.bounds;
    let end_of_life = Instant::now() + bounds.max_duration();
    let mut idle_at = Instant::now() + bounds.idle_timeout();
    let mut closing = pin!(session.state.sockets.closing());
    let mut detached = Detached::new(&session.state.telemetry);
    // Set when a clock ran out with a response in flight: the session closes once it is done.
    let mut draining: Option<Ending> = None;
    loop {
        let idle = !*busy.borrow();
        if idle && let Some(ending) = draining.take() {
            return ending;
        }
        let open = draining.is_none();
        tokio::select! {
            message = stream.next(), if open => {
                idle_at = Instant::now() + bounds.idle_timeout();
                let text = match message {
                    Some(Ok(Message::Text(text))) => text.to_string(),
                    // Read as text, so that no event passes unread.
                    Some(Ok(Message::Binary(bytes))) => String::from_utf8_lossy(&bytes).into_owned(),
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                    Some(Ok(Message::Close(_))) | None => return Ending::Gone,
                    Some(Err(error)) => return read_failed(&error),
                };
                let verdict = inspect(session, &mut detached, text).await;
                locked(meter).heard(detached.verdicts());
                let sent = match verdict {
                    Verdict::Forward(text) => upstream.send(Upstream::text(text)).await.is_ok(),
                    Verdict::Create { text, cx, client_event } => {
                        locked(meter).asked(*cx, client_event);
                        upstream.send(Upstream::text(text)).await.is_ok()
                    }
                    Verdict::Refuse(event) => {
                        if queue.send(Message::text(event)).await.is_err() {
                            return Ending::Gone;
                        }
                        true
                    }
                    Verdict::End(event) => {
                        let _ = queue.send(Message::text(event)).await;
                        return close(close_code::POLICY, "a budget is spent");
                    }
                };
                if !sent {
                    return close(close_code::ERROR, "the upstream socket failed");
                }
            }
            Some(cancel) = cancels.recv() => {
                if upstream.send(Upstream::text(cancel)).await.is_err() {
                    return close(close_code::ERROR, "the upstream socket failed");
                }
            }
            changed = busy.changed() => {
                if changed.is_err() {
                    return Ending::Gone;
                }
                idle_at = Instant::now() + bounds.idle_timeout();
            }
            () = sleep_until(idle_at), if idle && open => {
                return close(close_code::NORMAL, "idle (server.websocket.idle_timeout_ms)");
            }
            () = sleep_until(end_of_life), if open => {
                draining = Some(close(close_code::AWAY, "session too long (server.websocket.max_duration_ms)"));
            }
            () = &mut closing, if open => {
                draining = Some(close(close_code::AWAY, "the gateway is shutting down"));
            }
        }
    }
}

/// The `type` of an event and the response it is of, read without the rest (an audio delta
/// is mostly base64).
#[derive(Deserialize)]
struct Head<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    response_id: Option<Cow<'a, str>>,
}

/// The `event_id` prefix of the gateway's own `response.cancel`s: the upstream's `error` for
/// one (the response had ended already) is the gateway's, not the client's.
const CANCEL: &str = "wasmgate_cancel_";

/// Reads the upstream's events into the client's queue, metering each response and guarding
/// its answer, until the upstream closes; `cancel` takes the `response.cancel` of an answer a
/// guard stopped.
async fn from_upstream(
    session: &Session,
    mut stream: SplitStream<upstream::Socket>,
    queue: mpsc::Sender<Message>,
    meter: &Mutex<Meter>,
    cancel: mpsc::Sender<String>,
) -> Ending {
    let mut answers = Answers::default();
    while let Some(message) = stream.next().await {
        let message = match message {
            Ok(Upstream::Text(text)) => {
                let relayed = relay(session, meter, &mut answers, &cancel, text.as_str()).await;
                for event in relayed.events {
                    if queue.send(Message::text(event)).await.is_err() {
                        return Ending::Gone;
                    }
                }
                if relayed.spent {
                    return close(close_code::POLICY, "a budget is spent");
                }
                continue;
            }
            Ok(Upstream::Binary(bytes)) => Message::Binary(bytes),
            Ok(Upstream::Close(frame)) => {
                let (code, reason) = match frame {
                    Some(frame) => (u16::from(frame.code), frame.reason.to_string()),
                    None => (close_code::NORMAL, String::new()),
                };
                return Ending::Close(CloseFrame {
                    code,
                    reason: Utf8Bytes::from(reason),
                });
            }
            Ok(Upstream::Ping(_) | Upstream::Pong(_) | Upstream::Frame(_)) => continue,
            Err(error) => {
                tracing::info!("a Realtime session's upstream socket failed: {error}");
                return close(close_code::ERROR, "the upstream socket failed");
            }
        };
        if queue.send(message).await.is_err() {
            return Ending::Gone;
        }
    }
    close(close_code::ERROR, "the upstream closed the session")
}

/// What goes to the client for one upstream event.
struct ForClient {
    events: Vec<String>,
    /// A response the upstream started itself met a spent budget: the session closes after
    /// `events`.
    spent: bool,
}

impl From<Vec<String>> for ForClient {
    fn from(events: Vec<String>) -> Self {
        Self {
            events,
            spent: false,
        }
    }
}

/// The upstream's event `text` metered (a response started, done with its record written
/// before the event goes on, or a `response.create` refused) and through the response's answer
/// guards: the events that go to the client in its place. A guard that stops a response has
/// its `error` event sent and the response cancelled upstream, as has a response the upstream
/// started itself that the limit rules refuse.
async fn relay(
    session: &Session,
    meter: &Mutex<Meter>,
    answers: &mut Answers,
    cancel: &mpsc::Sender<String>,
    text: &str,
) -> ForClient {
    let Ok(head) = serde_json::from_str::<Head<'_>>(text) else {
        return vec![text.to_owned()].into();
    };
    let watched = matches!(&*head.kind, "response.created" | "response.done" | "error");
    if !watched {
        let relayed = answers
            .relay(&head.kind, head.response_id.as_deref(), text)
            .await;
        let mut events = relayed.events;
        if let (Some(error), Some(id)) = (relayed.stop, head.response_id.as_deref()) {
            stopped(&mut events, cancel, &error, id).await;
        }
        return events.into();
    }
    let Ok(event) = serde_json::from_str::<Value>(text) else {
        return vec![text.to_owned()].into();
    };
    let response = &event["response"];
    let id = response["id"].as_str();
    match (&*head.kind, id) {
        ("response.created", Some(id)) => {
            let mut events = vec![text.to_owned()];
            let asked = locked(meter).starting();
            let mut cx = match asked {
                Some(cx) => cx,
                // Started by the upstream itself (a server VAD turn): admitted now, as a
                // `response.create` is before it goes up; refused, it is cancelled before any
                // of its answer reaches the client, and recorded as refused.
                None => match admit(session.context()).await {
                    Ok(cx) => cx,
                    Err(error) => {
                        answers.refused(id);
                        stopped(&mut events, cancel, &error, id).await;
                        let spent = ends_the_session(&error);
                        return ForClient { events, spent };
                    }
                },
            };
            let opened = answers.started(&mut cx, &session.model, response).await;
            locked(meter).started(id, cx);
            if let Err(error) = opened {
                answers.refused(id);
                stopped(&mut events, cancel, &error, id).await;
            }
            events.into()
        }
        ("response.done", Some(id)) => {
            let relayed = answers.relay(&head.kind, Some(id), text).await;
            let written = {
                let mut meter = locked(meter);
                if let Some(mut chain) = answers.done(id) {
                    meter.guarded(id, &mut chain);
                }
                meter.done(response)
            };
            if let Some(written) = written {
                written.wait().await;
            }
            let mut events = relayed.events;
            // Stopped as the guards released what they held: the response is over already.
            if let Some(error) = relayed.stop {
                let done = events.pop();
                events.push(error_event(&error, None));
                events.extend(done);
            }
            events.into()
        }
        ("error", _) => {
            let about = event["error"]["event_id"].as_str();
            if about.is_some_and(|id| id.starts_with(CANCEL)) {
                return Vec::new().into();
            }
            if let Some(about) = about {
                locked(meter).refused(about);
            }
            vec![text.to_owned()].into()
        }
        _ => vec![text.to_owned()].into(),
    }
}

/// Response `id` stopped by `error`: its `error` event for the client after `events`, and its
/// `response.cancel` upstream.
async fn stopped(
    events: &mut Vec<String>,
    cancel: &mpsc::Sender<String>,
    error: &ApiError,
    id: &str,
) {
    events.push(error_event(error, None));
    let event_id = format!("{CANCEL}{}", uuid::Uuid::now_v7().simple());
    let event = serde_json::json!({"type": "response.cancel", "event_id": event_id,
        "response_id": id});
    let _ = cancel.send(event.to_string()).await;
}

fn locked(meter: &Mutex<Meter>) -> std::sync::MutexGuard<'_, Meter> {
    meter.lock().unwrap_or_else(PoisonError::into_inner)
}
