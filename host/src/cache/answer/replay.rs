//! A kept completion replayed as the chunks of a stream, in the order Chat Completions defines.

use serde_json::{Map, Value, json};

use super::head::HEAD;

/// A completion as the chunks of a stream: per choice its role, its reasoning, its text or
/// refusal, its tool calls, then its finish reason; the usage in a last chunk of its own.
pub fn chunks(completion: &str) -> Option<Vec<String>> {
    let Value::Object(body) = serde_json::from_str::<Value>(completion).ok()? else {
        return None;
    };
    let mut head = Map::new();
    for key in HEAD {
        if let Some(value) = body.get(key) {
            head.insert(key.to_owned(), value.clone());
        }
    }
    head.insert("object".to_owned(), Value::from("chat.completion.chunk"));
    let chunk = |choices: Value| {
        let mut chunk = head.clone();
        chunk.insert("choices".to_owned(), choices);
        Value::Object(chunk).to_string()
    };
    let delta = |index: &Value, delta: Value, finish: Value| {
        chunk(json!([{"index": index, "delta": delta, "logprobs": null, "finish_reason": finish}]))
    };
    let mut events = Vec::new();
    for choice in body.get("choices")?.as_array()? {
        let index = choice.get("index")?;
        let message = choice.get("message")?;
        let role = message
            .get("role")
            .cloned()
            .unwrap_or(Value::from("assistant"));
        events.push(delta(
            index,
            json!({"role": role, "content": ""}),
            Value::Null,
        ));
        for field in ["reasoning_content", "content", "refusal"] {
            if let Some(Value::String(text)) = message.get(field)
                && !text.is_empty()
            {
                events.push(delta(index, json!({ field: text }), Value::Null));
            }
        }
        if let Some(Value::Array(calls)) = message.get("tool_calls") {
            for (i, call) in calls.iter().enumerate() {
                let mut call = call.as_object()?.clone();
                call.insert("index".to_owned(), Value::from(i));
                events.push(delta(index, json!({"tool_calls": [call]}), Value::Null));
            }
        }
        let finish = choice.get("finish_reason").cloned().unwrap_or(Value::Null);
        events.push(delta(index, json!({}), finish));
    }
    if let Some(usage) = body.get("usage").filter(|u| !u.is_null()) {
        let mut last = head.clone();
        last.insert("choices".to_owned(), json!([]));
        last.insert("usage".to_owned(), usage.clone());
        events.push(Value::Object(last).to_string());
    }
    Some(events)
}
