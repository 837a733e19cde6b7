//! Counts by OpenAI's own tokenizer: a canonical chat request (a Messages `count_tokens` or
//! Google `:countTokens` routed to an OpenAI model) rewritten as the body of
//! `POST /responses/input_tokens`, whose answer is `{"object": "response.input_tokens",
//! "input_tokens": N}`. Reference: <https://platform.openai.com/docs/api-reference/responses/input-tokens>.
//!
//! Chat Completions has no counting endpoint; the Responses API's takes the same conversation
//! as input items, so the prompt is counted as the model would read it.

use serde::Deserialize;
use serde_json::{Map, Value, json};
use wasmgate_plugin_sdk::{HttpResponse, PluginError};

/// The body of `POST /responses/input_tokens` for `chat` (OpenAI's chat completions JSON),
/// with `model` the upstream's name.
pub fn body(chat: &str, model: &str) -> Result<Value, PluginError> {
    let chat: Map<String, Value> = serde_json::from_str(chat)
        .map_err(|_| PluginError::invalid_request("the request is not a JSON object"))?;
    let mut out = Map::new();
    out.insert("model".to_owned(), Value::from(model));
    let messages = chat.get("messages").and_then(Value::as_array);
    let input: Vec<Value> = messages.into_iter().flatten().flat_map(items).collect();
    out.insert("input".to_owned(), Value::Array(input));
    let tools: Vec<Value> = chat
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(tool)
        .collect();
    if !tools.is_empty() {
        out.insert("tools".to_owned(), Value::Array(tools));
        if let Some(choice) = chat.get("tool_choice").and_then(tool_choice) {
            out.insert("tool_choice".to_owned(), choice);
        }
        if let Some(parallel) = chat.get("parallel_tool_calls").filter(|p| p.is_boolean()) {
            out.insert("parallel_tool_calls".to_owned(), parallel.clone());
        }
    }
    if let Some(format) = chat.get("response_format").and_then(text_format) {
        out.insert("text".to_owned(), json!({"format": format}));
    }
    if let Some(effort) = chat.get("reasoning_effort").filter(|e| e.is_string()) {
        out.insert("reasoning".to_owned(), json!({"effort": effort}));
    }
    Ok(Value::Object(out))
}

/// One chat message as Responses input items: a message, or an assistant's text and each of
/// its tool calls, or a tool's result.
fn items(message: &Value) -> Vec<Value> {
    let role = message["role"].as_str().unwrap_or_default();
    match role {
        "system" | "developer" | "user" => vec![json!({
            "role": role,
            "content": input_content(&message["content"]),
        })],
        "assistant" => {
            let mut out = Vec::new();
            let text = text_of(&message["content"]);
            if !text.is_empty() {
                out.push(json!({"role": "assistant", "content": text}));
            }
            for call in message["tool_calls"].as_array().into_iter().flatten() {
                out.push(json!({
                    "type": "function_call",
                    "call_id": call["id"],
                    "name": call["function"]["name"],
                    "arguments": call["function"]["arguments"].as_str().unwrap_or("{}"),
                }));
            }
            out
        }
        "tool" => vec![json!({
            "type": "function_call_output",
            "call_id": message["tool_call_id"],
            "output": text_of(&message["content"]),
        })],
        // The legacy `function` role has no call id to pair with: left uncounted.
        _ => Vec::new(),
    }
}

/// A user's (or system's) content: a string as it is, parts as input parts. Audio has no
/// input part in the Responses API and is left out.
fn input_content(content: &Value) -> Value {
    let Value::Array(parts) = content else {
        return Value::from(content.as_str().unwrap_or_default());
    };
    let parts: Vec<Value> = parts
        .iter()
        .filter_map(|part| match part["type"].as_str()? {
            "text" => Some(json!({"type": "input_text", "text": part["text"]})),
            "image_url" => {
                let mut image =
                    json!({"type": "input_image", "image_url": part["image_url"]["url"]});
                if let Some(detail) = part["image_url"]["detail"].as_str() {
                    image["detail"] = Value::from(detail);
                }
                Some(image)
            }
            "file" => {
                let mut file = Map::new();
                file.insert("type".to_owned(), Value::from("input_file"));
                for key in ["file_id", "file_data", "filename"] {
                    if let Some(value) = part["file"].get(key) {
                        file.insert(key.to_owned(), value.clone());
                    }
                }
                Some(Value::Object(file))
            }
            _ => None,
        })
        .collect();
    Value::Array(parts)
}

/// The text of a content that is a string or text parts.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| part["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// A chat function tool as a Responses one (flat: no `function` wrapper).
fn tool(tool: &Value) -> Option<Value> {
    let function = tool
        .get("function")
        .filter(|_| tool["type"] == "function")?;
    let mut out = Map::new();
    out.insert("type".to_owned(), Value::from("function"));
    for key in ["name", "description", "parameters", "strict"] {
        if let Some(value) = function.get(key).filter(|v| !v.is_null()) {
            out.insert(key.to_owned(), value.clone());
        }
    }
    Some(Value::Object(out))
}

fn tool_choice(choice: &Value) -> Option<Value> {
    match choice {
        Value::String(_) => Some(choice.clone()),
        _ => Some(json!({"type": "function", "name": choice["function"]["name"].as_str()?})),
    }
}

/// Chat's `response_format` as the Responses API's `text.format`.
fn text_format(format: &Value) -> Option<Value> {
    match format["type"].as_str()? {
        "json_object" => Some(json!({"type": "json_object"})),
        "json_schema" => {
            let schema = &format["json_schema"];
            let mut out = Map::new();
            out.insert("type".to_owned(), Value::from("json_schema"));
            for key in ["name", "description", "schema", "strict"] {
                if let Some(value) = schema.get(key).filter(|v| !v.is_null()) {
                    out.insert(key.to_owned(), value.clone());
                }
            }
            Some(Value::Object(out))
        }
        _ => None,
    }
}

#[derive(Deserialize)]
struct InputTokens {
    input_tokens: u64,
}

/// The count in `POST /responses/input_tokens`'s answer.
pub fn parse(response: HttpResponse) -> Result<u64, PluginError> {
    if !response.is_success() {
        return Err(wasmgate_plugin_sdk::openai_error(
            response.status,
            &response.body,
        ));
    }
    serde_json::from_slice::<InputTokens>(&response.body)
        .map(|counted| counted.input_tokens)
        .map_err(|_| PluginError::upstream("the counting endpoint answered without `input_tokens`"))
}
