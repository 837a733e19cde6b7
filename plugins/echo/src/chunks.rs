//! A streamed answer, cut into `chat.completion.chunk` events the way OpenAI cuts its own.

use serde_json::{Value, json};

use crate::chat::{Answer, Meta, TOOL_CALL_ID, usage_json};

/// Characters of tool-call arguments per chunk: small, so that clients must reassemble them.
const ARGUMENT_CHARS: usize = 8;

pub fn stream(meta: &Meta, answer: &Answer, words: u32, include_usage: bool) -> Vec<String> {
    let chunk = |delta: Value, finish_reason: Option<&str>| {
        let mut chunk = json!({
            "id": meta.id,
            "object": "chat.completion.chunk",
            "created": meta.created,
            "model": meta.model,
            "choices": [{
                "index": 0,
                "delta": delta,
                "logprobs": null,
                "finish_reason": finish_reason,
            }],
        });
        if include_usage {
            // As OpenAI does: every chunk but the last says there is no usage yet.
            chunk["usage"] = Value::Null;
        }
        chunk.to_string()
    };

    let mut events = Vec::new();
    let finish_reason = match answer {
        Answer::Text(text) => {
            events.push(chunk(json!({"role": "assistant", "content": ""}), None));
            for piece in word_pieces(text, words) {
                events.push(chunk(json!({"content": piece}), None));
            }
            "stop"
        }
        Answer::ToolCall { name, arguments } => {
            let call = json!({
                "index": 0,
                "id": TOOL_CALL_ID,
                "type": "function",
                "function": {"name": name, "arguments": ""},
            });
            let delta = json!({"role": "assistant", "content": null, "tool_calls": [call]});
            events.push(chunk(delta, None));
            for piece in char_pieces(arguments, ARGUMENT_CHARS) {
                let call = json!({"index": 0, "function": {"arguments": piece}});
                events.push(chunk(json!({"tool_calls": [call]}), None));
            }
            "tool_calls"
        }
    };
    events.push(chunk(json!({}), Some(finish_reason)));

    if include_usage {
        let last = json!({
            "id": meta.id,
            "object": "chat.completion.chunk",
            "created": meta.created,
            "model": meta.model,
            "choices": [],
            "usage": usage_json(&meta.usage),
        });
        events.push(last.to_string());
    }
    events
}

/// Cuts `text` into pieces of `words` words each. Each piece starts with the whitespace before
/// its first word, so that the pieces put back together give `text` exactly.
pub fn word_pieces(text: &str, words: u32) -> Vec<&str> {
    let mut pieces = Vec::new();
    let (mut start, mut gap_start, mut count, mut in_word) = (0, 0, 0, false);
    for (i, c) in text.char_indices() {
        if c.is_whitespace() {
            if in_word {
                in_word = false;
                gap_start = i;
            }
        } else if !in_word {
            in_word = true;
            if count == words {
                pieces.push(&text[start..gap_start]);
                start = gap_start;
                count = 0;
            }
            count += 1;
        }
    }
    if start < text.len() {
        pieces.push(&text[start..]);
    }
    pieces
}

fn char_pieces(text: &str, chars: usize) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let end = rest
            .char_indices()
            .nth(chars)
            .map_or(rest.len(), |(i, _)| i);
        let (piece, tail) = rest.split_at(end);
        pieces.push(piece);
        rest = tail;
    }
    pieces
}
