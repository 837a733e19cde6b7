//! What an MCP client can be told went wrong, and its one mapping to the wire: a JSON-RPC error
//! object (with the HTTP status the transport answers it with).

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::clip::{clip, echo};

/// JSON-RPC's own codes, and the server-error range (-32000 to -32099) for the gateway's.
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
const INTERNAL_ERROR: i64 = -32603;
const UNAUTHORIZED: i64 = -32001;
const SESSION: i64 = -32002;
const UNAVAILABLE: i64 = -32003;
const RATE_LIMITED: i64 = -32004;
const REFUSED: i64 = -32005;
/// The code LSP and MCP SDKs use for a request its sender cancelled.
const CANCELLED: i64 = -32800;

/// Everything an MCP request can fail with before or instead of an upstream's answer.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The key or the request's headers were refused (401, 403, 400), or its body (413, 408).
    #[error("{message}")]
    Http { status: StatusCode, message: String },
    #[error("The body is not a JSON-RPC message: {}", clip(.0, 200))]
    Parse(String),
    #[error("{0}")]
    InvalidRequest(&'static str),
    #[error("Missing `Mcp-Session-Id`: send `initialize` first.")]
    NoSession,
    #[error("Unknown or expired session: send `initialize` to start a new one.")]
    UnknownSession,
    #[error("The method `{}` is not supported.", echo(.0))]
    MethodNotFound(String),
    #[error("Invalid params: {}", clip(.0, 300))]
    InvalidParams(String),
    #[error("Unknown tool: {}", echo(.0))]
    UnknownTool(String),
    #[error("Unknown prompt: {}", echo(.0))]
    UnknownPrompt(String),
    #[error("Unknown resource: {}", echo(.0))]
    UnknownResource(String),
    #[error("The MCP server `{0}` is unavailable; try again shortly.")]
    Unavailable(String),
    #[error("The MCP server `{0}` did not answer in time.")]
    Timeout(String),
    #[error("{message}")]
    RateLimited {
        message: String,
        retry_after_ms: u64,
    },
    #[error("The gateway cannot check its limits right now; try again shortly.")]
    LimitsUnavailable,
    #[error("Refused by the guard `{guard}`: {}", clip(reason, 300))]
    Refused { guard: String, reason: String },
    #[error("A guard failed to check this call.")]
    GuardFailed,
    /// The client cancelled the call (`notifications/cancelled`).
    #[error("The call was cancelled.")]
    Cancelled,
    /// The upstream's own JSON-RPC error, passed on as it came.
    #[error("{}", clip(message, 1000))]
    Upstream {
        code: i64,
        message: String,
        data: Option<Value>,
    },
}

impl McpError {
    /// The JSON-RPC error code, the HTTP status of the response carrying it, and the status its
    /// usage record keeps.
    pub fn code_and_status(&self) -> (i64, StatusCode) {
        match self {
            Self::Http { status, .. } => (UNAUTHORIZED, *status),
            Self::Parse(_) => (PARSE_ERROR, StatusCode::BAD_REQUEST),
            Self::InvalidRequest(_) => (INVALID_REQUEST, StatusCode::BAD_REQUEST),
            Self::NoSession => (SESSION, StatusCode::BAD_REQUEST),
            Self::UnknownSession => (SESSION, StatusCode::NOT_FOUND),
            Self::MethodNotFound(_) => (METHOD_NOT_FOUND, StatusCode::OK),
            Self::InvalidParams(_) => (INVALID_PARAMS, StatusCode::OK),
            Self::UnknownTool(_) | Self::UnknownPrompt(_) | Self::UnknownResource(_) => {
                (INVALID_PARAMS, StatusCode::OK)
            }
            Self::Unavailable(_) | Self::Timeout(_) => (UNAVAILABLE, StatusCode::OK),
            Self::RateLimited { .. } => (RATE_LIMITED, StatusCode::OK),
            Self::LimitsUnavailable => (UNAVAILABLE, StatusCode::OK),
            Self::Refused { .. } => (REFUSED, StatusCode::OK),
            Self::GuardFailed => (INTERNAL_ERROR, StatusCode::OK),
            Self::Cancelled => (CANCELLED, StatusCode::OK),
            Self::Upstream { code, .. } => (*code, StatusCode::OK),
        }
    }

    /// The status a tool call's usage record keeps (as an HTTP status would say it).
    pub fn record_status(&self) -> u16 {
        match self {
            Self::Http { status, .. } => status.as_u16(),
            Self::Parse(_) | Self::InvalidRequest(_) | Self::InvalidParams(_) => 400,
            Self::NoSession | Self::UnknownSession => 400,
            Self::MethodNotFound(_)
            | Self::UnknownTool(_)
            | Self::UnknownPrompt(_)
            | Self::UnknownResource(_) => 404,
            Self::Refused { .. } => 403,
            Self::RateLimited { .. } => 429,
            Self::Unavailable(_) | Self::LimitsUnavailable => 503,
            Self::Timeout(_) => 504,
            Self::GuardFailed => 500,
            // As nginx records a request its client gave up on.
            Self::Cancelled => 499,
            // The server refused the call itself (an unknown tool, bad arguments).
            Self::Upstream { code, .. } if matches!(*code, METHOD_NOT_FOUND | INVALID_PARAMS) => {
                400
            }
            Self::Upstream { .. } => 502,
        }
    }

    /// The short name a usage record and a log line keep.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Http { .. } => "unauthorized",
            Self::Parse(_) | Self::InvalidRequest(_) => "invalid_request",
            Self::NoSession | Self::UnknownSession => "session",
            Self::MethodNotFound(_) => "method_not_found",
            Self::InvalidParams(_) => "invalid_params",
            Self::UnknownTool(_) => "unknown_tool",
            Self::UnknownPrompt(_) => "unknown_prompt",
            Self::UnknownResource(_) => "unknown_resource",
            Self::Unavailable(_) => "server_unavailable",
            Self::Timeout(_) => "server_timeout",
            Self::RateLimited { .. } => "rate_limit_exceeded",
            Self::LimitsUnavailable => "limits_unavailable",
            Self::Refused { .. } => "guard_refused",
            Self::GuardFailed => "guard_failed",
            Self::Cancelled => "cancelled",
            Self::Upstream { .. } => "upstream_error",
        }
    }

    /// The JSON-RPC error object.
    pub fn object(&self) -> Value {
        let (code, _) = self.code_and_status();
        let mut error = json!({"code": code, "message": self.to_string()});
        match self {
            Self::RateLimited { retry_after_ms, .. } => {
                error["data"] = json!({"retry_after_ms": retry_after_ms});
            }
            Self::Upstream {
                data: Some(data), ..
            } => error["data"] = data.clone(),
            _ => {}
        }
        error
    }

    /// A whole JSON-RPC error response to the request `id` (`null` when it is not known).
    pub fn response(&self, id: &Value) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "error": self.object()})
    }
}

/// What an upstream call failed with, as the client is told.
pub fn from_service(server: &str, error: rmcp::ServiceError) -> McpError {
    match error {
        rmcp::ServiceError::McpError(e) => McpError::Upstream {
            code: i64::from(e.code.0),
            message: e.message.into_owned(),
            data: e.data,
        },
        rmcp::ServiceError::Timeout { .. } => McpError::Timeout(server.to_owned()),
        other => {
            tracing::warn!(server, "MCP upstream call failed: {other}");
            McpError::Unavailable(server.to_owned())
        }
    }
}
