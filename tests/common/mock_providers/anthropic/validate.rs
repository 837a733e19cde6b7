//! What the real Messages API refuses, refused the same way: each check answers the message
//! Anthropic's 400 `invalid_request_error` carries, naming the field's path.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::signature;

/// The top-level fields `POST /v1/messages` takes (the SDKs' `messages.create` and
/// `beta.messages.create` parameters). Anything else is "Extra inputs are not permitted", which is
/// what catches a gateway leaking a field of another dialect (`stream_options`, `n`, ...).
const MESSAGE_FIELDS: &[&str] = &[
    "model",
    "messages",
    "max_tokens",
    "billing_policy",
    "cache_control",
    "compaction",
    "container",
    "context_management",
    "diagnostics",
    "fallback_credit_token",
    "fallbacks",
    "inference_geo",
    "mcp_servers",
    "metadata",
    "output_config",
    "output_format",
    "service_tier",
    "speed",
    "stop_sequences",
    "stream",
    "system",
    "temperature",
    "thinking",
    "thread",
    "tool_choice",
    "tools",
    "top_k",
    "top_p",
    "user_profile_id",
    "workspace_id",
];

/// `POST /v1/messages/count_tokens` takes no `max_tokens`, `stream` or sampling fields.
const COUNT_FIELDS: &[&str] = &[
    "model",
    "messages",
    "billing_policy",
    "cache_control",
    "compaction",
    "context_management",
    "mcp_servers",
    "output_config",
    "output_format",
    "speed",
    "system",
    "thinking",
    "tool_choice",
    "tools",
    "user_profile_id",
    "workspace_id",
];

const USER_BLOCKS: &[&str] = &["text", "image", "document", "search_result", "tool_result"];
const ASSISTANT_BLOCKS: &[&str] = &[
    "text",
    "thinking",
    "redacted_thinking",
    "tool_use",
    "server_tool_use",
    "web_search_tool_result",
];
const CUSTOM_TOOL_FIELDS: &[&str] = &[
    "type",
    "name",
    "description",
    "input_schema",
    "cache_control",
    "strict",
    "input_examples",
    "eager_input_streaming",
    "defer_loading",
];

type Checked<T> = Result<T, String>;

/// A `POST /v1/messages` body.
pub(crate) fn message_request(request: &Value) -> Checked<()> {
    let object = body(request)?;
    known_fields(object, MESSAGE_FIELDS, "")?;
    model(object)?;
    let max_tokens = match object.get("max_tokens") {
        None => return Err("max_tokens: Field required".into()),
        Some(v) => v
            .as_u64()
            .ok_or("max_tokens: Input should be a valid integer")?,
    };
    if object.get("stream").is_some_and(|s| !s.is_boolean()) {
        return Err("stream: Input should be a valid boolean".into());
    }
    let thinking = thinking(object.get("thinking"), Some(max_tokens))?;
    if thinking
        && object
            .get("temperature")
            .is_some_and(|t| t.as_f64() != Some(1.0))
    {
        return Err(
            "`temperature` may only be set to 1 when thinking is enabled. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#important-considerations-when-using-extended-thinking"
                .into(),
        );
    }
    let forced = matches!(
        object.get("tool_choice").and_then(|c| c["type"].as_str()),
        Some("any" | "tool")
    );
    if thinking && forced {
        return Err("Thinking may not be enabled when tool_choice forces tool use.".into());
    }
    common(object, thinking)
}

/// A `POST /v1/messages/count_tokens` body.
pub(super) fn count_request(request: &Value) -> Checked<()> {
    let object = body(request)?;
    known_fields(object, COUNT_FIELDS, "")?;
    model(object)?;
    let thinking = thinking(object.get("thinking"), None)?;
    common(object, thinking)
}

fn body(request: &Value) -> Checked<&Map<String, Value>> {
    request
        .as_object()
        .ok_or_else(|| "There was an issue with your request body: it is not a JSON object".into())
}

fn model(object: &Map<String, Value>) -> Checked<()> {
    match object.get("model") {
        None => Err("model: Field required".into()),
        Some(Value::String(m)) if !m.is_empty() => Ok(()),
        Some(_) => Err("model: Input should be a valid string".into()),
    }
}

fn known_fields(object: &Map<String, Value>, known: &[&str], path: &str) -> Checked<()> {
    match object.keys().find(|k| !known.contains(&k.as_str())) {
        Some(key) => Err(format!("{path}{key}: Extra inputs are not permitted")),
        None => Ok(()),
    }
}

fn common(object: &Map<String, Value>, thinking: bool) -> Checked<()> {
    system(object.get("system"))?;
    let names = tools(object.get("tools"))?;
    tool_choice(object.get("tool_choice"), &names)?;
    messages(object.get("messages"), thinking)?;
    let marked = cache_controls(&Value::Object(object.clone()))?;
    if marked > 4 {
        return Err(format!(
            "A maximum of 4 blocks with cache_control may be provided. Found {marked}."
        ));
    }
    Ok(())
}

/// Whether thinking is on.
fn thinking(config: Option<&Value>, max_tokens: Option<u64>) -> Checked<bool> {
    let Some(config) = config else {
        return Ok(false);
    };
    match config["type"].as_str() {
        Some("enabled") => {
            let budget = config["budget_tokens"]
                .as_u64()
                .ok_or("thinking.enabled.budget_tokens: Field required")?;
            if budget < 1024 {
                return Err(
                    "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
                        .into(),
                );
            }
            if max_tokens.is_some_and(|max| max <= budget) {
                return Err("`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size".into());
            }
            Ok(true)
        }
        Some("adaptive") => Ok(true),
        Some("disabled") => Ok(false),
        _ => Err("thinking: Input tag found using 'type' does not match any of the expected tags: 'enabled', 'disabled', 'adaptive'".into()),
    }
}

fn system(system: Option<&Value>) -> Checked<()> {
    match system {
        None | Some(Value::String(_)) => Ok(()),
        Some(Value::Array(blocks)) => {
            for (i, block) in blocks.iter().enumerate() {
                if block["type"] != "text" {
                    return Err(format!("system.{i}.type: Input should be 'text'"));
                }
                text(block, &format!("system.{i}"))?;
            }
            Ok(())
        }
        Some(_) => Err("system: Input should be a valid string or a list of text blocks".into()),
    }
}

/// The custom tools' names.
fn tools(tools: Option<&Value>) -> Checked<HashSet<String>> {
    let mut names = HashSet::new();
    let Some(tools) = tools else {
        return Ok(names);
    };
    let tools = tools
        .as_array()
        .ok_or("tools: Input should be a valid list")?;
    for (i, tool) in tools.iter().enumerate() {
        let object = tool
            .as_object()
            .ok_or_else(|| format!("tools.{i}: Input should be an object"))?;
        let kind = tool["type"].as_str().unwrap_or("custom");
        let name = tool["name"]
            .as_str()
            .ok_or_else(|| format!("tools.{i}.{kind}.name: Field required"))?;
        if kind == "custom" {
            known_fields(object, CUSTOM_TOOL_FIELDS, &format!("tools.{i}.custom."))?;
            let valid = !name.is_empty()
                && name.len() <= 128
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            if !valid {
                return Err(format!(
                    "tools.{i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'"
                ));
            }
            if tool["input_schema"]["type"] != "object" {
                return Err(format!(
                    "tools.{i}.custom.input_schema: Input schema must be an object with \"type\": \"object\""
                ));
            }
        } else if !server_tool_type(kind) {
            return Err(format!(
                "tools.{i}: Input tag '{kind}' found using 'type' does not match any of the expected tags"
            ));
        }
        if !names.insert(name.to_owned()) {
            return Err("tools: Tool names must be unique.".into());
        }
    }
    Ok(names)
}

/// Anthropic's own tools are versioned by date: `web_search_20250305`, `bash_20250124`.
fn server_tool_type(kind: &str) -> bool {
    kind.rsplit_once('_').is_some_and(|(name, date)| {
        !name.is_empty() && date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit())
    })
}

fn tool_choice(choice: Option<&Value>, names: &HashSet<String>) -> Checked<()> {
    let Some(choice) = choice else {
        return Ok(());
    };
    match choice["type"].as_str() {
        Some("auto" | "any" | "none") => Ok(()),
        Some("tool") => match choice["name"].as_str() {
            Some(name) if names.contains(name) => Ok(()),
            Some(name) => Err(format!("tool_choice.tool.name: Tool '{name}' not found in tools")),
            None => Err("tool_choice.tool.name: Field required".into()),
        },
        _ => Err("tool_choice: Input tag found using 'type' does not match any of the expected tags: 'auto', 'any', 'tool', 'none'".into()),
    }
}

fn text(block: &Value, path: &str) -> Checked<()> {
    match block["text"].as_str() {
        None => Err(format!("{path}.text: Field required")),
        Some("") => Err(format!("{path}: text content blocks must be non-empty")),
        Some(t) if t.trim().is_empty() => Err(format!(
            "{path}: text content blocks must contain non-whitespace text"
        )),
        Some(_) => Ok(()),
    }
}

fn messages(messages: Option<&Value>, thinking: bool) -> Checked<()> {
    let messages = messages
        .ok_or("messages: Field required")?
        .as_array()
        .ok_or("messages: Input should be a valid list")?;
    if messages.is_empty() {
        return Err("messages: at least one message is required".into());
    }
    // The tool_use ids of the previous message, which the next one must answer, all of them.
    let mut open: Vec<String> = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        let object = message
            .as_object()
            .ok_or_else(|| format!("messages.{i}: Input should be an object"))?;
        known_fields(object, &["role", "content"], &format!("messages.{i}."))?;
        let role = message["role"].as_str().unwrap_or_default();
        let allowed = match role {
            "user" => USER_BLOCKS,
            "assistant" => ASSISTANT_BLOCKS,
            _ => {
                return Err(format!(
                    "messages.{i}.role: Input should be 'user' or 'assistant'"
                ));
            }
        };
        let last = i + 1 == messages.len();
        let blocks = match &message["content"] {
            Value::String(s) if s.is_empty() && !(last && role == "assistant") => {
                return Err(format!(
                    "messages.{i}: all messages must have non-empty content except for the optional final assistant message"
                ));
            }
            Value::String(_) => Vec::new(),
            Value::Array(blocks) => blocks.clone(),
            _ => return Err(format!("messages.{i}.content: Field required")),
        };
        let mut answered = Vec::new();
        let mut uses = Vec::new();
        for (j, block) in blocks.iter().enumerate() {
            let path = format!("messages.{i}.content.{j}");
            let kind = block["type"].as_str().unwrap_or_default();
            if !allowed.contains(&kind) {
                return Err(format!(
                    "{path}.type: Input tag '{kind}' found using 'type' does not match any of the expected tags: {}",
                    allowed
                        .iter()
                        .map(|t| format!("'{t}'"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            match kind {
                "text" => text(block, &path)?,
                "image" | "document" if !block["source"].is_object() => {
                    return Err(format!("{path}.{kind}.source: Field required"));
                }
                "tool_use" => {
                    let id = block["id"]
                        .as_str()
                        .ok_or_else(|| format!("{path}.tool_use.id: Field required"))?;
                    if block["name"].as_str().is_none() || !block["input"].is_object() {
                        return Err(format!(
                            "{path}.tool_use: `name` and an object `input` are required"
                        ));
                    }
                    uses.push(id.to_owned());
                }
                "tool_result" => {
                    let id = block["tool_use_id"]
                        .as_str()
                        .ok_or_else(|| format!("{path}.tool_result.tool_use_id: Field required"))?;
                    if !open.iter().any(|o| o == id) {
                        return Err(format!(
                            "{path}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                        ));
                    }
                    answered.push(id.to_owned());
                }
                "thinking" => {
                    let thought = block["thinking"]
                        .as_str()
                        .ok_or_else(|| format!("{path}.thinking.thinking: Field required"))?;
                    match block["signature"].as_str() {
                        None => return Err(format!("{path}.thinking.signature: Field required")),
                        Some(s) if s != signature(thought) => {
                            return Err(format!("{path}: Invalid `signature` in `thinking` block"));
                        }
                        Some(_) => {}
                    }
                }
                "redacted_thinking" if block["data"].as_str().is_none_or(str::is_empty) => {
                    return Err(format!("{path}.redacted_thinking.data: Field required"));
                }
                _ => {}
            }
        }
        let unanswered: Vec<&String> = open.iter().filter(|id| !answered.contains(id)).collect();
        if !unanswered.is_empty() {
            let ids: Vec<&str> = unanswered.iter().map(|s| s.as_str()).collect();
            return Err(format!(
                "messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                ids.join(", ")
            ));
        }
        // With thinking on, the assistant turn whose tools the final user turn answers must still
        // carry its thinking: a gateway that drops thinking blocks breaks here.
        if thinking && last && !answered.is_empty() && i > 0 {
            let first = &messages[i - 1]["content"][0]["type"];
            if first != "thinking" && first != "redacted_thinking" {
                return Err(format!(
                    "messages.{}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{}`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks).",
                    i - 1,
                    first.as_str().unwrap_or("text")
                ));
            }
        }
        open = uses;
    }
    Ok(())
}

/// How many blocks carry `cache_control`, each checked.
fn cache_controls(value: &Value) -> Checked<usize> {
    match value {
        Value::Object(object) => {
            let mut count = 0;
            for (key, inner) in object {
                if key == "cache_control" {
                    let ttl = inner.get("ttl").and_then(Value::as_str);
                    if inner["type"] != "ephemeral" || !matches!(ttl, None | Some("5m" | "1h")) {
                        return Err("cache_control: Input should be {\"type\": \"ephemeral\", \"ttl\": \"5m\" | \"1h\"}".into());
                    }
                    count += 1;
                } else {
                    count += cache_controls(inner)?;
                }
            }
            Ok(count)
        }
        Value::Array(items) => items.iter().map(cache_controls).sum(),
        _ => Ok(0),
    }
}
