//! `/mcp`, the Streamable HTTP transport: one JSON-RPC message per `POST`, answered as JSON or
//! as an event stream of a call's progress; `GET` opens the session's notifications.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Extension, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::Stream;
use serde_json::{Value, json};

use super::entry::{SESSION, enter, error, json_response, not_served};
use super::handshake::{handshake, now_s};
use super::message::{Asked, Message, answer, message_event, read_message};
use crate::auth::Caller;
use crate::mcp::error::McpError;
use crate::mcp::progress::Relay;
use crate::mcp::session::{Session, new_session};
use crate::mcp::{Hub, PROTOCOL_VERSIONS};
use crate::server::request_log::RequestId;
use crate::server::routes::{Outbound, Table, methods};
use crate::state::AppState;

const PROTOCOL: &str = "mcp-protocol-version";

pub fn routes(table: Table) -> Table {
    let table = table.route(
        "/mcp",
        methods()
            // `tools/call` arguments go to the MCP servers through the tool guards.
            .post(Outbound::Text, post_message)
            .get(
                Outbound::Nothing("opens the session's stream of notifications"),
                open_stream,
            )
            .delete(
                Outbound::Nothing("refused: a session lapses by itself"),
                end_session,
            ),
    );
    super::legacy::routes(table)
}

async fn post_message(
    State(state): State<Arc<AppState>>,
    Extension(RequestId(request_id)): Extension<RequestId>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let (hub, caller) = match enter(&state, &headers).await {
        Ok(entered) => entered,
        Err(refused) => return refused,
    };
    let (id, method, params) = match read_message(&state, body).await {
        Ok(Message::Request { id, method, params }) => (id, method, params),
        Ok(Message::Cancelled(params)) => {
            return cancelled(&hub, &caller, &headers, params.as_ref());
        }
        Ok(Message::Taken) => return StatusCode::ACCEPTED.into_response(),
        Err(e) => return error(&Value::Null, &e),
    };
    if method == "initialize" {
        return initialize(&hub, &caller, &id, params.as_ref());
    }
    if method == "server/discover" {
        // The stateless protocol's probe: answering "not found" sends the client to the
        // `initialize` handshake, which is what `/mcp` speaks.
        return error(&id, &McpError::MethodNotFound(method));
    }
    if let Err(e) = session(&hub, &caller, &headers) {
        return error(&id, &e);
    }
    let asked = Asked {
        caller,
        request_id,
        headers,
    };
    if method == "tools/call" {
        return tool_call(state, asked, id, params).await;
    }
    match asked.dispatch(&state, &method, params, None, None).await {
        Ok(result) => json_response(StatusCode::OK, &answer(&id, result), None),
        Err(e) => error(&id, &e),
    }
}

/// `tools/call`, run as a task of its own, so that it ends and is recorded however the client's
/// connection ends (a dropped connection is not a cancellation). Answered as JSON, or as an
/// event stream carrying the server's progress before the answer when the client asked for
/// progress (`_meta.progressToken`) and reads event streams. A call the client cancels gets no
/// answer on a stream (as the protocol asks); as JSON it gets the cancellation error.
async fn tool_call(
    state: Arc<AppState>,
    asked: Asked,
    id: Value,
    params: Option<Value>,
) -> Response {
    let token = params
        .as_ref()
        .and_then(|p| p.pointer("/_meta/progressToken"))
        .filter(|t| t.is_string() || t.is_i64() || t.is_u64())
        .cloned();
    let streams = asked
        .headers
        .get(header::ACCEPT)
        .and_then(|a| a.to_str().ok())
        .is_some_and(|a| a.contains("text/event-stream"));
    let (relay, progress) = match token.filter(|_| streams) {
        Some(token) => {
            let (relay, progress) = Relay::new(token);
            (Some(relay), Some(progress))
        }
        None => (None, None),
    };
    let session = asked
        .headers
        .get(SESSION)
        .and_then(|s| s.to_str().ok())
        .unwrap_or_default();
    let entry = state.mcp.in_flight.enter(session, &id);
    let task_state = Arc::clone(&state);
    let call = state.background.spawn(async move {
        let outcome = asked
            .dispatch(
                &task_state,
                "tools/call",
                params,
                relay.as_ref(),
                Some(&entry.cancel),
            )
            .await;
        drop(entry);
        outcome
    });
    let as_json = |answered: Result<Result<Value, McpError>, tokio::task::JoinError>| match answered
    {
        Ok(Ok(result)) => json_response(StatusCode::OK, &answer(&id, result), None),
        Ok(Err(e)) => error(&id, &e),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    };
    let Some(mut progress) = progress else {
        return as_json(call.await);
    };
    // A stream only once there is progress to send: a call that ends first is answered as JSON,
    // in one write (rmcp's clients ask every request for progress, and most tools report none).
    let mut call = call;
    let first = tokio::select! {
        biased;
        // `None`: the relay is gone, so the call has ended.
        note = progress.recv() => note,
        answered = &mut call => return as_json(answered),
    };
    let Some(first) = first else {
        return as_json(call.await);
    };
    // The relay is the task's: the progress ends when the call does, then comes its answer.
    let events = futures_util::stream::unfold(
        (Some(first), Some(progress), Some(call), id),
        |(mut first, mut progress, mut call, id)| async move {
            let note = match first.take() {
                Some(note) => Some(note),
                None => progress.as_mut()?.recv().await,
            };
            if let Some(note) = note {
                return Some((
                    Ok::<_, Infallible>(message_event(&note)),
                    (None, progress, call, id),
                ));
            }
            let message = match call.take()?.await {
                Ok(Ok(result)) => answer(&id, result),
                Ok(Err(McpError::Cancelled)) | Err(_) => return None,
                Ok(Err(e)) => e.response(&id),
            };
            Some((Ok(message_event(&message)), (None, None, None, id)))
        },
    );
    Sse::new(events).into_response()
}

/// A client's `notifications/cancelled`: the call it names, in its session, is cancelled.
fn cancelled(hub: &Hub, caller: &Caller, headers: &HeaderMap, params: Option<&Value>) -> Response {
    if let Err(e) = session(hub, caller, headers) {
        return error(&Value::Null, &e);
    }
    let session = headers
        .get(SESSION)
        .and_then(|s| s.to_str().ok())
        .unwrap_or_default();
    if let Some(id) = params.and_then(|p| p.get("requestId")) {
        // An unknown id is a call that already ended (or one on another replica).
        let _ = hub.in_flight.cancel(session, id);
    }
    StatusCode::ACCEPTED.into_response()
}

/// Starts a session: the version both sides speak, the gateway's capabilities, and the id.
fn initialize(hub: &Hub, caller: &Caller, id: &Value, params: Option<&Value>) -> Response {
    let (version, result) = handshake(params);
    let session = new_session(
        caller.key_id.as_deref().unwrap_or_default(),
        version,
        now_s(),
        hub.config().session_ttl_s,
    );
    let session_id = hub.signer().issue(&session);
    json_response(
        StatusCode::OK,
        &answer(id, result),
        HeaderValue::from_str(&session_id).ok(),
    )
}

/// `GET /mcp`: the session's stream of notifications (list changes of any server), until the
/// client leaves or the gateway stops.
async fn open_stream(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    let (hub, caller) = match enter(&state, &headers).await {
        Ok(entered) => entered,
        Err(refused) => return refused,
    };
    if let Err(e) = session(&hub, &caller, &headers) {
        return error(&Value::Null, &e);
    }
    Sse::new(notifications(&hub))
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

fn notifications(hub: &Hub) -> impl Stream<Item = Result<Event, Infallible>> + use<> {
    let changes = hub.subscribe();
    let stop = hub.draining();
    futures_util::stream::unfold((changes, stop), |(mut changes, stop)| async move {
        loop {
            let changed = tokio::select! {
                () = stop.cancelled() => return None,
                changed = changes.recv() => changed,
            };
            match changed {
                Ok(what) => {
                    let message = json!({"jsonrpc": "2.0", "method": what.method()});
                    return Some((Ok(message_event(&message)), (changes, stop)));
                }
                // Missed changes: the client re-lists on the next one anyway.
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
            }
        }
    })
}

async fn end_session(State(state): State<Arc<AppState>>) -> Response {
    if !state.mcp.enabled() {
        return not_served();
    }
    let mut response = StatusCode::METHOD_NOT_ALLOWED.into_response();
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("GET, POST"));
    response
}

/// The request's session: present, ours, unexpired, of this caller's key.
fn session(hub: &Hub, caller: &Caller, headers: &HeaderMap) -> Result<Session, McpError> {
    if let Some(version) = headers.get(PROTOCOL)
        && !PROTOCOL_VERSIONS
            .iter()
            .any(|v| version.as_bytes() == v.as_bytes())
    {
        return Err(McpError::InvalidRequest(
            "Unsupported `MCP-Protocol-Version`.",
        ));
    }
    let id = headers.get(SESSION).ok_or(McpError::NoSession)?;
    let session = id
        .to_str()
        .ok()
        .and_then(|id| hub.signer().check(id, now_s()))
        .ok_or(McpError::UnknownSession)?;
    if session.key_id != caller.key_id.as_deref().unwrap_or_default() {
        return Err(McpError::UnknownSession);
    }
    Ok(session)
}
