//! The conversation: `systemInstruction` and `contents` as canonical messages. A content's role
//! is `user` or `model`; its parts are text, inline data (images and PDFs), file references,
//! function calls (the model's) and function responses (the user's). A function response finds
//! its call by id, or by name among the calls not answered yet, since Google's SDKs may send
//! calls and responses without ids.

use serde::Deserialize;
use serde_json::value::RawValue;
use wasmgate_plugin_sdk::Failure;
use wasmgate_plugin_sdk::canonical::{
    ChatContent, ChatFile, ChatImageUrl, ChatMessage, ChatPart, ChatToolCall, Dropped,
};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Content {
    pub role: Option<String>,
    #[serde(default)]
    pub parts: Vec<Part>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    text: Option<String>,
    #[serde(default)]
    thought: bool,
    inline_data: Option<Blob>,
    file_data: Option<FileData>,
    function_call: Option<FunctionCall>,
    function_response: Option<FunctionResponse>,
    executable_code: Option<Box<RawValue>>,
    code_execution_result: Option<Box<RawValue>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Blob {
    mime_type: String,
    data: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileData {
    mime_type: Option<String>,
    file_uri: String,
}

#[derive(Deserialize)]
struct FunctionCall {
    id: Option<String>,
    name: String,
    args: Option<Box<RawValue>>,
}

#[derive(Deserialize)]
struct FunctionResponse {
    id: Option<String>,
    name: String,
    response: Option<Box<RawValue>>,
}

/// Walks the conversation, keeping the calls not answered yet.
#[derive(Default)]
struct Walk {
    messages: Vec<ChatMessage>,
    /// (id, name) of the calls made and not yet answered, oldest first.
    pending: Vec<(String, String)>,
    calls: u32,
}

/// `systemInstruction` as a content or a bare string.
#[derive(Deserialize)]
#[serde(untagged)]
pub enum System {
    Text(String),
    Content(Content),
}

pub fn translate(
    system: Option<System>,
    contents: Vec<Content>,
    dropped: &mut Dropped,
) -> Result<Vec<ChatMessage>, Failure> {
    let mut walk = Walk::default();
    if let Some(system) = system {
        let text = match system {
            System::Text(text) => text,
            System::Content(content) => content
                .parts
                .into_iter()
                .filter_map(|p| p.text)
                .collect::<Vec<_>>()
                .join("\n"),
        };
        if !text.is_empty() {
            walk.messages.push(ChatMessage::System {
                content: ChatContent::Text(text),
            });
        }
    }
    for (i, content) in contents.into_iter().enumerate() {
        let path = format!("contents[{i}]");
        match content.role.as_deref() {
            None | Some("user") => walk.user(content.parts, &path, dropped)?,
            Some("model") => walk.model(content.parts, &path, dropped)?,
            Some(other) => {
                return Err(Failure::invalid_request(format!(
                    "Please use a valid role: user, model. Got `{}`.",
                    other.chars().take(32).collect::<String>()
                ))
                .with_param(format!("{path}.role")));
            }
        }
    }
    Ok(walk.messages)
}

impl Walk {
    fn user(&mut self, parts: Vec<Part>, path: &str, dropped: &mut Dropped) -> Result<(), Failure> {
        let mut content = Vec::new();
        for (j, part) in parts.into_iter().enumerate() {
            let path = format!("{path}.parts[{j}]");
            if let Some(response) = part.function_response {
                let id = self.answer(&response, &path)?;
                let result = response.response.as_deref().map_or("{}", RawValue::get);
                self.messages.push(ChatMessage::Tool {
                    tool_call_id: id,
                    content: ChatContent::Text(result.to_owned()),
                });
                continue;
            }
            if part.function_call.is_some() {
                return Err(Failure::invalid_request(
                    "A functionCall must be in a content of role `model`.",
                )
                .with_param(path));
            }
            push_part(part, &path, &mut content, dropped);
        }
        if !content.is_empty() {
            self.messages.push(ChatMessage::User {
                content: ChatContent::from_parts(content),
            });
        }
        Ok(())
    }

    fn model(
        &mut self,
        parts: Vec<Part>,
        path: &str,
        dropped: &mut Dropped,
    ) -> Result<(), Failure> {
        let mut text = String::new();
        let mut tool_calls = Vec::new();
        for (j, part) in parts.into_iter().enumerate() {
            let path = format!("{path}.parts[{j}]");
            if let Some(call) = part.function_call {
                let id = call.id.clone().unwrap_or_else(|| {
                    self.calls += 1;
                    format!("call_{}", self.calls)
                });
                let args = call.args.as_deref().map_or("{}", RawValue::get);
                self.pending.push((id.clone(), call.name.clone()));
                tool_calls.push(ChatToolCall::new(id, call.name, args.to_owned()));
                continue;
            }
            if part.function_response.is_some() {
                return Err(Failure::invalid_request(
                    "A functionResponse must be in a content of role `user`.",
                )
                .with_param(path));
            }
            match part.text {
                Some(_) if part.thought => dropped.push(format!("{path}.thought")),
                Some(t) => text.push_str(&t),
                None => dropped.push(path),
            }
        }
        if text.is_empty() && tool_calls.is_empty() {
            return Ok(());
        }
        self.messages.push(ChatMessage::Assistant {
            content: (!text.is_empty()).then_some(ChatContent::Text(text)),
            tool_calls,
        });
        Ok(())
    }

    /// The id of the call `response` answers: its own, or the oldest unanswered call of its
    /// name. A response to no call is refused, as Google refuses it.
    fn answer(&mut self, response: &FunctionResponse, path: &str) -> Result<String, Failure> {
        let at = match &response.id {
            Some(id) => self.pending.iter().position(|(i, _)| i == id),
            None => self.pending.iter().position(|(_, n)| *n == response.name),
        };
        match at {
            Some(at) => Ok(self.pending.remove(at).0),
            None => Err(Failure::invalid_request(format!(
                "The functionResponse for `{}` has no functionCall before it.",
                response.name.chars().take(64).collect::<String>()
            ))
            .with_param(format!("{path}.functionResponse"))),
        }
    }
}

/// A user part as canonical content: text, an image or a PDF; anything else dropped.
fn push_part(part: Part, path: &str, content: &mut Vec<ChatPart>, dropped: &mut Dropped) {
    if part.thought {
        dropped.push(format!("{path}.thought"));
        return;
    }
    if let Some(text) = part.text {
        content.push(ChatPart::Text { text });
        return;
    }
    if let Some(blob) = part.inline_data {
        let url = format!("data:{};base64,{}", blob.mime_type, blob.data);
        if blob.mime_type.starts_with("image/") {
            content.push(ChatPart::ImageUrl {
                image_url: ChatImageUrl { url, detail: None },
            });
        } else if blob.mime_type == "application/pdf" {
            content.push(ChatPart::File {
                file: ChatFile {
                    file_data: Some(url),
                    file_id: None,
                    filename: None,
                },
            });
        } else {
            dropped.push(format!("{path}.inlineData"));
        }
        return;
    }
    if let Some(file) = part.file_data {
        let image = file
            .mime_type
            .as_deref()
            .is_some_and(|m| m.starts_with("image/"));
        if image && file.file_uri.starts_with("https://") {
            content.push(ChatPart::ImageUrl {
                image_url: ChatImageUrl {
                    url: file.file_uri,
                    detail: None,
                },
            });
        } else {
            dropped.push(format!("{path}.fileData"));
        }
        return;
    }
    if part.executable_code.is_some() || part.code_execution_result.is_some() {
        dropped.push(path.to_owned());
        return;
    }
    dropped.push(path.to_owned());
}
