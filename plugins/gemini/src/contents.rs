//! The conversation: OpenAI messages to Gemini `contents` (roles `user` and `model`) and a
//! `systemInstruction`.
//!
//! A tool result must name the function it answers (`functionResponse.name`), but OpenAI's tool
//! message carries only the call's id: the name is recovered from the assistant message that
//! made the call. Consecutive tool results go into one content, as Gemini pairs a turn's
//! function responses with its function calls.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;
use wasmgate_plugin_sdk::PluginError;
use wasmgate_plugin_sdk::chat::{Content as OpenAiContent, ContentPart, DataUrl, Message};

#[derive(Debug, Serialize)]
pub struct Content {
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<&'static str>,
    parts: Vec<Part>,
}

/// A part holds exactly one of these fields, which serde's external tagging writes.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
enum Part {
    Text(String),
    InlineData(Blob),
    FileData(FileData),
    FunctionCall(FunctionCall),
    FunctionResponse(FunctionResponse),
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Blob {
    mime_type: String,
    data: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct FileData {
    #[serde(skip_serializing_if = "Option::is_none")]
    mime_type: Option<&'static str>,
    file_uri: String,
}

#[derive(Debug, Serialize)]
struct FunctionCall {
    name: String,
    args: Value,
}

#[derive(Debug, Serialize)]
struct FunctionResponse {
    name: String,
    response: Value,
}

/// The system instruction (if any) and the contents.
pub fn translate(messages: &[Message]) -> Result<(Option<Content>, Vec<Content>), PluginError> {
    let mut system = Vec::new();
    let mut contents: Vec<Content> = Vec::new();
    // Tool call id -> function name, from the assistant messages seen so far.
    let mut call_names: HashMap<&str, &str> = HashMap::new();
    let mut after_tool_result = false;
    for (i, message) in messages.iter().enumerate() {
        let text_of = |content: &OpenAiContent| {
            content.text().ok_or_else(|| {
                PluginError::invalid_request("this message may only hold text")
                    .with_param(format!("messages[{i}].content"))
            })
        };
        let is_tool_result = matches!(message, Message::Tool { .. });
        match message {
            Message::System { content } | Message::Developer { content } => {
                system.push(Part::Text(text_of(content)?));
            }
            Message::User { content } => {
                let parts = content
                    .parts()
                    .iter()
                    .enumerate()
                    .map(|(j, part)| user_part(part, &format!("messages[{i}].content[{j}]")))
                    .collect::<Result<Vec<_>, _>>()?;
                contents.push(Content {
                    role: Some("user"),
                    parts,
                });
            }
            Message::Assistant {
                content,
                tool_calls,
            } => {
                let mut parts = Vec::new();
                let text = content.as_ref().map(text_of).transpose()?;
                if let Some(text) = text.filter(|t| !t.is_empty()) {
                    parts.push(Part::Text(text));
                }
                for call in tool_calls.iter().flatten() {
                    call_names.insert(&call.id, &call.function.name);
                    parts.push(Part::FunctionCall(FunctionCall {
                        name: call.function.name.clone(),
                        args: call
                            .function
                            .arguments_value()
                            .map_err(|e| e.with_param(format!("messages[{i}].tool_calls")))?,
                    }));
                }
                if !parts.is_empty() {
                    contents.push(Content {
                        role: Some("model"),
                        parts,
                    });
                }
            }
            Message::Tool {
                content,
                tool_call_id,
            } => {
                let name = call_names.get(tool_call_id.as_str()).ok_or_else(|| {
                    PluginError::invalid_request(format!(
                        "no earlier assistant message made the tool call `{tool_call_id}`"
                    ))
                    .with_param(format!("messages[{i}].tool_call_id"))
                })?;
                let part = Part::FunctionResponse(FunctionResponse {
                    name: (*name).to_owned(),
                    response: tool_response(&text_of(content)?),
                });
                match contents.last_mut() {
                    Some(last) if after_tool_result => last.parts.push(part),
                    _ => contents.push(Content {
                        role: Some("user"),
                        parts: vec![part],
                    }),
                }
            }
        }
        after_tool_result = is_tool_result;
    }
    let system = (!system.is_empty()).then_some(Content {
        role: None,
        parts: system,
    });
    Ok((system, contents))
}

/// `functionResponse.response` must be an object. A result that is a JSON object goes as is;
/// anything else goes under `output`, the key Gemini's reference names for a function's output.
fn tool_response(text: &str) -> Value {
    match serde_json::from_str::<Value>(text) {
        Ok(object @ Value::Object(_)) => object,
        _ => serde_json::json!({ "output": text }),
    }
}

fn user_part(part: &ContentPart, param: &str) -> Result<Part, PluginError> {
    let unsupported = |what: &str| {
        PluginError::invalid_request(format!("Gemini does not accept {what}")).with_param(param)
    };
    let inline = |data: DataUrl| {
        Part::InlineData(Blob {
            mime_type: data.media_type.to_owned(),
            data: data.data.to_owned(),
        })
    };
    match part {
        ContentPart::Text { text } => Ok(Part::Text(text.clone())),
        ContentPart::ImageUrl { image_url } => {
            let url = &image_url.url;
            if let Some(data) = DataUrl::parse(url) {
                Ok(inline(data))
            } else if url.starts_with("https://") || url.starts_with("http://") {
                Ok(Part::FileData(FileData {
                    mime_type: image_type(url),
                    file_uri: url.clone(),
                }))
            } else {
                Err(unsupported(
                    "this image URL: use https:// or a base64 data: URL",
                ))
            }
        }
        ContentPart::File { file } => match file.file_data.as_deref().and_then(DataUrl::parse) {
            Some(data) => Ok(inline(data)),
            None => Err(unsupported("files other than base64 data: URLs")),
        },
        ContentPart::InputAudio { input_audio } => {
            let data = input_audio.get("data").and_then(Value::as_str);
            let format = input_audio.get("format").and_then(Value::as_str);
            match (data, format) {
                (Some(data), Some(format)) => Ok(Part::InlineData(Blob {
                    mime_type: format!("audio/{format}"),
                    data: data.to_owned(),
                })),
                _ => Err(unsupported("audio without `data` and `format`")),
            }
        }
        ContentPart::Refusal { .. } => Err(unsupported("refusal parts in user messages")),
    }
}

/// The image type a URL's extension names, which `fileData` should carry.
fn image_type(url: &str) -> Option<&'static str> {
    let path = url
        .split(['?', '#'])
        .next()
        .unwrap_or(url)
        .to_ascii_lowercase();
    let ext = path.rsplit('.').next()?;
    Some(match ext {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "webp" => "image/webp",
        "heic" => "image/heic",
        "heif" => "image/heif",
        "gif" => "image/gif",
        _ => return None,
    })
}
