//! What the real Responses API refuses in a `POST /v1/responses` body, refused with OpenAI's
//! message, `param` and `code`.

use serde_json::{Map, Value};

/// The body parameters `responses.create` takes (openai-python 3.54, and `client_metadata`, a
/// map of strings OpenAI's own Codex sends in every request, over HTTP and on the socket).
/// Anything else is `unknown_parameter`, which is what catches a gateway leaking another
/// dialect's field.
const PARAMETERS: &[&str] = &[
    "access_programs",
    "background",
    "background_options",
    "client_metadata",
    "context_management",
    "conversation",
    "image",
    "include",
    "input",
    "instructions",
    "max_output_tokens",
    "max_tool_calls",
    "metadata",
    "model",
    "moderation",
    "parallel_tool_calls",
    "previous_response_id",
    "prompt",
    "prompt_cache_key",
    "prompt_cache_options",
    "prompt_cache_retention",
    "reasoning",
    "safety_identifier",
    "service_tier",
    "store",
    "stream",
    "stream_options",
    "temperature",
    "text",
    "tool_choice",
    "tools",
    "top_logprobs",
    "top_p",
    "truncation",
    "user",
];

const INCLUDABLE: &[&str] = &[
    "code_interpreter_call.outputs",
    "computer_call_output.output.image_url",
    "file_search_call.results",
    "message.input_image.image_url",
    "message.output_text.logprobs",
    "reasoning.encrypted_content",
    "web_search_call.action.sources",
];

/// The fields each input item type takes (an input item echoes an output item minus what only
/// the server sets: a reasoning item sent back with `status` is refused).
fn item_fields(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "message" => &["type", "role", "content", "id", "status", "phase"],
        "function_call" => &["type", "id", "call_id", "name", "arguments", "status"],
        "function_call_output" => &["type", "id", "call_id", "output", "status"],
        "reasoning" => &["type", "id", "summary", "encrypted_content", "content"],
        "item_reference" => &["type", "id"],
        "compaction" => &["type", "id", "encrypted_content"],
        _ => return None,
    })
}

/// A refusal: `(message, param, code)`.
pub(super) struct Refusal {
    pub message: String,
    pub param: Option<String>,
    pub code: Option<&'static str>,
}

fn refuse(message: String, param: impl Into<Option<String>>, code: &'static str) -> Refusal {
    Refusal {
        message,
        param: param.into(),
        code: Some(code),
    }
}

fn unknown(param: String) -> Refusal {
    refuse(
        format!("Unknown parameter: '{param}'."),
        param,
        "unknown_parameter",
    )
}

fn missing(param: String) -> Refusal {
    refuse(
        format!("Missing required parameter: '{param}'."),
        param,
        "missing_required_parameter",
    )
}

fn invalid(param: String, message: String) -> Refusal {
    refuse(message, param, "invalid_value")
}

fn known(object: &Map<String, Value>, fields: &[&str], path: &str) -> Result<(), Refusal> {
    match object.keys().find(|k| !fields.contains(&k.as_str())) {
        Some(key) => Err(unknown(format!("{path}{key}"))),
        None => Ok(()),
    }
}

/// A request body, apart from what needs the stored responses (`previous_response_id`, call ids,
/// reasoning items), which the handler checks.
pub(super) fn request(body: &Value) -> Result<(), Refusal> {
    let Some(object) = body.as_object() else {
        return Err(Refusal {
            message: "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)".into(),
            param: None,
            code: None,
        });
    };
    known(object, PARAMETERS, "")?;
    if !object.get("model").is_some_and(Value::is_string) {
        return Err(missing("model".into()));
    }
    let model = object["model"].as_str().unwrap_or_default();
    if object.contains_key("reasoning") && !super::reasoning_model(model) {
        return Err(refuse(
            "Unsupported parameter: 'reasoning.effort' is not supported with this model.".into(),
            "reasoning.effort".to_owned(),
            "unsupported_parameter",
        ));
    }
    // Reasoning models sample at their own temperature.
    if super::reasoning_model(model)
        && object
            .get("temperature")
            .is_some_and(|t| t.as_f64() != Some(1.0))
    {
        return Err(refuse(
            "Unsupported parameter: 'temperature' is not supported with this model.".into(),
            "temperature".to_owned(),
            "unsupported_parameter",
        ));
    }
    if let Some(max) = object
        .get("max_output_tokens")
        .and_then(Value::as_i64)
        .filter(|m| *m < 16)
    {
        return Err(refuse(
            format!(
                "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got {max} instead."
            ),
            "max_output_tokens".to_owned(),
            "integer_below_min_value",
        ));
    }
    for (i, include) in object
        .get("include")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let value = include.as_str().unwrap_or_default();
        if !INCLUDABLE.contains(&value) {
            return Err(invalid(
                format!("include[{i}]"),
                format!(
                    "Invalid value: '{value}'. Supported values are: {}.",
                    INCLUDABLE
                        .iter()
                        .map(|v| format!("'{v}'"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    for (i, entry) in object
        .get("context_management")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        if entry["type"] != "compaction" {
            return Err(invalid(
                format!("context_management[{i}].type"),
                format!(
                    "Invalid value: {}. Supported values are: 'compaction'.",
                    entry["type"]
                ),
            ));
        }
    }
    // Chat Completions' `stream_options.include_usage` has no place here: usage always comes.
    if let Some(options) = object.get("stream_options") {
        let options = options.as_object().ok_or_else(|| {
            invalid(
                "stream_options".into(),
                "Invalid type for 'stream_options': expected an object.".into(),
            )
        })?;
        known(options, &["include_obfuscation"], "stream_options.")?;
    }
    prompt(object)
}

/// The prompt's part of a body (`tools` and the `input` items), which
/// `POST /v1/responses/input_tokens` checks as `POST /v1/responses` does.
pub(super) fn prompt(object: &Map<String, Value>) -> Result<(), Refusal> {
    tools(object.get("tools"))?;
    match object.get("input") {
        None | Some(Value::String(_)) => Ok(()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .try_for_each(|(i, item)| input_item(item, i)),
        Some(_) => Err(invalid(
            "input".into(),
            "Invalid type for 'input': expected one of a string or array of input items.".into(),
        )),
    }
}

fn tools(tools: Option<&Value>) -> Result<(), Refusal> {
    for (i, tool) in tools
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let Some(object) = tool.as_object() else {
            return Err(invalid(
                format!("tools[{i}]"),
                format!("Invalid type for 'tools[{i}]': expected an object."),
            ));
        };
        match tool["type"].as_str() {
            Some("function") => {
                known(
                    object,
                    &[
                        "type",
                        "name",
                        "description",
                        "parameters",
                        "strict",
                        "defer_loading",
                    ],
                    &format!("tools[{i}]."),
                )?;
                if !tool["name"].is_string() {
                    return Err(missing(format!("tools[{i}].name")));
                }
            }
            // Function and custom tools grouped under a name (`namespace.tool` in calls).
            Some("namespace") => {
                known(
                    object,
                    &["type", "name", "description", "tools"],
                    &format!("tools[{i}]."),
                )?;
                if !tool["name"].is_string() {
                    return Err(missing(format!("tools[{i}].name")));
                }
                let Some(inner) = tool["tools"].as_array() else {
                    return Err(missing(format!("tools[{i}].tools")));
                };
                for (j, inner) in inner.iter().enumerate() {
                    if !matches!(inner["type"].as_str(), Some("function" | "custom")) {
                        return Err(invalid(
                            format!("tools[{i}].tools[{j}].type"),
                            "A namespace holds function and custom tools only.".to_owned(),
                        ));
                    }
                }
            }
            Some(
                "web_search"
                | "web_search_preview"
                | "file_search"
                | "code_interpreter"
                | "image_generation"
                | "mcp"
                | "local_shell"
                | "shell"
                | "custom"
                | "apply_patch"
                | "computer_use_preview",
            ) => {}
            Some(other) => {
                return Err(invalid(
                    format!("tools[{i}].type"),
                    format!(
                        "Invalid value: '{other}'. Supported values are: 'function', 'file_search', 'web_search', 'code_interpreter', 'image_generation', 'mcp', 'custom', ..."
                    ),
                ));
            }
            None => return Err(missing(format!("tools[{i}].type"))),
        }
    }
    Ok(())
}

fn input_item(item: &Value, i: usize) -> Result<(), Refusal> {
    let Some(object) = item.as_object() else {
        return Err(invalid(
            format!("input[{i}]"),
            format!("Invalid type for 'input[{i}]': expected an object."),
        ));
    };
    // An item without a type is the short form of a message.
    let kind = item["type"].as_str().unwrap_or("message");
    let Some(fields) = item_fields(kind) else {
        return Err(invalid(
            format!("input[{i}].type"),
            format!(
                "Invalid value: '{kind}'. Supported values are: 'message', 'function_call', 'function_call_output', 'reasoning', 'item_reference', 'compaction', ..."
            ),
        ));
    };
    let path = format!("input[{i}].");
    known(object, fields, &path)?;
    let require = |field: &str| {
        if object.contains_key(field) {
            Ok(())
        } else {
            Err(missing(format!("{path}{field}")))
        }
    };
    match kind {
        "message" => {
            require("role")?;
            require("content")?;
            let role = item["role"].as_str().unwrap_or_default();
            let parts: &[&str] = match role {
                "user" | "system" | "developer" => &["input_text", "input_image", "input_file"],
                "assistant" => &["output_text", "refusal"],
                _ => {
                    return Err(invalid(
                        format!("{path}role"),
                        format!(
                            "Invalid value: '{role}'. Supported values are: 'user', 'assistant', 'system', and 'developer'."
                        ),
                    ));
                }
            };
            match &item["content"] {
                Value::String(_) => Ok(()),
                Value::Array(content) => {
                    for (j, part) in content.iter().enumerate() {
                        let kind = part["type"].as_str().unwrap_or_default();
                        if !parts.contains(&kind) {
                            return Err(invalid(
                                format!("{path}content[{j}]"),
                                format!(
                                    "Invalid value: '{kind}'. Supported values are: {}.",
                                    parts
                                        .iter()
                                        .map(|p| format!("'{p}'"))
                                        .collect::<Vec<_>>()
                                        .join(", ")
                                ),
                            ));
                        }
                    }
                    Ok(())
                }
                _ => Err(invalid(
                    format!("{path}content"),
                    format!(
                        "Invalid type for '{path}content': expected one of a string or array of input content parts."
                    ),
                )),
            }
        }
        "function_call" => {
            require("call_id")?;
            require("name")?;
            require("arguments")?;
            if !item["arguments"].is_string() {
                return Err(invalid(
                    format!("{path}arguments"),
                    format!("Invalid type for '{path}arguments': expected a string."),
                ));
            }
            Ok(())
        }
        "function_call_output" => {
            require("call_id")?;
            require("output")
        }
        "reasoning" => {
            require("summary")?;
            require("id")
        }
        "compaction" => require("encrypted_content"),
        _ => require("id"),
    }
}
