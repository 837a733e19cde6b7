//! The v2 chat request body. Cohere's messages are close to OpenAI's: the roles are the same,
//! tool calls and tool results have the same shape. The differences handled here: text an
//! assistant wrote alongside tool calls goes in `tool_plan`, `top_p` is `p`, `stop` is
//! `stop_sequences`, and `tool_choice` has only `REQUIRED` and `NONE`.

use serde::Serialize;
use serde_json::Value;
use wasmgate_plugin_sdk::PluginError;
use wasmgate_plugin_sdk::chat::{
    ChatRequest, Content, ContentPart, Message, ResponseFormat, ToolCall, ToolChoice,
    ToolChoiceMode,
};

#[derive(Debug, Serialize)]
pub struct CohereChatRequest {
    model: String,
    messages: Vec<CohereMessage>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<CohereTool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<CohereResponseFormat>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    p: Option<f64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    stop_sequences: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    frequency_penalty: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    presence_penalty: Option<f64>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
}

#[derive(Debug, Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum CohereMessage {
    System {
        content: String,
    },
    User {
        content: UserContent,
    },
    Assistant {
        #[serde(skip_serializing_if = "Option::is_none")]
        content: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        tool_plan: Option<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<CohereToolCall>,
    },
    Tool {
        tool_call_id: String,
        content: String,
    },
}

#[derive(Debug, Serialize)]
#[serde(untagged)]
enum UserContent {
    Text(String),
    Parts(Vec<UserPart>),
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum UserPart {
    Text { text: String },
    ImageUrl { image_url: ImageUrl },
}

#[derive(Debug, Serialize)]
struct ImageUrl {
    url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<String>,
}

#[derive(Debug, Serialize)]
struct CohereToolCall {
    id: String,
    #[serde(rename = "type")]
    kind: &'static str,
    function: CohereFunctionCall,
}

#[derive(Debug, Serialize)]
struct CohereFunctionCall {
    name: String,
    arguments: String,
}

#[derive(Debug, Serialize)]
struct CohereTool {
    #[serde(rename = "type")]
    kind: &'static str,
    function: CohereFunction,
}

#[derive(Debug, Serialize)]
struct CohereFunction {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parameters: Option<Value>,
}

#[derive(Debug, Serialize)]
struct CohereResponseFormat {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    json_schema: Option<Value>,
}

pub fn build(chat: &ChatRequest, stream: bool) -> Result<CohereChatRequest, PluginError> {
    chat.require_single_choice()?;
    let messages = chat
        .messages
        .iter()
        .enumerate()
        .map(|(i, m)| message(m, i))
        .collect::<Result<Vec<_>, _>>()?;
    let mut tools: Vec<CohereTool> = chat
        .tools()
        .iter()
        .map(|tool| CohereTool {
            kind: "function",
            function: CohereFunction {
                name: tool.function.name.clone(),
                description: tool.function.description.clone(),
                parameters: tool.function.parameters.clone(),
            },
        })
        .collect();
    let tool_choice = match &chat.tool_choice {
        None | Some(ToolChoice::Mode(ToolChoiceMode::Auto)) => None,
        Some(ToolChoice::Mode(ToolChoiceMode::None)) => Some("NONE"),
        Some(ToolChoice::Mode(ToolChoiceMode::Required)) => Some("REQUIRED"),
        // Cohere cannot name the tool to call: offering only that tool, and requiring a call,
        // comes to the same.
        Some(ToolChoice::Function { function }) => {
            tools.retain(|t| t.function.name == function.name);
            if tools.is_empty() {
                return Err(PluginError::invalid_request(format!(
                    "`tool_choice` names `{}`, which is not among the tools",
                    function.name
                ))
                .with_param("tool_choice"));
            }
            Some("REQUIRED")
        }
    };
    let response_format = match &chat.response_format {
        None | Some(ResponseFormat::Text) => None,
        Some(ResponseFormat::JsonObject) => Some(CohereResponseFormat {
            kind: "json_object",
            json_schema: None,
        }),
        Some(ResponseFormat::JsonSchema { json_schema }) => Some(CohereResponseFormat {
            kind: "json_object",
            json_schema: json_schema.schema.clone(),
        }),
    };
    Ok(CohereChatRequest {
        model: chat.model.clone(),
        messages,
        tools,
        tool_choice,
        response_format,
        max_tokens: chat.max_output_tokens(),
        temperature: chat.temperature,
        p: chat.top_p,
        stop_sequences: chat.stop_sequences(),
        seed: chat.seed,
        frequency_penalty: chat.frequency_penalty,
        presence_penalty: chat.presence_penalty,
        stream,
    })
}

fn message(message: &Message, i: usize) -> Result<CohereMessage, PluginError> {
    let text_of = |content: &Content| {
        content.text().ok_or_else(|| {
            PluginError::invalid_request("this message may only hold text")
                .with_param(format!("messages[{i}].content"))
        })
    };
    Ok(match message {
        Message::System { content } | Message::Developer { content } => CohereMessage::System {
            content: text_of(content)?,
        },
        Message::User {
            content: Content::Text(text),
        } => CohereMessage::User {
            content: UserContent::Text(text.clone()),
        },
        Message::User {
            content: Content::Parts(parts),
        } => CohereMessage::User {
            content: UserContent::Parts(
                parts
                    .iter()
                    .enumerate()
                    .map(|(j, part)| user_part(part, &format!("messages[{i}].content[{j}]")))
                    .collect::<Result<_, _>>()?,
            ),
        },
        Message::Assistant {
            content,
            tool_calls,
        } => {
            let text = content.as_ref().map(text_of).transpose()?;
            let text = text.filter(|t| !t.is_empty());
            let calls: Vec<CohereToolCall> = tool_calls.iter().flatten().map(tool_call).collect();
            // With tool calls, what the assistant said is its plan for them.
            let (content, tool_plan) = if calls.is_empty() {
                (text, None)
            } else {
                (None, text)
            };
            CohereMessage::Assistant {
                content,
                tool_plan,
                tool_calls: calls,
            }
        }
        Message::Tool {
            content,
            tool_call_id,
        } => CohereMessage::Tool {
            tool_call_id: tool_call_id.clone(),
            content: text_of(content)?,
        },
    })
}

fn tool_call(call: &ToolCall) -> CohereToolCall {
    CohereToolCall {
        id: call.id.clone(),
        kind: "function",
        function: CohereFunctionCall {
            name: call.function.name.clone(),
            arguments: call.function.arguments.clone(),
        },
    }
}

fn user_part(part: &ContentPart, param: &str) -> Result<UserPart, PluginError> {
    match part {
        ContentPart::Text { text } => Ok(UserPart::Text { text: text.clone() }),
        // Cohere's vision models take OpenAI's image part as it is: a data: or https URL.
        ContentPart::ImageUrl { image_url } => Ok(UserPart::ImageUrl {
            image_url: ImageUrl {
                url: image_url.url.clone(),
                detail: image_url.detail.clone(),
            },
        }),
        ContentPart::InputAudio { .. } | ContentPart::File { .. } | ContentPart::Refusal { .. } => {
            Err(
                PluginError::invalid_request("Cohere accepts text and images in user messages")
                    .with_param(param),
            )
        }
    }
}
