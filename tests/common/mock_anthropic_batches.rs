//! A mock of Anthropic's Message Batches API (docs.anthropic.com/en/api/creating-message-batches,
//! retrieving-message-batches, canceling-message-batches, retrieving-message-batch-results),
//! strict as the reference:
//! - every call needs `x-api-key` ([`API_KEY`]) and `anthropic-version`, else Anthropic's 401 or
//!   400 error body;
//! - `POST /v1/messages/batches` takes `{"requests": [{custom_id, params}]}` and nothing else:
//!   1 to 100,000 requests, each `custom_id` matching `^[a-zA-Z0-9_-]{1,64}$` and unique, each
//!   `params` a valid Messages request (checked as the Messages mock checks a live one), never
//!   `stream: true`;
//! - a batch is `in_progress`; each retrieve moves it on: after one it has `ended`, every
//!   request run. `cancel` makes an `in_progress` batch `canceling` (`cancel_initiated_at`
//!   set); it then ends with its first half of requests run and the rest `canceled`;
//! - `GET .../results` answers only once the batch has ended (else 400), as JSONL: a request
//!   whose last message says `fail` is `errored` (`invalid_request_error`), every other
//!   `succeeded` with a message of [`INPUT_TOKENS`] in, its `max_tokens` out, and
//!   [`CACHE_WRITE_TOKENS`] written to the cache.

#![allow(clippy::result_large_err)]

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use tokio::sync::Mutex;

use super::mock_providers::anthropic::message_request;

pub const API_KEY: &str = "sk-ant-mock-batches";
pub const INPUT_TOKENS: u64 = 100;
pub const CACHE_WRITE_TOKENS: u64 = 20;
const MAX_REQUESTS: usize = 100_000;

#[derive(Clone, Debug)]
pub struct MockMessageBatch {
    pub id: String,
    /// `in_progress`, `canceling` or `ended`.
    pub status: String,
    pub requests: Vec<(String, Value)>,
    pub created_at: i64,
    pub cancel_initiated_at: Option<i64>,
    pub ended_at: Option<i64>,
    /// Requests run (the first `ran`), once ended.
    pub ran: usize,
}

#[derive(Default)]
struct Shared {
    batches: Mutex<HashMap<String, MockMessageBatch>>,
    /// Every request, as `METHOD path`.
    calls: Mutex<Vec<String>>,
    next: std::sync::atomic::AtomicU64,
}

pub struct MockAnthropicBatches {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
}

impl MockAnthropicBatches {
    pub async fn start() -> Self {
        let shared = Arc::new(Shared::default());
        let app = Router::new()
            .route("/v1/messages/batches", post(create))
            .route("/v1/messages/batches/{id}", get(retrieve))
            .route("/v1/messages/batches/{id}/cancel", post(cancel))
            .route("/v1/messages/batches/{id}/results", get(results))
            .layer(axum::extract::DefaultBodyLimit::max(256 << 20))
            .with_state(Arc::clone(&shared));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.ok() });
        Self { addr, shared }
    }

    pub fn url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub async fn batches(&self) -> Vec<MockMessageBatch> {
        self.shared.batches.lock().await.values().cloned().collect()
    }

    pub async fn calls(&self) -> Vec<String> {
        self.shared.calls.lock().await.clone()
    }
}

fn error(status: u16, kind: &str, message: &str) -> Response {
    let body = json!({"type": "error", "error": {"type": kind, "message": message}});
    (
        StatusCode::from_u16(status).unwrap(),
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn invalid(message: &str) -> Response {
    error(400, "invalid_request_error", message)
}

/// The key and version every call needs.
fn check_headers(headers: &HeaderMap) -> Result<(), Response> {
    if headers.get("x-api-key").and_then(|v| v.to_str().ok()) != Some(API_KEY) {
        return Err(error(401, "authentication_error", "invalid x-api-key"));
    }
    if headers.get("anthropic-version").is_none() {
        return Err(invalid("anthropic-version: header is required"));
    }
    Ok(())
}

async fn record(shared: &Shared, call: String) {
    shared.calls.lock().await.push(call);
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// `secs` as RFC 3339, as Anthropic writes its times.
fn rfc3339(secs: i64) -> String {
    let utc = wasmgate::ledger::time::format_utc(secs * 1_000_000);
    format!("{}.000000Z", utc.replacen(' ', "T", 1))
}

fn custom_id_ok(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Whether a request's last message says `fail`.
fn fails(params: &Value) -> bool {
    params["messages"]
        .as_array()
        .and_then(|m| m.last())
        .is_some_and(|m| m["content"].to_string().contains("fail"))
}

impl MockMessageBatch {
    fn object(&self) -> Value {
        let total = self.requests.len() as i64;
        let ended = self.status == "ended";
        let (succeeded, errored, canceled) = if ended {
            let run = &self.requests[..self.ran];
            let errored = run.iter().filter(|(_, p)| fails(p)).count() as i64;
            (
                run.len() as i64 - errored,
                errored,
                total - run.len() as i64,
            )
        } else {
            (0, 0, 0)
        };
        json!({
            "id": self.id,
            "type": "message_batch",
            "processing_status": self.status,
            "request_counts": {
                "processing": if ended { 0 } else { total },
                "succeeded": succeeded,
                "errored": errored,
                "canceled": canceled,
                "expired": 0,
            },
            "ended_at": self.ended_at.map(rfc3339),
            "created_at": rfc3339(self.created_at),
            "expires_at": rfc3339(self.created_at + 86_400),
            "archived_at": null,
            "cancel_initiated_at": self.cancel_initiated_at.map(rfc3339),
            "results_url": ended.then(|| format!(
                "https://api.anthropic.com/v1/messages/batches/{}/results", self.id
            )),
        })
    }
}

fn json_response(value: Value) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

async fn create(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    record(&shared, "POST /v1/messages/batches".into()).await;
    if let Err(refused) = check_headers(&headers) {
        return refused;
    }
    let Ok(Value::Object(body)) = serde_json::from_slice::<Value>(&body) else {
        return invalid("The request body is not valid JSON.");
    };
    if let Some(extra) = body.keys().find(|k| *k != "requests") {
        return invalid(&format!("{extra}: Extra inputs are not permitted"));
    }
    let Some(requests) = body.get("requests").and_then(Value::as_array) else {
        return invalid("requests: Field required");
    };
    if requests.is_empty() || requests.len() > MAX_REQUESTS {
        return invalid("requests: must hold 1 to 100000 requests");
    }
    let mut seen = HashSet::new();
    let mut kept = Vec::new();
    for (i, request) in requests.iter().enumerate() {
        let Some(object) = request.as_object() else {
            return invalid(&format!("requests.{i}: Input should be an object"));
        };
        if let Some(extra) = object
            .keys()
            .find(|k| !["custom_id", "params"].contains(&k.as_str()))
        {
            return invalid(&format!(
                "requests.{i}.{extra}: Extra inputs are not permitted"
            ));
        }
        let Some(id) = object.get("custom_id").and_then(Value::as_str) else {
            return invalid(&format!("requests.{i}.custom_id: Field required"));
        };
        if !custom_id_ok(id) {
            return invalid(&format!(
                "requests.{i}.custom_id: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
            ));
        }
        if !seen.insert(id.to_owned()) {
            return invalid(&format!("Duplicate custom_id: {id}"));
        }
        let Some(params) = object.get("params") else {
            return invalid(&format!("requests.{i}.params: Field required"));
        };
        if params.get("stream") == Some(&Value::Bool(true)) {
            return invalid(&format!(
                "requests.{i}.params.stream: streaming is not supported in batches"
            ));
        }
        if let Err(message) = message_request(params) {
            return invalid(&format!("requests.{i}.params.{message}"));
        }
        kept.push((id.to_owned(), params.clone()));
    }
    let n = shared
        .next
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let batch = MockMessageBatch {
        id: format!("msgbatch_mock{n:020}"),
        status: "in_progress".into(),
        requests: kept,
        created_at: now(),
        cancel_initiated_at: None,
        ended_at: None,
        ran: 0,
    };
    let object = batch.object();
    shared.batches.lock().await.insert(batch.id.clone(), batch);
    json_response(object)
}

async fn retrieve(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    record(&shared, format!("GET /v1/messages/batches/{id}")).await;
    if let Err(refused) = check_headers(&headers) {
        return refused;
    }
    let mut batches = shared.batches.lock().await;
    let Some(batch) = batches.get_mut(&id) else {
        return error(404, "not_found_error", "No such batch");
    };
    match batch.status.as_str() {
        "in_progress" => {
            batch.status = "ended".into();
            batch.ran = batch.requests.len();
            batch.ended_at = Some(now());
        }
        "canceling" => {
            batch.status = "ended".into();
            batch.ran = batch.requests.len() / 2;
            batch.ended_at = Some(now());
        }
        _ => {}
    }
    json_response(batch.object())
}

async fn cancel(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    record(&shared, format!("POST /v1/messages/batches/{id}/cancel")).await;
    if let Err(refused) = check_headers(&headers) {
        return refused;
    }
    let mut batches = shared.batches.lock().await;
    let Some(batch) = batches.get_mut(&id) else {
        return error(404, "not_found_error", "No such batch");
    };
    if batch.status == "in_progress" {
        batch.status = "canceling".into();
        batch.cancel_initiated_at = Some(now());
    }
    json_response(batch.object())
}

async fn results(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    record(&shared, format!("GET /v1/messages/batches/{id}/results")).await;
    if let Err(refused) = check_headers(&headers) {
        return refused;
    }
    let batches = shared.batches.lock().await;
    let Some(batch) = batches.get(&id) else {
        return error(404, "not_found_error", "No such batch");
    };
    if batch.status != "ended" {
        return invalid("Message batch results are only available once the batch has ended.");
    }
    let mut body = String::new();
    for (i, (custom_id, params)) in batch.requests.iter().enumerate() {
        let result = if i >= batch.ran {
            json!({"type": "canceled"})
        } else if fails(params) {
            json!({"type": "errored", "error": {"type": "error", "error": {
                "type": "invalid_request_error", "message": "The mock was asked to fail."}}})
        } else {
            json!({"type": "succeeded", "message": {
                "id": format!("msg_mock_{i}"),
                "type": "message",
                "role": "assistant",
                "model": params["model"],
                "content": [{"type": "text", "text": format!("Answer to {custom_id}.")}],
                "stop_reason": "end_turn",
                "stop_sequence": null,
                "usage": {
                    "input_tokens": INPUT_TOKENS,
                    "output_tokens": params["max_tokens"],
                    "cache_creation_input_tokens": CACHE_WRITE_TOKENS,
                    "cache_read_input_tokens": 0,
                },
            }})
        };
        body.push_str(&json!({"custom_id": custom_id, "result": result}).to_string());
        body.push('\n');
    }
    ([(header::CONTENT_TYPE, "application/binary")], body).into_response()
}
