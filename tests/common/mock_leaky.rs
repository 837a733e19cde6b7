//! Upstreams that repeat the key they received in their errors, in the wire formats of OpenAI
//! (`/openai/v1/chat/completions`, `Authorization: Bearer`), Anthropic (`/anthropic/v1/messages`,
//! `x-api-key`) and Gemini (`/gemini/v1beta/models/{model}:{method}`, `x-goog-api-key`), as real
//! upstreams do ("Incorrect API key provided: sk-..."). Each message also repeats the request's
//! last user message, as validation errors quoting the input do. The request's model picks:
//!
//! | model | answer |
//! |---|---|
//! | `reject` | 401 (Gemini: 400 `API_KEY_INVALID`), whole or to a stream request |
//! | `fail-midway`, streamed | 200, a first text delta, then an error event |
//!
//! The OpenAI error also names the key in its `code`, as some compatible servers put their whole
//! upstream error there.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use tokio::sync::Mutex;

pub struct MockLeaky {
    pub addr: SocketAddr,
    /// The key each request carried, in order.
    pub keys: Arc<Mutex<Vec<String>>>,
}

impl MockLeaky {
    pub async fn start() -> Self {
        let keys = Arc::new(Mutex::new(Vec::new()));
        let app = Router::new()
            .route("/openai/v1/chat/completions", post(openai))
            .route("/anthropic/v1/messages", post(anthropic))
            .route("/gemini/v1beta/models/{target}", post(gemini))
            .with_state(Arc::clone(&keys));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind mock");
        let addr = listener.local_addr().expect("mock addr");
        tokio::spawn(async move {
            axum::serve(listener, app).await.ok();
        });
        Self { addr, keys }
    }

    /// The `base_url` of `provider` (`openai`, `anthropic`, `gemini`).
    pub fn base_url(&self, provider: &str) -> String {
        let version = match provider {
            "gemini" => "v1beta",
            _ => "v1",
        };
        format!("http://{}/{provider}/{version}", self.addr)
    }
}

type Keys = Arc<Mutex<Vec<String>>>;

fn header(headers: &HeaderMap, name: &str) -> String {
    let value = headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    value.strip_prefix("Bearer ").unwrap_or(value).to_owned()
}

/// The text of the last message (OpenAI's and Anthropic's `messages`, Gemini's `contents`).
fn prompt(body: &Value) -> String {
    let last = |list: &Value| list.as_array().and_then(|l| l.last()).cloned();
    if let Some(message) = last(&body["messages"]) {
        return match &message["content"] {
            Value::String(text) => text.clone(),
            other => other[0]["text"].as_str().unwrap_or_default().to_owned(),
        };
    }
    last(&body["contents"])
        .and_then(|c| c["parts"][0]["text"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn json(status: u16, body: Value) -> Response {
    (
        StatusCode::from_u16(status).expect("status"),
        axum::Json(body),
    )
        .into_response()
}

fn sse(text: String) -> Response {
    ([("content-type", "text/event-stream")], text).into_response()
}

async fn openai(State(keys): State<Keys>, headers: HeaderMap, body: Bytes) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let key = header(&headers, "authorization");
    keys.lock().await.push(key.clone());
    let error = json!({"error": {
        "message": format!("Incorrect API key provided: {key}. You can find your API key at \
                            https://platform.openai.com/account/api-keys. You said: {}",
                           prompt(&body)),
        "type": "invalid_request_error", "param": null,
        "code": format!("invalid_api_key:{key}")}});
    match body["model"].as_str() {
        Some("fail-midway") => {
            let chunk = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk",
                "created": 0, "model": "fail-midway",
                "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hel"},
                             "finish_reason": null}]});
            sse(format!("data: {chunk}\n\ndata: {error}\n\n"))
        }
        _ => json(401, error),
    }
}

async fn anthropic(State(keys): State<Keys>, headers: HeaderMap, body: Bytes) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let key = header(&headers, "x-api-key");
    keys.lock().await.push(key.clone());
    match body["model"].as_str() {
        Some("fail-midway") => {
            let start = json!({"type": "message_start", "message": {
                "id": "msg_1", "type": "message", "role": "assistant", "content": [],
                "model": "fail-midway", "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": 5, "output_tokens": 1}}});
            let block = json!({"type": "content_block_start", "index": 0,
                               "content_block": {"type": "text", "text": ""}});
            let delta = json!({"type": "content_block_delta", "index": 0,
                               "delta": {"type": "text_delta", "text": "Hel"}});
            let error = json!({"type": "error", "error": {"type": "overloaded_error",
                "message": format!("Overloaded while serving key {key} for: {}", prompt(&body))}});
            sse(format!(
                "event: message_start\ndata: {start}\n\n\
                 event: content_block_start\ndata: {block}\n\n\
                 event: content_block_delta\ndata: {delta}\n\n\
                 event: error\ndata: {error}\n\n"
            ))
        }
        _ => json(
            401,
            json!({"type": "error", "error": {"type": "authentication_error",
                   "message": format!("invalid x-api-key: {key} (request: {})", prompt(&body))}}),
        ),
    }
}

async fn gemini(
    State(keys): State<Keys>,
    Path(target): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let key = header(&headers, "x-goog-api-key");
    keys.lock().await.push(key.clone());
    let model = target.split(':').next().unwrap_or_default();
    match model {
        "fail-midway" => {
            let chunk = json!({"candidates": [{"content": {"parts": [{"text": "Hel"}],
                                                           "role": "model"}}],
                               "modelVersion": "fail-midway"});
            let error = json!({"error": {"code": 500, "status": "INTERNAL",
                "message": format!("Internal error for key {key}: {}", prompt(&body))}});
            sse(format!("data: {chunk}\n\ndata: {error}\n\n"))
        }
        _ => json(
            400,
            json!({"error": {"code": 400, "status": "INVALID_ARGUMENT",
                "message": format!("API key not valid: {key}. Please pass a valid API key. \
                                    Input: {}", prompt(&body)),
                "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                             "reason": "API_KEY_INVALID", "domain": "googleapis.com"}]}}),
        ),
    }
}
