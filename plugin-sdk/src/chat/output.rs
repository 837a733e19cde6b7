//! OpenAI's `chat.completion` and `chat.completion.chunk` JSON, built from a translated answer.

use serde_json::{Value, json};

use crate::Usage;

/// Why the model stopped, in OpenAI's terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FinishReason {
    /// A natural end or a stop sequence.
    Stop,
    /// The token limit.
    Length,
    /// The model called tools.
    ToolCalls,
    /// A safety filter stopped it.
    ContentFilter,
}

impl FinishReason {
    /// The value of `finish_reason`.
    pub fn as_str(self) -> &'static str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
            FinishReason::ToolCalls => "tool_calls",
            FinishReason::ContentFilter => "content_filter",
        }
    }
}

/// The current time in Unix seconds, for `created` when the upstream gives none.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// OpenAI's `usage` object for `usage`: `prompt_tokens` includes the cached tokens, which
/// `prompt_tokens_details.cached_tokens` repeats, and `completion_tokens` the reasoning tokens,
/// which `completion_tokens_details.reasoning_tokens` repeats when there are any.
pub fn usage_json(usage: &Usage) -> Value {
    let mut value = json!({
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cached_input_tokens},
    });
    if usage.reasoning_tokens > 0 {
        value["completion_tokens_details"] = json!({"reasoning_tokens": usage.reasoning_tokens});
    }
    value
}

/// A tool call of an assistant message: `{id, type: "function", function: {name, arguments}}`.
pub fn tool_call_json(id: &str, name: &str, arguments: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
}

/// `json` (valid JSON text) without the whitespace between tokens, keys left in their order: for
/// tool-call arguments read as raw JSON, whose order a re-serialised `Value` would lose.
pub fn compact_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in json.chars() {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !c.is_ascii_whitespace() {
            out.push(c);
        }
    }
    out
}

/// An assistant message: `content` is `null` when there is no text, as OpenAI sends it with
/// tool calls; `tool_calls` is left out when there are none.
pub fn assistant_message(text: Option<String>, tool_calls: Vec<Value>) -> Value {
    let mut message = json!({"role": "assistant", "content": text});
    if !tool_calls.is_empty() {
        message["tool_calls"] = Value::Array(tool_calls);
    }
    message
}

/// A whole `chat.completion` body with one choice.
pub fn completion_body(
    id: &str,
    model: &str,
    created: u64,
    message: Value,
    finish_reason: FinishReason,
    usage: Option<&Usage>,
) -> String {
    let mut body = json!({
        "id": id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": null,
            "finish_reason": finish_reason.as_str(),
        }],
    });
    if let Some(usage) = usage {
        body["usage"] = usage_json(usage);
    }
    body.to_string()
}

/// Writes the `chat.completion.chunk` events of one streamed answer (one choice). Every chunk
/// carries `"usage": null` but the last, which has no choices and the usage, as OpenAI sends
/// them when `stream_options.include_usage` is set (the host always sets it).
#[derive(Clone, Debug, Default)]
pub struct ChunkWriter {
    /// The answer's id, repeated in every chunk.
    pub id: String,
    /// The model that answers.
    pub model: String,
    /// Unix seconds, repeated in every chunk.
    pub created: u64,
}

impl ChunkWriter {
    /// A writer for the answer `id` of `model`, created at `created`.
    pub fn new(id: impl Into<String>, model: impl Into<String>, created: u64) -> Self {
        ChunkWriter {
            id: id.into(),
            model: model.into(),
            created,
        }
    }

    /// A chunk with `delta` and an optional finish reason.
    pub fn chunk(&self, delta: Value, finish_reason: Option<FinishReason>) -> String {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{
                "index": 0,
                "delta": delta,
                "logprobs": null,
                "finish_reason": finish_reason.map(FinishReason::as_str),
            }],
            "usage": null,
        })
        .to_string()
    }

    /// The first chunk: the role, and empty content.
    pub fn role(&self) -> String {
        self.chunk(json!({"role": "assistant", "content": ""}), None)
    }

    /// A piece of the answer's text.
    pub fn content(&self, text: &str) -> String {
        self.chunk(json!({"content": text}), None)
    }

    /// The start of tool call number `index` (counted from 0 within the answer), with its id and
    /// name, and the first piece of its arguments (often empty).
    pub fn tool_call_start(&self, index: u32, id: &str, name: &str, arguments: &str) -> String {
        let call = json!({
            "index": index,
            "id": id,
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        });
        self.chunk(json!({"tool_calls": [call]}), None)
    }

    /// A further piece of the arguments of tool call `index`.
    pub fn tool_call_arguments(&self, index: u32, fragment: &str) -> String {
        let call = json!({"index": index, "function": {"arguments": fragment}});
        self.chunk(json!({"tool_calls": [call]}), None)
    }

    /// The chunk that ends the choice.
    pub fn finish(&self, reason: FinishReason) -> String {
        self.chunk(json!({}), Some(reason))
    }

    /// The last chunk: no choices, and the usage.
    pub fn usage(&self, usage: &Usage) -> String {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [],
            "usage": usage_json(usage),
        })
        .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completion_has_openai_shape() {
        let message = assistant_message(None, vec![tool_call_json("c", "f", "{}")]);
        let usage = Usage {
            cached_input_tokens: 2,
            ..Usage::tokens(10, 3)
        };
        let body = completion_body(
            "id1",
            "m",
            7,
            message,
            FinishReason::ToolCalls,
            Some(&usage),
        );
        let body: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(body["choices"][0]["message"]["content"], Value::Null);
        assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(body["usage"]["total_tokens"], 13);
        assert_eq!(body["usage"]["prompt_tokens_details"]["cached_tokens"], 2);
    }

    #[test]
    fn compact_json_keeps_order_and_strings() {
        let raw = "{\n  \"b\": [1, 2],\n  \"a\": \"x \\\" y\"\n}";
        assert_eq!(compact_json(raw), r#"{"b":[1,2],"a":"x \" y"}"#);
    }

    #[test]
    fn chunks_have_openai_shape() {
        let writer = ChunkWriter::new("id1", "m", 7);
        let chunk: Value = serde_json::from_str(&writer.tool_call_arguments(1, "{\"a")).unwrap();
        assert_eq!(chunk["choices"][0]["delta"]["tool_calls"][0]["index"], 1);
        assert_eq!(chunk["usage"], Value::Null);
        let last: Value = serde_json::from_str(&writer.usage(&Usage::tokens(1, 2))).unwrap();
        assert_eq!(last["choices"], json!([]));
        assert_eq!(last["usage"]["completion_tokens"], 2);
    }
}
