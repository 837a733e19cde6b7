//! The mock's streamed answers: Anthropic's full event sequence (`message_start` with the real
//! input usage, `ping`, `content_block_start`/`delta`/`stop` for thinking, text and tool use,
//! `message_delta` with the usage, `message_stop`), delivered in 5-9 byte pieces.

use super::super::sse_in_pieces;
use super::{
    Answer, INPUT_TOKENS, STREAM_DELTAS, STREAM_TOOL_INPUT, THINKING, THINKING_DELTAS, TOOL_USE_ID,
    signature,
};
use axum::response::Response;
use serde_json::{Value, json};

const STREAM_ID: &str = "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY";

fn start(model: &str, usage: Value) -> Value {
    json!({"type": "message_start", "message": {
        "id": STREAM_ID, "type": "message", "role": "assistant", "content": [], "model": model,
        "stop_reason": null, "stop_sequence": null, "usage": usage}})
}

fn sse(events: Vec<Value>) -> Response {
    let mut text = String::new();
    for data in events {
        let name = data["type"].as_str().unwrap_or_default().to_owned();
        text.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    }
    sse_in_pieces(text)
}

/// The whole answer: thinking (if on), text, then the tool call (if any).
pub(super) fn answer(model: &str, answer: &Answer) -> Response {
    let mut usage = answer.usage.json();
    usage["output_tokens"] = json!(1);
    let mut events = vec![start(model, usage), json!({"type": "ping"})];
    let mut index = 0;
    let mut block = |events: &mut Vec<Value>, content: Value, deltas: Vec<Value>| {
        events
            .push(json!({"type": "content_block_start", "index": index, "content_block": content}));
        for delta in deltas {
            events.push(json!({"type": "content_block_delta", "index": index, "delta": delta}));
        }
        events.push(json!({"type": "content_block_stop", "index": index}));
        index += 1;
    };
    if answer.thinking {
        let mut deltas: Vec<Value> = THINKING_DELTAS
            .iter()
            .map(|t| json!({"type": "thinking_delta", "thinking": t}))
            .collect();
        deltas.push(json!({"type": "signature_delta", "signature": signature(THINKING)}));
        block(
            &mut events,
            json!({"type": "thinking", "thinking": "", "signature": ""}),
            deltas,
        );
    }
    let text: Vec<String> = match &answer.text {
        Some(text) => pieces(text, 7),
        None => STREAM_DELTAS.iter().map(|t| (*t).to_owned()).collect(),
    };
    block(
        &mut events,
        json!({"type": "text", "text": ""}),
        text.iter()
            .map(|t| json!({"type": "text_delta", "text": t}))
            .collect(),
    );
    if let Some(name) = &answer.tool {
        let input: Vec<String> = match &answer.tool_input {
            Some(input) => pieces(&input.to_string(), 5),
            None => STREAM_TOOL_INPUT.iter().map(|p| (*p).to_owned()).collect(),
        };
        block(
            &mut events,
            json!({"type": "tool_use", "id": TOOL_USE_ID, "name": name, "input": {}}),
            input
                .iter()
                .map(|p| json!({"type": "input_json_delta", "partial_json": p}))
                .collect(),
        );
    }
    // The final usage repeats the input counts, as the API does now.
    events.push(json!({"type": "message_delta",
        "delta": {"stop_reason": if answer.tool.is_some() { "tool_use" } else { "end_turn" },
                  "stop_sequence": null},
        "usage": answer.usage.json()}));
    events.push(json!({"type": "message_stop"}));
    sse(events)
}

/// `text` in deltas of `size` characters, as the API cuts text anywhere.
fn pieces(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(size.max(1))
        .map(|c| c.iter().collect())
        .collect()
}

/// `message_start`, a text block's start and first delta, then `error` (if given) and the end.
pub(super) fn broken(model: &str, error: Option<Value>) -> Response {
    let mut events = vec![
        start(
            model,
            json!({"input_tokens": INPUT_TOKENS, "output_tokens": 1}),
        ),
        json!({"type": "content_block_start", "index": 0,
               "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "text_delta", "text": STREAM_DELTAS[0]}}),
    ];
    events.extend(error);
    sse(events)
}
