//! One `response.create` on the socket: the event turned into the body a `POST /v1/responses`
//! with `stream: true` would carry, run through the pipeline like that request (the same
//! dialect route, auth, limits, guards, routing, record), and the reply turned into what the
//! socket sends: the stream's events, or one `error` event.

use axum::body::Body;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, header};
use serde_json::{Map, Value, json};

use super::chain::{Chain, Sent};
use super::refusal::Refusal;
use crate::error::{ApiError, Dialect};
use crate::pipeline::edge::Edge;
use crate::pipeline::forward::socket::{Chained, Lanes, SocketTurn};
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
        /// What the turn sent, for the socket's chain once its response completes.
        sent: Sent,
    },
    /// One `error` event: the turn failed before any event.
    Failed(String),
    /// A warm-up (`generate: false`) the gateway answered itself, as response `id`: its
    /// `response.created` and `response.completed` events, and the `response.create` it was
    /// (for the socket's chain, [`Chain::warmed`]).
    Warmed {
        events: Vec<String>,
        id: String,
        body: Map<String, Value>,
        stream_id: Option<Value>,
    },
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
pub async fn answer(
    state: &AppState,
    headers: &HeaderMap,
    path: &str,
    text: &str,
    chain: &Chain,
    lanes: &Lanes,
) -> Answered {
    let Create {
        body,
        stream_id,
        trace,
        sent,
        chained,
        warmup,
    } = match create_body(text, chain) {
        Ok(parsed) => parsed,
        Err(refusal) => return Answered::Failed(refusal.event()),
    };
    if let Some(body) = warmup {
        let id = format!("resp_{}", uuid::Uuid::now_v7().simple());
        return Answered::Warmed {
            events: warmed_events(&id, &body),
            id,
            body,
            stream_id,
        };
    }
    let mut headers = headers.clone();
    for (name, value) in trace {
        headers.insert(name, value);
    }
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
        headers,
        body: Body::from(body),
        edge: Some(Edge { gateway, matched }),
        socket: Some(SocketTurn {
            lanes: lanes.clone(),
            chained,
        }),
    };
    let reply = pipeline::run(state, incoming).await;
    let answer = match reply.result {
        Ok(answer) => answer,
        Err(error) => return Answered::Failed(error_event(&error, reply.error_body)),
    };
    match answer.body {
        AnswerBody::Events(body) => Answered::Events {
            body,
            stream_id,
            sent,
        },
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
                sent,
            }
        }
        AnswerBody::Typed { .. } => Answered::Failed(Refusal::NotAStream.event()),
    }
}

/// What a `response.create` event stands for.
#[derive(Debug, Default)]
struct Create {
    /// The `POST` body.
    body: String,
    /// The lane of the socket the client gave the turn.
    stream_id: Option<Value>,
    /// The W3C trace context the client's `client_metadata` carries for the turn, as headers.
    trace: Vec<(HeaderName, HeaderValue)>,
    /// What it sends, for the socket's chain.
    sent: Sent,
    /// How the chain expanded it.
    chained: Option<Chained>,
    /// A warm-up (`generate: false`): the event, answered by the gateway and never sent on.
    warmup: Option<Map<String, Value>>,
}

/// The trace headers a `response.create`'s `client_metadata` may carry (Codex sends them so),
/// by the key it carries each under. No other header can be set from the envelope.
const TRACE_KEYS: [(&str, HeaderName); 2] = [
    (
        "ws_request_header_traceparent",
        HeaderName::from_static("traceparent"),
    ),
    (
        "ws_request_header_tracestate",
        HeaderName::from_static("tracestate"),
    ),
];

/// Bytes of a trace header taken from the envelope, at most.
const TRACE_MAX: usize = 512;

/// The `POST` body `text` stands for, its `stream_id` and trace; or why it stands for none.
fn create_body(text: &str, chain: &Chain) -> Result<Create, Refusal> {
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
    let warmup = match event.remove("generate") {
        None | Some(Value::Bool(true)) => false,
        Some(Value::Bool(false)) => true,
        Some(_) => return Err(Refusal::Generate),
    };
    // A lane of the socket, not a parameter of the response.
    let stream_id = event.remove("stream_id");
    // A warm-up prepares what a later turn will name (`previous_response_id`); the turn is
    // routed only when it runs, so there is no upstream to warm, and the gateway answers it:
    // no output, nothing spent, nothing recorded.
    if warmup {
        return Ok(Create {
            stream_id,
            warmup: Some(event),
            ..Create::default()
        });
    }
    // Codex carries on the socket, in `client_metadata` (a parameter it sends over HTTP too),
    // the trace context it would send as headers.
    let metadata = event.get("client_metadata");
    let trace = (TRACE_KEYS.iter())
        .filter_map(|(key, name)| {
            let value = metadata?.get(*key)?.as_str()?;
            let value = HeaderValue::from_str(value)
                .ok()
                .filter(|_| value.len() <= TRACE_MAX)?;
            Some((name.clone(), value))
        })
        .collect();
    let (sent, chained) = chain.expand(&mut event);
    // Implicit on the socket (the reference asks clients not to send it).
    event.insert("stream".to_owned(), Value::Bool(true));
    Ok(Create {
        body: Value::Object(event).to_string(),
        stream_id,
        trace,
        sent,
        chained,
        warmup: None,
    })
}

/// The events that answer a warm-up (`body`) as response `id`: created, then completed with no
/// output and no usage, the request's parameters echoed as a response echoes them.
fn warmed_events(id: &str, body: &Map<String, Value>) -> Vec<String> {
    let created_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let echo = |name: &str, default: Value| body.get(name).cloned().unwrap_or(default);
    let mut response = json!({
        "id": id, "object": "response", "created_at": created_at, "status": "in_progress",
        "model": echo("model", Value::Null), "output": [], "error": null,
        "incomplete_details": null, "instructions": echo("instructions", Value::Null),
        "tools": echo("tools", json!([])), "tool_choice": echo("tool_choice", json!("auto")),
        "parallel_tool_calls": echo("parallel_tool_calls", json!(true)),
        "previous_response_id": echo("previous_response_id", Value::Null),
        "store": echo("store", json!(true)), "metadata": echo("metadata", json!({})),
        "usage": null,
    });
    let created = json!({"type": "response.created", "sequence_number": 0,
        "response": response.clone()});
    response["status"] = json!("completed");
    response["usage"] = json!({"input_tokens": 0, "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 0, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 0});
    let completed = json!({"type": "response.completed", "sequence_number": 1,
        "response": response});
    vec![created.to_string(), completed.to_string()]
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
        let chain = Chain::new(1 << 20);
        let create = create_body(
            r#"{"type":"response.create","model":"m","input":"hi","stream_id":"a","background":false,
                "client_metadata":{"ws_request_header_traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
                "ws_request_header_authorization":"Bearer x","ws_request_header_tracestate":"a\nb"}}"#,
            &chain,
        )
        .unwrap_or_default();
        let mut body: Value = serde_json::from_str(&create.body).unwrap_or_default();
        assert!(
            body["client_metadata"].is_object(),
            "a parameter as over HTTP"
        );
        body.as_object_mut().map(|b| b.remove("client_metadata"));
        assert_eq!(body, json!({"model": "m", "input": "hi", "stream": true}));
        assert_eq!(create.stream_id, Some(json!("a")));
        // Only the trace context, and only a value a header can carry.
        let trace: Vec<(&str, &[u8])> = (create.trace.iter())
            .map(|(n, v)| (n.as_str(), v.as_bytes()))
            .collect();
        assert_eq!(
            trace,
            [(
                "traceparent",
                &b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"[..]
            )]
        );
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
            (
                r#"{"type":"response.create","generate":"no"}"#,
                Refusal::Generate,
            ),
        ] {
            assert_eq!(create_body(text, &chain).err(), Some(refusal), "{text}");
        }
    }
}
