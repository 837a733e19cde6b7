//! `/mcp`, the Streamable HTTP transport: `POST` takes one JSON-RPC message and answers it with
//! one JSON response (202 for a notification), `GET` opens the session's stream of server
//! notifications (list changes), `DELETE` is refused with 405 (a session id is a signed token
//! that lapses by itself, so there is nothing to end early, which the transport allows).
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
use crate::mcp::call::Call;
use crate::mcp::error::McpError;
use crate::mcp::permit::Permit;
use crate::mcp::session::{Session, new_session};
use crate::mcp::{Hub, PROTOCOL_VERSIONS};
use crate::pipeline::error::ApiError;
use crate::server::RequestId;
use crate::state::AppState;

/// The session header, as the transport names it (HTTP header names are case-insensitive).
const SESSION: &str = "mcp-session-id";
const PROTOCOL: &str = "mcp-protocol-version";

pub fn routes() -> Router<Arc<AppState>> {
    Router::new().route(
        "/mcp",
        post(post_message).get(open_stream).delete(end_session),
    )
}

async fn post_message(
    State(state): State<Arc<AppState>>,
    Extension(RequestId(request_id)): Extension<RequestId>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let hub = Arc::clone(&state.mcp);
    if !hub.enabled() {
        return not_served();
    }
    let caller = match admit(&state, &headers).await {
        Ok(caller) => caller,
        Err(e) => return error(&Value::Null, &e),
    };
    let bytes = match crate::pipeline::body::read(&state, body).await {
        Ok((bytes, _reservation)) => bytes,
        Err(e) => return error(&Value::Null, &refused(&e)),
    };
    let message: Value = match serde_json::from_slice(&bytes) {
        Ok(Value::Object(message)) => Value::Object(message),
        Ok(Value::Array(_)) => {
            let e = McpError::InvalidRequest(
                "JSON-RPC batches are not supported: send one message per request.",
            );
            return error(&Value::Null, &e);
        }
        Ok(_) => {
            return error(
                &Value::Null,
                &McpError::InvalidRequest("A JSON-RPC message is an object."),
            );
        }
        Err(e) => return error(&Value::Null, &McpError::Parse(e.to_string())),
    };
    let method = message.get("method").and_then(Value::as_str);
    let is_response = message.get("result").is_some() || message.get("error").is_some();
    // Notifications (`notifications/initialized`, `notifications/cancelled`) and responses (the
    // gateway sends clients no requests) are taken and need no answer.
    if (message.get("id").is_none() && method.is_some()) || (method.is_none() && is_response) {
        return StatusCode::ACCEPTED.into_response();
    }
    let id = message
        .get("id")
        .filter(|id| id.is_string() || id.is_i64() || id.is_u64());
    let (Some(id), Some(method)) = (id.cloned(), method.map(str::to_owned)) else {
        let e = McpError::InvalidRequest(
            "A JSON-RPC request needs an `id` (a string or an integer) and a `method`.",
        );
        return error(&Value::Null, &e);
    };
    let params = message.get("params").cloned();
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
    let permit = Permit::of(&caller, &hub.config);
    let gateway = state.gateway.load();
    let call = Call {
        hub: &hub,
        ledger: &state.ledger,
        telemetry: &state.telemetry,
        limits: &gateway.limits,
        guards: &gateway.guards,
        background: &state.background,
        caller: &caller,
        permit: &permit,
        request_id: &request_id,
        headers: &headers,
    };
    match crate::mcp::dispatch::dispatch(&call, &method, params).await {
        Ok(result) => json_response(
            StatusCode::OK,
            &json!({"jsonrpc": "2.0", "id": id, "result": result}),
            None,
        ),
        Err(e) => error(&id, &e),
    }
}

/// Starts a session: the version both sides speak, the gateway's capabilities, and the id.
fn initialize(hub: &Hub, caller: &Caller, id: &Value, params: Option<&Value>) -> Response {
    let asked = params
        .and_then(|p| p.get("protocolVersion"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let version = PROTOCOL_VERSIONS
        .into_iter()
        .find(|v| *v == asked)
        .unwrap_or(PROTOCOL_VERSIONS[0]);
    let session = new_session(
        caller.key_id.as_deref().unwrap_or_default(),
        version,
        now_s(),
        hub.config.session_ttl_s,
    );
    let session_id = hub.signer().issue(&session);
    let result = json!({
        "protocolVersion": version,
        "capabilities": {
            "tools": {"listChanged": true},
            "prompts": {"listChanged": true},
            "resources": {"listChanged": true, "subscribe": false},
        },
        "serverInfo": {"name": "wasmgate", "version": env!("CARGO_PKG_VERSION")},
    });
    json_response(
        StatusCode::OK,
        &json!({"jsonrpc": "2.0", "id": id, "result": result}),
        HeaderValue::from_str(&session_id).ok(),
    )
}

/// `GET /mcp`: the session's stream of notifications (list changes of any server), until the
/// client leaves or the gateway stops.
async fn open_stream(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    let hub = Arc::clone(&state.mcp);
    if !hub.enabled() {
        return not_served();
    }
    let caller = match admit(&state, &headers).await {
        Ok(caller) => caller,
        Err(e) => return error(&Value::Null, &e),
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
                    let event = Event::default().event("message").data(message.to_string());
                    return Some((Ok(event), (changes, stop)));
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
    crate::pipeline::auth::caller(state, headers, true)
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
