//! `tools` and `tool_choice`: custom tools become functions; server tools (web search, code
//! execution, ...) have no canonical form and are dropped.

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;
use wasmgate_plugin_sdk::Failure;
use wasmgate_plugin_sdk::canonical::{
    ChatFunction, ChatTool, ChatToolChoice, Dropped, ToolMode, read,
};

#[derive(Deserialize)]
struct Tool<'a> {
    /// Absent or `custom` for a client tool; a dated name (`web_search_20250305`) for a
    /// server tool.
    #[serde(rename = "type")]
    kind: Option<String>,
    name: Option<String>,
    description: Option<String>,
    #[serde(borrow)]
    input_schema: Option<&'a RawValue>,
    strict: Option<bool>,
    cache_control: Option<IgnoredAny>,
}

pub fn tools(raw: &RawValue, dropped: &mut Dropped) -> Result<Vec<ChatTool>, Failure> {
    let tools: Vec<Tool> = read("tools", raw)?;
    let mut out = Vec::with_capacity(tools.len());
    for (i, tool) in tools.into_iter().enumerate() {
        let path = format!("tools[{i}]");
        if !matches!(tool.kind.as_deref(), None | Some("custom")) {
            dropped.push(path);
            continue;
        }
        if tool.cache_control.is_some() {
            dropped.field(&path, "cache_control");
        }
        let name = tool.name.ok_or_else(|| {
            Failure::invalid_request(format!("{path}.name: Field required"))
                .with_param(format!("{path}.name"))
        })?;
        out.push(ChatTool::function(ChatFunction {
            name,
            description: tool.description,
            parameters: tool.input_schema.map(ToOwned::to_owned),
            strict: tool.strict,
        }));
    }
    Ok(out)
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum ToolChoice {
    Auto {
        disable_parallel_tool_use: Option<bool>,
    },
    Any {
        disable_parallel_tool_use: Option<bool>,
    },
    Tool {
        name: String,
        disable_parallel_tool_use: Option<bool>,
    },
    None,
}

/// `tool_choice` and `parallel_tool_calls` as the canonical body takes them.
pub struct Choice {
    pub choice: Option<ChatToolChoice>,
    pub parallel: Option<bool>,
}

/// Reads `tool_choice`; a choice of a tool that is not among `tools` (a server tool, dropped) is
/// dropped too.
pub fn tool_choice(
    raw: &RawValue,
    tools: &[ChatTool],
    dropped: &mut Dropped,
) -> Result<Choice, Failure> {
    let (choice, single) = match read("tool_choice", raw)? {
        ToolChoice::Auto {
            disable_parallel_tool_use,
        } => (
            Some(ChatToolChoice::Mode(ToolMode::Auto)),
            disable_parallel_tool_use,
        ),
        ToolChoice::Any {
            disable_parallel_tool_use,
        } => (
            Some(ChatToolChoice::Mode(ToolMode::Required)),
            disable_parallel_tool_use,
        ),
        ToolChoice::Tool {
            name,
            disable_parallel_tool_use,
        } => {
            if tools.iter().any(|t| t.function.name == name) {
                (
                    Some(ChatToolChoice::function(name)),
                    disable_parallel_tool_use,
                )
            } else {
                dropped.push("tool_choice");
                (None, disable_parallel_tool_use)
            }
        }
        ToolChoice::None => (Some(ChatToolChoice::Mode(ToolMode::None)), None),
    };
    Ok(Choice {
        choice,
        // Anthropic's `disable_parallel_tool_use: true` is OpenAI's `parallel_tool_calls: false`;
        // `false` is both APIs' default.
        parallel: single.filter(|s| *s).map(|_| false),
    })
}
