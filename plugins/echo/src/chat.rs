//! Chat completions: what to answer, and the answer as one `chat.completion`.

use serde_json::{Value, json};
use wasmgate_plugin_sdk::{
    CanonicalRequest, Completion, PluginError, Prepared, Usage, count_tokens,
};

use crate::{bad_param, chunks, fnv1a, now};

/// The id OpenAI clients see on the tool call the echo makes.
pub const TOOL_CALL_ID: &str = "call_echo_0";

/// What the assistant says.
pub enum Answer {
    Text(String),
    ToolCall { name: String, arguments: String },
}

/// What every chunk or completion of one answer shares.
pub struct Meta {
    pub id: String,
    pub created: u64,
    pub model: String,
    pub usage: Usage,
}

pub fn answer(
    request: &CanonicalRequest,
    body: &Value,
    fixed_reply: Option<String>,
    chunk_size: u32,
) -> Result<Prepared, PluginError> {
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .ok_or_else(|| bad_param("messages", "`messages` must be an array"))?;

    let mut prompt_tokens = 3; // every reply is primed with <|start|>assistant<|message|>
    let mut last_user = None;
    for (i, message) in messages.iter().enumerate() {
        let role = message
            .get("role")
            .and_then(Value::as_str)
            .ok_or_else(|| bad_param(&format!("messages[{i}].role"), "`role` must be a string"))?;
        let text = content_text(message.get("content"))
            .ok_or_else(|| bad_param(&format!("messages[{i}].content"), "unsupported `content`"))?;
        // OpenAI's cookbook: each message costs its role, its content and 3 framing tokens.
        prompt_tokens += u64::from(count_tokens(role)) + u64::from(count_tokens(&text)) + 3;
        if role == "user" {
            last_user = Some(text);
        }
    }
    let last_user = last_user.unwrap_or_default();

    let has_tools = body
        .get("tools")
        .and_then(Value::as_array)
        .is_some_and(|tools| !tools.is_empty());
    let answer = match tool_call(&last_user).filter(|_| has_tools) {
        Some(call) => call,
        None => Answer::Text(fixed_reply.unwrap_or(last_user)),
    };
    let completion_tokens = match &answer {
        Answer::Text(text) => count_tokens(text),
        Answer::ToolCall { name, arguments } => count_tokens(name) + count_tokens(arguments),
    };
    let meta = Meta {
        id: format!("chatcmpl-echo-{:016x}", fnv1a(request.body.as_bytes())),
        created: now(),
        model: request.model.clone(),
        usage: Usage::tokens(prompt_tokens, completion_tokens.into()),
    };

    if request.stream {
        let include_usage = body
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let events = chunks::stream(&meta, &answer, chunk_size, include_usage);
        return Ok(Prepared::LocalStream(wasmgate_plugin_sdk::StreamOutput {
            events,
            usage: Some(meta.usage),
        }));
    }
    Ok(Prepared::Local(completion(&meta, &answer)))
}

/// The text of a message's `content`: a string, or the `text` parts of a list joined by spaces.
/// Absent or `null` content (an assistant message with tool calls) is empty.
fn content_text(content: Option<&Value>) -> Option<String> {
    match content {
        None | Some(Value::Null) => Some(String::new()),
        Some(Value::String(text)) => Some(text.clone()),
        Some(Value::Array(parts)) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter(|part| part.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|part| part.get("text").and_then(Value::as_str))
                .collect();
            Some(texts.join(" "))
        }
        Some(_) => None,
    }
}

/// Reads `call <name> <json arguments>`.
fn tool_call(text: &str) -> Option<Answer> {
    let rest = text.strip_prefix("call ")?.trim_start();
    let (name, arguments) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    if name.is_empty() {
        return None;
    }
    let arguments = arguments.trim();
    Some(Answer::ToolCall {
        name: name.to_owned(),
        arguments: if arguments.is_empty() {
            "{}"
        } else {
            arguments
        }
        .to_owned(),
    })
}

fn completion(meta: &Meta, answer: &Answer) -> Completion {
    let (message, finish_reason) = match answer {
        Answer::Text(text) => (
            json!({"role": "assistant", "content": text, "refusal": null}),
            "stop",
        ),
        Answer::ToolCall { name, arguments } => (
            json!({
                "role": "assistant",
                "content": null,
                "refusal": null,
                "tool_calls": [{
                    "id": TOOL_CALL_ID,
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }],
            }),
            "tool_calls",
        ),
    };
    let body = json!({
        "id": meta.id,
        "object": "chat.completion",
        "created": meta.created,
        "model": meta.model,
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": null,
            "finish_reason": finish_reason,
        }],
        "usage": usage_json(&meta.usage),
    });
    Completion {
        body: body.to_string(),
        usage: Some(meta.usage),
    }
}

pub fn usage_json(usage: &Usage) -> Value {
    json!({
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
    })
}
