//! A mock OpenAI upstream speaking the real wire format (api.openai.com/v1), recording what it
//! received. Its behaviour is chosen by the request's `model`, so tests need no set-up calls:
//!
//! | model | answer |
//! |---|---|
//! | anything | a normal completion / embedding / image / stream |
//! | chat with tools, the last message not a `tool` result | a call of the first tool |
//! | `error-400`, `error-401`, `error-404`, `error-429`, `error-500`, `error-503` | that status with OpenAI's error body |
//! | `slow` | answers after 3 s |
//! | `delay-<ms>` | a normal answer after `<ms>` ms (at most 10 s) |
//! | `endless` | a stream that never ends (a chunk every 20 ms) until the client goes away |
//! | `paced-<ms>` | a stream of a chunk every 20 ms for about `<ms>` ms, then usage and `[DONE]` |
//! | `garbage` | 200 with a body that is not JSON |
//! | `spell` | the last user message's text as the reply; streamed 3 characters a chunk |
//!
//! The Responses API (`/v1/responses`) is strict, as the real one: see `mock_openai/responses.rs`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use tokio::sync::Mutex;

pub mod responses;

/// The reply text of every mock chat completion.
pub const REPLY: &str = "Hello from the mock upstream!";
/// The usage every mock chat completion reports.
pub const PROMPT_TOKENS: u64 = 13;
pub const COMPLETION_TOKENS: u64 = 7;
pub const CACHED_TOKENS: u64 = 5;

/// One request the mock received.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// The path of a POST; the Responses API's other calls are noted as `GET /v1/responses/..`
    /// and `DELETE /v1/responses/..`.
    pub path: String,
    pub headers: HeaderMap,
    pub body: Value,
}

#[derive(Default)]
pub struct Shared {
    pub requests: Mutex<Vec<Recorded>>,
    /// Endless streams whose client (the gateway) went away.
    pub cancelled_streams: AtomicUsize,
    /// Endless streams that started.
    pub started_streams: AtomicUsize,
    /// The request target (path and query, as sent) of every request that arrived, routed or
    /// not.
    pub targets: Mutex<Vec<String>>,
    /// Chat requests each `flaky-N` model has had so far.
    pub flaky: Mutex<std::collections::HashMap<String, u32>>,
    /// Responses kept (`store` not false), by id.
    pub responses: Mutex<std::collections::HashMap<String, responses::Stored>>,
    /// The last number in the Responses API's ids.
    pub response_ids: Mutex<u64>,
    /// Hashes of the Responses contexts' prefixes seen, for `cached_tokens`.
    pub response_prefixes: Mutex<std::collections::HashSet<String>>,
    /// The embedding of each text a test chose (there is no embeddings model offline); other
    /// texts get [`DEFAULT_EMBEDDING`].
    pub vectors: Mutex<std::collections::HashMap<String, Vec<f32>>>,
    /// Upgrades to the Responses API's WebSocket mode accepted, and `response.create` events
    /// received on them (`responses/socket.rs`).
    pub socket_upgrades: AtomicUsize,
    pub socket_turns: AtomicUsize,
    /// Refuse those upgrades (404), as an upstream without WebSocket mode does.
    pub refuse_sockets: std::sync::atomic::AtomicBool,
}

/// The embedding of a text no test chose one for.
pub const DEFAULT_EMBEDDING: [f32; 3] = [0.25, -0.5, 0.75];

pub struct MockOpenAi {
    pub addr: SocketAddr,
    pub shared: Arc<Shared>,
}

impl MockOpenAi {
    pub async fn start() -> Self {
        let shared = Arc::new(Shared::default());
        let app = Router::new()
            .route("/v1/chat/completions", post(chat))
            .route("/v1/embeddings", post(embeddings))
            .route("/v1/images/generations", post(images))
            .route("/v1/models", get(models))
            .route(
                "/v1/responses",
                post(responses::create).get(responses::socket::upgrade),
            )
            .route("/v1/responses/input_tokens", post(responses::input_tokens))
            .route("/v1/responses/compact", post(responses::compact::compact))
            .route(
                "/v1/responses/{id}",
                get(responses::retrieve).delete(responses::delete),
            )
            .route(
                "/v1/responses/{id}/input_items",
                get(responses::input_items),
            )
            .layer(axum::middleware::from_fn_with_state(
                Arc::clone(&shared),
                note_target,
            ))
            .with_state(Arc::clone(&shared));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind mock");
        let addr = listener.local_addr().expect("mock addr");
        tokio::spawn(async move {
            axum::serve(listener, app).await.ok();
        });
        Self { addr, shared }
    }

    /// The `base_url` to configure: `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Makes `vector` the embedding of `text` from now on.
    pub async fn set_embedding(&self, text: &str, vector: &[f32]) {
        self.shared
            .vectors
            .lock()
            .await
            .insert(text.to_owned(), vector.to_vec());
    }

    pub async fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().await.clone()
    }

    pub async fn last_request(&self) -> Recorded {
        self.requests()
            .await
            .pop()
            .expect("the mock received no request")
    }

    /// The target (path and query) of every request that arrived, in order.
    pub async fn targets(&self) -> Vec<String> {
        self.shared.targets.lock().await.clone()
    }
}

/// Notes the raw target of every request, before routing (so a 404 is noted too).
async fn note_target(
    State(shared): State<Arc<Shared>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    shared.targets.lock().await.push(request.uri().to_string());
    next.run(request).await
}

async fn record(shared: &Shared, path: &str, headers: &HeaderMap, body: &Bytes) -> Value {
    let body: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    shared.requests.lock().await.push(Recorded {
        path: path.to_owned(),
        headers: headers.clone(),
        body: body.clone(),
    });
    body
}

/// The behaviour a model name selects, if it is not the normal one.
async fn special(model: &str) -> Option<Response> {
    if let Some(code) = model.strip_prefix("error-") {
        let status = code.parse::<u16>().ok()?;
        let (kind, message, param, code) = match status {
            400 => (
                "invalid_request_error",
                "Invalid value for 'temperature': must be at most 2.",
                Some("temperature"),
                Some("invalid_value"),
            ),
            401 => (
                "invalid_request_error",
                "Incorrect API key provided: sk-te*****.",
                None,
                Some("invalid_api_key"),
            ),
            404 => (
                "invalid_request_error",
                "The model `error-404` does not exist or you do not have access to it.",
                Some("model"),
                Some("model_not_found"),
            ),
            429 => (
                "rate_limit_error",
                "Rate limit reached for requests.",
                None,
                Some("rate_limit_exceeded"),
            ),
            _ => (
                "server_error",
                "The server had an error while processing your request.",
                None,
                None,
            ),
        };
        let body =
            json!({"error": {"message": message, "type": kind, "param": param, "code": code}});
        return Some((StatusCode::from_u16(status).ok()?, axum::Json(body)).into_response());
    }
    match model {
        "slow" => {
            tokio::time::sleep(Duration::from_secs(3)).await;
            None
        }
        "garbage" => Some((StatusCode::OK, "<html>not json</html>").into_response()),
        _ => {
            let ms = model.strip_prefix("delay-")?.parse::<u64>().ok()?;
            tokio::time::sleep(Duration::from_millis(ms.min(10_000))).await;
            None
        }
    }
}

async fn chat(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let request = record(&shared, "/v1/chat/completions", &headers, &body).await;
    let model = request["model"].as_str().unwrap_or_default().to_owned();
    if let Some(response) = special(&model).await {
        return response;
    }
    // `flaky-N`: the first N chat requests for it get OpenAI's 503, the later ones an answer.
    if let Some(failures) = model
        .strip_prefix("flaky-")
        .and_then(|n| n.parse::<u32>().ok())
    {
        let mut seen = shared.flaky.lock().await;
        let count = seen.entry(model.clone()).or_default();
        *count += 1;
        if *count <= failures {
            let body = json!({"error": {"message": "The engine is currently overloaded, please try again later.", "type": "server_error", "param": null, "code": null}});
            return (StatusCode::SERVICE_UNAVAILABLE, axum::Json(body)).into_response();
        }
    }
    if let Some(index) = orphan_tool_message(&request) {
        // OpenAI's answer to a tool result that answers no call of the assistant turn before it.
        let body = json!({"error": {
            "message": "Invalid parameter: messages with role 'tool' must be a response to a \
                        preceeding message with 'tool_calls'.",
            "type": "invalid_request_error",
            "param": format!("messages.[{index}].role"),
            "code": null,
        }});
        return (StatusCode::BAD_REQUEST, axum::Json(body)).into_response();
    }
    let stream = request["stream"].as_bool().unwrap_or(false);
    let include_usage = request["stream_options"]["include_usage"]
        .as_bool()
        .unwrap_or(false);
    // Tools given: a call of the first, unless the conversation ends with its result (so a
    // client's tool round trip, e.g. an SDK's through a translating gateway, gets its answer).
    let answered = request["messages"]
        .as_array()
        .and_then(|m| m.last())
        .is_some_and(|m| m["role"] == "tool");
    let tool = request["tools"][0]["function"]["name"]
        .as_str()
        .filter(|_| !answered)
        .map(str::to_owned);
    if model == "endless" {
        return endless(shared);
    }
    if let Some(ms) = model.strip_prefix("paced-").and_then(|ms| ms.parse().ok()) {
        return paced(&model, ms);
    }
    let spelled = (model == "spell").then(|| {
        let last = request["messages"].as_array().and_then(|m| m.last());
        last.and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_owned()
    });
    let reply = spelled.as_deref().unwrap_or(REPLY);
    if stream {
        return stream_chat(
            &model,
            tool.as_deref(),
            include_usage,
            reply,
            spelled.is_some(),
        );
    }
    let message = match &tool {
        Some(name) => {
            json!({"role": "assistant", "content": null, "refusal": null, "tool_calls": [{
            "id": "call_abc123", "type": "function",
            "function": {"name": name, "arguments": "{\"city\":\"Paris\"}"}}]})
        }
        None => json!({"role": "assistant", "content": reply, "refusal": null}),
    };
    axum::Json(json!({
        "id": "chatcmpl-mock123",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": null,
                     "finish_reason": if tool.is_some() { "tool_calls" } else { "stop" }}],
        "usage": usage(),
        "system_fingerprint": "fp_mock"
    }))
    .into_response()
}

fn usage() -> Value {
    json!({
        "prompt_tokens": PROMPT_TOKENS,
        "completion_tokens": COMPLETION_TOKENS,
        "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS,
        "prompt_tokens_details": {"cached_tokens": CACHED_TOKENS, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
            "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
    })
}

fn chunk(model: &str, delta: Value, finish: Option<&str>, include_usage: bool) -> Value {
    let mut chunk = json!({
        "id": "chatcmpl-mock123", "object": "chat.completion.chunk", "created": 1_700_000_000,
        "model": model, "system_fingerprint": "fp_mock",
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]
    });
    if include_usage {
        // With include_usage, OpenAI sends `"usage": null` on every chunk but the last.
        chunk["usage"] = Value::Null;
    }
    chunk
}

/// A stream as OpenAI sends it, delivered in 7-byte pieces so that events, `data:` prefixes and
/// the blank lines between events are all split across reads.
fn stream_chat(
    model: &str,
    tool: Option<&str>,
    include_usage: bool,
    reply: &str,
    spell: bool,
) -> Response {
    let mut events = vec![chunk(
        model,
        json!({"role": "assistant", "content": ""}),
        None,
        include_usage,
    )];
    match tool {
        Some(name) => {
            events.push(chunk(
                model,
                json!({"tool_calls": [{"index": 0, "id": "call_abc123", "type": "function",
                "function": {"name": name, "arguments": ""}}]}),
                None,
                include_usage,
            ));
            for part in ["{\"city\"", ":\"Paris\"}"] {
                events.push(chunk(
                    model,
                    json!({"tool_calls": [{"index": 0, "function": {"arguments": part}}]}),
                    None,
                    include_usage,
                ));
            }
            events.push(chunk(model, json!({}), Some("tool_calls"), include_usage));
        }
        None => {
            let chars: Vec<char> = reply.chars().collect();
            let pieces: Vec<String> = if spell {
                chars.chunks(3).map(|c| c.iter().collect()).collect()
            } else {
                reply.split_inclusive(' ').map(str::to_owned).collect()
            };
            for piece in pieces {
                events.push(chunk(model, json!({"content": piece}), None, include_usage));
            }
            events.push(chunk(model, json!({}), Some("stop"), include_usage));
        }
    }
    if include_usage {
        events.push(json!({
            "id": "chatcmpl-mock123", "object": "chat.completion.chunk", "created": 1_700_000_000,
            "model": model, "system_fingerprint": "fp_mock", "choices": [], "usage": usage()
        }));
    }
    let mut text = String::new();
    for event in events {
        text.push_str(&format!("data: {event}\n\n"));
    }
    text.push_str("data: [DONE]\n\n");
    let pieces: Vec<Bytes> = text
        .into_bytes()
        .chunks(7)
        .map(Bytes::copy_from_slice)
        .collect();
    let body = futures_util::stream::iter(pieces).then(|piece| async move {
        // A pause makes each piece its own read on the gateway's side.
        tokio::time::sleep(Duration::from_micros(200)).await;
        Ok::<_, std::convert::Infallible>(piece)
    });
    sse(Body::from_stream(body))
}

use futures_util::StreamExt;

fn sse(body: Body) -> Response {
    ([("content-type", "text/event-stream")], body).into_response()
}

/// Sends a chunk every 20 ms until the receiver goes away, then counts the cancellation.
fn endless(shared: Arc<Shared>) -> Response {
    struct OnDrop(Arc<Shared>);
    impl Drop for OnDrop {
        fn drop(&mut self) {
            self.0.cancelled_streams.fetch_add(1, Ordering::SeqCst);
        }
    }
    shared.started_streams.fetch_add(1, Ordering::SeqCst);
    let guard = OnDrop(shared);
    let body = futures_util::stream::unfold((0u64, guard), |(i, guard)| async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let event = chunk("endless", json!({"content": format!("t{i} ")}), None, true);
        Some((
            Ok::<_, std::convert::Infallible>(Bytes::from(format!("data: {event}\n\n"))),
            (i + 1, guard),
        ))
    });
    sse(Body::from_stream(body))
}

/// The chunks `t0 `, `t1 `, ... one every 20 ms for about `ms` ms, then the usage chunk and
/// `[DONE]`: a stream that is still running when a test reloads or stops the gateway.
fn paced(model: &str, ms: u64) -> Response {
    let model = model.to_owned();
    let count = (ms / 20).max(1);
    let body = futures_util::stream::unfold(0u64, move |i| {
        let model = model.clone();
        async move {
            let event = if i < count {
                tokio::time::sleep(Duration::from_millis(20)).await;
                let event = chunk(&model, json!({"content": format!("t{i} ")}), None, true);
                format!("data: {event}\n\n")
            } else if i == count {
                let event = json!({
                    "id": "chatcmpl-mock123", "object": "chat.completion.chunk",
                    "created": 1_700_000_000, "model": model, "choices": [], "usage": usage()
                });
                format!("data: {event}\n\ndata: [DONE]\n\n")
            } else {
                return None;
            };
            Some((Ok::<_, std::convert::Infallible>(Bytes::from(event)), i + 1))
        }
    });
    sse(Body::from_stream(body))
}

async fn embeddings(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request = record(&shared, "/v1/embeddings", &headers, &body).await;
    let model = request["model"].as_str().unwrap_or_default().to_owned();
    if let Some(response) = special(&model).await {
        return response;
    }
    let inputs = match &request["input"] {
        Value::Array(items) => items.clone(),
        other => vec![other.clone()],
    };
    let vectors = shared.vectors.lock().await;
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(i, input)| {
            let vector = input
                .as_str()
                .and_then(|text| vectors.get(text))
                .map_or(DEFAULT_EMBEDDING.to_vec(), Clone::clone);
            json!({"object": "embedding", "index": i, "embedding": vector})
        })
        .collect();
    axum::Json(json!({"object": "list", "data": data, "model": model,
                      "usage": {"prompt_tokens": 8, "total_tokens": 8}}))
    .into_response()
}

async fn images(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let request = record(&shared, "/v1/images/generations", &headers, &body).await;
    let model = request["model"].as_str().unwrap_or_default().to_owned();
    if let Some(response) = special(&model).await {
        return response;
    }
    let n = request["n"].as_u64().unwrap_or(1);
    let data: Vec<Value> = (0..n)
        .map(|i| json!({"url": format!("https://images.example/{i}.png"), "revised_prompt": request["prompt"]}))
        .collect();
    axum::Json(json!({"created": 1_700_000_000, "data": data})).into_response()
}

async fn models(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    record(&shared, "/v1/models", &headers, &Bytes::new()).await;
    axum::Json(json!({"object": "list", "data": [
        {"id": "gpt-4o-mini", "object": "model", "created": 1_721_172_741, "owned_by": "system"},
        {"id": "text-embedding-3-small", "object": "model", "created": 1_705_948_997, "owned_by": "system"}
    ]}))
    .into_response()
}

/// The index of a `tool` message whose `tool_call_id` no earlier assistant turn's `tool_calls`
/// (since the last non-tool message) named, as OpenAI refuses it.
fn orphan_tool_message(request: &Value) -> Option<usize> {
    let messages = request["messages"].as_array()?;
    let mut open: Vec<&str> = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        match message["role"].as_str() {
            Some("assistant") => {
                open = message["tool_calls"]
                    .as_array()
                    .map(|calls| calls.iter().filter_map(|c| c["id"].as_str()).collect())
                    .unwrap_or_default();
            }
            Some("tool") => {
                let id = message["tool_call_id"].as_str().unwrap_or_default();
                if !open.contains(&id) {
                    return Some(i);
                }
            }
            _ => open.clear(),
        }
    }
    None
}
