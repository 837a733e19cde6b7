//! What the mock answers a valid request: the output items (reasoning, a function call or a
//! message), the usage with its cached and reasoning tokens, and the response object around them.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::super::Shared;
use super::{
    CALL_ARGUMENTS, REASONING_SUMMARY, REASONING_TOKENS, answer_text, cache_form,
    encrypted_content, reasoning_model, tokens,
};

/// What the answer will be.
pub(super) struct Plan {
    pub reasoning: bool,
    sealed: bool,
    summary: bool,
    tool: Option<String>,
    user_turns: usize,
}

impl Plan {
    pub fn new(request: &Value, input: &[Value], context: &[Value]) -> Self {
        let function = |t: &&Value| t["type"] == "function";
        let tool = match &request["tool_choice"] {
            Value::String(choice) if choice == "none" => None,
            choice if choice["type"] == "function" => choice["name"].as_str().map(str::to_owned),
            _ => request["tools"]
                .as_array()
                .and_then(|tools| tools.iter().find(function))
                .and_then(|t| t["name"].as_str())
                .map(str::to_owned),
        }
        .filter(|_| {
            input
                .last()
                .is_none_or(|i| i["type"] != "function_call_output")
        });
        let includes = |what: &str| {
            request["include"]
                .as_array()
                .is_some_and(|i| i.iter().any(|v| v == what))
        };
        Self {
            reasoning: reasoning_model(request["model"].as_str().unwrap_or_default()),
            sealed: includes("reasoning.encrypted_content"),
            summary: request["reasoning"]["summary"].is_string(),
            tool,
            user_turns: context
                .iter()
                .filter(|c| c["type"] == "message" && c["role"] == "user")
                .count(),
        }
    }

    pub fn output(&self, next_id: &mut dyn FnMut(&str) -> String) -> Vec<Value> {
        let mut output = Vec::new();
        if self.reasoning {
            let id = next_id("rs");
            let summary = if self.summary {
                json!([{"type": "summary_text", "text": REASONING_SUMMARY}])
            } else {
                json!([])
            };
            let mut item = json!({"id": id, "type": "reasoning", "summary": summary});
            if self.sealed {
                item["encrypted_content"] = json!(encrypted_content(&id, &summary));
            }
            output.push(item);
        }
        match &self.tool {
            Some(name) => {
                let (id, call_id) = (next_id("fc"), next_id("call"));
                output.push(
                    json!({"id": id, "type": "function_call", "status": "completed",
                    "call_id": call_id, "name": name, "arguments": CALL_ARGUMENTS}),
                );
            }
            None => output.push(
                json!({"id": next_id("msg"), "type": "message", "status": "completed",
                "role": "assistant", "content": [{"type": "output_text",
                "text": answer_text(self.user_turns), "annotations": [], "logprobs": []}]}),
            ),
        }
        output
    }
}

/// Usage as OpenAI reports it; the longest context prefix seen before is the cached part.
pub(super) async fn usage(
    shared: &Shared,
    request: &Value,
    context: &[Value],
    output: &[Value],
    reasoning: bool,
) -> Value {
    let instructions = tokens(&request["instructions"]);
    let per_item: Vec<u64> = context.iter().map(tokens).collect();
    let input = instructions + per_item.iter().sum::<u64>();
    let mut seen = shared.response_prefixes.lock().await;
    let mut cached = 0;
    let mut prefix = format!("{}\0{}", request["model"], request["instructions"]);
    for (i, item) in context.iter().enumerate() {
        prefix.push_str(&cache_form(item));
        let key = hex::encode(Sha256::digest(&prefix));
        if seen.contains(&key) {
            cached = instructions + per_item[..=i].iter().sum::<u64>();
        }
        seen.insert(key);
    }
    // The answer is cached too: a follow-up that sends it back (or chains to it) reads it.
    for item in output {
        prefix.push_str(&cache_form(item));
        seen.insert(hex::encode(Sha256::digest(&prefix)));
    }
    let reasoning_tokens = if reasoning { REASONING_TOKENS } else { 0 };
    let output_tokens = output
        .iter()
        .filter(|o| o["type"] != "reasoning")
        .map(tokens)
        .sum::<u64>()
        + reasoning_tokens;
    json!({"input_tokens": input, "input_tokens_details": {"cached_tokens": cached},
           "output_tokens": output_tokens,
           "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
           "total_tokens": input + output_tokens})
}

pub(super) fn response_object(
    request: &Value,
    id: &str,
    status: &str,
    output: &[Value],
    usage: Option<Value>,
) -> Value {
    let or = |key: &str, default: Value| request.get(key).cloned().unwrap_or(default);
    json!({
        "id": id, "object": "response", "created_at": 1_741_476_542, "status": status,
        "background": false, "error": null, "incomplete_details": null,
        "instructions": or("instructions", Value::Null),
        "max_output_tokens": or("max_output_tokens", Value::Null),
        "max_tool_calls": null, "model": request["model"], "output": output,
        "parallel_tool_calls": or("parallel_tool_calls", json!(true)),
        "previous_response_id": or("previous_response_id", Value::Null),
        "reasoning": if reasoning_model(request["model"].as_str().unwrap_or_default()) {
            json!({"effort": request["reasoning"]["effort"].as_str().unwrap_or("medium"),
                   "summary": request["reasoning"]["summary"]})
        } else {
            json!({"effort": null, "summary": null})
        },
        "service_tier": "default", "store": or("store", json!(true)),
        "temperature": or("temperature", json!(1.0)),
        "text": or("text", json!({"format": {"type": "text"}, "verbosity": "medium"})),
        "tool_choice": or("tool_choice", json!("auto")), "tools": or("tools", json!([])),
        "top_logprobs": 0, "top_p": or("top_p", json!(1.0)),
        "truncation": or("truncation", json!("disabled")),
        "usage": usage, "user": or("user", Value::Null), "metadata": or("metadata", json!({}))
    })
}
