//! A fast mock upstream for the gateway benchmark: OpenAI Chat Completions, Anthropic Messages
//! and OpenAI Responses, whole or streamed (20 text deltas, then usage), answered at once.
//!
//! It checks what a real provider would refuse (the auth header, the version header, the body's
//! required fields) so that a gateway that sends the wrong thing fails the benchmark instead of
//! being measured on it. The answers are prebuilt at start: the mock's own cost per request is a
//! parse of the request and a write. It prints `listening <addr>` and serves until killed.
//!
//! It also serves `/mcp`, an MCP server with one tool (`mcp.rs`), for the tool-call row.
//!
//! `mock-upstream [port] [pace_ms] [delay_ms]`: port 0 (the default) picks a free one; a pace
//! sends one streamed event every `pace_ms` milliseconds; a delay holds every completion that
//! long before it is answered (a model's time to think). 127.0.0.1 only.

#![allow(clippy::print_stdout)]

mod mcp;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response, StatusCode};
use serde_json::{Value, json};

/// Text deltas per streamed answer.
const DELTAS: usize = 20;
/// Request bodies past this are refused, as a provider would.
pub(crate) const MAX_BODY: usize = 1 << 20;

pub(crate) type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// Every answer, built once.
struct Answers {
    chat: Bytes,
    chat_stream: Vec<Bytes>,
    chat_stream_usage: Bytes,
    messages: Bytes,
    messages_stream: Vec<Bytes>,
    responses: Bytes,
    responses_stream: Vec<Bytes>,
    /// The time between two streamed events (none: all at once).
    pace: Option<Duration>,
    /// The time before a completion is answered, whole or streamed.
    delay: Option<Duration>,
}

fn words() -> Vec<String> {
    (0..DELTAS).map(|i| format!("word{i} ")).collect()
}

fn text() -> String {
    // About 1 KiB of answer, as the whole-answer benchmark sends.
    "lorem ipsum dolor sit amet ".repeat(36)
}

fn sse_data(v: &Value) -> Bytes {
    Bytes::from(format!("data: {v}\n\n"))
}

fn sse_event(v: &Value) -> Bytes {
    let name = v["type"].as_str().unwrap_or_default();
    Bytes::from(format!("event: {name}\ndata: {v}\n\n"))
}

fn chat_answers() -> (Bytes, Vec<Bytes>, Bytes) {
    let usage = json!({"prompt_tokens": 200, "completion_tokens": 50, "total_tokens": 250,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
            "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}});
    let whole = json!({"id": "chatcmpl-bench", "object": "chat.completion",
        "created": 1_700_000_000, "model": "gpt-4o-mini", "system_fingerprint": "fp_bench",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text(),
            "refusal": null, "annotations": []}, "logprobs": null, "finish_reason": "stop"}],
        "usage": usage, "service_tier": "default"});
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "chatcmpl-bench", "object": "chat.completion.chunk",
            "created": 1_700_000_000, "model": "gpt-4o-mini", "system_fingerprint": "fp_bench",
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
            "usage": null})
    };
    let mut stream = vec![sse_data(&chunk(
        json!({"role": "assistant", "content": "", "refusal": null}),
        Value::Null,
    ))];
    for w in words() {
        stream.push(sse_data(&chunk(json!({"content": w}), Value::Null)));
    }
    stream.push(sse_data(&chunk(json!({}), json!("stop"))));
    let usage_chunk = sse_data(
        &json!({"id": "chatcmpl-bench", "object": "chat.completion.chunk",
        "created": 1_700_000_000, "model": "gpt-4o-mini", "system_fingerprint": "fp_bench",
        "choices": [], "usage": {"prompt_tokens": 200, "completion_tokens": DELTAS,
            "total_tokens": 200 + DELTAS}}),
    );
    (Bytes::from(whole.to_string()), stream, usage_chunk)
}

fn messages_answers() -> (Bytes, Vec<Bytes>) {
    let whole = json!({"id": "msg_bench", "type": "message", "role": "assistant",
        "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": text()}],
        "stop_reason": "end_turn", "stop_sequence": null,
        "usage": {"input_tokens": 200, "output_tokens": 50, "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0}});
    let mut stream = vec![
        sse_event(
            &json!({"type": "message_start", "message": {"id": "msg_bench",
            "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
            "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 200, "output_tokens": 1, "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0}}}),
        ),
        sse_event(&json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "text", "text": ""}})),
        sse_event(&json!({"type": "ping"})),
    ];
    for w in words() {
        stream.push(sse_event(
            &json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": w}}),
        ));
    }
    stream.push(sse_event(
        &json!({"type": "content_block_stop", "index": 0}),
    ));
    stream.push(sse_event(&json!({"type": "message_delta",
        "delta": {"stop_reason": "end_turn", "stop_sequence": null},
        "usage": {"output_tokens": DELTAS}})));
    stream.push(sse_event(&json!({"type": "message_stop"})));
    (Bytes::from(whole.to_string()), stream)
}

fn response_object(status: &str, output: Value, usage: Value) -> Value {
    json!({"id": "resp_bench", "object": "response", "created_at": 1_700_000_000,
        "status": status, "error": null, "incomplete_details": null, "instructions": null,
        "max_output_tokens": null, "model": "gpt-4o-mini", "output": output,
        "parallel_tool_calls": true, "previous_response_id": null,
        "reasoning": {"effort": null, "summary": null}, "store": false, "temperature": 1.0,
        "text": {"format": {"type": "text"}}, "tool_choice": "auto", "tools": [], "top_p": 1.0,
        "truncation": "disabled", "usage": usage, "user": null, "metadata": {}})
}

fn responses_answers() -> (Bytes, Vec<Bytes>) {
    let message = |text: &str, status: &str| {
        json!({"type": "message", "id": "msg_bench", "status": status, "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}]})
    };
    let usage = |output: usize| {
        json!({"input_tokens": 200, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": output, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 200 + output})
    };
    let whole = response_object(
        "completed",
        json!([message(&text(), "completed")]),
        usage(50),
    );
    let pending = response_object("in_progress", json!([]), Value::Null);
    let all: String = words().concat();
    let at = |mut v: Value| {
        v["item_id"] = json!("msg_bench");
        v["output_index"] = json!(0);
        v["content_index"] = json!(0);
        v
    };
    let part = |text: &str| json!({"type": "output_text", "text": text, "annotations": []});
    let mut events = vec![
        json!({"type": "response.created", "response": pending}),
        json!({"type": "response.in_progress", "response": pending}),
        json!({"type": "response.output_item.added", "output_index": 0,
            "item": {"type": "message", "id": "msg_bench", "status": "in_progress",
                "role": "assistant", "content": []}}),
        at(json!({"type": "response.content_part.added", "part": part("")})),
    ];
    for w in words() {
        events.push(at(
            json!({"type": "response.output_text.delta", "delta": w, "logprobs": []}),
        ));
    }
    events.push(at(
        json!({"type": "response.output_text.done", "text": all, "logprobs": []}),
    ));
    events.push(at(
        json!({"type": "response.content_part.done", "part": part(&all)}),
    ));
    events.push(
        json!({"type": "response.output_item.done", "output_index": 0,
        "item": message(&all, "completed")}),
    );
    events.push(json!({"type": "response.completed",
        "response": response_object("completed", json!([message(&all, "completed")]),
            usage(DELTAS))}));
    let stream = events
        .into_iter()
        .enumerate()
        .map(|(i, mut e)| {
            e["sequence_number"] = json!(i);
            sse_event(&e)
        })
        .collect();
    (Bytes::from(whole.to_string()), stream)
}

pub(crate) fn full(status: StatusCode, content_type: &'static str, body: Bytes) -> Response<Body> {
    let mut response = Response::new(Full::new(body).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        "content-type",
        hyper::header::HeaderValue::from_static(content_type),
    );
    response
}

fn error(status: StatusCode, message: &str) -> Response<Body> {
    let body = json!({"error": {"message": message, "type": "invalid_request_error"}});
    full(status, "application/json", Bytes::from(body.to_string()))
}

fn events(chunks: Vec<Bytes>, pace: Option<Duration>) -> Response<Body> {
    let chunks = Chunks {
        events: chunks.into_iter(),
        pace,
        sleep: None,
    };
    let mut response = Response::new(chunks.boxed());
    response.headers_mut().insert(
        "content-type",
        hyper::header::HeaderValue::from_static("text/event-stream"),
    );
    response
}

/// Each event its own frame. With no pace all are ready at once: the upstream "answers at
/// once", and the gateway sees events as they come off the socket, several to a read or one.
/// With a pace, one event per `pace`: streams that stay open, for the memory they hold.
struct Chunks {
    events: std::vec::IntoIter<Bytes>,
    pace: Option<Duration>,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl hyper::body::Body for Chunks {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if let Some(pace) = self.pace {
            let sleep = self
                .sleep
                .get_or_insert_with(|| Box::pin(tokio::time::sleep(pace)));
            if sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            self.sleep = None;
        }
        Poll::Ready(self.events.next().map(|b| Ok(Frame::data(b))))
    }
}

/// The fields a request must have, per API.
#[derive(serde::Deserialize)]
struct Common {
    model: Option<String>,
    messages: Option<Vec<Value>>,
    input: Option<Value>,
    max_tokens: Option<u64>,
    #[serde(default)]
    stream: bool,
    stream_options: Option<StreamOptions>,
}

#[derive(serde::Deserialize)]
struct StreamOptions {
    #[serde(default)]
    include_usage: bool,
}

async fn serve(answers: Arc<Answers>, request: Request<Incoming>) -> Response<Body> {
    let path = request.uri().path().to_owned();
    if path == "/mcp" {
        return mcp::serve(request).await;
    }
    let headers = request.headers().clone();
    let bearer = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("Bearer ") && v.len() > 7);
    let body = match http_body_util::Limited::new(request.into_body(), MAX_BODY)
        .collect()
        .await
    {
        Ok(body) => body.to_bytes(),
        Err(_) => return error(StatusCode::PAYLOAD_TOO_LARGE, "request body too large"),
    };
    let Ok(req) = serde_json::from_slice::<Common>(&body) else {
        return error(StatusCode::BAD_REQUEST, "the body is not a JSON object");
    };
    if req.model.as_deref().is_none_or(str::is_empty) {
        return error(StatusCode::BAD_REQUEST, "model: required");
    }
    if let Some(delay) = answers.delay
        && path != "/v1/embeddings"
    {
        tokio::time::sleep(delay).await;
    }
    match path.as_str() {
        "/v1/chat/completions" => {
            if !bearer {
                return error(StatusCode::UNAUTHORIZED, "missing bearer key");
            }
            if req.messages.is_none_or(|m| m.is_empty()) {
                return error(StatusCode::BAD_REQUEST, "messages: required");
            }
            if !req.stream {
                return full(StatusCode::OK, "application/json", answers.chat.clone());
            }
            let mut chunks = answers.chat_stream.clone();
            if req.stream_options.is_some_and(|o| o.include_usage) {
                chunks.push(answers.chat_stream_usage.clone());
            }
            chunks.push(Bytes::from_static(b"data: [DONE]\n\n"));
            events(chunks, answers.pace)
        }
        "/v1/messages" => {
            if headers.get("x-api-key").is_none() {
                return error(StatusCode::UNAUTHORIZED, "x-api-key: required");
            }
            if headers.get("anthropic-version").is_none() {
                return error(StatusCode::BAD_REQUEST, "anthropic-version: required");
            }
            if req.messages.is_none_or(|m| m.is_empty()) || req.max_tokens.is_none() {
                return error(StatusCode::BAD_REQUEST, "messages and max_tokens: required");
            }
            if req.stream {
                events(answers.messages_stream.clone(), answers.pace)
            } else {
                full(StatusCode::OK, "application/json", answers.messages.clone())
            }
        }
        "/v1/responses" => {
            if !bearer {
                return error(StatusCode::UNAUTHORIZED, "missing bearer key");
            }
            if req.input.is_none() {
                return error(StatusCode::BAD_REQUEST, "input: required");
            }
            if req.stream {
                events(answers.responses_stream.clone(), answers.pace)
            } else {
                full(
                    StatusCode::OK,
                    "application/json",
                    answers.responses.clone(),
                )
            }
        }
        "/v1/embeddings" => {
            if !bearer {
                return error(StatusCode::UNAUTHORIZED, "missing bearer key");
            }
            let Some(text) = req.input.as_ref().and_then(Value::as_str) else {
                return error(StatusCode::BAD_REQUEST, "input: a string required");
            };
            full(StatusCode::OK, "application/json", embedding(text))
        }
        _ => error(StatusCode::NOT_FOUND, "no such endpoint"),
    }
}

/// Dimensions of an embedding, as `text-embedding-3-small` gives them.
const DIMENSIONS: usize = 1536;

/// An embeddings answer for `text`: a vector with one 1 at a place chosen by the text's hash
/// (a leading `[warm] ` ignored), so that two texts are alike (cosine 1) or not at all (0).
fn embedding(text: &str) -> Bytes {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.trim_start_matches("[warm] ").hash(&mut hasher);
    let mut vector = vec![0.0f32; DIMENSIONS];
    vector[(hasher.finish() % DIMENSIONS as u64) as usize] = 1.0;
    let answer = json!({"object": "list", "model": "text-embedding-3-small",
        "data": [{"object": "embedding", "index": 0, "embedding": vector}],
        "usage": {"prompt_tokens": 8, "total_tokens": 8}});
    Bytes::from(answer.to_string())
}

fn main() -> anyhow::Result<()> {
    let port: u16 = std::env::args().nth(1).map_or(Ok(0), |p| p.parse())?;
    let pace_ms: u64 = std::env::args().nth(2).map_or(Ok(0), |p| p.parse())?;
    let delay_ms: u64 = std::env::args().nth(3).map_or(Ok(0), |p| p.parse())?;
    let pace = (pace_ms > 0).then(|| Duration::from_millis(pace_ms));
    let delay = (delay_ms > 0).then(|| Duration::from_millis(delay_ms));
    let (chat, chat_stream, chat_stream_usage) = chat_answers();
    let (messages, messages_stream) = messages_answers();
    let (responses, responses_stream) = responses_answers();
    let answers = Arc::new(Answers {
        chat,
        chat_stream,
        chat_stream_usage,
        messages,
        messages_stream,
        responses,
        responses_stream,
        pace,
        delay,
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        println!("listening {}", listener.local_addr()?);
        loop {
            let (socket, _) = listener.accept().await?;
            socket.set_nodelay(true)?;
            let answers = Arc::clone(&answers);
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    let answers = Arc::clone(&answers);
                    async move { Ok::<_, Infallible>(serve(answers, request).await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(socket), service)
                    .await;
            });
        }
    })
}
