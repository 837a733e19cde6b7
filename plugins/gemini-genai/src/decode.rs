//! A `generateContent` request (and `countTokens`'s) as a canonical chat request: the
//! conversation, tools and tool config, and `generationConfig`.

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use wasmgate_plugin_sdk::canonical::{
    ChatBody, ChatFunction, ChatJsonSchema, ChatResponseFormat, ChatTool, ChatToolChoice, Dropped,
    Fields, ToolMode,
};
use wasmgate_plugin_sdk::{Call, Canonical, Decoded, Failure, Framing};

use crate::contents::{self, Content, System};
use crate::schema::to_json_schema;

/// `generationConfig` fields the canonical form has no place for.
const UNMAPPED_GENERATION: &[&str] = &[
    "topK",
    "seed",
    "presencePenalty",
    "frequencyPenalty",
    "responseLogprobs",
    "logprobs",
    "responseModalities",
    "speechConfig",
    "mediaResolution",
    "enableEnhancedCivicAnswers",
    "thinkingConfig",
];

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Tool {
    #[serde(default)]
    function_declarations: Vec<FunctionDeclaration>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FunctionDeclaration {
    name: String,
    description: Option<String>,
    parameters: Option<Value>,
    parameters_json_schema: Option<Box<RawValue>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolConfig {
    function_calling_config: Option<FunctionCallingConfig>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FunctionCallingConfig {
    mode: Option<String>,
    #[serde(default)]
    allowed_function_names: Vec<String>,
}

/// Decodes `generateContent` (`stream: false`) or `streamGenerateContent` (`true`). The model
/// comes from the URL; a stream without `alt=sse` is framed as one JSON array.
pub fn generate(body: &str, model: &str, stream: bool, call: &Call) -> Result<Decoded, Failure> {
    let mut fields = Fields::parse(body)?;
    let chat = chat_body(&mut fields, model, stream)?;
    let (chat, dropped) = chat;
    let framing = if stream && call.param("alt") != Some("sse") {
        Framing::JsonArray
    } else {
        Framing::Sse
    };
    let mut dropped = dropped;
    for name in fields.rest() {
        dropped.push(name);
    }
    Ok(Decoded {
        operation: Canonical::ChatCompletions,
        framing,
        model: model.to_owned(),
        stream,
        body: chat.to_json()?,
        dropped: dropped.into_vec(),
        echo: "{}".to_owned(),
    })
}

/// Decodes `countTokens`: `contents` alone, or a whole `generateContentRequest`.
pub fn count(body: &str, model: &str) -> Result<Decoded, Failure> {
    let mut fields = Fields::parse(body)?;
    let (chat, dropped) = match fields.take_raw("generateContentRequest") {
        Some(raw) => {
            let mut inner = Fields::parse(raw.get())?;
            chat_body(&mut inner, model, false)?
        }
        None => chat_body(&mut fields, model, false)?,
    };
    Ok(Decoded {
        operation: Canonical::ChatCompletions,
        framing: Framing::Sse,
        model: model.to_owned(),
        stream: false,
        body: chat.to_json()?,
        dropped: dropped.into_vec(),
        echo: "{}".to_owned(),
    })
}

fn chat_body(
    fields: &mut Fields<'_>,
    model: &str,
    stream: bool,
) -> Result<(ChatBody, Dropped), Failure> {
    let mut dropped = Dropped::default();
    let contents: Vec<Content> = fields.take("contents")?.unwrap_or_default();
    if contents.is_empty() {
        return Err(Failure::invalid_request("contents is not specified").with_param("contents"));
    }
    let system: Option<System> = fields.take("systemInstruction")?;
    let mut chat = ChatBody {
        model: model.to_owned(),
        messages: contents::translate(system, contents, &mut dropped)?,
        stream,
        ..ChatBody::default()
    };
    if let Some(tools) = fields.take::<Vec<Value>>("tools")? {
        for (i, tool) in tools.into_iter().enumerate() {
            let keys: Vec<String> = tool
                .as_object()
                .map(|o| o.keys().cloned().collect())
                .unwrap_or_default();
            for key in keys.iter().filter(|k| *k != "functionDeclarations") {
                dropped.push(format!("tools[{i}].{key}"));
            }
            let tool: Tool = serde_json::from_value(tool).map_err(|e| {
                Failure::invalid_request(format!("tools[{i}]: {e}"))
                    .with_param(format!("tools[{i}]"))
            })?;
            for declaration in tool.function_declarations {
                chat.tools.push(function(declaration)?);
            }
        }
    }
    if let Some(config) = fields.take::<ToolConfig>("toolConfig")?
        && let Some(calling) = config.function_calling_config
    {
        chat.tool_choice = tool_choice(calling, &mut dropped);
    }
    for name in chat.drop_tool_settings_without_tools() {
        dropped.push(name);
    }
    if let Some(raw) = fields.take_raw("generationConfig") {
        generation(raw, &mut chat, &mut dropped)?;
    }
    for name in ["safetySettings", "cachedContent", "labels", "model"] {
        if fields.take_raw(name).is_some() {
            dropped.push(name);
        }
    }
    Ok((chat, dropped))
}

fn function(declaration: FunctionDeclaration) -> Result<ChatTool, Failure> {
    let parameters = match (declaration.parameters_json_schema, declaration.parameters) {
        (Some(raw), _) => Some(raw),
        (None, Some(schema)) => Some(raw(&to_json_schema(&schema))?),
        (None, None) => None,
    };
    Ok(ChatTool::function(ChatFunction {
        name: declaration.name,
        description: declaration.description,
        parameters,
        strict: None,
    }))
}

fn tool_choice(config: FunctionCallingConfig, dropped: &mut Dropped) -> Option<ChatToolChoice> {
    match config.mode.as_deref().unwrap_or("AUTO") {
        "NONE" => Some(ChatToolChoice::Mode(ToolMode::None)),
        "ANY" => match config.allowed_function_names.as_slice() {
            [one] => Some(ChatToolChoice::function(one.clone())),
            [] => Some(ChatToolChoice::Mode(ToolMode::Required)),
            _ => {
                // Chat Completions names one function or none.
                dropped.push("toolConfig.functionCallingConfig.allowedFunctionNames");
                Some(ChatToolChoice::Mode(ToolMode::Required))
            }
        },
        _ => Some(ChatToolChoice::Mode(ToolMode::Auto)),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GenerationConfig {
    temperature: Option<f64>,
    top_p: Option<f64>,
    max_output_tokens: Option<u64>,
    #[serde(default)]
    stop_sequences: Vec<String>,
    candidate_count: Option<u32>,
    response_mime_type: Option<String>,
    response_schema: Option<Value>,
    response_json_schema: Option<Box<RawValue>>,
}

fn generation(raw: &RawValue, chat: &mut ChatBody, dropped: &mut Dropped) -> Result<(), Failure> {
    let all: serde_json::Map<String, Value> =
        wasmgate_plugin_sdk::canonical::read("generationConfig", raw)?;
    for key in all.keys() {
        if UNMAPPED_GENERATION.contains(&key.as_str()) {
            dropped.push(format!("generationConfig.{key}"));
        }
    }
    let config: GenerationConfig = wasmgate_plugin_sdk::canonical::read("generationConfig", raw)?;
    chat.temperature = config.temperature;
    chat.top_p = config.top_p;
    chat.max_completion_tokens = config.max_output_tokens;
    chat.stop = config.stop_sequences;
    if config.candidate_count.is_some_and(|n| n > 1) {
        return Err(
            Failure::invalid_request("Only one candidate can be generated.")
                .with_param("generationConfig.candidateCount"),
        );
    }
    let schema = match (config.response_json_schema, config.response_schema) {
        (Some(raw), _) => Some(raw),
        (None, Some(schema)) => Some(raw_value(&to_json_schema(&schema))?),
        (None, None) => None,
    };
    chat.response_format = match (config.response_mime_type.as_deref(), schema) {
        (_, Some(schema)) => Some(ChatResponseFormat::JsonSchema {
            json_schema: ChatJsonSchema {
                name: "response".to_owned(),
                description: None,
                schema: Some(schema),
                strict: None,
            },
        }),
        (Some("application/json"), None) => Some(ChatResponseFormat::JsonObject),
        (Some("text/plain") | None, None) => None,
        (Some(_), None) => {
            dropped.push("generationConfig.responseMimeType");
            None
        }
    };
    Ok(())
}

fn raw(value: &Value) -> Result<Box<RawValue>, Failure> {
    raw_value(value)
}

fn raw_value(value: &Value) -> Result<Box<RawValue>, Failure> {
    serde_json::value::to_raw_value(value)
        .map_err(|_| Failure::invalid_request("a schema could not be read"))
}
