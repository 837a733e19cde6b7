//! A mock of OpenAI's Files and Batch APIs, strict as the reference (api.openai.com/v1 `files`
//! and `batches`), also mounted as Azure OpenAI's (`/openai/files?api-version=...`, key in
//! `api-key`):
//! - `POST /v1/files`: multipart with `purpose` (one of OpenAI's) and `file` (with a file name);
//!   a `batch` file's every line a JSON object with a unique `custom_id`, `method: POST`, a
//!   `url` and a `body` with a `model`. Files are kept on disk, never in memory, and their bytes
//!   counted and hashed as they arrive.
//! - `GET /v1/files/{id}/content` streams a file back; `DELETE /v1/files/{id}`.
//! - `POST /v1/batches`: `input_file_id` (a `batch` file), `endpoint` (every line's `url`),
//!   `completion_window: 24h`. Each `GET /v1/batches/{id}` moves it one step along
//!   `validating → in_progress → finalizing → completed`; `cancel` makes it `cancelling`, then
//!   `cancelled` with the lines "run" so far (half) in its output file. At the end, the output
//!   file has one line per request that succeeded (usage: [`PROMPT_TOKENS`] in, the line's
//!   `max_tokens` out), the error file one per line whose first message says `fail`.

#![allow(clippy::result_large_err)]

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;
use tokio::sync::Mutex;

pub const API_KEY: &str = "sk-mock-batches-upstream";
/// Prompt tokens every batch request reports.
pub const PROMPT_TOKENS: u64 = 100;
const PURPOSES: [&str; 6] = [
    "assistants",
    "batch",
    "fine-tune",
    "vision",
    "user_data",
    "evals",
];

#[derive(Clone, Debug)]
pub struct MockFile {
    pub id: String,
    pub purpose: String,
    pub filename: String,
    pub bytes: u64,
    pub sha256: String,
    path: PathBuf,
}

#[derive(Clone, Debug)]
pub struct MockBatch {
    pub id: String,
    pub status: String,
    pub endpoint: String,
    pub input_file_id: String,
    pub output_file_id: Option<String>,
    pub error_file_id: Option<String>,
    pub created_at: i64,
    /// When it completed or was cancelled.
    pub ended_at: Option<i64>,
    /// How often it was retrieved.
    pub polls: u32,
}

#[derive(Default)]
struct Shared {
    files: Mutex<HashMap<String, MockFile>>,
    batches: Mutex<HashMap<String, MockBatch>>,
    /// Every request, as `METHOD path`.
    calls: Mutex<Vec<String>>,
    dir: PathBuf,
    next: std::sync::atomic::AtomicU64,
}

pub struct MockBatches {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
}

fn routes() -> Router<Arc<Shared>> {
    Router::new()
        .route("/files", post(upload).get(list_files))
        .route("/files/{id}", get(retrieve_file).delete(delete_file))
        .route("/files/{id}/content", get(content))
        .route("/batches", post(create_batch))
        .route("/batches/{id}", get(retrieve_batch))
        .route("/batches/{id}/cancel", post(cancel_batch))
}

impl MockBatches {
    pub async fn start() -> Self {
        let dir = std::env::temp_dir().join(format!(
            "wasmgate-mock-batches-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let shared = Arc::new(Shared {
            dir,
            ..Shared::default()
        });
        let app = Router::new()
            .nest("/v1", routes().layer(axum::middleware::from_fn(openai_key)))
            .nest(
                "/openai",
                routes().layer(axum::middleware::from_fn(azure_key)),
            )
            .layer(axum::extract::DefaultBodyLimit::disable())
            .with_state(Arc::clone(&shared));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.ok() });
        Self { addr, shared }
    }

    pub fn openai_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn azure_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub async fn files(&self) -> Vec<MockFile> {
        self.shared.files.lock().await.values().cloned().collect()
    }

    pub async fn batches(&self) -> Vec<MockBatch> {
        self.shared.batches.lock().await.values().cloned().collect()
    }

    pub async fn calls(&self) -> Vec<String> {
        self.shared.calls.lock().await.clone()
    }

    /// The text of upstream file `id`.
    pub async fn file_text(&self, id: &str) -> String {
        let path = self.shared.files.lock().await[id].path.clone();
        std::fs::read_to_string(path).unwrap()
    }
}

impl Drop for MockBatches {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.shared.dir);
    }
}

fn error(status: StatusCode, message: &str, param: Option<&str>) -> Response {
    (
        status,
        axum::Json(json!({"error": {"message": message, "type": "invalid_request_error", "param": param, "code": null}})),
    )
        .into_response()
}

async fn openai_key(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let expected = format!("Bearer {API_KEY}");
    match request.headers().get(header::AUTHORIZATION) {
        Some(v) if v.to_str().ok() == Some(expected.as_str()) => next.run(request).await,
        _ => error(
            StatusCode::UNAUTHORIZED,
            "Incorrect API key provided.",
            None,
        ),
    }
}

async fn azure_key(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let versioned = request
        .uri()
        .query()
        .is_some_and(|q| q.split('&').any(|p| p.starts_with("api-version=20")));
    if !versioned {
        return error(StatusCode::NOT_FOUND, "api-version is required", None);
    }
    match request.headers().get("api-key") {
        Some(v) if v.to_str().ok() == Some(API_KEY) => next.run(request).await,
        _ => error(
            StatusCode::UNAUTHORIZED,
            "Access denied: invalid key.",
            None,
        ),
    }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn file_json(f: &MockFile) -> Value {
    json!({"id": f.id, "object": "file", "bytes": f.bytes, "created_at": now(),
           "filename": f.filename, "purpose": f.purpose, "status": "processed"})
}

async fn record(shared: &Shared, call: String) {
    shared.calls.lock().await.push(call);
}

async fn upload(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Body) -> Response {
    record(&shared, "POST /files".into()).await;
    let Some(boundary) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| multer::parse_boundary(v).ok())
    else {
        return error(
            StatusCode::BAD_REQUEST,
            "multipart/form-data expected",
            None,
        );
    };
    let mut form = multer::Multipart::new(body.into_data_stream(), boundary);
    let (mut purpose, mut file) = (None, None);
    while let Ok(Some(mut field)) = form.next_field().await {
        match field.name() {
            Some("purpose") => purpose = field.text().await.ok(),
            Some("file") => {
                let Some(filename) = field.file_name().map(str::to_owned) else {
                    return error(
                        StatusCode::BAD_REQUEST,
                        "`file` needs a file name",
                        Some("file"),
                    );
                };
                let n = shared
                    .next
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let id = format!("file-up{n:06}");
                let path = shared.dir.join(&id);
                let mut out = tokio::fs::File::create(&path).await.unwrap();
                let (mut bytes, mut hash) = (0u64, Sha256::new());
                while let Ok(Some(chunk)) = field.chunk().await {
                    bytes += chunk.len() as u64;
                    hash.update(&chunk);
                    out.write_all(&chunk).await.unwrap();
                }
                out.flush().await.unwrap();
                file = Some(MockFile {
                    id,
                    purpose: String::new(),
                    filename,
                    bytes,
                    sha256: hex::encode(hash.finalize()),
                    path,
                });
            }
            _ => {}
        }
    }
    let Some(purpose) = purpose.filter(|p| PURPOSES.contains(&p.as_str())) else {
        return error(
            StatusCode::BAD_REQUEST,
            "`purpose` must be one of OpenAI's",
            Some("purpose"),
        );
    };
    let Some(mut file) = file else {
        return error(StatusCode::BAD_REQUEST, "`file` is required", Some("file"));
    };
    file.purpose = purpose;
    if file.purpose == "batch" {
        if file.bytes > 200 << 20 {
            return error(
                StatusCode::BAD_REQUEST,
                "a batch file is at most 200 MB",
                Some("file"),
            );
        }
        let text = std::fs::read_to_string(&file.path).unwrap_or_default();
        if let Err(message) = check_batch_lines(&text) {
            return error(StatusCode::BAD_REQUEST, &message, Some("file"));
        }
    }
    let answer = file_json(&file);
    shared.files.lock().await.insert(file.id.clone(), file);
    axum::Json(answer).into_response()
}

fn check_batch_lines(text: &str) -> Result<(), String> {
    let mut ids = HashSet::new();
    for (i, line) in text.lines().enumerate() {
        let line: Value = serde_json::from_str(line).map_err(|e| format!("line {}: {e}", i + 1))?;
        let ok = line["custom_id"]
            .as_str()
            .is_some_and(|id| ids.insert(id.to_owned()))
            && line["method"] == "POST"
            && line["url"].as_str().is_some()
            && line["body"]["model"].as_str().is_some();
        if !ok {
            return Err(format!("line {} is not a valid batch request", i + 1));
        }
    }
    Ok(())
}

async fn list_files(State(shared): State<Arc<Shared>>) -> Response {
    let data: Vec<Value> = shared.files.lock().await.values().map(file_json).collect();
    axum::Json(json!({"object": "list", "data": data, "has_more": false})).into_response()
}

async fn retrieve_file(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    match shared.files.lock().await.get(&id) {
        Some(f) => axum::Json(file_json(f)).into_response(),
        None => error(
            StatusCode::NOT_FOUND,
            &format!("No such File object: {id}"),
            Some("id"),
        ),
    }
}

async fn delete_file(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    record(&shared, format!("DELETE /files/{id}")).await;
    match shared.files.lock().await.remove(&id) {
        Some(f) => {
            let _ = std::fs::remove_file(&f.path);
            axum::Json(json!({"id": id, "object": "file", "deleted": true})).into_response()
        }
        None => error(
            StatusCode::NOT_FOUND,
            &format!("No such File object: {id}"),
            Some("id"),
        ),
    }
}

async fn content(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    record(&shared, format!("GET /files/{id}/content")).await;
    let Some(path) = shared.files.lock().await.get(&id).map(|f| f.path.clone()) else {
        return error(
            StatusCode::NOT_FOUND,
            &format!("No such File object: {id}"),
            Some("id"),
        );
    };
    let file = tokio::fs::File::open(path).await.unwrap();
    let stream = tokio_util::io::ReaderStream::new(file);
    (
        [(header::CONTENT_TYPE, "application/octet-stream")],
        Body::from_stream(stream),
    )
        .into_response()
}

async fn create_batch(State(shared): State<Arc<Shared>>, body: axum::body::Bytes) -> Response {
    record(&shared, "POST /batches".into()).await;
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return error(StatusCode::BAD_REQUEST, "the body is not JSON", None);
    };
    if body["completion_window"] != "24h" {
        return error(
            StatusCode::BAD_REQUEST,
            "completion_window must be 24h",
            Some("completion_window"),
        );
    }
    let Some(input) = body["input_file_id"].as_str() else {
        return error(
            StatusCode::BAD_REQUEST,
            "input_file_id is required",
            Some("input_file_id"),
        );
    };
    let Some(file) = shared.files.lock().await.get(input).cloned() else {
        return error(
            StatusCode::NOT_FOUND,
            &format!("No such File object: {input}"),
            Some("input_file_id"),
        );
    };
    if file.purpose != "batch" {
        return error(
            StatusCode::BAD_REQUEST,
            "the input file's purpose is not batch",
            Some("input_file_id"),
        );
    }
    let endpoint = body["endpoint"].as_str().unwrap_or_default().to_owned();
    let text = std::fs::read_to_string(&file.path).unwrap_or_default();
    if text.lines().any(|l| {
        serde_json::from_str::<Value>(l)
            .map(|v| v["url"] != endpoint.as_str())
            .unwrap_or(true)
    }) {
        return error(
            StatusCode::BAD_REQUEST,
            "every line's url must be the endpoint",
            Some("endpoint"),
        );
    }
    let n = shared
        .next
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let batch = MockBatch {
        id: format!("batch_up{n:06}"),
        status: "validating".into(),
        endpoint,
        input_file_id: input.to_owned(),
        output_file_id: None,
        error_file_id: None,
        created_at: now(),
        ended_at: None,
        polls: 0,
    };
    let answer = batch_json(&batch, 0);
    shared.batches.lock().await.insert(batch.id.clone(), batch);
    axum::Json(answer).into_response()
}

fn batch_json(b: &MockBatch, total: usize) -> Value {
    let ended = ["completed", "cancelled"].contains(&b.status.as_str());
    json!({
        "id": b.id, "object": "batch", "endpoint": b.endpoint, "errors": null,
        "input_file_id": b.input_file_id, "completion_window": "24h", "status": b.status,
        "output_file_id": b.output_file_id, "error_file_id": b.error_file_id,
        "created_at": b.created_at, "in_progress_at": null, "expires_at": b.created_at + 86400,
        "finalizing_at": null,
        "completed_at": b.ended_at.filter(|_| b.status == "completed"),
        "cancelled_at": b.ended_at.filter(|_| b.status == "cancelled"),
        "failed_at": null, "expired_at": null, "cancelling_at": null,
        "request_counts": {"total": total, "completed": if ended { total } else { 0 }, "failed": 0},
        "metadata": null,
    })
}

async fn retrieve_batch(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    record(&shared, format!("GET /batches/{id}")).await;
    let mut batches = shared.batches.lock().await;
    let Some(batch) = batches.get_mut(&id) else {
        return error(
            StatusCode::NOT_FOUND,
            &format!("No such Batch object: {id}"),
            Some("id"),
        );
    };
    batch.polls += 1;
    let next = match batch.status.as_str() {
        "validating" => Some("in_progress"),
        "in_progress" => Some("finalizing"),
        "finalizing" => Some("completed"),
        "cancelling" => Some("cancelled"),
        _ => None,
    };
    if let Some(next) = next {
        if next == "completed" || next == "cancelled" {
            let (output, errors) = finish(&shared, batch, next == "cancelled").await;
            batch.output_file_id = output;
            batch.error_file_id = errors;
            batch.ended_at = Some(now());
        }
        batch.status = next.to_owned();
    }
    let total = lines_of(&shared, &batch.input_file_id).await.len();
    axum::Json(batch_json(batch, total)).into_response()
}

async fn lines_of(shared: &Shared, file_id: &str) -> Vec<Value> {
    let Some(path) = shared
        .files
        .lock()
        .await
        .get(file_id)
        .map(|f| f.path.clone())
    else {
        return Vec::new();
    };
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The output and error files of a batch that ended: all lines, or the first half if it was
/// cancelled.
async fn finish(
    shared: &Shared,
    batch: &MockBatch,
    cancelled: bool,
) -> (Option<String>, Option<String>) {
    let mut lines = lines_of(shared, &batch.input_file_id).await;
    if cancelled {
        lines.truncate(lines.len() / 2);
    }
    let (mut output, mut errors) = (String::new(), String::new());
    for (i, line) in lines.iter().enumerate() {
        let body = &line["body"];
        let failed = body["messages"][0]["content"] == "fail";
        let out = if failed {
            json!({"id": format!("batch_req_{i}"), "custom_id": line["custom_id"],
                   "response": {"status_code": 400, "request_id": format!("req_{i}"),
                                "body": {"error": {"message": "the mock refuses `fail`", "type": "invalid_request_error"}}},
                   "error": null})
        } else {
            let completion = body["max_tokens"].as_u64().unwrap_or(16);
            json!({"id": format!("batch_req_{i}"), "custom_id": line["custom_id"],
                   "response": {"status_code": 200, "request_id": format!("req_{i}"), "body": {
                       "id": format!("chatcmpl-{i}"), "object": "chat.completion", "created": now(),
                       "model": body["model"],
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": PROMPT_TOKENS, "completion_tokens": completion,
                                 "total_tokens": PROMPT_TOKENS + completion}}},
                   "error": null})
        };
        let target = if failed { &mut errors } else { &mut output };
        target.push_str(&out.to_string());
        target.push('\n');
    }
    let output = keep(shared, &batch.id, output, "output").await;
    let errors = keep(shared, &batch.id, errors, "error").await;
    (output, errors)
}

/// Keeps `text` as a new output file; `None` when it is empty.
async fn keep(shared: &Shared, batch: &str, text: String, name: &str) -> Option<String> {
    if text.is_empty() {
        return None;
    }
    let n = shared
        .next
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let id = format!("file-out{n:06}");
    let path = shared.dir.join(&id);
    std::fs::write(&path, &text).unwrap();
    let file = MockFile {
        id: id.clone(),
        purpose: "batch_output".into(),
        filename: format!("{batch}_{name}.jsonl"),
        bytes: text.len() as u64,
        sha256: hex::encode(Sha256::digest(text.as_bytes())),
        path,
    };
    shared.files.lock().await.insert(id.clone(), file);
    Some(id)
}

async fn cancel_batch(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> Response {
    record(&shared, format!("POST /batches/{id}/cancel")).await;
    let mut batches = shared.batches.lock().await;
    let Some(batch) = batches.get_mut(&id) else {
        return error(
            StatusCode::NOT_FOUND,
            &format!("No such Batch object: {id}"),
            Some("id"),
        );
    };
    if !["validating", "in_progress", "finalizing"].contains(&batch.status.as_str()) {
        return error(
            StatusCode::CONFLICT,
            &format!("Cannot cancel a batch with status {}.", batch.status),
            None,
        );
    }
    batch.status = "cancelling".into();
    axum::Json(batch_json(batch, 0)).into_response()
}
