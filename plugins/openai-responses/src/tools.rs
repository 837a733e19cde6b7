//! `tools`, `tool_choice` and `text.format`: function tools become chat functions; built-in
//! tools (web search, file search, shell, MCP, custom grammars, ...) are dropped.

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;
use wasmgate_plugin_sdk::Failure;
use wasmgate_plugin_sdk::canonical::{
    ChatFunction, ChatJsonSchema, ChatResponseFormat, ChatTool, ChatToolChoice, Dropped, ToolMode,
    read,
};

#[derive(Deserialize)]
struct Tool<'a> {
    #[serde(rename = "type")]
    kind: String,
    name: Option<String>,
    description: Option<String>,
    #[serde(borrow)]
    parameters: Option<&'a RawValue>,
    strict: Option<bool>,
}

pub fn tools(raw: &RawValue, dropped: &mut Dropped) -> Result<Vec<ChatTool>, Failure> {
    let tools: Vec<Tool> = read("tools", raw)?;
    let mut out = Vec::with_capacity(tools.len());
    for (i, tool) in tools.into_iter().enumerate() {
        if tool.kind != "function" {
            dropped.push(format!("tools[{i}]"));
            continue;
        }
        let name = tool.name.ok_or_else(|| {
            Failure::invalid_request(format!("tools[{i}].name: Field required"))
                .with_param(format!("tools[{i}].name"))
        })?;
        out.push(ChatTool::function(ChatFunction {
            name,
            description: tool.description,
            parameters: tool.parameters.map(ToOwned::to_owned),
            strict: tool.strict,
        }));
    }
    Ok(out)
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ToolChoice {
    Mode(ToolMode),
    Object {
        #[serde(rename = "type")]
        kind: String,
        name: Option<String>,
    },
}

/// `tool_choice`: a mode, or a function among `tools`. Choices of built-in tools, allowed-tool
/// lists, and functions that are not offered are dropped.
pub fn tool_choice(
    raw: &RawValue,
    tools: &[ChatTool],
    dropped: &mut Dropped,
) -> Result<Option<ChatToolChoice>, Failure> {
    Ok(match read("tool_choice", raw)? {
        ToolChoice::Mode(mode) => Some(ChatToolChoice::Mode(mode)),
        ToolChoice::Object {
            kind,
            name: Some(name),
        } if kind == "function" && tools.iter().any(|t| t.function.name == name) => {
            Some(ChatToolChoice::function(name))
        }
        ToolChoice::Object { .. } => {
            dropped.push("tool_choice");
            None
        }
    })
}

#[derive(Deserialize)]
struct Text<'a> {
    #[serde(borrow)]
    format: Option<Format<'a>>,
    verbosity: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct Format<'a> {
    #[serde(rename = "type")]
    kind: String,
    name: Option<String>,
    description: Option<String>,
    #[serde(borrow)]
    schema: Option<&'a RawValue>,
    strict: Option<bool>,
}

/// `text.format` as `response_format`.
pub fn text_format(
    raw: &RawValue,
    dropped: &mut Dropped,
) -> Result<Option<ChatResponseFormat>, Failure> {
    let text: Text = read("text", raw)?;
    if text.verbosity.is_some() {
        dropped.push("text.verbosity");
    }
    let Some(format) = text.format else {
        return Ok(None);
    };
    Ok(match format.kind.as_str() {
        "text" => Some(ChatResponseFormat::Text),
        "json_object" => Some(ChatResponseFormat::JsonObject),
        "json_schema" => Some(ChatResponseFormat::JsonSchema {
            json_schema: ChatJsonSchema {
                name: format.name.unwrap_or_else(|| "response".to_owned()),
                description: format.description,
                schema: format.schema.map(ToOwned::to_owned),
                strict: format.strict,
            },
        }),
        _ => {
            dropped.push("text.format");
            None
        }
    })
}
