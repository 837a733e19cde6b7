//! The canonical request a dialect decodes into: OpenAI's `POST /v1/chat/completions` body.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::Failure;

/// A Chat Completions request body. Absent fields are left out of the JSON.
#[derive(Debug, Default, Serialize)]
pub struct ChatBody {
    /// The model id, as the client sent it.
    pub model: String,
    /// The conversation, oldest first.
    pub messages: Vec<ChatMessage>,
    /// Whether to stream the answer (the host adds `stream_options`).
    #[serde(skip_serializing_if = "core::ops::Not::not")]
    pub stream: bool,
    /// The most tokens to generate. The newer name, which OpenAI's reasoning models require
    /// and every provider plugin reads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_completion_tokens: Option<u64>,
    /// Sampling temperature.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Sequences that end the answer.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    /// The functions the model may call.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ChatTool>,
    /// Whether and which tool the model must call. Only sent with tools: OpenAI refuses it
    /// without.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ChatToolChoice>,
    /// `false`: at most one tool call per answer. Only sent with tools, as `tool_choice`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// Text, any JSON object, or JSON following a schema.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_format: Option<ChatResponseFormat>,
    /// `minimal`, `low`, `medium`, `high`, ... for reasoning models.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    /// An id of the end user.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
}

impl ChatBody {
    /// Drops `tool_choice` and `parallel_tool_calls` when no tool is left (OpenAI refuses them
    /// without tools), returning the names of those it dropped.
    pub fn drop_tool_settings_without_tools(&mut self) -> Vec<&'static str> {
        let mut dropped = Vec::new();
        if self.tools.is_empty() {
            if self.tool_choice.take().is_some() {
                dropped.push("tool_choice");
            }
            if self.parallel_tool_calls.take().is_some() {
                dropped.push("parallel_tool_calls");
            }
        }
        dropped
    }

    /// The JSON text of the body.
    pub fn to_json(&self) -> Result<String, Failure> {
        // Not expected to fail: every map key is a string, and serde_json writes a non-finite
        // float as null.
        serde_json::to_string(self)
            .map_err(|_| Failure::upstream("could not write the canonical request"))
    }
}

/// One message, by role.
#[derive(Debug, Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum ChatMessage {
    /// Instructions from the application.
    System {
        /// Text, or text parts.
        content: ChatContent,
    },
    /// The newer name of `system`.
    Developer {
        /// Text, or text parts.
        content: ChatContent,
    },
    /// What the end user said.
    User {
        /// Text, or parts.
        content: ChatContent,
    },
    /// What the model answered earlier: text (`null` when it only called tools), tool calls.
    Assistant {
        /// The text; `null` with tool calls only.
        content: Option<ChatContent>,
        /// The tools it called.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ChatToolCall>,
    },
    /// The result of a tool call.
    Tool {
        /// The id of the call this answers.
        tool_call_id: String,
        /// The result, as text or text parts.
        content: ChatContent,
    },
}

/// Message content: one string, or typed parts.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum ChatContent {
    /// Plain text.
    Text(String),
    /// Typed parts.
    Parts(Vec<ChatPart>),
}

impl ChatContent {
    /// One string for text-only parts (a single text part, or none), the parts otherwise: the
    /// plainest form, which every OpenAI-compatible upstream reads.
    pub fn from_parts(mut parts: Vec<ChatPart>) -> Self {
        match parts.as_slice() {
            [] => ChatContent::Text(String::new()),
            [ChatPart::Text { .. }] => match parts.pop() {
                Some(ChatPart::Text { text }) => ChatContent::Text(text),
                _ => ChatContent::Parts(parts),
            },
            _ => ChatContent::Parts(parts),
        }
    }
}

/// One part of a message's content.
#[derive(Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ChatPart {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image by URL (`https://` or a base64 `data:` URL).
    ImageUrl {
        /// Where the image is.
        image_url: ChatImageUrl,
    },
    /// A file (a PDF), inline as a data URL or by id.
    File {
        /// The file.
        file: ChatFile,
    },
    /// A refusal the model gave earlier (assistant messages).
    Refusal {
        /// Its text.
        refusal: String,
    },
}

/// `image_url` of an image part.
#[derive(Debug, PartialEq, Serialize)]
pub struct ChatImageUrl {
    /// `https://...` or `data:<media type>;base64,<data>`.
    pub url: String,
    /// `low`, `high` or `auto`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// `file` of a file part.
#[derive(Debug, PartialEq, Serialize)]
pub struct ChatFile {
    /// `data:<media type>;base64,<data>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_data: Option<String>,
    /// An id of a file uploaded to OpenAI.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_id: Option<String>,
    /// The file's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
}

/// The `type` of a tool or tool call: always `function`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum FunctionType {
    /// `"function"`.
    #[default]
    #[serde(rename = "function")]
    Function,
}

/// A tool call of an assistant message.
#[derive(Debug, Serialize)]
pub struct ChatToolCall {
    /// The call's id, which the tool message answering it repeats.
    pub id: String,
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: FunctionType,
    /// The function called.
    pub function: NamedCall,
}

/// The function of a tool call.
#[derive(Debug, Serialize)]
pub struct NamedCall {
    /// The function's name.
    pub name: String,
    /// The arguments, as JSON text.
    pub arguments: String,
}

impl ChatToolCall {
    /// A call `id` to the function `name` with `arguments` (JSON text).
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: String) -> Self {
        ChatToolCall {
            id: id.into(),
            kind: FunctionType::Function,
            function: NamedCall {
                name: name.into(),
                arguments,
            },
        }
    }
}

/// A tool the model may call.
#[derive(Debug, Serialize)]
pub struct ChatTool {
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: FunctionType,
    /// The function.
    pub function: ChatFunction,
}

/// A function the model may call.
#[derive(Debug, Serialize)]
pub struct ChatFunction {
    /// Its name.
    pub name: String,
    /// What it does, for the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its parameters, a JSON Schema object as the client wrote it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Box<RawValue>>,
    /// Whether the arguments must follow the schema exactly.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
}

impl ChatTool {
    /// A function tool.
    pub fn function(function: ChatFunction) -> Self {
        ChatTool {
            kind: FunctionType::Function,
            function,
        }
    }
}

/// `tool_choice`: a mode, or one named function.
#[derive(Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ChatToolChoice {
    /// `auto`, `none` or `required`.
    Mode(ToolMode),
    /// `{"type": "function", "function": {"name": ...}}`.
    Function {
        /// Always `function`.
        #[serde(rename = "type")]
        kind: FunctionType,
        /// The function that must be called.
        function: NamedFunction,
    },
}

impl ChatToolChoice {
    /// The function `name` must be called.
    pub fn function(name: impl Into<String>) -> Self {
        ChatToolChoice::Function {
            kind: FunctionType::Function,
            function: NamedFunction { name: name.into() },
        }
    }
}

/// The modes of `tool_choice`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolMode {
    /// The model decides.
    Auto,
    /// No tool calls.
    None,
    /// At least one tool call.
    Required,
}

/// The function named by a `tool_choice`.
#[derive(Debug, PartialEq, Serialize)]
pub struct NamedFunction {
    /// Its name.
    pub name: String,
}

/// `response_format`.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ChatResponseFormat {
    /// Free text.
    Text,
    /// Any JSON object.
    JsonObject,
    /// JSON following a schema.
    JsonSchema {
        /// The schema and its name.
        json_schema: ChatJsonSchema,
    },
}

/// `response_format.json_schema`.
#[derive(Debug, Serialize)]
pub struct ChatJsonSchema {
    /// The schema's name.
    pub name: String,
    /// What the answer is for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON Schema, as the client wrote it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<Box<RawValue>>,
    /// Whether the answer must follow the schema exactly.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    #[test]
    fn writes_only_what_is_set() {
        let mut body = ChatBody {
            model: "m".into(),
            messages: vec![
                ChatMessage::System {
                    content: ChatContent::Text("be brief".into()),
                },
                ChatMessage::Assistant {
                    content: None,
                    tool_calls: vec![ChatToolCall::new("c1", "f", r#"{"a":1}"#.into())],
                },
                ChatMessage::Tool {
                    tool_call_id: "c1".into(),
                    content: ChatContent::from_parts(vec![ChatPart::Text { text: "42".into() }]),
                },
            ],
            tool_choice: Some(ChatToolChoice::Mode(ToolMode::Required)),
            parallel_tool_calls: Some(false),
            ..ChatBody::default()
        };
        assert_eq!(
            body.drop_tool_settings_without_tools(),
            ["tool_choice", "parallel_tool_calls"]
        );
        let json: Value = serde_json::from_str(&body.to_json().unwrap()).unwrap();
        assert_eq!(
            json,
            json!({"model": "m", "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "42"}]})
        );
    }

    #[test]
    fn tools_and_formats_have_openai_shape() {
        let schema = RawValue::from_string(r#"{"type":"object"}"#.into()).unwrap();
        let body = ChatBody {
            model: "m".into(),
            tools: vec![ChatTool::function(ChatFunction {
                name: "f".into(),
                description: None,
                parameters: Some(schema.clone()),
                strict: None,
            })],
            tool_choice: Some(ChatToolChoice::function("f")),
            response_format: Some(ChatResponseFormat::JsonSchema {
                json_schema: ChatJsonSchema {
                    name: "s".into(),
                    description: None,
                    schema: Some(schema),
                    strict: Some(true),
                },
            }),
            ..ChatBody::default()
        };
        let json: Value = serde_json::from_str(&body.to_json().unwrap()).unwrap();
        assert_eq!(
            json["tools"],
            json!([{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}])
        );
        assert_eq!(
            json["tool_choice"],
            json!({"type": "function", "function": {"name": "f"}})
        );
        assert_eq!(json["response_format"]["type"], "json_schema");
        assert_eq!(json["response_format"]["json_schema"]["strict"], true);
        assert_eq!(json["messages"], json!([]));
    }

    #[test]
    fn content_from_parts_is_plain_when_it_can_be() {
        let text = |t: &str| ChatPart::Text { text: t.into() };
        assert!(
            matches!(ChatContent::from_parts(vec![text("a")]), ChatContent::Text(t) if t == "a")
        );
        assert!(matches!(ChatContent::from_parts(vec![]), ChatContent::Text(t) if t.is_empty()));
        assert!(matches!(
            ChatContent::from_parts(vec![text("a"), text("b")]),
            ChatContent::Parts(p) if p.len() == 2
        ));
    }
}
