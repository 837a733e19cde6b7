//! The Responses API's WebSocket mode: `GET /v1/responses` upgraded to a socket on which each
//! `response.create` event is one request through the pipeline, answered with the events a
//! `stream: true` call gets, each a text message (see `docs/src/responses-websocket.md`).
//!
//! The key is checked at the upgrade (a refused key gets the HTTP error, no socket) and again
//! by each turn's auth stage, so a key revoked mid-session stops at its next turn. The session
//! counts against `server.websocket`'s bounds (`sockets`).

mod chain;
mod frames;
pub(super) mod refusal;
pub(super) mod session;
mod turn;

use std::sync::Arc;

use axum::body::Body;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::{Extension, State};
use axum::http::{HeaderMap, Method, Uri};
use axum::response::{IntoResponse, Response};

use super::request_log::RequestId;
use crate::error::Dialect;
use crate::pipeline::caller::caller;
use crate::state::AppState;
use refusal::Refusal;

/// What a socket reads from the connection at a time.
const READ_BUFFER_BYTES: usize = 8 * 1024;

/// `GET /v1/responses`: the socket, or (without an upgrade) the route as the dialect serves it.
pub async fn upgrade(
    State(state): State<Arc<AppState>>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    id: Option<Extension<RequestId>>,
    body: Body,
) -> Response {
    let Ok(upgrade) = upgrade else {
        return super::dialect_routes::serve_or_refuse(
            State(state),
            method,
            uri,
            headers,
            id,
            body,
        )
        .await;
    };
    let config = &state.gateway.load().config;
    let bounds = config.server.websocket.clone();
    let required = config.auth.required;
    let who = match caller(&state, &headers, required).await {
        Ok(who) => who,
        Err(refused) => return refused.response(Dialect::Chat),
    };
    let holder = match &who.key_id {
        Some(key) => format!("key {key}"),
        None => format!("project {}", who.project),
    };
    let path = uri.path().to_owned();
    let seat = match state
        .sockets
        .admit(&holder, bounds.max_sessions_per_key, bounds.max_sessions)
    {
        Ok(seat) => seat,
        Err(refused) => return Refusal::Seats(refused).into_response(),
    };
    upgrade
        // tungstenite's default read buffer is 128 KiB, allocated whole for every socket: most
        // of an idle session's memory. A turn's message is read in pieces of this instead.
        .read_buffer_size(READ_BUFFER_BYTES)
        .max_message_size(bounds.max_message_bytes)
        .max_frame_size(bounds.max_message_bytes)
        .on_upgrade(move |socket| async move {
            let sockets = state.sockets.clone();
            sockets
                .track(session::serve(state, socket, headers, path, seat, bounds))
                .await;
        })
}
