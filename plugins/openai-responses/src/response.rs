//! The `response` object, and complete answers encoded as one.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use wasmgate_plugin_sdk::canonical::{ChatAnswer, ChatUsage, Finish};
use wasmgate_plugin_sdk::{AnswerInfo, Failure, Usage};

/// The request's echoed fields, read back from `echo`. An echo that cannot be read (the host
/// would have to have changed it) echoes nothing rather than failing the answer.
pub fn echo(info: &AnswerInfo) -> BTreeMap<String, Value> {
    serde_json::from_str(&info.echo).unwrap_or_default()
}

/// How a response ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    InProgress,
    Completed,
    /// Cut short, with the reason the API gives.
    Incomplete(&'static str),
    Failed,
}

impl Status {
    pub fn of(finish: Finish) -> Self {
        match finish {
            Finish::Length => Status::Incomplete("max_output_tokens"),
            Finish::ContentFilter => Status::Incomplete("content_filter"),
            Finish::Stop | Finish::ToolCalls => Status::Completed,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Status::InProgress => "in_progress",
            Status::Completed => "completed",
            Status::Incomplete(_) => "incomplete",
            Status::Failed => "failed",
        }
    }

    /// The status of the output items of a response with this status.
    pub fn item_status(self) -> &'static str {
        match self {
            Status::InProgress | Status::Failed => "in_progress",
            Status::Completed => "completed",
            Status::Incomplete(_) => "incomplete",
        }
    }
}

/// The usage object: `input_tokens` includes the cached ones, as OpenAI counts them.
pub fn usage_json(usage: &Usage, reasoning_tokens: Option<u64>) -> Value {
    json!({
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": usage.cached_input_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning_tokens.unwrap_or(0)},
        "total_tokens": usage.input_tokens + usage.output_tokens,
    })
}

/// The ids of a response's output items, unique per response: `msg_…` and `fc_…` with the
/// response id's suffix.
pub fn item_id(info: &AnswerInfo, prefix: &str, n: usize) -> String {
    let suffix = info.id.strip_prefix("resp_").unwrap_or(&info.id);
    format!("{prefix}_{suffix}_{n}")
}

pub fn message_item(id: &str, text: &str, status: &str) -> Value {
    json!({
        "id": id,
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": if text.is_empty() && status == "in_progress" {
            json!([])
        } else {
            json!([text_part(text)])
        },
    })
}

pub fn text_part(text: &str) -> Value {
    json!({"type": "output_text", "text": text, "annotations": [], "logprobs": []})
}

pub fn call_item(id: &str, call_id: &str, name: &str, arguments: &str, status: &str) -> Value {
    json!({
        "id": id,
        "type": "function_call",
        "status": status,
        "arguments": arguments,
        "call_id": call_id,
        "name": name,
    })
}

/// The whole response object: what the request set (echoed) or the API's defaults, the
/// output, and the usage once known.
pub fn response_json(
    info: &AnswerInfo,
    echo: &BTreeMap<String, Value>,
    status: Status,
    output: Vec<Value>,
    usage: Option<Value>,
    error: Option<Value>,
) -> Value {
    let echoed = |name: &str, default: Value| echo.get(name).cloned().unwrap_or(default);
    let incomplete = match status {
        Status::Incomplete(reason) => json!({"reason": reason}),
        Status::InProgress | Status::Completed | Status::Failed => Value::Null,
    };
    let mut response = json!({
        "id": info.id,
        "object": "response",
        "created_at": info.created,
        "status": status.as_str(),
        "background": echoed("background", json!(false)),
        "error": error,
        "incomplete_details": incomplete,
        "instructions": echoed("instructions", Value::Null),
        "max_output_tokens": echoed("max_output_tokens", Value::Null),
        "max_tool_calls": echoed("max_tool_calls", Value::Null),
        "model": info.model,
        "output": output,
        "parallel_tool_calls": echoed("parallel_tool_calls", json!(true)),
        "previous_response_id": echoed("previous_response_id", Value::Null),
        "reasoning": echoed("reasoning", json!({"effort": null, "summary": null})),
        "service_tier": echoed("service_tier", json!("default")),
        "store": echoed("store", json!(true)),
        "temperature": echoed("temperature", json!(1.0)),
        "text": echoed("text", json!({"format": {"type": "text"}})),
        "tool_choice": echoed("tool_choice", json!("auto")),
        "tools": echoed("tools", json!([])),
        "top_logprobs": echoed("top_logprobs", json!(0)),
        "top_p": echoed("top_p", json!(1.0)),
        "truncation": echoed("truncation", json!("disabled")),
        "usage": usage,
        "user": echoed("user", Value::Null),
        "metadata": echoed("metadata", json!({})),
    });
    for name in ["safety_identifier", "prompt_cache_key"] {
        if let Some(value) = echo.get(name) {
            response[name] = value.clone();
        }
    }
    response
}

/// The host's usage if it has one, else the answer's own.
pub fn usage_of(host: Option<Usage>, answer: Option<ChatUsage>) -> Usage {
    host.or(answer.map(ChatUsage::to_usage)).unwrap_or_default()
}

pub fn encode(
    info: &AnswerInfo,
    completion: &str,
    usage: Option<Usage>,
) -> Result<String, Failure> {
    let answer = ChatAnswer::parse(completion)?;
    let reasoning = answer.usage.and_then(|u| u.reasoning_tokens());
    let usage = usage_of(usage, answer.usage);
    let (message, finish) = answer.into_message();
    let status = Status::of(finish);
    let mut output = Vec::new();
    let text = message.content.unwrap_or_default();
    let refusal = message.refusal.filter(|r| !r.is_empty());
    if !text.is_empty() || refusal.is_some() {
        let mut item = message_item(&item_id(info, "msg", 0), &text, status.item_status());
        if let Some(refusal) = refusal {
            let parts = [
                (!text.is_empty()).then(|| text_part(&text)),
                Some(json!({"type": "refusal", "refusal": refusal})),
            ];
            item["content"] = Value::Array(parts.into_iter().flatten().collect());
        }
        output.push(item);
    }
    for call in message.tool_calls.unwrap_or_default() {
        let id = item_id(info, "fc", output.len());
        output.push(call_item(
            &id,
            &call.id,
            &call.function.name,
            &call.function.arguments,
            "completed",
        ));
    }
    let response = response_json(
        info,
        &echo(info),
        status,
        output,
        Some(usage_json(&usage, reasoning)),
        None,
    );
    Ok(response.to_string())
}
