//! The chat completions request body, as types. Only the fields a translator acts on are read;
//! serde skips the rest, and the host has validated the body already.

use serde::Deserialize;
use serde_json::Value;

use crate::PluginError;

/// An OpenAI `POST /v1/chat/completions` body.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct ChatRequest {
    /// The upstream model name.
    pub model: String,
    /// The conversation, oldest first.
    pub messages: Vec<Message>,
    /// Whether the client asked for a stream.
    #[serde(default)]
    pub stream: bool,
    /// The older name of `max_completion_tokens`.
    pub max_tokens: Option<u64>,
    /// The most tokens to generate.
    pub max_completion_tokens: Option<u64>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Nucleus sampling.
    pub top_p: Option<f64>,
    /// Up to four sequences that end the answer.
    pub stop: Option<Stop>,
    /// The functions the model may call.
    pub tools: Option<Vec<Tool>>,
    /// Whether and which tool the model must call.
    pub tool_choice: Option<ToolChoice>,
    /// `false` asks for at most one tool call per answer.
    pub parallel_tool_calls: Option<bool>,
    /// Plain text, any JSON object, or JSON following a schema.
    pub response_format: Option<ResponseFormat>,
    /// How many answers to generate.
    pub n: Option<u32>,
    /// For deterministic sampling, where supported.
    pub seed: Option<i64>,
    /// Penalises tokens by how often they occurred.
    pub frequency_penalty: Option<f64>,
    /// Penalises tokens that occurred at all.
    pub presence_penalty: Option<f64>,
    /// An id of the end user.
    pub user: Option<String>,
}

impl ChatRequest {
    /// Reads a canonical chat body. The host has validated it, so a failure here means the body
    /// uses something this reader does not know (a role or content part type); the error names
    /// the path of the offending field.
    pub fn parse(body: &str) -> Result<Self, PluginError> {
        let mut de = serde_json::Deserializer::from_str(body);
        serde_path_to_error::deserialize(&mut de).map_err(|err| {
            let path = err.path().to_string();
            let inner = err.into_inner();
            // serde_json appends "at line 1 column 123", which means nothing to the client.
            let message = inner.to_string();
            let message = message.split(" at line ").next().unwrap_or(&message);
            let error = PluginError::invalid_request(format!("unsupported request: {message}"));
            if path == "." {
                error
            } else {
                error.with_param(path)
            }
        })
    }

    /// `max_completion_tokens`, or the older `max_tokens`.
    pub fn max_output_tokens(&self) -> Option<u64> {
        self.max_completion_tokens.or(self.max_tokens)
    }

    /// The stop sequences as a list (empty when there are none).
    pub fn stop_sequences(&self) -> Vec<String> {
        match &self.stop {
            None => Vec::new(),
            Some(Stop::One(s)) => vec![s.clone()],
            Some(Stop::Many(list)) => list.clone(),
        }
    }

    /// The tools, or none.
    pub fn tools(&self) -> &[Tool] {
        self.tools.as_deref().unwrap_or_default()
    }

    /// Fails unless at most one answer was asked for (`n` absent or 1), for upstreams that
    /// generate one answer per request.
    pub fn require_single_choice(&self) -> Result<(), PluginError> {
        match self.n {
            None | Some(1) => Ok(()),
            Some(_) => Err(PluginError::invalid_request(
                "this provider generates one choice per request: `n` must be 1",
            )
            .with_param("n")),
        }
    }
}

/// `stop`: one sequence or a list.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum Stop {
    /// A single sequence.
    One(String),
    /// Several sequences.
    Many(Vec<String>),
}

/// One message of the conversation, by role.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Message {
    /// Instructions from the application.
    System {
        /// Text, or text parts.
        content: Content,
    },
    /// The newer name of `system` for reasoning models.
    Developer {
        /// Text, or text parts.
        content: Content,
    },
    /// What the end user said.
    User {
        /// Text, or parts of text, images, audio and files.
        content: Content,
    },
    /// What the model answered earlier.
    Assistant {
        /// The text of the answer; `null` when it only called tools.
        #[serde(default)]
        content: Option<Content>,
        /// The tools it called.
        #[serde(default)]
        tool_calls: Option<Vec<ToolCall>>,
    },
    /// The result of a tool call.
    Tool {
        /// The result, as text or text parts.
        content: Content,
        /// The `id` of the call this answers.
        tool_call_id: String,
    },
}

/// Message content: a string, or a list of typed parts.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Typed parts.
    Parts(Vec<ContentPart>),
}

impl Content {
    /// The text of a content that is all text, parts joined with `\n`; `None` when it holds
    /// anything else (an image, a file).
    pub fn text(&self) -> Option<String> {
        match self {
            Content::Text(text) => Some(text.clone()),
            Content::Parts(parts) => {
                let texts: Option<Vec<&str>> = parts
                    .iter()
                    .map(|part| match part {
                        ContentPart::Text { text } => Some(text.as_str()),
                        ContentPart::Refusal { refusal } => Some(refusal.as_str()),
                        ContentPart::ImageUrl { .. }
                        | ContentPart::InputAudio { .. }
                        | ContentPart::File { .. } => None,
                    })
                    .collect();
                texts.map(|t| t.join("\n"))
            }
        }
    }

    /// The content as parts: a string becomes one text part.
    pub fn parts(&self) -> Vec<ContentPart> {
        match self {
            Content::Text(text) => vec![ContentPart::Text { text: text.clone() }],
            Content::Parts(parts) => parts.clone(),
        }
    }
}

/// One part of a message's content.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image by URL (`https://` or a `data:` URL).
    ImageUrl {
        /// Where the image is.
        image_url: ImageUrl,
    },
    /// Audio input.
    InputAudio {
        /// Base64 audio and its format; kept opaque.
        input_audio: Value,
    },
    /// A file, inline as a data URL or by id.
    File {
        /// The file.
        file: FileData,
    },
    /// A refusal the model gave earlier (assistant messages).
    Refusal {
        /// Its text.
        refusal: String,
    },
}

/// `image_url` of an image part.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct ImageUrl {
    /// `https://...` or `data:<media type>;base64,<data>`.
    pub url: String,
    /// `low`, `high` or `auto`.
    pub detail: Option<String>,
}

/// `file` of a file part.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct FileData {
    /// A `data:` URL with the file's bytes.
    pub file_data: Option<String>,
    /// An id of a file uploaded to OpenAI; no other upstream knows it.
    pub file_id: Option<String>,
    /// The file's name.
    pub filename: Option<String>,
}

/// A tool call the assistant made.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct ToolCall {
    /// The call's id, which the tool message answering it repeats.
    pub id: String,
    /// The function called.
    pub function: FunctionCall,
}

/// The function of a tool call.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct FunctionCall {
    /// The function's name.
    pub name: String,
    /// The arguments, as a JSON text.
    #[serde(default)]
    pub arguments: String,
}

impl FunctionCall {
    /// The arguments as a JSON value; an empty text reads as `{}`. Fails when they are not JSON.
    pub fn arguments_value(&self) -> Result<Value, PluginError> {
        if self.arguments.trim().is_empty() {
            return Ok(Value::Object(serde_json::Map::new()));
        }
        serde_json::from_str(&self.arguments).map_err(|_| {
            PluginError::invalid_request(format!(
                "the arguments of the call to `{}` are not JSON",
                self.name
            ))
        })
    }
}

/// A tool the model may call.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct Tool {
    /// The function.
    pub function: FunctionDef,
}

/// A function the model may call.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct FunctionDef {
    /// Its name.
    pub name: String,
    /// What it does, for the model.
    pub description: Option<String>,
    /// Its parameters as a JSON Schema object; absent for a function without any.
    pub parameters: Option<Value>,
    /// Whether the arguments must follow the schema exactly.
    pub strict: Option<bool>,
}

/// `tool_choice`: a mode, or one named function.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum ToolChoice {
    /// `auto`, `none` or `required`.
    Mode(ToolChoiceMode),
    /// `{"type": "function", "function": {"name": ...}}`.
    Function {
        /// The function that must be called.
        function: NamedFunction,
    },
}

/// The modes of `tool_choice`.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoiceMode {
    /// The model decides.
    Auto,
    /// No tool calls.
    None,
    /// At least one tool call.
    Required,
}

/// The function named by a `tool_choice`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct NamedFunction {
    /// Its name.
    pub name: String,
}

/// `response_format`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResponseFormat {
    /// Free text (the default).
    Text,
    /// Any JSON object.
    JsonObject,
    /// JSON following a schema.
    JsonSchema {
        /// The schema and its name.
        json_schema: JsonSchema,
    },
}

/// `response_format.json_schema`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct JsonSchema {
    /// The schema's name.
    pub name: String,
    /// What the answer is for.
    pub description: Option<String>,
    /// The JSON Schema itself.
    pub schema: Option<Value>,
    /// Whether the answer must follow the schema exactly.
    pub strict: Option<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_full_request() {
        let body = r#"{"model":"m","messages":[
            {"role":"system","content":"be brief"},
            {"role":"user","content":[{"type":"text","text":"hi"},
                {"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}]},
            {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function",
                "function":{"name":"f","arguments":"{\"a\":1}"}}]},
            {"role":"tool","tool_call_id":"c1","content":"42"}],
            "stop":"END","tools":[{"type":"function","function":{"name":"f"}}],
            "tool_choice":{"type":"function","function":{"name":"f"}},
            "response_format":{"type":"json_object"},"stream_options":{"include_usage":true}}"#;
        let req = ChatRequest::parse(body).unwrap();
        assert_eq!(req.messages.len(), 4);
        assert_eq!(req.stop_sequences(), ["END"]);
        assert_eq!(req.tools().len(), 1);
        assert!(matches!(req.tool_choice, Some(ToolChoice::Function { .. })));
        assert_eq!(req.response_format, Some(ResponseFormat::JsonObject));
        let Message::Assistant {
            tool_calls: Some(calls),
            ..
        } = &req.messages[2]
        else {
            panic!("assistant expected")
        };
        assert_eq!(
            calls[0].function.arguments_value().unwrap(),
            serde_json::json!({"a": 1})
        );
    }

    #[test]
    fn unknown_roles_name_the_path() {
        let err =
            ChatRequest::parse(r#"{"model":"m","messages":[{"role":"function","content":"x"}]}"#)
                .unwrap_err();
        assert_eq!(err.param.as_deref(), Some("messages[0].role"));
        assert!(!err.message.contains("line"), "{}", err.message);
    }

    #[test]
    fn content_text_joins_text_parts_only() {
        let content = Content::Parts(vec![
            ContentPart::Text { text: "a".into() },
            ContentPart::Text { text: "b".into() },
        ]);
        assert_eq!(content.text().as_deref(), Some("a\nb"));
        let content = Content::Parts(vec![ContentPart::ImageUrl {
            image_url: ImageUrl {
                url: "https://x".into(),
                detail: None,
            },
        }]);
        assert_eq!(content.text(), None);
    }
}
