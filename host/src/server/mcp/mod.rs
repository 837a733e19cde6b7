//! `/mcp`, the Streamable HTTP transport: `POST` takes one JSON-RPC message and answers it with
//! one JSON response (202 for a notification), or, for a `tools/call` asking for progress, with
//! an event stream of the server's progress and then the answer; `GET` opens the session's
//! stream of server notifications (list changes); `DELETE` is refused with 405 (a session id is
//! a signed token that lapses by itself, so there is nothing to end early, which the transport
//! allows). `notifications/cancelled` cancels the call it names (see [`crate::mcp::progress`]).
//! The older HTTP+SSE transport is in [`legacy`].
//!
//! Every request presents a gateway key (`Authorization: Bearer`); after `initialize` it also
//! presents the session id it was given, which must belong to the same key. An `Origin` header,
//! when sent, must name the host the request was sent to (the transport's guard against DNS
//! rebinding). Sessions are in [`crate::mcp::session`]; methods in [`crate::mcp::dispatch`].

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Body;
use axum::extract::{Extension, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use futures_util::Stream;
use serde_json::{Value, json};

use crate::auth::Caller;
use crate::error::ApiError;
use crate::mcp::error::McpError;
use crate::mcp::progress::Relay;
use crate::mcp::session::{Session, new_session};
use crate::mcp::{Hub, PROTOCOL_VERSIONS};
use crate::server::RequestId;
use crate::state::AppState;

/// The session header, as the transport names it (HTTP header names are case-insensitive).
const SESSION: &str = "mcp-session-id";
const PROTOCOL: &str = "mcp-protocol-version";

mod legacy;
mod message;

use message::{Asked, Message, answer, read_message};

pub fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route(
            "/mcp",
            post(post_message).get(open_stream).delete(end_session),
        )
        .merge(legacy::routes())
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

fn message_event(message: &Value) -> Event {
    Event::default().event("message").data(message.to_string())
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

/// `initialize`'s answer: the version both sides speak (the client's when the gateway speaks
/// it, else the newest) and the gateway's capabilities.
fn handshake(params: Option<&Value>) -> (&'static str, Value) {
    let asked = params
        .and_then(|p| p.get("protocolVersion"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let version = PROTOCOL_VERSIONS
        .into_iter()
        .find(|v| *v == asked)
        .unwrap_or(PROTOCOL_VERSIONS[0]);
    let result = json!({
        "protocolVersion": version,
        "capabilities": {
            "tools": {"listChanged": true},
            "prompts": {"listChanged": true},
            "resources": {"listChanged": true, "subscribe": false},
        },
        "serverInfo": {"name": "wasmgate", "version": env!("CARGO_PKG_VERSION")},
    });
    (version, result)
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

/// How every MCP endpoint of both transports opens: without any server configured it is an
/// unknown route, else the key and `Origin` are checked. The hub and the caller, or the answer
/// that refuses.
async fn enter(state: &AppState, headers: &HeaderMap) -> Result<(Arc<Hub>, Caller), Response> {
    let hub = Arc::clone(&state.mcp);
    if !hub.enabled() {
        return Err(not_served());
    }
    let caller = admit(state, headers)
        .await
        .map_err(|e| error(&Value::Null, &e))?;
    Ok((hub, caller))
}

/// The key (always required on `/mcp`) and the `Origin` check.
async fn admit(state: &AppState, headers: &HeaderMap) -> Result<Caller, McpError> {
    if let Some(origin) = headers.get(header::ORIGIN) {
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("");
        let origin_host = origin
            .to_str()
            .ok()
            .and_then(|o| o.split_once("://"))
            .map(|(_, rest)| rest.trim_end_matches('/'));
        if origin_host != Some(host) {
            return Err(refused(&ApiError::InvalidHeader {
                header: "origin",
                message: "The `Origin` of this request is not the host it was sent to.".to_owned(),
            }));
        }
    }
    crate::pipeline::caller::caller(state, headers, true)
        .await
        .map_err(|e| refused(&e))
}

/// A refusal of the gateway's own (a key, a header, a body), as MCP clients read it.
fn refused(e: &ApiError) -> McpError {
    McpError::Http {
        status: e.status(),
        message: e.to_string(),
    }
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

fn error(id: &Value, e: &McpError) -> Response {
    let (_, status) = e.code_and_status();
    let mut response = json_response(status, &e.response(id), None);
    if status == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"wasmgate\""),
        );
    }
    response
}

fn json_response(status: StatusCode, body: &Value, session: Option<HeaderValue>) -> Response {
    let mut response = (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response();
    if let Some(session) = session {
        response.headers_mut().insert(SESSION, session);
    }
    response
}

/// `/mcp` without any server configured: as any unknown route.
fn not_served() -> Response {
    ApiError::UnknownRoute {
        method: "POST".to_owned(),
        path: "/mcp".to_owned(),
    }
    .into_response()
}

fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
