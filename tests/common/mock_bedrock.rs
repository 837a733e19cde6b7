//! A mock of the Bedrock runtime's Converse and ConverseStream, after AWS's API reference
//! (docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html,
//! API_runtime_ConverseStream.html, API_runtime_ConverseStreamOutput.html, CommonErrors.html).
//! Streams are real `application/vnd.amazon.eventstream` messages, framed here with their
//! prelude and message CRC32s
//! (docs.aws.amazon.com/lexv2/latest/dg/event-stream-encoding.html), and sent in pieces of
//! 1, 2, 3, 5, 7, 11 and 13 bytes so that preludes, headers, payloads and CRCs are all split.
//!
//! | request | answer |
//! |---|---|
//! | no `authorization` for [`ACCESS_KEY_ID`] | 403 `UnrecognizedClientException` |
//! | model `error-429` | 429 `ThrottlingException` (type in `x-amzn-errortype`) |
//! | model `error-400` | 400 `ValidationException` |
//! | model `stream-throttled`, streamed | a text delta, then a `throttlingException` message |
//! | `toolConfig` and no `toolResult` among the messages | a `toolUse` of the first tool |
//! | anything else | a text answer with usage, cache reads and writes included |

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use futures_util::StreamExt;
use serde_json::{Value, json};

use super::mock_providers::{MockProvider, Recorded, Shared};

pub const ACCESS_KEY_ID: &str = "AKIAIOSFODNN7EXAMPLE";
pub const SECRET_ACCESS_KEY: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
pub const REGION: &str = "us-west-2";
pub const REQUEST_ID: &str = "9f3c2d1e-5b6a-4c7d-8e9f-0a1b2c3d4e5f";
pub const TEXT: &str = "Bonjour! I am running on Bedrock.";
pub const STREAM_DELTAS: [&str; 3] = ["Bonjour", "! Ça roule? 🚀", " On Bedrock."];
/// Converse's `inputTokens` leaves out the cache reads and writes.
pub const INPUT_TOKENS: u64 = 21;
pub const CACHE_READ_TOKENS: u64 = 1024;
pub const CACHE_WRITE_TOKENS: u64 = 300;
pub const OUTPUT_TOKENS: u64 = 17;
pub const TOOL_USE_ID: &str = "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q";

impl MockProvider {
    /// Bedrock runtime: `POST /model/{model}/{converse|converse-stream|invoke}`.
    pub async fn bedrock() -> Self {
        Self::serve(
            Router::new().route("/model/{model}/{action}", post(handle)),
            "",
        )
        .await
    }
}

/// The usage object both APIs report.
pub fn usage() -> Value {
    json!({"inputTokens": INPUT_TOKENS, "outputTokens": OUTPUT_TOKENS,
           "totalTokens": INPUT_TOKENS + CACHE_READ_TOKENS + CACHE_WRITE_TOKENS + OUTPUT_TOKENS,
           "cacheReadInputTokens": CACHE_READ_TOKENS, "cacheWriteInputTokens": CACHE_WRITE_TOKENS})
}

fn error(status: u16, kind: &str, message: &str) -> Response {
    (
        StatusCode::from_u16(status).expect("status"),
        [
            ("content-type", "application/json".to_owned()),
            ("x-amzn-requestid", REQUEST_ID.to_owned()),
            (
                "x-amzn-errortype",
                format!("{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/"),
            ),
        ],
        json!({"message": message}).to_string(),
    )
        .into_response()
}

fn has_tool_result(request: &Value) -> bool {
    request["messages"].as_array().is_some_and(|messages| {
        messages.iter().any(|m| {
            m["content"]
                .as_array()
                .is_some_and(|c| c.iter().any(|b| b.get("toolResult").is_some()))
        })
    })
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    Path((model, action)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    shared.requests.lock().await.push(Recorded {
        path: format!("/model/{model}/{action}"),
        headers: headers.clone(),
        body: request.clone(),
    });
    let authorization = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if !authorization.starts_with(&format!("AWS4-HMAC-SHA256 Credential={ACCESS_KEY_ID}/")) {
        return error(
            403,
            "UnrecognizedClientException",
            "The security token included in the request is invalid.",
        );
    }
    match model.as_str() {
        "error-429" => {
            return error(
                429,
                "ThrottlingException",
                "Too many requests, please wait before trying again.",
            );
        }
        "error-400" => {
            return error(
                400,
                "ValidationException",
                "The provided model identifier is invalid.",
            );
        }
        _ => {}
    }
    let tool = request["toolConfig"]["tools"][0]["toolSpec"]["name"]
        .as_str()
        .filter(|_| !has_tool_result(&request))
        .map(str::to_owned);
    match action.as_str() {
        "converse" => converse(tool.as_deref()),
        "converse-stream" => converse_stream(&model, tool.as_deref()),
        _ => error(404, "UnknownOperationException", "unknown operation"),
    }
}

fn converse(tool: Option<&str>) -> Response {
    let (content, stop) = match tool {
        Some(name) => (
            json!([{"text": "Let me look that up."},
                   {"toolUse": {"toolUseId": TOOL_USE_ID, "name": name,
                                "input": {"location": "Seattle, WA", "unit": "celsius"}}}]),
            "tool_use",
        ),
        None => (json!([{"text": TEXT}]), "end_turn"),
    };
    (
        [
            ("content-type", "application/json"),
            ("x-amzn-requestid", REQUEST_ID),
        ],
        json!({"output": {"message": {"role": "assistant", "content": content}},
               "stopReason": stop, "usage": usage(), "metrics": {"latencyMs": 431}})
        .to_string(),
    )
        .into_response()
}

/// ConverseStream's events as (`:event-type`, payload). Real payloads carry a `p` field of
/// padding (so that sizes do not reveal the content); the mock sends one too.
fn stream_events(model: &str, tool: Option<&str>) -> Vec<(&'static str, Value)> {
    let mut events = vec![
        (
            "messageStart",
            json!({"role": "assistant", "p": "abcdefgh"}),
        ),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"text": STREAM_DELTAS[0]}, "p": "abcd"}),
        ),
    ];
    if model == "stream-throttled" {
        return events;
    }
    for text in &STREAM_DELTAS[1..] {
        events.push((
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"text": text}, "p": "abcdefghijkl"}),
        ));
    }
    events.push((
        "contentBlockStop",
        json!({"contentBlockIndex": 0, "p": "abcdefghijklmnopq"}),
    ));
    if let Some(name) = tool {
        events.push((
            "contentBlockStart",
            json!({"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": TOOL_USE_ID, "name": name}},
                   "p": "abc"}),
        ));
        for piece in [
            "{\"location\": \"Sea",
            "ttle, WA\", \"unit\"",
            ": \"celsius\"}",
        ] {
            events.push((
                "contentBlockDelta",
                json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": piece}}, "p": "ab"}),
            ));
        }
        events.push((
            "contentBlockStop",
            json!({"contentBlockIndex": 1, "p": "abcdefg"}),
        ));
    }
    let stop = if tool.is_some() {
        "tool_use"
    } else {
        "end_turn"
    };
    events.push((
        "messageStop",
        json!({"stopReason": stop, "p": "abcdefghij"}),
    ));
    events.push((
        "metadata",
        json!({"usage": usage(), "metrics": {"latencyMs": 512}, "p": "abcdefghijklm"}),
    ));
    events
}

fn converse_stream(model: &str, tool: Option<&str>) -> Response {
    let mut bytes = Vec::new();
    for (event, payload) in stream_events(model, tool) {
        bytes.extend(frame(
            &[
                (":event-type", event),
                (":content-type", "application/json"),
                (":message-type", "event"),
            ],
            payload.to_string().as_bytes(),
        ));
    }
    if model == "stream-throttled" {
        bytes.extend(frame(
            &[
                (":exception-type", "throttlingException"),
                (":content-type", "application/json"),
                (":message-type", "exception"),
            ],
            json!({"message": "Too many tokens, please wait before trying again."})
                .to_string()
                .as_bytes(),
        ));
    }
    in_pieces(bytes)
}

/// `bytes` as an event-stream response, in pieces of 1, 2, 3, 5, 7, 11, 13, 1, ... bytes.
fn in_pieces(bytes: Vec<u8>) -> Response {
    const SIZES: [usize; 7] = [1, 2, 3, 5, 7, 11, 13];
    let mut pieces = Vec::new();
    let mut at = 0;
    for size in SIZES.iter().cycle() {
        if at >= bytes.len() {
            break;
        }
        let end = (at + size).min(bytes.len());
        pieces.push(Bytes::copy_from_slice(&bytes[at..end]));
        at = end;
    }
    let body = futures_util::stream::iter(pieces).then(|piece| async move {
        // A pause makes each piece its own read on the gateway's side.
        tokio::time::sleep(Duration::from_micros(100)).await;
        Ok::<_, std::convert::Infallible>(piece)
    });
    (
        [
            ("content-type", "application/vnd.amazon.eventstream"),
            ("x-amzn-requestid", REQUEST_ID),
        ],
        Body::from_stream(body),
    )
        .into_response()
}

/// One event-stream message: total length and headers length (big-endian `u32`s), the CRC32 of
/// those 8 bytes, the headers (name length `u8`, name, type 7 = string, value length `u16`,
/// value), the payload, and the CRC32 of everything before it.
pub fn frame(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut block = Vec::new();
    for (name, value) in headers {
        block.push(u8::try_from(name.len()).expect("short name"));
        block.extend_from_slice(name.as_bytes());
        block.push(7);
        block.extend_from_slice(
            &u16::try_from(value.len())
                .expect("short value")
                .to_be_bytes(),
        );
        block.extend_from_slice(value.as_bytes());
    }
    let total = u32::try_from(12 + block.len() + payload.len() + 4).expect("small message");
    let mut message = Vec::with_capacity(total as usize);
    message.extend_from_slice(&total.to_be_bytes());
    message.extend_from_slice(&u32::try_from(block.len()).expect("small").to_be_bytes());
    let prelude_crc = crc32(&message);
    message.extend_from_slice(&prelude_crc.to_be_bytes());
    message.extend_from_slice(&block);
    message.extend_from_slice(payload);
    let message_crc = crc32(&message);
    message.extend_from_slice(&message_crc.to_be_bytes());
    message
}

/// CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320), bit by bit: slow and obviously right.
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = u32::MAX;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
        }
    }
    !crc
}
