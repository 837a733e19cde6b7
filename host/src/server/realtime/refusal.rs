//! What the Realtime route refuses, written as the reference writes it: an OpenAI error body at
//! the upgrade (no socket), an `error` event on the socket.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::error::{ApiError, Dialect};
use crate::sockets::Refused;

/// Why an upgrade was refused before the pipeline's own errors apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A plain `GET`: the route takes a WebSocket upgrade only.
    NotAnUpgrade,
    /// The URL names no `model`.
    NoModel,
    /// No more sessions for this key, or for the gateway.
    Seats(Refused),
}

impl Refusal {
    fn status(&self) -> StatusCode {
        match self {
            Self::NotAnUpgrade | Self::NoModel => StatusCode::BAD_REQUEST,
            Self::Seats(Refused::PerKey { .. }) => StatusCode::TOO_MANY_REQUESTS,
            Self::Seats(Refused::Total { .. } | Refused::Closing) => {
                StatusCode::SERVICE_UNAVAILABLE
            }
        }
    }

    fn detail(&self) -> Value {
        let (kind, code, param, message) = match self {
            Self::NotAnUpgrade => (
                "invalid_request_error",
                "websocket_required",
                None,
                "The Realtime API is served over a WebSocket: send an upgrade request.".to_owned(),
            ),
            Self::NoModel => (
                "invalid_request_error",
                "missing_required_parameter",
                Some("model"),
                "The URL names no `model` (`/v1/realtime?model=...`).".to_owned(),
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
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        (self.status(), Json(json!({"error": self.detail()}))).into_response()
    }
}

/// An upgrade refused by one of the pipeline's errors (auth, the key's models, routing, the
/// upstream), in OpenAI's shape.
pub fn refused(error: &ApiError) -> Response {
    error.response(Dialect::Chat)
}

/// The reference's `error` event for `error`, naming the client's event it answers (its
/// `event_id`, when it gave one).
pub fn error_event(error: &ApiError, client_event: Option<&str>) -> String {
    let detail = error.detail();
    event(
        detail.kind,
        detail.code,
        detail.param.as_deref(),
        &detail.message,
        client_event,
    )
}

/// An `error` event the gateway writes itself.
pub fn event(
    kind: &str,
    code: Option<&str>,
    param: Option<&str>,
    message: &str,
    client_event: Option<&str>,
) -> String {
    json!({
        "type": "error",
        "event_id": format!("event_{}", uuid::Uuid::now_v7().simple()),
        "error": {
            "type": kind,
            "code": code,
            "param": param,
            "message": message,
            "event_id": client_event,
        },
    })
    .to_string()
}
