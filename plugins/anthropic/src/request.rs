//! The Messages request body: sampling parameters, tools, tool choice and JSON output.

use serde::Serialize;
use serde_json::{Value, json};
use wasmgate_plugin_sdk::PluginError;
use wasmgate_plugin_sdk::chat::{ChatRequest, ResponseFormat, ToolChoice, ToolChoiceMode};

use crate::JSON_TOOL;
use crate::messages::{self, AnthropicMessage};

/// `POST /v1/messages`.
#[derive(Debug, Serialize)]
pub struct MessagesRequest {
    model: String,
    max_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<String>,
    messages: Vec<AnthropicMessage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    stop_sequences: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<AnthropicTool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<AnthropicToolChoice>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<Metadata>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
}

#[derive(Debug, Serialize)]
struct AnthropicTool {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    input_schema: Value,
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum AnthropicToolChoice {
    Auto {
        #[serde(skip_serializing_if = "Option::is_none")]
        disable_parallel_tool_use: Option<bool>,
    },
    Any {
        #[serde(skip_serializing_if = "Option::is_none")]
        disable_parallel_tool_use: Option<bool>,
    },
    Tool {
        name: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        disable_parallel_tool_use: Option<bool>,
    },
    None,
}

#[derive(Debug, Serialize)]
struct Metadata {
    user_id: String,
}

/// Translates a chat request. `default_max_tokens` applies when the client set no limit, since
/// Anthropic requires one.
pub fn build(
    chat: &ChatRequest,
    stream: bool,
    default_max_tokens: u64,
) -> Result<MessagesRequest, PluginError> {
    chat.require_single_choice()?;
    let (mut system, messages) = messages::translate(&chat.messages)?;
    let mut tools = chat
        .tools()
        .iter()
        .map(|tool| {
            if tool.function.name == JSON_TOOL {
                return Err(PluginError::invalid_request(format!(
                    "the tool name `{JSON_TOOL}` is reserved by the gateway"
                ))
                .with_param("tools"));
            }
            Ok(AnthropicTool {
                name: tool.function.name.clone(),
                description: tool.function.description.clone(),
                // Anthropic requires a schema; OpenAI allows a function without parameters.
                input_schema: tool
                    .function
                    .parameters
                    .clone()
                    .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    // `parallel_tool_calls: false` is Anthropic's `disable_parallel_tool_use`, which lives
    // inside `tool_choice`.
    let single = chat.parallel_tool_calls.filter(|p| !p).map(|_| true);
    let mut tool_choice = match &chat.tool_choice {
        None if single.is_some() && !tools.is_empty() => Some(AnthropicToolChoice::Auto {
            disable_parallel_tool_use: single,
        }),
        None => None,
        Some(ToolChoice::Mode(ToolChoiceMode::Auto)) => Some(AnthropicToolChoice::Auto {
            disable_parallel_tool_use: single,
        }),
        Some(ToolChoice::Mode(ToolChoiceMode::Required)) => Some(AnthropicToolChoice::Any {
            disable_parallel_tool_use: single,
        }),
        Some(ToolChoice::Mode(ToolChoiceMode::None)) => Some(AnthropicToolChoice::None),
        Some(ToolChoice::Function { function }) => Some(AnthropicToolChoice::Tool {
            name: function.name.clone(),
            disable_parallel_tool_use: single,
        }),
    };

    // JSON output: a forced tool whose input schema is the wanted schema, when the client offers
    // no tools of its own (forcing one tool would take the others away); otherwise the best left
    // is an instruction in the system prompt.
    let json_schema = match &chat.response_format {
        None | Some(ResponseFormat::Text) => None,
        Some(ResponseFormat::JsonObject) => Some((None, json!({"type": "object"}))),
        Some(ResponseFormat::JsonSchema { json_schema }) => Some((
            json_schema.description.clone(),
            json_schema
                .schema
                .clone()
                .unwrap_or_else(|| json!({"type": "object"})),
        )),
    };
    if let Some((description, schema)) = json_schema {
        if tools.is_empty() {
            tools.push(AnthropicTool {
                name: JSON_TOOL.to_owned(),
                description: Some(description.unwrap_or_else(|| {
                    "Give your answer as this tool's input, a JSON object.".to_owned()
                })),
                input_schema: schema,
            });
            tool_choice = Some(AnthropicToolChoice::Tool {
                name: JSON_TOOL.to_owned(),
                disable_parallel_tool_use: Some(true),
            });
        } else {
            let instruction = format!(
                "Answer with a single JSON object and nothing else. It must follow this JSON \
                 Schema: {schema}"
            );
            system = Some(match system {
                Some(text) => format!("{text}\n\n{instruction}"),
                None => instruction,
            });
        }
    }

    Ok(MessagesRequest {
        model: chat.model.clone(),
        max_tokens: chat.max_output_tokens().unwrap_or(default_max_tokens),
        system,
        messages,
        temperature: chat.temperature,
        top_p: chat.top_p,
        stop_sequences: chat.stop_sequences(),
        tools,
        tool_choice,
        metadata: chat.user.clone().map(|user_id| Metadata { user_id }),
        stream,
    })
}
