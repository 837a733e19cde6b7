//! What the Realtime route refuses, written as the reference writes it: an OpenAI error body at
//! the upgrade (no socket), an `error` event on the socket. A seat refused is the Responses
//! socket's refusal (`responses_ws::refusal`): the two kinds share the seats.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::error::{ApiError, Dialect};

/// Why an upgrade was refused before the pipeline's own errors apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A plain `GET`: the route takes a WebSocket upgrade only.
    NotAnUpgrade,
    /// The URL names no `model`.
    NoModel,
}

impl Refusal {
    fn status(&self) -> StatusCode {
        match self {
            Self::NotAnUpgrade | Self::NoModel => StatusCode::BAD_REQUEST,
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
