//! The Converse request body: messages, system, `inferenceConfig` and `toolConfig`. The model
//! id travels in the URL, not the body, and one body serves `converse` and `converse-stream`.

use serde::Serialize;
use serde_json::{Value, json};
use wasmgate_plugin_sdk::PluginError;
use wasmgate_plugin_sdk::chat::{ChatRequest, ResponseFormat, ToolChoice, ToolChoiceMode};

use crate::messages::{self, ConverseMessage, SystemText};

/// `POST /model/{modelId}/converse` (and `/converse-stream`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConverseRequest {
    messages: Vec<ConverseMessage>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    system: Vec<SystemText>,
    #[serde(skip_serializing_if = "InferenceConfig::is_empty")]
    inference_config: InferenceConfig,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_config: Option<ToolConfig>,
}

#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
struct InferenceConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    stop_sequences: Vec<String>,
}

impl InferenceConfig {
    fn is_empty(&self) -> bool {
        self.max_tokens.is_none()
            && self.temperature.is_none()
            && self.top_p.is_none()
            && self.stop_sequences.is_empty()
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolConfig {
    tools: Vec<Tool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Tool {
    tool_spec: ToolSpec,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolSpec {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    input_schema: InputSchema,
}

#[derive(Debug, Serialize)]
struct InputSchema {
    json: Value,
}

/// Translates a chat request.
pub fn build(chat: &ChatRequest) -> Result<ConverseRequest, PluginError> {
    chat.require_single_choice()?;
    match &chat.response_format {
        None | Some(ResponseFormat::Text) => {}
        Some(ResponseFormat::JsonObject | ResponseFormat::JsonSchema { .. }) => {
            return Err(PluginError::invalid_request(
                "this provider does not support `response_format` JSON output",
            )
            .with_param("response_format"));
        }
    }
    let (system, messages) = messages::translate(&chat.messages)?;
    let tools: Vec<Tool> = chat
        .tools()
        .iter()
        .map(|tool| Tool {
            tool_spec: ToolSpec {
                name: tool.function.name.clone(),
                description: tool.function.description.clone(),
                // Converse requires a schema; OpenAI allows a function without parameters.
                input_schema: InputSchema {
                    json: tool
                        .function
                        .parameters
                        .clone()
                        .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
                },
            },
        })
        .collect();
    let tool_choice = match &chat.tool_choice {
        None | Some(ToolChoice::Mode(ToolChoiceMode::None)) => None,
        Some(ToolChoice::Mode(ToolChoiceMode::Auto)) => Some(json!({"auto": {}})),
        Some(ToolChoice::Mode(ToolChoiceMode::Required)) => Some(json!({"any": {}})),
        Some(ToolChoice::Function { function }) => Some(json!({"tool": {"name": function.name}})),
    };
    // Converse has no `none` choice: the tools are left out instead, unless the conversation
    // already holds tool blocks, which Converse only accepts with a `toolConfig`.
    let no_tools = matches!(
        chat.tool_choice,
        Some(ToolChoice::Mode(ToolChoiceMode::None))
    ) && !messages.iter().any(ConverseMessage::has_tool_blocks);
    let tool_config = (!tools.is_empty() && !no_tools).then_some(ToolConfig { tools, tool_choice });
    Ok(ConverseRequest {
        messages,
        system,
        inference_config: InferenceConfig {
            max_tokens: chat.max_output_tokens(),
            temperature: chat.temperature,
            top_p: chat.top_p,
            stop_sequences: chat.stop_sequences(),
        },
        tool_config,
    })
}
