//! The Responses API's WebSocket mode (`GET /v1/responses` upgraded), after
//! developers.openai.com/api/docs/guides/websocket-mode and the reference's WebSocket events:
//!
//! | message | answer |
//! |---|---|
//! | the upgrade without `Authorization: Bearer sk-upstream-secret` | 401, no socket |
//! | the upgrade while [`Shared::refuse_sockets`] is set | 404, no socket |
//! | not JSON, or a `type` other than `response.create` | an `error` event |
//! | `stream` or `background` set (the socket streams every response and runs none in the background) | an `error` event, 400 |
//! | a `response.create` the HTTP route refuses (`previous_response_not_found` included) | its error as an `error` event with its `status` |
//! | any other `response.create` | the events the HTTP stream sends, each a text message |
//!
//! One response at a time: the next message is read once a response's events are sent. The
//! connection keeps its last response (stored or not), which a `previous_response_id` may name
//! besides the stored ones. Upgrades and turns are counted, and each turn recorded under the
//! path `ws /v1/responses`, so a test can tell what came by socket.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::body::Bytes;
use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::{Shared, Stored, respond, stream, unauthorized};

/// The path a socket's turns are recorded under.
pub const RECORDED_PATH: &str = "ws /v1/responses";

pub async fn upgrade(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    upgrade: WebSocketUpgrade,
) -> Response {
    if let Some(refused) = unauthorized(&headers) {
        return refused;
    }
    if shared.refuse_sockets.load(Ordering::SeqCst) {
        return StatusCode::NOT_FOUND.into_response();
    }
    shared.socket_upgrades.fetch_add(1, Ordering::SeqCst);
    upgrade.on_upgrade(move |socket| serve(shared, socket, headers))
}

async fn serve(shared: Arc<Shared>, mut socket: WebSocket, headers: HeaderMap) {
    let mut last: Option<(String, Stored)> = None;
    while let Some(Ok(message)) = socket.recv().await {
        let text = match message {
            Message::Text(text) => text.to_string(),
            Message::Binary(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Message::Close(_) => return,
            Message::Ping(_) | Message::Pong(_) => continue,
        };
        let events = match turn(&shared, &headers, &text, last.as_ref()).await {
            Ok((request, response, stored)) => {
                let id = response["id"].as_str().unwrap_or_default().to_owned();
                last = Some((id, stored));
                stream::sequence(&request, &response)
            }
            Err(event) => vec![event],
        };
        for event in events {
            if socket.send(Message::text(event.to_string())).await.is_err() {
                return;
            }
        }
    }
}

/// The request a message stands for, its response and what a follow-up sees of it; or the
/// `error` event that refuses it.
async fn turn(
    shared: &Shared,
    headers: &HeaderMap,
    text: &str,
    last: Option<&(String, Stored)>,
) -> Result<(Value, Value, Stored), Value> {
    let Ok(Value::Object(mut event)) = serde_json::from_str::<Value>(text) else {
        return Err(error_event(
            400,
            "The message is not a JSON object.",
            None,
            None,
        ));
    };
    match event.remove("type") {
        Some(Value::String(kind)) if kind == "response.create" => {}
        other => {
            let message = format!("Unsupported event type {other:?}.");
            return Err(error_event(400, &message, Some("type"), None));
        }
    }
    shared.socket_turns.fetch_add(1, Ordering::SeqCst);
    let body = Bytes::from(Value::Object(event.clone()).to_string());
    super::super::record(shared, RECORDED_PATH, headers, &body).await;
    for field in ["stream", "background"] {
        if event.contains_key(field) {
            let message = format!("`{field}` is not supported over WebSocket.");
            return Err(error_event(400, &message, Some(field), None));
        }
    }
    let request = Value::Object(event);
    match respond(shared, &request, last).await {
        Ok((response, stored)) => Ok((request, response, stored)),
        Err(refused) => Err(event_of(*refused).await),
    }
}

/// The reference's `error` event.
fn error_event(status: u16, message: &str, param: Option<&str>, code: Option<&str>) -> Value {
    json!({"type": "error", "status": status, "error": {
        "type": "invalid_request_error", "message": message, "param": param, "code": code}})
}

/// The HTTP route's refusal as an `error` event.
async fn event_of(refused: Response) -> Value {
    let status = refused.status().as_u16();
    let body = axum::body::to_bytes(refused.into_body(), 1 << 20)
        .await
        .unwrap_or_default();
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    json!({"type": "error", "status": status, "error": body["error"]})
}
