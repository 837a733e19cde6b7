//! How every MCP endpoint of both transports opens (the key and `Origin` checked) and how it
//! answers an error.

use std::sync::Arc;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::auth::Caller;
use crate::error::ApiError;
use crate::mcp::Hub;
use crate::mcp::error::McpError;
use crate::state::AppState;

/// The session header, as the transport names it (HTTP header names are case-insensitive).
pub(super) const SESSION: &str = "mcp-session-id";

/// How every MCP endpoint of both transports opens: without any server configured it is an
/// unknown route, else the key and `Origin` are checked. The hub and the caller, or the answer
/// that refuses.
pub(super) async fn enter(
    state: &AppState,
    headers: &HeaderMap,
) -> Result<(Arc<Hub>, Caller), Response> {
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
pub(super) fn refused(e: &ApiError) -> McpError {
    McpError::Http {
        status: e.status(),
        message: e.to_string(),
    }
}

pub(super) fn error(id: &Value, e: &McpError) -> Response {
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

pub(super) fn json_response(
    status: StatusCode,
    body: &Value,
    session: Option<HeaderValue>,
) -> Response {
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
pub(super) fn not_served() -> Response {
    ApiError::UnknownRoute {
        method: "POST".to_owned(),
        path: "/mcp".to_owned(),
    }
    .into_response()
}
