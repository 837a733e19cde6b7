//! The generateContent request body: generation settings, tools, tool choice, JSON output.

use serde::Serialize;
use serde_json::Value;
use wasmgate_plugin_sdk::PluginError;
use wasmgate_plugin_sdk::chat::{ChatRequest, ResponseFormat, ToolChoice, ToolChoiceMode};

use crate::contents::{self, Content};

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GenerateContentRequest {
    contents: Vec<Content>,
    #[serde(skip_serializing_if = "Option::is_none")]
    system_instruction: Option<Content>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<GeminiTool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_config: Option<ToolConfig>,
    #[serde(skip_serializing_if = "GenerationConfig::is_empty")]
    generation_config: GenerationConfig,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct GeminiTool {
    function_declarations: Vec<FunctionDeclaration>,
}

/// Parameters go in `parametersJsonSchema`, which takes JSON Schema as OpenAI clients write
/// it; the older `parameters` takes only an OpenAPI subset and refuses keys such as
/// `additionalProperties`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct FunctionDeclaration {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parameters_json_schema: Option<Value>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolConfig {
    function_calling_config: FunctionCallingConfig,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct FunctionCallingConfig {
    mode: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    allowed_function_names: Option<Vec<String>>,
}

#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
struct GenerationConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    stop_sequences: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    presence_penalty: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    frequency_penalty: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_mime_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_json_schema: Option<Value>,
}

impl GenerationConfig {
    fn is_empty(&self) -> bool {
        self.max_output_tokens.is_none()
            && self.temperature.is_none()
            && self.top_p.is_none()
            && self.stop_sequences.is_empty()
            && self.seed.is_none()
            && self.presence_penalty.is_none()
            && self.frequency_penalty.is_none()
            && self.response_mime_type.is_none()
    }
}

pub fn build(chat: &ChatRequest) -> Result<GenerateContentRequest, PluginError> {
    // Gemini can generate several candidates, but a stream interleaves them without saying
    // which is which; one is what the translation supports.
    chat.require_single_choice()?;
    let (system, contents) = contents::translate(&chat.messages)?;
    let declarations: Vec<FunctionDeclaration> = chat
        .tools()
        .iter()
        .map(|tool| FunctionDeclaration {
            name: tool.function.name.clone(),
            description: tool.function.description.clone(),
            parameters_json_schema: tool.function.parameters.clone(),
        })
        .collect();
    let tools = if declarations.is_empty() {
        Vec::new()
    } else {
        vec![GeminiTool {
            function_declarations: declarations,
        }]
    };
    let tool_config = chat.tool_choice.as_ref().map(|choice| {
        let (mode, names) = match choice {
            ToolChoice::Mode(ToolChoiceMode::Auto) => ("AUTO", None),
            ToolChoice::Mode(ToolChoiceMode::None) => ("NONE", None),
            ToolChoice::Mode(ToolChoiceMode::Required) => ("ANY", None),
            // `ANY` limited to one allowed function is Gemini's way to force that function.
            ToolChoice::Function { function } => ("ANY", Some(vec![function.name.clone()])),
        };
        ToolConfig {
            function_calling_config: FunctionCallingConfig {
                mode,
                allowed_function_names: names,
            },
        }
    });
    let (response_mime_type, response_json_schema) = match &chat.response_format {
        None | Some(ResponseFormat::Text) => (None, None),
        Some(ResponseFormat::JsonObject) => (Some("application/json"), None),
        Some(ResponseFormat::JsonSchema { json_schema }) => {
            (Some("application/json"), json_schema.schema.clone())
        }
    };
    Ok(GenerateContentRequest {
        contents,
        system_instruction: system,
        tools,
        tool_config,
        generation_config: GenerationConfig {
            max_output_tokens: chat.max_output_tokens(),
            temperature: chat.temperature,
            top_p: chat.top_p,
            stop_sequences: chat.stop_sequences(),
            seed: chat.seed,
            presence_penalty: chat.presence_penalty,
            frequency_penalty: chat.frequency_penalty,
            response_mime_type,
            response_json_schema,
        },
    })
}
