//! Mock upstreams speaking the native wire formats of Anthropic (Messages), Gemini
//! (generateContent), Cohere (v2) and Azure OpenAI, answering from each provider's documented
//! examples and recording what they received. Like `mock_openai`, the behaviour is chosen by the
//! request itself:
//!
//! | request | answer |
//! |---|---|
//! | the wrong key, or none | 401 in the provider's error shape (Gemini: 400 `API_KEY_INVALID`, as it really answers) |
//! | model (Gemini, Azure: deployment) `error-429` | 429 in the provider's error shape |
//! | model `error-500` | 500 in the provider's error shape |
//! | model (Gemini, Azure: deployment) `stream-cut`, streamed | a stream that stops after the first text delta, without its ending |
//! | Anthropic model `stream-overloaded`, streamed | a stream with an `error` event (overloaded_error) after the first text delta |
//! | tools, and no tool result among the messages | a tool call to the first tool |
//! | anything else | a text answer with usage (cache tokens where the provider reports them) |
//!
//! Streams are delivered in pieces of 5 to 9 bytes, so events, field names and UTF-8 characters
//! are split across reads. The Anthropic mock is also strict (it refuses what the Messages API
//! refuses, and serves `count_tokens`, thinking and prompt caching): see
//! `mock_providers/anthropic.rs`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::sync::Mutex;

/// The key every mock expects.
pub const KEY: &str = "upstream-test-key";

/// One request a mock received.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// The path and, if any, `?query`.
    pub path: String,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

#[derive(Default)]
pub struct Shared {
    pub requests: Mutex<Vec<Recorded>>,
    /// The request target (path and query, as sent) of every request that arrived, routed or
    /// not: what a URL-injection test checks.
    pub targets: Mutex<Vec<String>>,
    /// Anthropic: the prompt prefixes (up to a `cache_control` breakpoint) already cached.
    pub cached_prefixes: Mutex<std::collections::HashSet<String>>,
    /// Anthropic: an agent's turn to play (see `anthropic::Script`), instead of the default
    /// tool call.
    pub script: Mutex<Option<anthropic::Script>>,
}

/// Notes the raw target of every request, before routing (so a 404 is noted too).
pub(super) async fn note_target(
    State(shared): State<Arc<Shared>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    shared.targets.lock().await.push(request.uri().to_string());
    next.run(request).await
}

/// A running mock upstream.
pub struct MockProvider {
    pub addr: SocketAddr,
    pub shared: Arc<Shared>,
    base_path: &'static str,
}

impl MockProvider {
    pub(super) async fn serve(app: Router<Arc<Shared>>, base_path: &'static str) -> Self {
        let shared = Arc::new(Shared::default());
        let app = app
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
        Self {
            addr,
            shared,
            base_path,
        }
    }

    /// Anthropic: `POST /v1/messages`, `POST /v1/messages/count_tokens`.
    pub async fn anthropic() -> Self {
        Self::serve(
            Router::new()
                .route("/v1/messages", post(anthropic::messages))
                .route("/v1/messages/count_tokens", post(anthropic::count_tokens)),
            "/v1",
        )
        .await
    }

    /// The URL an Anthropic SDK takes as its base URL (it adds `/v1/messages` itself).
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Gemini: `POST /v1beta/models/{model}:{generateContent|streamGenerateContent|countTokens|embedContent|batchEmbedContents}`.
    pub async fn gemini() -> Self {
        Self::serve(
            Router::new()
                .route("/v1beta/models/{target}", post(gemini::models))
                .route("/v1/models/{target}", post(gemini::models)),
            "/v1beta",
        )
        .await
    }

    /// Cohere: `POST /v2/chat`, `POST /v2/embed`.
    pub async fn cohere() -> Self {
        Self::serve(
            Router::new()
                .route("/v2/chat", post(cohere::chat))
                .route("/v2/embed", post(cohere::embed)),
            "/v2",
        )
        .await
    }

    /// Azure OpenAI: `POST /openai/deployments/{d}/chat/completions?api-version=...`.
    pub async fn azure() -> Self {
        Self::serve(
            Router::new().route(
                "/openai/deployments/{deployment}/chat/completions",
                post(azure::chat),
            ),
            "",
        )
        .await
    }

    /// The `base_url` to configure.
    pub fn base_url(&self) -> String {
        format!("http://{}{}", self.addr, self.base_path)
    }

    pub async fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().await.clone()
    }

    /// The target (path and query) of every request that arrived, in order.
    pub async fn targets(&self) -> Vec<String> {
        self.shared.targets.lock().await.clone()
    }

    pub async fn last_request(&self) -> Recorded {
        self.requests()
            .await
            .pop()
            .expect("the mock received no request")
    }
}

async fn record(
    shared: &Shared,
    path: String,
    query: Option<String>,
    headers: &HeaderMap,
    body: &Bytes,
) -> Value {
    let body: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let path = match query {
        Some(q) => format!("{path}?{q}"),
        None => path,
    };
    shared.requests.lock().await.push(Recorded {
        path,
        headers: headers.clone(),
        body: body.clone(),
    });
    body
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn json_response(status: u16, body: Value) -> Response {
    (
        StatusCode::from_u16(status).expect("status"),
        axum::Json(body),
    )
        .into_response()
}

/// `text` as an SSE response in pieces of 5, 6, 7, 8, 9, 5, ... bytes.
fn sse_in_pieces(text: String) -> Response {
    let bytes = text.into_bytes();
    let mut pieces = Vec::new();
    let mut at = 0;
    let mut size = 5;
    while at < bytes.len() {
        let end = (at + size).min(bytes.len());
        pieces.push(Bytes::copy_from_slice(&bytes[at..end]));
        at = end;
        size = if size == 9 { 5 } else { size + 1 };
    }
    let body = futures_util::stream::iter(pieces).then(|piece| async move {
        // A pause makes each piece its own read on the gateway's side.
        tokio::time::sleep(Duration::from_micros(200)).await;
        Ok::<_, std::convert::Infallible>(piece)
    });
    (
        [("content-type", "text/event-stream")],
        Body::from_stream(body),
    )
        .into_response()
}

/// Anthropic Messages, after docs.anthropic.com/en/api/messages and .../messages-streaming:
/// strict, in `mock_providers/anthropic.rs`.
pub mod anthropic;

/// Gemini generateContent, after ai.google.dev/api/generate-content and /api/embeddings.
pub mod gemini {
    use super::*;

    pub const TEXT: &str = "Once upon a time, a backpack hummed.";
    pub const STREAM_DELTAS: [&str; 3] = ["Once", " upon a time, Élodie's backpack", " hummed. 🎒"];
    pub const PROMPT_TOKENS: u64 = 35;
    pub const CACHED_TOKENS: u64 = 20;
    pub const CANDIDATES_TOKENS: u64 = 9;
    pub const THOUGHTS_TOKENS: u64 = 4;
    pub const RESPONSE_ID: &str = "uLwKaPrUF6SI-8YPm_yf6Q0";
    pub const STREAM_TOOL_TEXT: &str = "Checking both.";
    pub const EMBEDDING: [f64; 3] = [0.013168523, -0.008711934, -0.046782676];

    fn error(code: u16, status: &str, message: &str) -> Response {
        json_response(
            code,
            json!({"error": {"code": code, "message": message, "status": status}}),
        )
    }

    fn usage(candidates: u64) -> Value {
        json!({"promptTokenCount": PROMPT_TOKENS, "candidatesTokenCount": candidates,
               "totalTokenCount": PROMPT_TOKENS + candidates + THOUGHTS_TOKENS,
               "cachedContentTokenCount": CACHED_TOKENS, "thoughtsTokenCount": THOUGHTS_TOKENS,
               "promptTokensDetails": [{"modality": "TEXT", "tokenCount": PROMPT_TOKENS}]})
    }

    fn has_function_response(request: &Value) -> bool {
        request["contents"].as_array().is_some_and(|contents| {
            contents.iter().any(|c| {
                c["parts"]
                    .as_array()
                    .is_some_and(|parts| parts.iter().any(|p| p.get("functionResponse").is_some()))
            })
        })
    }

    pub(super) async fn models(
        State(shared): State<Arc<Shared>>,
        Path(target): Path<String>,
        RawQuery(query): RawQuery,
        headers: HeaderMap,
        body: Bytes,
    ) -> Response {
        let request = record(
            &shared,
            format!("/v1beta/models/{target}"),
            query.clone(),
            &headers,
            &body,
        )
        .await;
        if header(&headers, "x-goog-api-key") != Some(KEY) {
            // Gemini answers a bad key with 400, not 401.
            return json_response(
                400,
                json!({"error": {"code": 400,
                    "message": "API key not valid. Please pass a valid API key.",
                    "status": "INVALID_ARGUMENT",
                    "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                 "reason": "API_KEY_INVALID", "domain": "googleapis.com"}]}}),
            );
        }
        let Some((model, method)) = target.split_once(':') else {
            return error(404, "NOT_FOUND", "no method");
        };
        match model {
            "error-429" => {
                return error(
                    429,
                    "RESOURCE_EXHAUSTED",
                    "You exceeded your current quota, please check your plan and billing details.",
                );
            }
            "error-500" => return error(500, "INTERNAL", "An internal error has occurred."),
            _ => {}
        }
        if matches!(method, "generateContent" | "streamGenerateContent")
            && let Err(message) = refused(&request)
        {
            return error(400, "INVALID_ARGUMENT", &message);
        }
        match method {
            "generateContent" => generate(model, &request),
            "streamGenerateContent" => {
                let tool = request["tools"][0]["functionDeclarations"][0]["name"]
                    .as_str()
                    .filter(|_| !has_function_response(&request));
                match tool {
                    Some(name) => stream_function_calls(model, name),
                    None if model == "stream-cut" => {
                        let chunk = json!({"candidates": [{"content": {"parts": [{"text": STREAM_DELTAS[0]}],
                                                                       "role": "model"}}],
                                           "modelVersion": model, "responseId": "stream-1"});
                        sse_in_pieces(format!("data: {chunk}\r\n\r\n"))
                    }
                    None => stream(model),
                }
            }
            // The real API counts with the model's tokenizer; the mock, one token a word.
            "countTokens" => match counted(&request) {
                Ok(prompt) => {
                    let words = prompt.split_whitespace().count().max(1);
                    axum::Json(json!({"totalTokens": words})).into_response()
                }
                Err(message) => error(400, "INVALID_ARGUMENT", &message),
            },
            "embedContent" => {
                let n = request["outputDimensionality"].as_u64().unwrap_or(3) as usize;
                axum::Json(json!({"embedding": {"values": embedding(n)}})).into_response()
            }
            "batchEmbedContents" => {
                let embeddings: Vec<Value> = request["requests"]
                    .as_array()
                    .map(|r| r.iter().map(|_| json!({"values": embedding(3)})).collect())
                    .unwrap_or_default();
                axum::Json(json!({"embeddings": embeddings})).into_response()
            }
            _ => error(404, "NOT_FOUND", "unknown method"),
        }
    }

    /// The text `countTokens` counts, or what the real API refuses in its body: it takes
    /// either `contents` or a whole `generateContentRequest` (whose `model` is required), not
    /// both, and checks either as `generateContent` does.
    fn counted(request: &Value) -> Result<String, String> {
        let Some(fields) = request.as_object() else {
            return Err("Invalid JSON payload received.".to_owned());
        };
        if let Some(unknown) = fields
            .keys()
            .find(|k| !matches!(k.as_str(), "contents" | "generateContentRequest"))
        {
            return Err(format!(
                "Invalid JSON payload received. Unknown name \"{unknown}\": Cannot find field."
            ));
        }
        match (fields.get("contents"), fields.get("generateContentRequest")) {
            (Some(contents), None) => {
                refused(&json!({"contents": contents}))?;
                Ok(contents.to_string())
            }
            (None, Some(generate)) => {
                let mut generate = generate.clone();
                let model = generate.as_object_mut().and_then(|g| g.remove("model"));
                if !model
                    .as_ref()
                    .and_then(Value::as_str)
                    .is_some_and(|m| m.starts_with("models/") || m.starts_with("tunedModels/"))
                {
                    return Err("* GenerateContentRequest.model: model is required and must be of the form models/{model}".to_owned());
                }
                refused(&generate)?;
                Ok(format!(
                    "{} {}",
                    generate["systemInstruction"], generate["contents"]
                ))
            }
            (Some(_), Some(_)) => {
                Err("contents and generate_content_request cannot both be set.".to_owned())
            }
            (None, None) => Err("contents or generate_content_request is required.".to_owned()),
        }
    }

    /// What the real API refuses in a generateContent body: fields it does not know, no
    /// contents, a role other than `user` and `model`, and a `functionResponse` whose turn does
    /// not follow the model's turn with a `functionCall` of that name.
    fn refused(request: &Value) -> Result<(), String> {
        const FIELDS: [&str; 8] = [
            "contents",
            "tools",
            "toolConfig",
            "safetySettings",
            "systemInstruction",
            "generationConfig",
            "cachedContent",
            "labels",
        ];
        let Some(fields) = request.as_object() else {
            return Err("Invalid JSON payload received.".to_owned());
        };
        if let Some(unknown) = fields.keys().find(|k| !FIELDS.contains(&k.as_str())) {
            return Err(format!(
                "Invalid JSON payload received. Unknown name \"{unknown}\": Cannot find field."
            ));
        }
        let contents = request["contents"].as_array().filter(|c| !c.is_empty());
        let Some(contents) = contents else {
            return Err("* GenerateContentRequest.contents: contents is not specified".to_owned());
        };
        let mut called: Vec<String> = Vec::new();
        for content in contents {
            let role = content["role"].as_str().unwrap_or("user");
            if role != "user" && role != "model" {
                return Err(format!(
                    "Please use a valid role: user, model. Got `{role}`."
                ));
            }
            let parts = content["parts"].as_array().cloned().unwrap_or_default();
            let mut calls = Vec::new();
            for part in &parts {
                if let Some(name) = part["functionCall"]["name"].as_str() {
                    calls.push(name.to_owned());
                }
                if let Some(name) = part["functionResponse"]["name"].as_str()
                    && !called.iter().any(|c| c == name)
                {
                    return Err(
                        "Please ensure that function response turn comes immediately \
                                after a function call turn. And the number of function response \
                                parts should be equal to number of function call parts of the \
                                function call turn."
                            .to_owned(),
                    );
                }
            }
            called = calls;
        }
        Ok(())
    }

    fn embedding(n: usize) -> Vec<f64> {
        EMBEDDING.iter().copied().cycle().take(n).collect()
    }

    fn generate(model: &str, request: &Value) -> Response {
        let tool = request["tools"][0]["functionDeclarations"][0]["name"]
            .as_str()
            .filter(|_| !has_function_response(request));
        let parts = match tool {
            Some(name) => json!([{"functionCall": {"name": name, "args": {"city": "Paris"}}}]),
            None => json!([{"text": "Weighing the story first.", "thought": true}, {"text": TEXT}]),
        };
        axum::Json(json!({
            "candidates": [{"content": {"parts": parts, "role": "model"},
                            "finishReason": "STOP", "avgLogprobs": -0.12}],
            "usageMetadata": usage(CANDIDATES_TOKENS),
            "modelVersion": model, "responseId": RESPONSE_ID
        }))
        .into_response()
    }

    fn stream(model: &str) -> Response {
        let mut text = String::new();
        let last = STREAM_DELTAS.len() - 1;
        for (i, delta) in STREAM_DELTAS.iter().enumerate() {
            let mut candidate = json!({"content": {"parts": [{"text": delta}], "role": "model"}});
            if i == last {
                candidate["finishReason"] = json!("STOP");
            }
            let chunk = json!({"candidates": [candidate], "modelVersion": model,
                               "responseId": "stream-1", "usageMetadata": usage(3 * (i as u64 + 1))});
            text.push_str(&format!("data: {chunk}\r\n\r\n"));
        }
        sse_in_pieces(text)
    }

    /// Two function calls, after a text part, in the stream's last chunk (as Gemini sends them).
    fn stream_function_calls(model: &str, name: &str) -> Response {
        let chunks = [
            json!({"candidates": [{"content": {"parts": [{"text": STREAM_TOOL_TEXT}], "role": "model"}}],
                   "modelVersion": model, "responseId": "stream-1", "usageMetadata": usage(3)}),
            json!({"candidates": [{"content": {"parts": [
                        {"functionCall": {"name": name, "args": {"city": "Paris"}}},
                        {"functionCall": {"name": name, "args": {"city": "Rome"}}}], "role": "model"},
                   "finishReason": "STOP"}],
                   "modelVersion": model, "responseId": "stream-1", "usageMetadata": usage(20)}),
        ];
        let mut text = String::new();
        for chunk in chunks {
            text.push_str(&format!("data: {chunk}\r\n\r\n"));
        }
        sse_in_pieces(text)
    }
}

/// Cohere v2 Chat and Embed, after docs.cohere.com/reference/chat, /chat-stream and /embed.
pub mod cohere {
    use super::*;

    pub const TEXT: &str = "LLMs stand for Large Language Models.";
    pub const STREAM_DELTAS: [&str; 3] = ["A large", " language model — LLM 🤖", "."];
    pub const BILLED_INPUT_TOKENS: u64 = 17;
    pub const BILLED_OUTPUT_TOKENS: u64 = 12;
    pub const CACHED_TOKENS: u64 = 8;
    pub const TOOL_CALL_ID: &str = "get_weather_1byjy32y4hvq";
    pub const TOOL_PLAN: &str = "I will search for the weather in Toronto.";
    pub const STREAM_TOOL_PLAN: [&str; 2] = ["I will search", " for both."];
    pub const STREAM_TOOL_CALL_IDS: [&str; 2] =
        ["get_weather_nsz5zm3w56q3", "get_weather_j3y5dg3q4cd1"];
    pub const ID: &str = "c14c80c3-18eb-4519-9460-6c92edd8cfb4";

    fn error(status: u16, message: &str) -> Response {
        json_response(
            status,
            json!({"id": "a3f2cbd4-6a7b-4f05-9a0e-2b7e5a0c7d11", "message": message}),
        )
    }

    fn authorized(headers: &HeaderMap) -> bool {
        header(headers, "authorization") == Some(&format!("Bearer {KEY}"))
    }

    fn usage() -> Value {
        json!({"billed_units": {"input_tokens": BILLED_INPUT_TOKENS, "output_tokens": BILLED_OUTPUT_TOKENS},
               "tokens": {"input_tokens": 215, "output_tokens": BILLED_OUTPUT_TOKENS},
               "cached_tokens": CACHED_TOKENS})
    }

    pub(super) async fn chat(
        State(shared): State<Arc<Shared>>,
        headers: HeaderMap,
        body: Bytes,
    ) -> Response {
        let request = record(&shared, "/v2/chat".into(), None, &headers, &body).await;
        if !authorized(&headers) {
            return error(401, "invalid api token");
        }
        let model = request["model"].as_str().unwrap_or_default();
        match model {
            "error-429" => {
                return error(
                    429,
                    "You are using a Trial key, which is limited to 20 API calls / minute.",
                );
            }
            "error-500" => {
                return error(
                    500,
                    "internal server error, this has been reported to our developers",
                );
            }
            _ => {}
        }
        let has_tool_result = request["messages"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
        let tool = request["tools"][0]["function"]["name"]
            .as_str()
            .filter(|_| !has_tool_result);
        if request["stream"] == true {
            return match tool {
                Some(name) => stream_tool_calls(name),
                None if model == "stream-cut" => stream_cut(),
                None => stream(),
            };
        }
        let (message, finish) = match tool {
            Some(name) => (
                json!({"role": "assistant", "tool_plan": TOOL_PLAN, "tool_calls": [{
                    "id": TOOL_CALL_ID, "type": "function",
                    "function": {"name": name, "arguments": "{\n    \"location\": \"Toronto\"\n}"}}]}),
                "TOOL_CALL",
            ),
            None => (
                json!({"role": "assistant", "content": [{"type": "text", "text": TEXT}]}),
                "COMPLETE",
            ),
        };
        axum::Json(json!({"id": ID, "finish_reason": finish, "message": message, "usage": usage()}))
            .into_response()
    }

    fn stream() -> Response {
        let mut events: Vec<(&str, Value)> = vec![
            (
                "message-start",
                json!({"id": "29f14a5a-11de-4cae-9800-25e4747408ea", "type": "message-start",
                       "delta": {"message": {"role": "assistant", "content": [], "tool_plan": "",
                                             "tool_calls": [], "citations": []}}}),
            ),
            (
                "content-start",
                json!({"type": "content-start", "index": 0,
                       "delta": {"message": {"content": {"type": "text", "text": ""}}}}),
            ),
        ];
        for text in STREAM_DELTAS {
            events.push((
                "content-delta",
                json!({"type": "content-delta", "index": 0,
                       "delta": {"message": {"content": {"text": text}}}}),
            ));
        }
        events.push(("content-end", json!({"type": "content-end", "index": 0})));
        events.push((
            "message-end",
            json!({"type": "message-end",
                   "delta": {"finish_reason": "COMPLETE", "usage": usage()}}),
        ));
        let mut text = String::new();
        for (name, data) in events {
            text.push_str(&format!("event: {name}\ndata: {data}\n\n"));
        }
        sse_in_pieces(text)
    }

    /// `message-start`, a text content's start and first delta, and no `message-end`.
    fn stream_cut() -> Response {
        let events = [
            json!({"id": "29f14a5a-11de-4cae-9800-25e4747408ea", "type": "message-start",
                   "delta": {"message": {"role": "assistant", "content": [], "tool_plan": "",
                                         "tool_calls": [], "citations": []}}}),
            json!({"type": "content-start", "index": 0,
                   "delta": {"message": {"content": {"type": "text", "text": ""}}}}),
            json!({"type": "content-delta", "index": 0,
                   "delta": {"message": {"content": {"text": STREAM_DELTAS[0]}}}}),
        ];
        let mut text = String::new();
        for event in events {
            text.push_str(&format!(
                "event: {}\ndata: {event}\n\n",
                event["type"].as_str().unwrap_or_default()
            ));
        }
        sse_in_pieces(text)
    }

    /// The tool plan in two deltas, then two tool calls (Toronto, Madrid) in pieces.
    fn stream_tool_calls(name: &str) -> Response {
        let mut events: Vec<(&str, Value)> = vec![(
            "message-start",
            json!({"id": "29f14a5a-11de-4cae-9800-25e4747408ea", "type": "message-start",
                   "delta": {"message": {"role": "assistant", "content": [], "tool_plan": "",
                                         "tool_calls": [], "citations": []}}}),
        )];
        for part in STREAM_TOOL_PLAN {
            events.push((
                "tool-plan-delta",
                json!({"type": "tool-plan-delta", "delta": {"message": {"tool_plan": part}}}),
            ));
        }
        for (index, (id, pieces)) in [
            (
                STREAM_TOOL_CALL_IDS[0],
                &["{\n    \"location\"", ": \"Toronto\"\n}"][..],
            ),
            (STREAM_TOOL_CALL_IDS[1], &["{\"location\": \"Madrid\"}"][..]),
        ]
        .into_iter()
        .enumerate()
        {
            events.push((
                "tool-call-start",
                json!({"type": "tool-call-start", "index": index, "delta": {"message": {"tool_calls":
                    {"id": id, "type": "function", "function": {"name": name, "arguments": ""}}}}}),
            ));
            for piece in pieces {
                events.push((
                    "tool-call-delta",
                    json!({"type": "tool-call-delta", "index": index, "delta": {"message":
                        {"tool_calls": {"function": {"arguments": piece}}}}}),
                ));
            }
            events.push((
                "tool-call-end",
                json!({"type": "tool-call-end", "index": index}),
            ));
        }
        events.push((
            "message-end",
            json!({"type": "message-end",
                   "delta": {"finish_reason": "TOOL_CALL", "usage": usage()}}),
        ));
        let mut text = String::new();
        for (name, data) in events {
            text.push_str(&format!("event: {name}\ndata: {data}\n\n"));
        }
        sse_in_pieces(text)
    }

    pub(super) async fn embed(
        State(shared): State<Arc<Shared>>,
        headers: HeaderMap,
        body: Bytes,
    ) -> Response {
        let request = record(&shared, "/v2/embed".into(), None, &headers, &body).await;
        if !authorized(&headers) {
            return error(401, "invalid api token");
        }
        let texts = request["texts"].as_array().cloned().unwrap_or_default();
        let vectors: Vec<Value> = (0..texts.len())
            .map(|i| json!([0.016296387 + i as f64, 0.008354187, 0.04699707]))
            .collect();
        axum::Json(json!({
            "id": "da6e531f-54c6-4a73-bf92-f60566d8d753",
            "embeddings": {"float": vectors}, "texts": texts,
            "meta": {"api_version": {"version": "2"}, "billed_units": {"input_tokens": 2}},
            "response_type": "embeddings_by_type"
        }))
        .into_response()
    }
}

/// Azure OpenAI chat completions, after learn.microsoft.com/azure/ai-foundry/openai/reference.
pub mod azure {
    use super::*;

    pub const TEXT: &str = "Honey never spoils.";
    pub const STREAM_DELTAS: [&str; 3] = ["Honey", " never", " spoils. 🍯"];
    pub const PROMPT_TOKENS: u64 = 12;
    pub const COMPLETION_TOKENS: u64 = 5;
    pub const CACHED_TOKENS: u64 = 4;
    pub const TOOL_CALL_ID: &str = "call_Ej8MRxo8lc1p6NZ9UYVZVzcK";
    /// A streamed tool call's arguments, as they come: `{"location":"Boston, MA"}`.
    pub const STREAM_TOOL_ARGUMENTS: [&str; 3] = ["{\"loc", "ation\":\"Bos", "ton, MA\"}"];

    fn error(status: u16, message: &str) -> Response {
        json_response(
            status,
            json!({"error": {"code": status.to_string(), "message": message}}),
        )
    }

    fn filters() -> Value {
        json!({"hate": {"filtered": false, "severity": "safe"},
               "self_harm": {"filtered": false, "severity": "safe"}})
    }

    fn usage() -> Value {
        json!({"completion_tokens": COMPLETION_TOKENS, "prompt_tokens": PROMPT_TOKENS,
               "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS,
               "prompt_tokens_details": {"cached_tokens": CACHED_TOKENS}})
    }

    pub(super) async fn chat(
        State(shared): State<Arc<Shared>>,
        Path(deployment): Path<String>,
        RawQuery(query): RawQuery,
        headers: HeaderMap,
        body: Bytes,
    ) -> Response {
        let request = record(
            &shared,
            format!("/openai/deployments/{deployment}/chat/completions"),
            query.clone(),
            &headers,
            &body,
        )
        .await;
        if header(&headers, "api-key") != Some(KEY) {
            return error(
                401,
                "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.",
            );
        }
        if !query.unwrap_or_default().contains("api-version=") {
            return json_response(
                404,
                json!({"error": {"code": "404", "message": "Resource not found"}}),
            );
        }
        match deployment.as_str() {
            "error-429" => {
                return error(
                    429,
                    "Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 6 seconds.",
                );
            }
            "error-500" => {
                return error(
                    500,
                    "The server had an error while processing your request.",
                );
            }
            _ => {}
        }
        let has_tool_result = request["messages"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
        let tool = request["tools"][0]["function"]["name"]
            .as_str()
            .filter(|_| !has_tool_result);
        if request["stream"] == true {
            let include_usage = request["stream_options"]["include_usage"] == true;
            return match tool {
                Some(name) => stream_tool_call(name),
                None => stream(include_usage, deployment == "stream-cut"),
            };
        }
        let message = match tool {
            Some(name) => json!({"role": "assistant", "content": null, "tool_calls": [{
                "id": TOOL_CALL_ID, "type": "function",
                "function": {"name": name, "arguments": "{\"location\":\"Boston, MA\"}"}}]}),
            None => json!({"role": "assistant", "content": TEXT}),
        };
        axum::Json(json!({
            "id": "chatcmpl-7R1nGnsXO8n4oi9UPz2f3UHdgAYMn", "created": 1_686_676_106,
            "object": "chat.completion", "model": "gpt-4o-2024-08-06",
            "choices": [{"index": 0, "finish_reason": if tool.is_some() { "tool_calls" } else { "stop" },
                         "message": message, "content_filter_results": filters()}],
            "usage": usage(),
            "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": filters()}]
        }))
        .into_response()
    }

    /// A streamed call of tool `name`, as OpenAI streams one: the id and name first, then the
    /// arguments in pieces, then `tool_calls` as the finish reason.
    fn stream_tool_call(name: &str) -> Response {
        let chunk = |delta: Value, finish: Option<&str>| {
            json!({
                "id": "chatcmpl-7R1nGnsXO8n4oi9UPz2f3UHdgAYMn", "object": "chat.completion.chunk",
                "created": 1_686_676_106, "model": "gpt-4o-2024-08-06",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish,
                             "content_filter_results": filters()}]
            })
        };
        let mut events = vec![chunk(
            json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0,
                   "id": TOOL_CALL_ID, "type": "function",
                   "function": {"name": name, "arguments": ""}}]}),
            None,
        )];
        for piece in STREAM_TOOL_ARGUMENTS {
            events.push(chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}),
                None,
            ));
        }
        events.push(chunk(json!({}), Some("tool_calls")));
        let mut text = String::new();
        for event in events {
            text.push_str(&format!("data: {event}\n\n"));
        }
        text.push_str("data: [DONE]\n\n");
        sse_in_pieces(text)
    }

    /// With `cut`, the stream stops after the first text delta, with no finish chunk or `[DONE]`.
    fn stream(include_usage: bool, cut: bool) -> Response {
        let chunk = |delta: Value, finish: Option<&str>| {
            let mut chunk = json!({
                "id": "chatcmpl-7R1nGnsXO8n4oi9UPz2f3UHdgAYMn", "object": "chat.completion.chunk",
                "created": 1_686_676_106, "model": "gpt-4o-2024-08-06", "system_fingerprint": "fp_azure",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish,
                             "content_filter_results": filters()}]
            });
            if include_usage {
                chunk["usage"] = Value::Null;
            }
            chunk
        };
        // Azure's first chunk carries only the prompt's filter results, with no choices.
        let mut events = vec![json!({
            "id": "", "object": "", "created": 0, "model": "", "choices": [],
            "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": filters()}]
        })];
        events.push(chunk(json!({"role": "assistant", "content": ""}), None));
        for text in STREAM_DELTAS {
            events.push(chunk(json!({"content": text}), None));
            if cut {
                let mut text = String::new();
                for event in events {
                    text.push_str(&format!("data: {event}\n\n"));
                }
                return sse_in_pieces(text);
            }
        }
        events.push(chunk(json!({}), Some("stop")));
        if include_usage {
            events.push(json!({
                "id": "chatcmpl-7R1nGnsXO8n4oi9UPz2f3UHdgAYMn", "object": "chat.completion.chunk",
                "created": 1_686_676_106, "model": "gpt-4o-2024-08-06", "choices": [], "usage": usage()
            }));
        }
        let mut text = String::new();
        for event in events {
            text.push_str(&format!("data: {event}\n\n"));
        }
        text.push_str("data: [DONE]\n\n");
        sse_in_pieces(text)
    }
}
