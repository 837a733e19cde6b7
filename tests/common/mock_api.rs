//! A mock upstream for the rest of OpenAI's API and Cohere's rerank, strict as the real ones
//! (api.openai.com/v1 and api.cohere.com/v2 references): legacy completions (streamed and
//! not), moderations, rerank (Cohere's `/v2/rerank` billed in search units; vLLM's
//! `/v1/rerank` in tokens), transcriptions and translations (multipart: `file` with a file
//! name and `model` required, `response_format` one of OpenAI's, each written as OpenAI writes
//! it; the gpt-4o models refuse what they do not serve), and speech (audio in chunks, with the
//! format's content type). It records what it received, form fields included.

// A refusal is the response itself, as axum handlers return it.
#![allow(clippy::result_large_err)]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use tokio::sync::Mutex;

pub const API_KEY: &str = "sk-mock-api-upstream";
/// What every text completion reports.
pub const PROMPT_TOKENS: u64 = 10;
pub const COMPLETION_TOKENS: u64 = 20;
/// The audio every transcription "hears": its duration and segments.
pub const DURATION: f64 = 8.47;
pub const TEXT: &str = "Hello there. General Kenobi.";
/// What gpt-4o-transcribe reports.
pub const AUDIO_TOKENS: u64 = 14;
pub const TEXT_TOKENS: u64 = 45;
/// The speech audio: this many chunks of `SPEECH_CHUNK` bytes.
pub const SPEECH_CHUNKS: usize = 8;
pub const SPEECH_CHUNK: usize = 4096;
/// What vLLM's rerank reports.
pub const RERANK_TOKENS: u64 = 37;

/// One request the mock received: its path, headers, and JSON body or form fields (text parts
/// as strings, the file as `{"file_name", "content_type", "len"}`).
#[derive(Clone, Debug)]
pub struct Received {
    pub path: String,
    pub headers: HeaderMap,
    pub body: Value,
    /// The form's text parts in order, repeated names kept.
    pub fields: Vec<(String, String)>,
}

#[derive(Default)]
struct Shared {
    received: Mutex<Vec<Received>>,
}

pub struct MockApi {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
}

impl MockApi {
    pub async fn start() -> Self {
        let shared = Arc::new(Shared::default());
        let app = Router::new()
            .route("/v1/completions", post(completions))
            .route("/v1/moderations", post(moderations))
            .route("/v1/rerank", post(vllm_rerank))
            .route("/v2/rerank", post(cohere_rerank))
            .route("/v1/audio/transcriptions", post(transcriptions))
            .route("/v1/audio/translations", post(translations))
            .route("/v1/audio/speech", post(speech))
            .nest("/openai/deployments/{deployment}", azure())
            .with_state(Arc::clone(&shared));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.ok() });
        Self { addr, shared }
    }

    /// `http://127.0.0.1:PORT` (Azure OpenAI: `/openai/deployments/{deployment}/...`) ...
    pub fn azure_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// ... `http://127.0.0.1:PORT/v1` (OpenAI) ...
    pub fn openai_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// ... and `http://127.0.0.1:PORT/v2` (Cohere).
    pub fn cohere_url(&self) -> String {
        format!("http://{}/v2", self.addr)
    }

    pub async fn received(&self) -> Vec<Received> {
        self.shared.received.lock().await.clone()
    }
}

/// Azure OpenAI's data plane for the same operations: the deployment in the path, the key in
/// `api-key` (a Bearer token is refused), an `api-version` query required.
fn azure() -> Router<Arc<Shared>> {
    async fn gate(mut request: axum::extract::Request, next: axum::middleware::Next) -> Response {
        let versioned = request
            .uri()
            .query()
            .is_some_and(|q| q.split('&').any(|p| p.starts_with("api-version=")));
        if !versioned {
            return error(StatusCode::NOT_FOUND, "Resource not found", None);
        }
        let keyed = request
            .headers()
            .get("api-key")
            .and_then(|v| v.to_str().ok())
            == Some(API_KEY);
        if !keyed || request.headers().contains_key(header::AUTHORIZATION) {
            return error(
                StatusCode::UNAUTHORIZED,
                "Access denied due to invalid subscription key.",
                None,
            );
        }
        // The handlers below check OpenAI's header: the key is good, so give it to them.
        let bearer = format!("Bearer {API_KEY}");
        if let Ok(value) = header::HeaderValue::from_str(&bearer) {
            request.headers_mut().insert(header::AUTHORIZATION, value);
        }
        request.headers_mut().insert(
            "x-azure-deployment",
            header::HeaderValue::from_static("yes"),
        );
        next.run(request).await
    }
    Router::new()
        .route("/completions", post(completions))
        .route("/audio/transcriptions", post(transcriptions))
        .route("/audio/speech", post(speech))
        .layer(axum::middleware::from_fn(gate))
}

fn error(status: StatusCode, message: &str, param: Option<&str>) -> Response {
    let kind = match status.as_u16() {
        401 => "invalid_api_key",
        _ => "invalid_request_error",
    };
    (
        status,
        axum::Json(
            json!({"error": {"message": message, "type": kind, "param": param, "code": null}}),
        ),
    )
        .into_response()
}

fn authorized(headers: &HeaderMap) -> Result<(), Response> {
    let expected = format!("Bearer {API_KEY}");
    match headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    {
        Some(value) if value == expected => Ok(()),
        _ => Err(error(
            StatusCode::UNAUTHORIZED,
            "Incorrect API key provided.",
            None,
        )),
    }
}

/// Checks the key and reads the JSON body, recording it.
async fn json_request(
    shared: &Shared,
    path: &str,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Value, Response> {
    authorized(headers)?;
    let is_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    let body: Value = match serde_json::from_slice(body) {
        Ok(body @ Value::Object(_)) if is_json => body,
        _ => {
            return Err(error(
                StatusCode::BAD_REQUEST,
                "We could not parse the JSON body of your request.",
                None,
            ));
        }
    };
    shared.received.lock().await.push(Received {
        path: path.to_owned(),
        headers: headers.clone(),
        body: body.clone(),
        fields: Vec::new(),
    });
    if !body["model"].is_string() {
        return Err(error(
            StatusCode::BAD_REQUEST,
            "you must provide a model parameter",
            Some("model"),
        ));
    }
    Ok(body)
}

fn required(body: &Value, field: &str, ok: bool) -> Result<(), Response> {
    if body.get(field).is_none() || !ok {
        return Err(error(
            StatusCode::BAD_REQUEST,
            &format!("Missing or invalid required parameter: '{field}'."),
            Some(field),
        ));
    }
    Ok(())
}

async fn completions(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body = match json_request(&shared, "/v1/completions", &headers, &body).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    if let Err(response) = required(
        &body,
        "prompt",
        body["prompt"].is_string() || body["prompt"].is_array(),
    ) {
        return response;
    }
    if body.get("messages").is_some() {
        return error(
            StatusCode::BAD_REQUEST,
            "Unrecognized request argument supplied: messages",
            None,
        );
    }
    let model = body["model"].clone();
    let usage = json!({"prompt_tokens": PROMPT_TOKENS, "completion_tokens": COMPLETION_TOKENS,
                       "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS});
    if body["stream"] != json!(true) {
        return axum::Json(json!({
            "id": "cmpl-mock", "object": "text_completion", "created": 1_700_000_000, "model": model,
            "choices": [{"text": " Once upon a time", "index": 0, "logprobs": null, "finish_reason": "length"}],
            "usage": usage,
        }))
        .into_response();
    }
    let chunk = |text: &str, finish: Value| {
        json!({"id": "cmpl-mock", "object": "text_completion", "created": 1_700_000_000, "model": model,
               "choices": [{"text": text, "index": 0, "logprobs": null, "finish_reason": finish}]})
    };
    let mut events = String::new();
    for (text, finish) in [
        (" Once", Value::Null),
        (" upon", Value::Null),
        (" a time", json!("length")),
    ] {
        events.push_str(&format!("data: {}\n\n", chunk(text, finish)));
    }
    if body["stream_options"]["include_usage"] == json!(true) {
        let mut last = chunk("", Value::Null);
        last["choices"] = json!([]);
        last["usage"] = usage;
        events.push_str(&format!("data: {last}\n\n"));
    }
    events.push_str("data: [DONE]\n\n");
    ([(header::CONTENT_TYPE, "text/event-stream")], events).into_response()
}

async fn moderations(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body = match json_request(&shared, "/v1/moderations", &headers, &body).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    if let Some(field) = (body.as_object().into_iter().flatten())
        .map(|(k, _)| k)
        .find(|k| !matches!(k.as_str(), "model" | "input"))
    {
        return error(
            StatusCode::BAD_REQUEST,
            &format!("Unrecognized request argument supplied: {field}"),
            None,
        );
    }
    let texts: Vec<String> = match &body["input"] {
        Value::String(text) => vec![text.clone()],
        Value::Array(items) if !items.is_empty() && items.iter().all(Value::is_string) => items
            .iter()
            .map(|t| t.as_str().unwrap_or_default().to_owned())
            .collect(),
        _ => {
            return error(
                StatusCode::BAD_REQUEST,
                "Invalid type for 'input'.",
                Some("input"),
            );
        }
    };
    // A text naming `slow-moderation` is answered only after 3 s (a deadline test's).
    if texts.iter().any(|t| t.contains("slow-moderation")) {
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
    let results: Vec<Value> = texts.iter().map(|t| moderation_result(t)).collect();
    axum::Json(json!({"id": "modr-mock", "model": body["model"], "results": results}))
        .into_response()
}

/// What the mock's moderation finds in `text`: `violence` scored 0.93 (and flagged) where the
/// text says "kill", 0.45 (not flagged) where it says "fight", 0.0001 otherwise.
fn moderation_result(text: &str) -> Value {
    let categories = ["harassment", "hate", "self-harm", "sexual", "violence"];
    let lower = text.to_lowercase();
    let violence = if lower.contains("kill") {
        0.93
    } else if lower.contains("fight") {
        0.45
    } else {
        0.0001
    };
    let score = |c: &str| if c == "violence" { violence } else { 0.0001 };
    json!({
        "flagged": violence > 0.5,
        "categories": categories.iter().map(|c| (c.to_string(), json!(score(c) > 0.5))).collect::<serde_json::Map<_, _>>(),
        "category_scores": categories.iter().map(|c| (c.to_string(), json!(score(c)))).collect::<serde_json::Map<_, _>>(),
        "category_applied_input_types": categories.iter().map(|c| (c.to_string(), json!(["text"]))).collect::<serde_json::Map<_, _>>(),
    })
}

/// Scores documents by how many of the query's words they share, best first.
fn ranked(body: &Value) -> Result<Vec<(usize, f64)>, Response> {
    required(
        body,
        "query",
        body["query"].as_str().is_some_and(|q| !q.is_empty()),
    )?;
    let documents = body["documents"].as_array().filter(|d| !d.is_empty());
    let Some(documents) = documents else {
        return Err(error(
            StatusCode::BAD_REQUEST,
            "invalid request: list of documents must not be empty",
            Some("documents"),
        ));
    };
    let query = body["query"].as_str().unwrap_or_default().to_lowercase();
    let mut scores: Vec<(usize, f64)> = documents
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let text = d
                .as_str()
                .or_else(|| d["text"].as_str())
                .unwrap_or_default()
                .to_lowercase();
            let shared = query
                .split_whitespace()
                .filter(|w| text.contains(w))
                .count();
            (
                i,
                shared as f64 / (1.0 + query.split_whitespace().count() as f64),
            )
        })
        .collect();
    scores.sort_by(|a, b| b.1.total_cmp(&a.1));
    if let Some(n) = body["top_n"].as_u64() {
        scores.truncate(n as usize);
    }
    Ok(scores)
}

async fn cohere_rerank(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body = match json_request(&shared, "/v2/rerank", &headers, &body).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    // Cohere v2 takes documents as strings only.
    if body["documents"]
        .as_array()
        .is_some_and(|d| d.iter().any(|d| !d.is_string()))
    {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid request: documents must be strings",
            Some("documents"),
        );
    }
    let scores = match ranked(&body) {
        Ok(scores) => scores,
        Err(response) => return response,
    };
    let results: Vec<Value> = scores
        .iter()
        .map(|(i, s)| json!({"index": i, "relevance_score": s}))
        .collect();
    axum::Json(json!({"id": "rerank-mock", "results": results,
                      "meta": {"api_version": {"version": "2"}, "billed_units": {"search_units": 1}}}))
        .into_response()
}

async fn vllm_rerank(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body = match json_request(&shared, "/v1/rerank", &headers, &body).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    let scores = match ranked(&body) {
        Ok(scores) => scores,
        Err(response) => return response,
    };
    let documents = body["documents"].as_array().cloned().unwrap_or_default();
    let results: Vec<Value> = scores
        .iter()
        .map(
            |(i, s)| json!({"index": i, "document": {"text": documents[*i]}, "relevance_score": s}),
        )
        .collect();
    axum::Json(json!({"id": "rerank-vllm", "model": body["model"], "usage": {"total_tokens": RERANK_TOKENS}, "results": results}))
        .into_response()
}

const FORMATS: [&str; 5] = ["json", "text", "srt", "verbose_json", "vtt"];

async fn transcriptions(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    audio_text(&shared, "/v1/audio/transcriptions", &headers, body).await
}

async fn translations(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    audio_text(&shared, "/v1/audio/translations", &headers, body).await
}

/// Reads a multipart form as OpenAI does: text parts and the `file` part (which must carry a
/// file name, from which the format is told).
async fn form(
    headers: &HeaderMap,
    body: Bytes,
) -> Result<(Vec<(String, String)>, Option<Value>), Response> {
    let boundary = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| multer::parse_boundary(v).ok())
        .ok_or_else(|| {
            error(
                StatusCode::BAD_REQUEST,
                "Invalid Content-Type header: expected multipart/form-data.",
                None,
            )
        })?;
    let stream = futures_util::stream::once(async move { Ok::<_, Infallible>(body) });
    let mut multipart = multer::Multipart::new(stream, boundary);
    let (mut fields, mut file) = (Vec::new(), None);
    let malformed = |_| {
        error(
            StatusCode::BAD_REQUEST,
            "Could not parse multipart form",
            None,
        )
    };
    while let Some(field) = multipart.next_field().await.map_err(malformed)? {
        let name = field.name().unwrap_or_default().to_owned();
        if name == "file" {
            let file_name = field.file_name().map(str::to_owned);
            let content_type = field.content_type().map(|m| m.to_string());
            let bytes = field.bytes().await.map_err(malformed)?;
            file = Some(
                json!({"file_name": file_name, "content_type": content_type, "len": bytes.len()}),
            );
        } else {
            fields.push((name, field.text().await.map_err(malformed)?));
        }
    }
    Ok((fields, file))
}

async fn audio_text(shared: &Shared, path: &str, headers: &HeaderMap, body: Bytes) -> Response {
    if let Err(response) = authorized(headers) {
        return response;
    }
    let (fields, file) = match form(headers, body).await {
        Ok(form) => form,
        Err(response) => return response,
    };
    let field = |name: &str| {
        fields
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    shared.received.lock().await.push(Received {
        path: path.to_owned(),
        headers: headers.clone(),
        body: json!({"file": file.clone()}),
        fields: fields.clone(),
    });
    let Some(model) = field("model") else {
        return error(
            StatusCode::BAD_REQUEST,
            "you must provide a model parameter",
            Some("model"),
        );
    };
    let named = file
        .as_ref()
        .is_some_and(|f| f["file_name"].as_str().is_some_and(|n| n.contains('.')));
    if !named || file.as_ref().is_some_and(|f| f["len"] == 0) {
        return error(
            StatusCode::BAD_REQUEST,
            "Invalid file format. Supported formats: ['flac', 'm4a', 'mp3', 'mp4', 'mpeg', 'mpga', 'oga', 'ogg', 'wav', 'webm']",
            Some("file"),
        );
    }
    let format = field("response_format").unwrap_or_else(|| "json".to_owned());
    if !FORMATS.contains(&format.as_str()) {
        return error(
            StatusCode::BAD_REQUEST,
            &format!("Invalid value for 'response_format': '{format}'."),
            Some("response_format"),
        );
    }
    let gpt = model.starts_with("gpt-");
    if gpt && !matches!(format.as_str(), "json" | "text") {
        return error(
            StatusCode::BAD_REQUEST,
            &format!(
                "response_format '{format}' is not compatible with model '{model}'. Use 'json' or 'text' instead."
            ),
            Some("response_format"),
        );
    }
    if gpt && path.ends_with("translations") {
        return error(
            StatusCode::BAD_REQUEST,
            &format!("Model '{model}' is not supported for translations."),
            Some("model"),
        );
    }
    let segments = json!([
        {"id": 0, "seek": 0, "start": 0.0, "end": 3.2, "text": " Hello there.", "tokens": [50364, 2425], "temperature": 0.0, "avg_logprob": -0.21, "compression_ratio": 0.9, "no_speech_prob": 0.01},
        {"id": 1, "seek": 0, "start": 3.2, "end": DURATION, "text": " General Kenobi.", "tokens": [50524, 6996], "temperature": 0.0, "avg_logprob": -0.21, "compression_ratio": 0.9, "no_speech_prob": 0.01},
    ]);
    let usage = if gpt {
        json!({"type": "tokens", "input_tokens": AUDIO_TOKENS, "input_token_details": {"text_tokens": 0, "audio_tokens": AUDIO_TOKENS}, "output_tokens": TEXT_TOKENS, "total_tokens": AUDIO_TOKENS + TEXT_TOKENS})
    } else {
        json!({"type": "duration", "seconds": DURATION.round() as u64})
    };
    if field("stream").as_deref() == Some("true") {
        if !gpt {
            return error(
                StatusCode::BAD_REQUEST,
                &format!("Streaming is not supported for model '{model}'."),
                Some("stream"),
            );
        }
        // As OpenAI streams a transcription: deltas, then the whole text with the usage.
        let mut events = String::new();
        for delta in ["Hello", " there.", " General", " Kenobi."] {
            let event = json!({"type": "transcript.text.delta", "delta": delta, "logprobs": null});
            events.push_str(&format!("data: {event}\n\n"));
        }
        let done =
            json!({"type": "transcript.text.done", "text": TEXT, "logprobs": null, "usage": usage});
        events.push_str(&format!("data: {done}\n\n"));
        return ([(header::CONTENT_TYPE, "text/event-stream")], events).into_response();
    }
    let task = if path.ends_with("translations") {
        "translate"
    } else {
        "transcribe"
    };
    let text = |body: String| {
        ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], body).into_response()
    };
    match format.as_str() {
        "json" => axum::Json(json!({"text": TEXT, "usage": usage})).into_response(),
        "verbose_json" => axum::Json(json!({"task": task, "language": "english", "duration": DURATION, "text": TEXT, "segments": segments, "usage": usage})).into_response(),
        "text" => text(format!("{TEXT}\n")),
        "srt" => text(String::from("1\n00:00:00,000 --> 00:00:03,200\nHello there.\n\n2\n00:00:03,200 --> 00:00:08,470\nGeneral Kenobi.\n\n")),
        _ => text(String::from("WEBVTT\n\n00:00:00.000 --> 00:00:03.200\nHello there.\n\n00:00:03.200 --> 00:00:08.470\nGeneral Kenobi.\n\n")),
    }
}

/// The bytes of the mock's speech: chunk `i` is filled with byte `i`.
pub fn speech_bytes() -> Vec<u8> {
    (0..SPEECH_CHUNKS)
        .flat_map(|i| vec![i as u8; SPEECH_CHUNK])
        .collect()
}

async fn speech(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let body = match json_request(&shared, "/v1/audio/speech", &headers, &body).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    if let Err(response) = required(
        &body,
        "input",
        body["input"].as_str().is_some_and(|i| !i.is_empty()),
    ) {
        return response;
    }
    if let Err(response) = required(
        &body,
        "voice",
        body["voice"].is_string() || body["voice"].is_object(),
    ) {
        return response;
    }
    let content_type = match body["response_format"].as_str().unwrap_or("mp3") {
        "mp3" => "audio/mpeg",
        "opus" => "audio/ogg",
        "aac" => "audio/aac",
        "flac" => "audio/flac",
        "wav" => "audio/wav",
        "pcm" => "audio/pcm",
        other => {
            return error(
                StatusCode::BAD_REQUEST,
                &format!("Invalid value for 'response_format': '{other}'."),
                Some("response_format"),
            );
        }
    };
    // The audio as it is made: a chunk at a time (the voice `slow`: a chunk every 200 ms).
    let pause = Duration::from_millis(if body["voice"] == "slow" { 200 } else { 5 });
    let chunks = futures_util::stream::unfold(0usize, move |i| async move {
        if i == SPEECH_CHUNKS {
            return None;
        }
        tokio::time::sleep(pause).await;
        Some((
            Ok::<_, Infallible>(Bytes::from(vec![i as u8; SPEECH_CHUNK])),
            i + 1,
        ))
    });
    (
        [(header::CONTENT_TYPE, content_type)],
        Body::from_stream(chunks),
    )
        .into_response()
}
