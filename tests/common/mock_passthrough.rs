//! A mock upstream for the pass-through routes, strict as the real APIs on what the gateway
//! must get right: OpenAI's fine-tuning jobs (create: `model` and `training_file` required, no
//! unknown fields; list with `limit`; retrieve, 404 in OpenAI's error shape for an unknown id),
//! vector stores (create and list), chat completions (whole and streamed, with usage), an upload
//! counted as it streams, a file's content (bytes, `application/octet-stream`), and Anthropic's
//! message batches list (`x-api-key` and
//! `anthropic-version` required). Every route refuses a request without the upstream key, or
//! with any of the gateway's own headers, and records what it received.

// A refusal is the response itself, as axum handlers return it.
#![allow(clippy::result_large_err)]

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::sync::Mutex;

pub const OPENAI_KEY: &str = "sk-mock-passthrough-openai";
pub const ANTHROPIC_KEY: &str = "sk-ant-mock-passthrough";
/// What the chat completions report.
pub const PROMPT_TOKENS: u64 = 31;
pub const COMPLETION_TOKENS: u64 = 9;
/// The content of file `file-abc`: bytes that are not text.
pub const FILE_BYTES: &[u8] = &[0x89, b'P', b'N', b'G', 0, 0xff, 1, 2];

/// One request the mock received.
#[derive(Clone, Debug)]
pub struct Received {
    pub method: String,
    /// The path and query as they arrived.
    pub uri: String,
    pub headers: HeaderMap,
    pub body_len: usize,
}

#[derive(Default)]
struct Shared {
    received: Mutex<Vec<Received>>,
    /// Bytes of uploads received so far, counted as they arrive.
    progress: Arc<std::sync::atomic::AtomicUsize>,
    /// The fine-tuning jobs' bodies, as they arrived.
    jobs: Mutex<Vec<Value>>,
}

pub struct MockPassthrough {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
}

impl MockPassthrough {
    pub async fn start() -> Self {
        let shared = Arc::new(Shared::default());
        let app = Router::new()
            .route("/v1/fine_tuning/jobs", post(create_job).get(list_jobs))
            .route("/v1/fine_tuning/jobs/{id}", get(retrieve_job))
            .route("/v1/vector_stores", post(create_store).get(list_stores))
            .route("/v1/chat/completions", post(chat))
            .route("/v1/uploads/blob", post(upload))
            .route("/v1/files/{id}/content", get(file_content))
            .route("/anthropic/v1/messages/batches", get(batches))
            .fallback(|| async {
                error(
                    StatusCode::NOT_FOUND,
                    "Invalid URL",
                    "invalid_request_error",
                )
            })
            .layer(axum::middleware::from_fn_with_state(
                Arc::clone(&shared),
                record,
            ))
            .with_state(Arc::clone(&shared));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.ok() });
        Self { addr, shared }
    }

    /// OpenAI's base URL on this mock.
    pub fn openai_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Anthropic's base URL on this mock.
    pub fn anthropic_url(&self) -> String {
        format!("http://{}/anthropic/v1", self.addr)
    }

    /// Bytes of uploads received so far.
    pub fn progress(&self) -> Arc<std::sync::atomic::AtomicUsize> {
        Arc::clone(&self.shared.progress)
    }

    pub async fn received(&self) -> Vec<Received> {
        self.shared.received.lock().await.clone()
    }

    /// The bodies of the fine-tuning jobs created.
    pub async fn jobs(&self) -> Vec<Value> {
        self.shared.jobs.lock().await.clone()
    }
}

/// Records every request (its body length is filled in by the handlers that read it), and
/// refuses one that carries the gateway's own headers: they must never leave the gateway.
async fn record(
    State(shared): State<Arc<Shared>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let headers = request.headers().clone();
    shared.received.lock().await.push(Received {
        method: request.method().to_string(),
        uri: request.uri().to_string(),
        headers: headers.clone(),
        body_len: 0,
    });
    let leaked = [
        "x-project-id",
        "x-wasmgate-cache",
        "cookie",
        "x-forwarded-for",
    ]
    .iter()
    .find(|name| headers.contains_key(**name));
    if let Some(name) = leaked {
        return error(
            StatusCode::BAD_REQUEST,
            &format!("the gateway forwarded its own header {name}"),
            "invalid_request_error",
        );
    }
    next.run(request).await
}

fn error(status: StatusCode, message: &str, kind: &str) -> Response {
    let body = json!({"error": {"message": message, "type": kind, "param": null, "code": null}});
    (status, axum::Json(body)).into_response()
}

/// OpenAI's key check: `Authorization: Bearer <the upstream key>`, nothing else.
fn openai_auth(headers: &HeaderMap) -> Result<(), Response> {
    let value = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if value != Some(&format!("Bearer {OPENAI_KEY}")) {
        return Err(error(
            StatusCode::UNAUTHORIZED,
            "Incorrect API key provided.",
            "invalid_request_error",
        ));
    }
    Ok(())
}

/// A JSON body of an object, with only `allowed` fields and `required` ones present.
fn object(body: &Bytes, allowed: &[&str], required: &[&str]) -> Result<Value, Response> {
    let bad = |m: String| error(StatusCode::BAD_REQUEST, &m, "invalid_request_error");
    let value: Value = serde_json::from_slice(body).map_err(|e| bad(format!("bad JSON: {e}")))?;
    let map = value
        .as_object()
        .ok_or_else(|| bad("not an object".to_owned()))?;
    if let Some(unknown) = map.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(bad(format!(
            "Unrecognized request argument supplied: {unknown}"
        )));
    }
    if let Some(missing) = required.iter().find(|r| !map.contains_key(**r)) {
        return Err(bad(format!("Missing required parameter: '{missing}'.")));
    }
    Ok(value)
}

fn job(id: &str, model: &str, training_file: &str) -> Value {
    with_metadata(id, model, training_file, Value::Null)
}

/// A job as the API describes it, with the `metadata` it was created with.
fn with_metadata(id: &str, model: &str, training_file: &str, metadata: Value) -> Value {
    json!({
        "metadata": metadata,
        "object": "fine_tuning.job", "id": id, "model": model, "created_at": 1_700_000_000,
        "finished_at": null, "fine_tuned_model": null, "organization_id": "org-mock",
        "result_files": [], "status": "validating_files", "validation_file": null,
        "training_file": training_file, "hyperparameters": {"n_epochs": "auto"},
        "trained_tokens": null, "error": null, "seed": 42
    })
}

async fn create_job(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, Response> {
    openai_auth(&headers)?;
    let allowed = [
        "model",
        "training_file",
        "hyperparameters",
        "suffix",
        "validation_file",
        "integrations",
        "seed",
        "method",
        "metadata",
    ];
    let body = object(&body, &allowed, &["model", "training_file"])?;
    shared.jobs.lock().await.push(body.clone());
    let model = body["model"].as_str().unwrap_or_default();
    let file = body["training_file"].as_str().unwrap_or_default();
    let created = with_metadata("ftjob-mock1", model, file, body["metadata"].clone());
    Ok(axum::Json(created).into_response())
}

async fn list_jobs(
    headers: HeaderMap,
    Query(query): Query<std::collections::HashMap<String, String>>,
) -> Result<Response, Response> {
    openai_auth(&headers)?;
    let limit: usize = query
        .get("limit")
        .and_then(|l| l.parse().ok())
        .unwrap_or(20);
    let data: Vec<Value> = (1..=3)
        .map(|i| {
            job(
                &format!("ftjob-mock{i}"),
                "gpt-4o-mini-2024-07-18",
                "file-abc",
            )
        })
        .take(limit)
        .collect();
    Ok(axum::Json(json!({"object": "list", "data": data, "has_more": limit < 3})).into_response())
}

async fn retrieve_job(headers: HeaderMap, Path(id): Path<String>) -> Result<Response, Response> {
    openai_auth(&headers)?;
    if id != "ftjob-mock1" {
        return Err(error(
            StatusCode::NOT_FOUND,
            &format!("Could not find fine tune job: {id}"),
            "invalid_request_error",
        ));
    }
    Ok(axum::Json(job(&id, "gpt-4o-mini-2024-07-18", "file-abc")).into_response())
}

fn store(name: &str) -> Value {
    json!({
        "id": "vs_mock1", "object": "vector_store", "created_at": 1_700_000_000, "name": name,
        "usage_bytes": 0, "file_counts": {"in_progress": 0, "completed": 0, "failed": 0,
        "cancelled": 0, "total": 0}, "status": "completed", "expires_after": null,
        "expires_at": null, "last_active_at": 1_700_000_000, "metadata": {}
    })
}

async fn create_store(headers: HeaderMap, body: Bytes) -> Result<Response, Response> {
    openai_auth(&headers)?;
    let allowed = [
        "name",
        "file_ids",
        "expires_after",
        "chunking_strategy",
        "metadata",
        "description",
    ];
    let body = object(&body, &allowed, &[])?;
    Ok(axum::Json(store(body["name"].as_str().unwrap_or_default())).into_response())
}

async fn list_stores(headers: HeaderMap) -> Result<Response, Response> {
    openai_auth(&headers)?;
    let body = json!({"object": "list", "data": [store("docs")], "first_id": "vs_mock1",
                      "last_id": "vs_mock1", "has_more": false});
    Ok(axum::Json(body).into_response())
}

async fn chat(headers: HeaderMap, body: Bytes) -> Result<Response, Response> {
    openai_auth(&headers)?;
    let allowed = [
        "model",
        "messages",
        "stream",
        "stream_options",
        "max_tokens",
        "temperature",
    ];
    let body = object(&body, &allowed, &["model", "messages"])?;
    let model = "gpt-4o-mini";
    // "Repeat: <text>" as the last message is answered with the text, streamed four characters
    // in the first chunk and five in each after; anything else with "Passed.".
    let last = body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default();
    let content = last
        .strip_prefix("Repeat: ")
        .unwrap_or("Passed.")
        .to_owned();
    let usage = json!({"prompt_tokens": PROMPT_TOKENS, "completion_tokens": COMPLETION_TOKENS,
                       "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS});
    if body["stream"] != json!(true) {
        let answer = json!({
            "id": "chatcmpl-pt", "object": "chat.completion", "created": 1, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "stop"}],
            "usage": usage
        });
        return Ok(axum::Json(answer).into_response());
    }
    let wants_usage = body["stream_options"]["include_usage"] == json!(true);
    let chunk = |delta: Value, finish: Value, usage: Value| {
        let mut c = json!({"id": "chatcmpl-pt", "object": "chat.completion.chunk", "created": 1,
                           "model": model, "choices": [{"index": 0, "delta": delta,
                           "finish_reason": finish}]});
        if !usage.is_null() {
            c["choices"] = json!([]);
            c["usage"] = usage;
        }
        format!("data: {c}\n\n")
    };
    let chars: Vec<char> = content.chars().collect();
    let (first, rest) = chars.split_at(chars.len().min(4));
    let mut events = vec![chunk(
        json!({"role": "assistant", "content": first.iter().collect::<String>()}),
        Value::Null,
        Value::Null,
    )];
    for piece in rest.chunks(5) {
        let piece: String = piece.iter().collect();
        events.push(chunk(json!({"content": piece}), Value::Null, Value::Null));
    }
    events.push(chunk(json!({}), json!("stop"), Value::Null));
    if wants_usage {
        events.push(chunk(Value::Null, Value::Null, usage));
    }
    events.push("data: [DONE]\n\n".to_owned());
    let stream = futures_util::stream::iter(events.into_iter().map(Ok::<_, std::io::Error>));
    Ok((
        [(header::CONTENT_TYPE, "text/event-stream")],
        Body::from_stream(stream),
    )
        .into_response())
}

/// `GET /v1/files/{id}/content`: the file's bytes, as the API sends them.
async fn file_content(headers: HeaderMap, Path(id): Path<String>) -> Result<Response, Response> {
    openai_auth(&headers)?;
    if id != "file-abc" {
        return Err(error(
            StatusCode::NOT_FOUND,
            &format!("No such File object: {id}"),
            "invalid_request_error",
        ));
    }
    Ok((
        [(header::CONTENT_TYPE, "application/octet-stream")],
        FILE_BYTES.to_vec(),
    )
        .into_response())
}

/// Counts an upload's bytes as they arrive and answers with the count: never held whole.
async fn upload(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Response> {
    openai_auth(&headers)?;
    let mut stream = body.into_data_stream();
    let mut len = 0usize;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|_| {
            error(
                StatusCode::BAD_REQUEST,
                "broken body",
                "invalid_request_error",
            )
        })?;
        len += chunk.len();
        shared
            .progress
            .fetch_add(chunk.len(), std::sync::atomic::Ordering::SeqCst);
    }
    if let Some(last) = shared.received.lock().await.last_mut() {
        last.body_len = len;
    }
    Ok(axum::Json(json!({"object": "upload", "bytes": len})).into_response())
}

/// Anthropic's `GET /v1/messages/batches`: `x-api-key` and `anthropic-version` required.
async fn batches(headers: HeaderMap) -> Response {
    let anthropic_error = |status: StatusCode, kind: &str, message: &str| {
        let body = json!({"type": "error", "error": {"type": kind, "message": message}});
        (status, axum::Json(body)).into_response()
    };
    if headers.get("x-api-key").and_then(|v| v.to_str().ok()) != Some(ANTHROPIC_KEY) {
        return anthropic_error(
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            "invalid x-api-key",
        );
    }
    if headers.get(header::AUTHORIZATION).is_some() {
        return anthropic_error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "two credentials",
        );
    }
    if headers.get("anthropic-version").is_none() {
        return anthropic_error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "anthropic-version: header is required",
        );
    }
    axum::Json(json!({"data": [], "has_more": false, "first_id": null, "last_id": null}))
        .into_response()
}
