//! A response as the Responses API streams it: `response.created`, `response.in_progress`, each
//! output item's `added`/part/delta/`done` events, `response.completed`, every event numbered by
//! `sequence_number`, delivered in 7-byte pieces so events and UTF-8 characters are cut.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde_json::{Value, json};

use super::answer::response_object;

/// `text` cut every `size` characters.
fn pieces(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// The events of `done`, the response to `request`, numbered.
pub(super) fn sequence(request: &Value, done: &Value) -> Vec<Value> {
    let id = done["id"].as_str().unwrap_or_default();
    let mut events: Vec<Value> = Vec::new();
    let pending = response_object(request, id, "in_progress", &[], None);
    events.push(json!({"type": "response.created", "response": pending}));
    events.push(json!({"type": "response.in_progress", "response": pending}));
    let output = done["output"].as_array().cloned().unwrap_or_default();
    for (index, item) in output.iter().enumerate() {
        let item_id = &item["id"];
        let at = |mut event: Value| {
            event["item_id"] = item_id.clone();
            event["output_index"] = json!(index);
            event
        };
        match item["type"].as_str() {
            Some("message") => {
                let text = item["content"][0]["text"].as_str().unwrap_or_default();
                let mut added = item.clone();
                added["status"] = json!("in_progress");
                added["content"] = json!([]);
                events.push(json!({"type": "response.output_item.added", "output_index": index, "item": added}));
                let part = |text: &str| json!({"type": "output_text", "text": text, "annotations": [], "logprobs": []});
                events.push(at(json!({"type": "response.content_part.added", "content_index": 0, "part": part("")})));
                for delta in text.split_inclusive(' ') {
                    events.push(at(
                        json!({"type": "response.output_text.delta", "content_index": 0,
                                          "delta": delta, "logprobs": []}),
                    ));
                }
                events.push(at(
                    json!({"type": "response.output_text.done", "content_index": 0,
                                      "text": text, "logprobs": []}),
                ));
                events.push(at(json!({"type": "response.content_part.done", "content_index": 0, "part": part(text)})));
            }
            Some("function_call") => {
                let arguments = item["arguments"].as_str().unwrap_or_default();
                let mut added = item.clone();
                added["status"] = json!("in_progress");
                added["arguments"] = json!("");
                events.push(json!({"type": "response.output_item.added", "output_index": index, "item": added}));
                for delta in pieces(arguments, 5) {
                    events.push(at(
                        json!({"type": "response.function_call_arguments.delta", "delta": delta}),
                    ));
                }
                events.push(at(json!({"type": "response.function_call_arguments.done",
                                      "name": item["name"], "arguments": arguments})));
            }
            Some("reasoning") => {
                let mut added = item.clone();
                added["summary"] = json!([]);
                events.push(json!({"type": "response.output_item.added", "output_index": index, "item": added}));
                for (s, summary) in item["summary"].as_array().into_iter().flatten().enumerate() {
                    let text = summary["text"].as_str().unwrap_or_default();
                    let part = |text: &str| json!({"type": "summary_text", "text": text});
                    events.push(at(json!({"type": "response.reasoning_summary_part.added", "summary_index": s, "part": part("")})));
                    for delta in pieces(text, 9) {
                        events.push(at(json!({"type": "response.reasoning_summary_text.delta", "summary_index": s, "delta": delta})));
                    }
                    events.push(at(json!({"type": "response.reasoning_summary_text.done", "summary_index": s, "text": text})));
                    events.push(at(json!({"type": "response.reasoning_summary_part.done", "summary_index": s, "part": part(text)})));
                }
            }
            _ => {}
        }
        events.push(
            json!({"type": "response.output_item.done", "output_index": index, "item": item}),
        );
    }
    events.push(json!({"type": "response.completed", "response": done}));
    for (sequence, event) in events.iter_mut().enumerate() {
        event["sequence_number"] = json!(sequence);
    }
    events
}

/// `done` streamed as server-sent events.
pub(super) fn events(request: &Value, done: &Value) -> Response {
    let mut text = String::new();
    for event in sequence(request, done) {
        let name = event["type"].as_str().unwrap_or_default().to_owned();
        text.push_str(&format!("event: {name}\ndata: {event}\n\n"));
    }
    // Seven bytes at a time, so that events split across reads; past the first few KiB (a
    // coding agent's tools echoed in `response.completed`) in larger pieces, or a long answer
    // would take seconds of pauses.
    let bytes = text.into_bytes();
    let (small, large) = bytes.split_at(bytes.len().min(4096));
    let chunks: Vec<Bytes> = (small.chunks(7).chain(large.chunks(4096)))
        .map(Bytes::copy_from_slice)
        .collect();
    let body = futures_util::stream::iter(chunks).then(|piece| async move {
        // A pause makes each piece its own read on the client's side.
        tokio::time::sleep(Duration::from_micros(200)).await;
        Ok::<_, std::convert::Infallible>(piece)
    });
    (
        [("content-type", "text/event-stream")],
        Body::from_stream(body),
    )
        .into_response()
}
