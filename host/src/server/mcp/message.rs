//! One JSON-RPC message of a client, as both transports take it: read and sorted
//! ([`read_message`]), and a request dispatched for its caller ([`Asked::dispatch`]).

use axum::body::Body;
use axum::http::HeaderMap;
use axum::response::sse::Event;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::entry::refused;
use crate::auth::Caller;
use crate::mcp::call::Call;
use crate::mcp::error::McpError;
use crate::mcp::permit::Permit;
use crate::mcp::progress::Relay;
use crate::state::AppState;

/// A client's message, by what it asks of the gateway.
pub(super) enum Message {
    Request {
        id: Value,
        method: String,
        params: Option<Value>,
    },
    /// `notifications/cancelled`, with its params.
    Cancelled(Option<Value>),
    /// Another notification (`notifications/initialized`), or a response (the gateway sends
    /// clients no requests): taken, and needing no answer.
    Taken,
}

/// Reads one JSON-RPC message (bounded as any request body is).
pub(super) async fn read_message(state: &AppState, body: Body) -> Result<Message, McpError> {
    let bytes = match crate::pipeline::request::body::read(state, body).await {
        Ok((bytes, _reservation)) => bytes,
        Err(e) => return Err(refused(&e)),
    };
    let mut message = match serde_json::from_slice(&bytes) {
        Ok(Value::Object(message)) => message,
        Ok(Value::Array(_)) => {
            return Err(McpError::InvalidRequest(
                "JSON-RPC batches are not supported: send one message per request.",
            ));
        }
        Ok(_) => {
            return Err(McpError::InvalidRequest("A JSON-RPC message is an object."));
        }
        Err(e) => return Err(McpError::Parse(e.to_string())),
    };
    let method = message.get("method").and_then(Value::as_str);
    let is_response = message.get("result").is_some() || message.get("error").is_some();
    if method == Some("notifications/cancelled") {
        return Ok(Message::Cancelled(message.remove("params")));
    }
    if (message.get("id").is_none() && method.is_some()) || (method.is_none() && is_response) {
        return Ok(Message::Taken);
    }
    let id = message
        .get("id")
        .filter(|id| id.is_string() || id.is_i64() || id.is_u64());
    let (Some(id), Some(method)) = (id.cloned(), method.map(str::to_owned)) else {
        return Err(McpError::InvalidRequest(
            "A JSON-RPC request needs an `id` (a string or an integer) and a `method`.",
        ));
    };
    Ok(Message::Request {
        id,
        method,
        params: message.remove("params"),
    })
}

/// Who asks, and the request's own facts, for [`crate::mcp::dispatch`].
pub(super) struct Asked {
    pub caller: Caller,
    pub request_id: String,
    pub headers: HeaderMap,
}

impl Asked {
    pub async fn dispatch(
        &self,
        state: &AppState,
        method: &str,
        params: Option<Value>,
        relay: Option<&Relay>,
        cancel: Option<&CancellationToken>,
    ) -> Result<Value, McpError> {
        let permit = Permit::of(&self.caller, &state.mcp.config());
        let gateway = state.gateway.load();
        let call = Call {
            hub: &state.mcp,
            ledger: &state.ledger,
            telemetry: &state.telemetry,
            limits: &gateway.limits,
            guards: &gateway.guards,
            background: &state.background,
            caller: &self.caller,
            permit: &permit,
            request_id: &self.request_id,
            headers: &self.headers,
            relay,
            cancel,
        };
        crate::mcp::dispatch::dispatch(&call, method, params).await
    }
}

/// A JSON-RPC response with `result`.
pub(super) fn answer(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// A message as an event of a stream.
pub(super) fn message_event(message: &Value) -> Event {
    Event::default().event("message").data(message.to_string())
}
