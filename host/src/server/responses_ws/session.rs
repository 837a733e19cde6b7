//! One open socket: a reader that takes the client's messages and a runner that answers them,
//! one turn at a time, in order.
//!
//! The reader queues each message for the runner (at most `max_queued_turns` behind the one in
//! flight) and watches the session's clocks: idle (no message and no turn), total duration,
//! and the gateway's shutdown. When one runs out it lets the turn in flight finish, then the
//! socket is closed with a code that says why. A client that goes away cuts the turn (its
//! record is written as a cut stream's).
//!
//! The runner pulls the turn's next event from the pipeline only once the previous one is
//! written to the socket, so a client that stops reading holds the upstream stream where it is
//! and grows nothing; after `send_timeout_ms` without progress the session ends.

use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, close_code};
use axum::http::HeaderMap;
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::{Instant, sleep_until, timeout};

use super::chain::Chain;
use super::frames::Frames;
use super::turn::{self, Answered};
use crate::config::WebsocketConfig;
use crate::pipeline::forward::socket::Lanes;
use crate::sockets::Seat;
use crate::state::AppState;

/// How the reader stopped.
#[derive(Debug)]
pub(in crate::server) enum Ending {
    /// The client closed the socket, or it broke: nothing is left to answer.
    Gone,
    /// Close after the turn in flight, with this frame.
    Close(CloseFrame),
}

/// Serves `socket` until it closes; `seat` holds its place in the count meanwhile.
pub async fn serve(
    state: Arc<AppState>,
    socket: WebSocket,
    headers: HeaderMap,
    path: String,
    seat: Seat,
    bounds: WebsocketConfig,
) {
    let _seat = seat;
    let (sink, stream) = socket.split();
    let queued = bounds.max_queued_turns.max(1) as usize;
    let (turns_tx, turns_rx) = mpsc::channel::<String>(queued);
    let (close_tx, close_rx) = oneshot::channel::<CloseFrame>();
    let (busy_tx, busy_rx) = watch::channel(false);
    let lanes = Lanes::default();
    let runner = Runner {
        state: &state,
        headers: turn::turn_headers(&headers),
        path,
        sink,
        send_timeout: bounds.send_timeout(),
        chain: Chain::new(state.max_body_bytes),
        lanes: lanes.clone(),
    };
    let mut running = pin!(runner.run(turns_rx, close_rx, busy_tx));
    let reading = read(&state, stream, turns_tx, busy_rx, &bounds);
    tokio::select! {
        ending = reading => match ending {
            Ending::Gone => {}
            Ending::Close(frame) => {
                let _ = close_tx.send(frame);
                running.await;
            }
        },
        () = &mut running => {}
    }
    // The upstream sockets close with the client's.
    lanes.close().await;
}

/// Reads the client's messages into `turns` until a clock runs out or the client goes.
async fn read(
    state: &AppState,
    mut stream: SplitStream<WebSocket>,
    turns: mpsc::Sender<String>,
    mut busy: watch::Receiver<bool>,
    bounds: &WebsocketConfig,
) -> Ending {
    let end_of_life = Instant::now() + bounds.max_duration();
    let mut idle_at = Instant::now() + bounds.idle_timeout();
    let mut closing = pin!(state.sockets.closing());
    loop {
        let idle = !*busy.borrow();
        tokio::select! {
            message = stream.next() => {
                idle_at = Instant::now() + bounds.idle_timeout();
                let text = match message {
                    Some(Ok(Message::Text(text))) => text.to_string(),
                    // Not text: refused as not JSON, by the turn.
                    Some(Ok(Message::Binary(bytes))) => String::from_utf8_lossy(&bytes).into_owned(),
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                    Some(Ok(Message::Close(_))) | None => return Ending::Gone,
                    Some(Err(error)) => return read_failed(&error),
                };
                match turns.try_send(text) {
                    Ok(()) => {}
                    Err(mpsc::error::TrySendError::Full(_)) => {
                        return close(
                            close_code::POLICY,
                            "too many response.create queued (server.websocket.max_queued_turns)",
                        );
                    }
                    Err(mpsc::error::TrySendError::Closed(_)) => return Ending::Gone,
                }
            }
            changed = busy.changed() => {
                if changed.is_err() {
                    return Ending::Gone;
                }
                idle_at = Instant::now() + bounds.idle_timeout();
            }
            () = sleep_until(idle_at), if idle => {
                return close(close_code::NORMAL, "idle (server.websocket.idle_timeout_ms)");
            }
            () = sleep_until(end_of_life) => {
                return close(close_code::AWAY, "session too long (server.websocket.max_duration_ms)");
            }
            () = &mut closing => return close(close_code::AWAY, "the gateway is shutting down"),
        }
    }
}

/// A read error: a message over `max_message_bytes` is closed as too big, anything else as
/// gone.
pub(in crate::server) fn read_failed(error: &axum::Error) -> Ending {
    let too_big = std::error::Error::source(error)
        .and_then(|e| e.downcast_ref::<tokio_tungstenite::tungstenite::Error>())
        .is_some_and(|e| matches!(e, tokio_tungstenite::tungstenite::Error::Capacity(_)));
    if too_big {
        return close(
            close_code::SIZE,
            "message too big (server.websocket.max_message_bytes)",
        );
    }
    tracing::debug!("a WebSocket session ended: {error}");
    Ending::Gone
}

pub(in crate::server) fn close(code: u16, reason: &'static str) -> Ending {
    Ending::Close(CloseFrame {
        code,
        reason: Utf8Bytes::from_static(reason),
    })
}

/// Answers the queued turns on the socket, one at a time.
struct Runner<'a> {
    state: &'a AppState,
    headers: HeaderMap,
    /// The upgrade's path, whose `POST` each turn is.
    path: String,
    sink: SplitSink<WebSocket, Message>,
    send_timeout: Duration,
    /// The last response, for a turn that names it without resending its context.
    chain: Chain,
    /// The upstream sockets of the entries that take WebSocket mode.
    lanes: Lanes,
}

impl Runner<'_> {
    async fn run(
        mut self,
        mut turns: mpsc::Receiver<String>,
        mut close: oneshot::Receiver<CloseFrame>,
        busy: watch::Sender<bool>,
    ) {
        loop {
            let text = tokio::select! {
                biased;
                frame = &mut close => {
                    if let Ok(frame) = frame {
                        let _ = self.send(Message::Close(Some(frame))).await;
                    }
                    return;
                }
                text = turns.recv() => match text {
                    Some(text) => text,
                    None => return,
                },
            };
            busy.send_replace(true);
            let sent = self.turn(&text).await;
            busy.send_replace(false);
            if !sent {
                return;
            }
        }
    }

    /// Runs one turn; `false` if the socket took its events no more.
    async fn turn(&mut self, text: &str) -> bool {
        let answered = turn::answer(
            self.state,
            &self.headers,
            &self.path,
            text,
            &self.chain,
            &self.lanes,
        );
        let (body, stream_id, sent) = match answered.await {
            Answered::Failed(event) => return self.send(Message::text(event)).await,
            Answered::Warmed {
                events,
                id,
                body,
                stream_id,
            } => {
                self.chain.warmed(&id, body);
                let events = (events.into_iter())
                    .map(|event| match &stream_id {
                        Some(lane) => Message::text(with_lane(&event, lane)),
                        None => Message::text(event),
                    })
                    .collect();
                return self.send_all(events).await;
            }
            Answered::Events {
                body,
                stream_id,
                sent,
            } => (body, stream_id, sent),
        };
        let mut sent = Some(sent);
        let mut frames = Frames::default();
        let mut data = body.into_data_stream();
        while let Some(chunk) = data.next().await {
            let Ok(chunk) = chunk else {
                return true;
            };
            let mut messages = Vec::new();
            for event in frames.push(&chunk) {
                if event.contains("\"response.completed\"")
                    && let Ok(parsed) = serde_json::from_str::<Value>(&event)
                    && parsed["type"] == "response.completed"
                    && let Some(sent) = sent.take()
                {
                    self.chain.completed(sent, &parsed);
                }
                let event = match &stream_id {
                    Some(lane) => with_lane(&event, lane),
                    None => event,
                };
                messages.push(Message::text(event));
            }
            if !messages.is_empty() && !self.send_all(messages).await {
                return false;
            }
        }
        true
    }

    /// Writes `message`; `false` if the socket failed or the client took longer than
    /// `send_timeout` to make room for it.
    async fn send(&mut self, message: Message) -> bool {
        self.send_all(vec![message]).await
    }

    /// Writes `messages` with one flush: the events of one upstream read go out in one write
    /// where they fit (a frame's flush each cost a write apiece: 60 µs of kernel time a turn of
    /// ~30 events, BENCHMARKS.md). `false` as for [`Self::send`], the timeout on the whole.
    async fn send_all(&mut self, messages: Vec<Message>) -> bool {
        let sink = &mut self.sink;
        let written = async move {
            for message in messages {
                sink.feed(message).await?;
            }
            sink.flush().await
        };
        match timeout(self.send_timeout, written).await {
            Ok(Ok(())) => true,
            Ok(Err(error)) => {
                tracing::debug!("a WebSocket session ended while sending: {error}");
                false
            }
            Err(_) => {
                tracing::info!(
                    "closed a WebSocket session whose client read nothing for {} ms (server.websocket.send_timeout_ms)",
                    self.send_timeout.as_millis()
                );
                false
            }
        }
    }
}

/// `event` with the turn's `stream_id`, as the reference echoes it into each of its events.
fn with_lane(event: &str, lane: &Value) -> String {
    match serde_json::from_str::<Value>(event) {
        Ok(Value::Object(mut fields)) => {
            fields.insert("stream_id".to_owned(), lane.clone());
            Value::Object(fields).to_string()
        }
        _ => event.to_owned(),
    }
}
