//! The older HTTP+SSE transport (MCP 2024-11-05), for clients that still use it:
//! `GET /mcp/sse` opens the session's event stream, whose first event (`endpoint`) names where
//! to post: `/mcp/messages?session_id=<id>`. Each `POST` there is taken with 202, and its answer
//! comes on the stream, as do the servers' progress and list changes.
//!
//! Keys as on `/mcp` (every request presents one, and the session must be its own). The session
//! id is the same signed token as `/mcp`'s, so any replica can tell it is genuine; but answers go
//! on the stream, which one replica holds, so a `POST` must reach that replica (route
//! `/mcp/messages` by its `session_id` to the replica that served the `GET`): one that lands
//! elsewhere gets 404, as for a stream that has closed. The transport itself ties a session to
//! its stream; `/mcp` (Streamable HTTP) is the one that needs no sticky routing.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Extension, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::Stream;
use serde_json::Value;
use tokio::sync::OwnedSemaphorePermit;

use super::entry::{enter, error};
use super::handshake::{handshake, now_s};
use super::message::{Asked, Message, answer, message_event, read_message};
use crate::mcp::error::McpError;
use crate::mcp::legacy::{IN_FLIGHT, Opened};
use crate::mcp::progress::Relay;
use crate::mcp::session::new_session;
use crate::server::request_log::RequestId;
use crate::server::routes::{Outbound, Table, methods};
use crate::state::AppState;

/// The version the transport belongs to (a session negotiates its own in `initialize`).
const TRANSPORT_VERSION: &str = "2024-11-05";

pub fn routes(table: Table) -> Table {
    let stream = Outbound::Nothing("opens the session's stream of answers");
    table
        .route("/mcp/sse", methods().get(stream, open_stream))
        // `tools/call` arguments go to the MCP servers through the tool guards.
        .route(
            "/mcp/messages",
            methods().post(Outbound::Text, post_message),
        )
}

async fn open_stream(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    let (hub, caller) = match enter(&state, &headers).await {
        Ok(entered) => entered,
        Err(refused) => return refused,
    };
    let key_id = caller.key_id.unwrap_or_default();
    let session = new_session(
        &key_id,
        TRANSPORT_VERSION,
        now_s(),
        hub.config().session_ttl_s,
    );
    let session_id = hub.signer().issue(&session);
    let Some(opened) = hub
        .sse
        .open(&session_id, &key_id, hub.config().sse_streams_per_key)
    else {
        let e = McpError::Http {
            status: StatusCode::TOO_MANY_REQUESTS,
            message: format!(
                "This key holds {} event streams open already (mcp.sse_streams_per_key).",
                hub.config().sse_streams_per_key
            ),
        };
        return error(&Value::Null, &e);
    };
    // The id is base64url and `.`: nothing in it needs escaping in a query.
    let endpoint = Event::default()
        .event("endpoint")
        .data(format!("/mcp/messages?session_id={session_id}"));
    let first = futures_util::stream::once(std::future::ready(Ok(endpoint)));
    Sse::new(futures_util::StreamExt::chain(
        first,
        messages(opened, &hub),
    ))
    .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
    .into_response()
}

/// The session's answers and notifications, and the servers' list changes, until the client
/// leaves (which closes the session here) or the gateway drains.
fn messages(
    opened: Opened,
    hub: &crate::mcp::Hub,
) -> impl Stream<Item = Result<Event, Infallible>> + use<> {
    let changes = hub.subscribe();
    let stop = hub.draining();
    futures_util::stream::unfold(
        (opened, changes, stop),
        |(mut opened, mut changes, stop)| async move {
            loop {
                let message = tokio::select! {
                    () = stop.cancelled() => return None,
                    message = opened.receiver.recv() => message?,
                    changed = changes.recv() => match changed {
                        Ok(what) => serde_json::json!({"jsonrpc": "2.0", "method": what.method()}),
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
                    },
                };
                return Some((Ok(message_event(&message)), (opened, changes, stop)));
            }
        },
    )
}

#[derive(serde::Deserialize)]
struct Target {
    session_id: String,
}

async fn post_message(
    State(state): State<Arc<AppState>>,
    Extension(RequestId(request_id)): Extension<RequestId>,
    target: Result<Query<Target>, QueryRejection>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let (hub, caller) = match enter(&state, &headers).await {
        Ok(entered) => entered,
        Err(refused) => return refused,
    };
    let Ok(Query(Target { session_id })) = target else {
        let e = McpError::InvalidRequest("Post to the endpoint the event stream named.");
        return error(&Value::Null, &e);
    };
    let genuine = hub
        .signer()
        .check(&session_id, now_s())
        .is_some_and(|s| s.key_id == caller.key_id.as_deref().unwrap_or_default());
    let stream = genuine.then(|| hub.sse.find(&session_id)).flatten();
    let Some(stream) = stream else {
        // Forged, expired, another key's, closed, or open on another replica.
        return error(&Value::Null, &McpError::UnknownSession);
    };
    let (id, method, params) = match read_message(&state, body).await {
        Ok(Message::Request { id, method, params }) => (id, method, params),
        Ok(Message::Cancelled(params)) => {
            if let Some(id) = params.as_ref().and_then(|p| p.get("requestId")) {
                let _ = hub.in_flight.cancel(&session_id, id);
            }
            return StatusCode::ACCEPTED.into_response();
        }
        Ok(Message::Taken) => return StatusCode::ACCEPTED.into_response(),
        Err(e) => return error(&Value::Null, &e),
    };
    let Ok(permit) = Arc::clone(&stream.busy).try_acquire_owned() else {
        let e = McpError::Http {
            status: StatusCode::TOO_MANY_REQUESTS,
            message: format!("This session has {IN_FLIGHT} requests in flight already."),
        };
        return error(&id, &e);
    };
    let asked = Asked {
        caller,
        request_id,
        headers,
    };
    let answering = Answering {
        state: Arc::clone(&state),
        asked,
        sender: stream.sender,
        session_id,
        _permit: permit,
    };
    state.background.spawn(answering.run(id, method, params));
    StatusCode::ACCEPTED.into_response()
}

/// One request of a session, answered on its stream.
struct Answering {
    state: Arc<AppState>,
    asked: Asked,
    sender: tokio::sync::mpsc::Sender<Value>,
    session_id: String,
    /// Its place among the session's requests in flight, held until its answer is queued.
    _permit: OwnedSemaphorePermit,
}

impl Answering {
    async fn run(self, id: Value, method: String, params: Option<Value>) {
        let outcome = match method.as_str() {
            "initialize" => Ok(handshake(params.as_ref()).1),
            "server/discover" => Err(McpError::MethodNotFound(method)),
            "tools/call" => {
                let relay = params
                    .as_ref()
                    .and_then(|p| p.pointer("/_meta/progressToken"))
                    .filter(|t| t.is_string() || t.is_i64() || t.is_u64())
                    .map(|token| Relay {
                        token: token.clone(),
                        sender: self.sender.clone(),
                    });
                let entry = self.state.mcp.in_flight.enter(&self.session_id, &id);
                self.asked
                    .dispatch(
                        &self.state,
                        &method,
                        params,
                        relay.as_ref(),
                        Some(&entry.cancel),
                    )
                    .await
            }
            _ => {
                self.asked
                    .dispatch(&self.state, &method, params, None, None)
                    .await
            }
        };
        let message = match outcome {
            Ok(result) => answer(&id, result),
            // A cancelled request is not answered.
            Err(McpError::Cancelled) => return,
            Err(e) => e.response(&id),
        };
        // Waits while the client is slow to read; fails once it has left.
        let _ = self.sender.send(message).await;
    }
}
