//! One `response.create` on the socket: the event turned into the body a `POST /v1/responses`
//! with `stream: true` would carry, run through the pipeline like that request (the same
//! dialect route, auth, limits, guards, routing, record), and the reply turned into what the
//! socket sends: the stream's events, or one `error` event.

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, header};
use serde_json::{Map, Value, json};

use super::refusal::Refusal;
use crate::error::{ApiError, Dialect};
use crate::pipeline::edge::Edge;
use crate::pipeline::{self, AnswerBody, Incoming};
use crate::plugins::Operation;
use crate::state::AppState;

/// What a turn sends back.
pub enum Answered {
    /// The streamed answer's server-sent events, and the `stream_id` the client gave the turn
    /// (echoed into every event).
    Events {
        body: Body,
        stream_id: Option<Value>,
    },
    /// One `error` event: the turn failed before any event.
    Failed(String),
}

/// The headers of the upgrade that each turn carries (the key, the project, the client's own
/// headers a guard or the cache may read), without those of the upgrade itself.
pub fn turn_headers(upgrade: &HeaderMap) -> HeaderMap {
    let mut headers = upgrade.clone();
    for name in [
        header::CONNECTION,
        header::UPGRADE,
        header::SEC_WEBSOCKET_KEY,
        header::SEC_WEBSOCKET_VERSION,
        header::SEC_WEBSOCKET_EXTENSIONS,
        header::SEC_WEBSOCKET_PROTOCOL,
        header::CONTENT_LENGTH,
        header::TRANSFER_ENCODING,
    ] {
        headers.remove(name);
    }
    // Every turn is its own request, with an id of its own.
    headers.remove("x-request-id");
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers
}

/// Runs the client's message `text` as one request: the `POST` of the upgrade's `path` (the
/// Responses dialect's route, whichever path its plugin mounts it at).
pub async fn answer(state: &AppState, headers: &HeaderMap, path: &str, text: &str) -> Answered {
    let (body, stream_id) = match create_body(text) {
        Ok(parsed) => parsed,
        Err(refusal) => return Answered::Failed(refusal.event()),
    };
    let gateway = state.gateway.load_full();
    let matched = match gateway.dialects.find(&Method::POST, path, None) {
        Ok(matched) => matched,
        Err(_) => return Answered::Failed(Refusal::NoResponsesDialect.event()),
    };
    let incoming = Incoming {
        dialect: Dialect::Plugin,
        // Until the dialect's plugin has decoded the body, as on the `POST` route.
        operation: Operation::ChatCompletions,
        request_id: uuid::Uuid::now_v7().to_string(),
        headers: headers.clone(),
        body: Body::from(body),
        edge: Some(Edge { gateway, matched }),
    };
    let reply = pipeline::run(state, incoming).await;
    let answer = match reply.result {
        Ok(answer) => answer,
        Err(error) => return Answered::Failed(error_event(&error, reply.error_body)),
    };
    match answer.body {
        AnswerBody::Events(body) => Answered::Events { body, stream_id },
        // A whole answer (a plugin's or the cache's) is what the stream's last event carries.
        AnswerBody::Json(whole) => {
            let response: Value = serde_json::from_str(&whole).unwrap_or(Value::Null);
            let mut event =
                json!({"type": "response.completed", "response": response, "sequence_number": 0});
            if let Some(id) = &stream_id {
                event["stream_id"] = id.clone();
            }
            Answered::Events {
                body: Body::from(format!("data: {event}\n\n")),
                stream_id: None,
            }
        }
        AnswerBody::Typed { .. } => Answered::Failed(Refusal::NotAStream.event()),
    }
}

/// The `POST` body `text` stands for, and its `stream_id`; or why it stands for none.
fn create_body(text: &str) -> Result<(String, Option<Value>), Refusal> {
    let mut event: Map<String, Value> = match serde_json::from_str(text) {
        Ok(Value::Object(event)) => event,
        Ok(_) | Err(_) => return Err(Refusal::NotJson),
    };
    match event.remove("type") {
        Some(Value::String(kind)) if kind == "response.create" => {}
        Some(Value::String(kind)) => return Err(Refusal::UnsupportedEvent(kind)),
        _ => return Err(Refusal::NoType),
    }
    if event
        .get("background")
        .is_some_and(|b| b != &Value::Bool(false))
    {
        return Err(Refusal::Background);
    }
    event.remove("background");
    // A lane of the socket, not a parameter of the response.
    let stream_id = event.remove("stream_id");
    // Implicit on the socket (the reference asks clients not to send it).
    event.insert("stream".to_owned(), Value::Bool(true));
    Ok((Value::Object(event).to_string(), stream_id))
}

/// The reference's `error` event for a turn that failed: the HTTP status the `POST` would have
/// had, and the error object of its body.
fn error_event(error: &ApiError, plugin_body: Option<String>) -> String {
    let status = error.status().as_u16();
    let body = plugin_body.unwrap_or_else(|| error.render(Dialect::Chat).1);
    let parsed: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let detail = match parsed.get("error") {
        Some(detail) if detail.is_object() => detail.clone(),
        _ => json!({"type": error.error_type(), "message": error.to_string()}),
    };
    json!({"type": "error", "status": status, "error": detail}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_create_event_becomes_a_streamed_post_body() {
        let (body, lane) = create_body(
            r#"{"type":"response.create","model":"m","input":"hi","stream_id":"a","background":false}"#,
        )
        .unwrap_or_default();
        let body: Value = serde_json::from_str(&body).unwrap_or_default();
        assert_eq!(body, json!({"model": "m", "input": "hi", "stream": true}));
        assert_eq!(lane, Some(json!("a")));
        for (text, refusal) in [
            ("[1]", Refusal::NotJson),
            (r#"{"model":"m"}"#, Refusal::NoType),
            (
                r#"{"type":"response.steer"}"#,
                Refusal::UnsupportedEvent("response.steer".into()),
            ),
            (
                r#"{"type":"response.create","background":true}"#,
                Refusal::Background,
            ),
        ] {
            assert_eq!(create_body(text).err(), Some(refusal), "{text}");
        }
    }
}
