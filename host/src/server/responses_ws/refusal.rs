//! What the socket refuses on its own (before any request reaches the pipeline), written as the
//! reference writes it: an `error` event in the session, an OpenAI error body at the upgrade.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::clip::echo;
use crate::sockets::Refused;

/// Why a message or an upgrade was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The message is not a JSON object.
    NotJson,
    /// The message names no `type`.
    NoType,
    /// A client event the gateway does not take (`response.steer`).
    UnsupportedEvent(String),
    /// `background: true`, which the reference does not support on the socket.
    Background,
    /// `generate` that is not a boolean.
    Generate,
    /// The config has no dialect serving `POST /v1/responses`.
    NoResponsesDialect,
    /// The route answered with something other than a stream of events.
    NotAStream,
    /// The upgrade: no more sessions for this key, or for the gateway.
    Seats(Refused),
}

impl Refusal {
    fn status(&self) -> StatusCode {
        match self {
            Self::NotJson
            | Self::NoType
            | Self::UnsupportedEvent(_)
            | Self::Background
            | Self::Generate => StatusCode::BAD_REQUEST,
            Self::NoResponsesDialect => StatusCode::NOT_FOUND,
            Self::NotAStream => StatusCode::BAD_GATEWAY,
            Self::Seats(Refused::PerKey { .. }) => StatusCode::TOO_MANY_REQUESTS,
            Self::Seats(Refused::Total { .. } | Refused::Closing) => {
                StatusCode::SERVICE_UNAVAILABLE
            }
        }
    }

    /// OpenAI's error object: its type, code, parameter and message.
    fn detail(&self) -> serde_json::Value {
        let (kind, code, param, message) = match self {
            Self::NotJson => (
                "invalid_request_error",
                "invalid_json",
                None,
                "The message is not a JSON object.".to_owned(),
            ),
            Self::NoType => (
                "invalid_request_error",
                "missing_required_parameter",
                Some("type"),
                "The message names no `type`.".to_owned(),
            ),
            Self::UnsupportedEvent(kind) => (
                "invalid_request_error",
                "unsupported_event",
                Some("type"),
                format!(
                    "This gateway takes `response.create` events only, not `{}`.",
                    echo(kind)
                ),
            ),
            Self::Background => (
                "invalid_request_error",
                "unsupported_parameter",
                Some("background"),
                "`background` is not supported in WebSocket mode.".to_owned(),
            ),
            Self::Generate => (
                "invalid_request_error",
                "invalid_type",
                Some("generate"),
                "`generate` must be a boolean.".to_owned(),
            ),
            Self::NoResponsesDialect => (
                "invalid_request_error",
                "unknown_route",
                None,
                "This gateway serves no Responses API.".to_owned(),
            ),
            Self::NotAStream => (
                "api_error",
                "not_a_stream",
                None,
                "The route did not answer with a stream of events.".to_owned(),
            ),
            Self::Seats(Refused::PerKey { max }) => (
                "rate_limit_error",
                "websocket_connection_limit_reached",
                None,
                format!(
                    "This key has {max} WebSocket sessions open (server.websocket.max_sessions_per_key): close one first."
                ),
            ),
            Self::Seats(Refused::Total { max }) => (
                "api_error",
                "websocket_connection_limit_reached",
                None,
                format!(
                    "The gateway has {max} WebSocket sessions open (server.websocket.max_sessions): try again later."
                ),
            ),
            Self::Seats(Refused::Closing) => (
                "api_error",
                "server_shutting_down",
                None,
                "The gateway is shutting down.".to_owned(),
            ),
        };
        json!({"type": kind, "code": code, "param": param, "message": message})
    }

    /// The `error` event sent on the socket.
    pub fn event(&self) -> String {
        json!({"type": "error", "status": self.status().as_u16(), "error": self.detail()})
            .to_string()
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        (self.status(), Json(json!({"error": self.detail()}))).into_response()
    }
}
