//! The conversation: OpenAI messages to Anthropic's `system` and alternating `messages`.
//!
//! System and developer messages, wherever they are, join the top-level `system`. Tool results
//! become `tool_result` blocks of a user message, and consecutive messages of one role are
//! merged into one message, as Anthropic expects one turn per role.

use serde::Serialize;
use serde_json::Value;
use wasmgate_plugin_sdk::PluginError;
use wasmgate_plugin_sdk::chat::{Content, ContentPart, DataUrl, Message};

#[derive(Debug, Serialize)]
pub struct AnthropicMessage {
    role: Role,
    content: MessageContent,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Role {
    User,
    Assistant,
}

/// A lone text message stays a string, which is how Anthropic's examples write it.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum MessageContent {
    Text(String),
    Blocks(Vec<Block>),
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    Text {
        text: String,
    },
    Image {
        source: Source,
    },
    Document {
        source: Source,
    },
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    ToolResult {
        tool_use_id: String,
        content: String,
    },
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum Source {
    Base64 { media_type: String, data: String },
    Url { url: String },
}

/// The `system` text (if any) and the messages.
pub fn translate(
    messages: &[Message],
) -> Result<(Option<String>, Vec<AnthropicMessage>), PluginError> {
    let mut system: Vec<String> = Vec::new();
    let mut out: Vec<AnthropicMessage> = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        let text_of = |content: &Content| {
            content.text().ok_or_else(|| {
                PluginError::invalid_request("this message may only hold text")
                    .with_param(format!("messages[{i}].content"))
            })
        };
        match message {
            Message::System { content } | Message::Developer { content } => {
                system.push(text_of(content)?);
            }
            Message::User {
                content: Content::Text(text),
            } => push(&mut out, Role::User, MessageContent::Text(text.clone())),
            Message::User {
                content: Content::Parts(parts),
            } => {
                let blocks = parts
                    .iter()
                    .enumerate()
                    .map(|(j, part)| user_block(part, &format!("messages[{i}].content[{j}]")))
                    .collect::<Result<Vec<_>, _>>()?;
                push(&mut out, Role::User, MessageContent::Blocks(blocks));
            }
            Message::Assistant {
                content,
                tool_calls,
            } => {
                let mut blocks = Vec::new();
                if let Some(content) = content {
                    let text = text_of(content)?;
                    // Anthropic refuses empty text blocks.
                    if !text.is_empty() {
                        blocks.push(Block::Text { text });
                    }
                }
                for call in tool_calls.iter().flatten() {
                    blocks.push(Block::ToolUse {
                        id: call.id.clone(),
                        name: call.function.name.clone(),
                        input: call
                            .function
                            .arguments_value()
                            .map_err(|e| e.with_param(format!("messages[{i}].tool_calls")))?,
                    });
                }
                // An assistant turn with nothing in it (content null, no calls) says nothing.
                if !blocks.is_empty() {
                    push(&mut out, Role::Assistant, MessageContent::Blocks(blocks));
                }
            }
            Message::Tool {
                content,
                tool_call_id,
            } => {
                let block = Block::ToolResult {
                    tool_use_id: tool_call_id.clone(),
                    content: text_of(content)?,
                };
                push(&mut out, Role::User, MessageContent::Blocks(vec![block]));
            }
        }
    }
    let system = (!system.is_empty()).then(|| system.join("\n\n"));
    Ok((system, out))
}

/// Appends `content` as a turn of `role`, merged into the last message when that has the same
/// role (consecutive tool results, a user message after tool results).
fn push(out: &mut Vec<AnthropicMessage>, role: Role, content: MessageContent) {
    if let Some(last) = out.last_mut().filter(|m| m.role == role) {
        let mut blocks = match std::mem::replace(&mut last.content, MessageContent::Blocks(vec![]))
        {
            MessageContent::Text(text) => vec![Block::Text { text }],
            MessageContent::Blocks(blocks) => blocks,
        };
        match content {
            MessageContent::Text(text) => blocks.push(Block::Text { text }),
            MessageContent::Blocks(more) => blocks.extend(more),
        }
        last.content = MessageContent::Blocks(blocks);
    } else {
        out.push(AnthropicMessage { role, content });
    }
}

/// One part of a user message. `param` names it in errors.
fn user_block(part: &ContentPart, param: &str) -> Result<Block, PluginError> {
    let unsupported = |what: &str| {
        PluginError::invalid_request(format!("Anthropic does not accept {what}")).with_param(param)
    };
    match part {
        ContentPart::Text { text } => Ok(Block::Text { text: text.clone() }),
        ContentPart::ImageUrl { image_url } => {
            let source = if let Some(data) = DataUrl::parse(&image_url.url) {
                Source::Base64 {
                    media_type: data.media_type.to_owned(),
                    data: data.data.to_owned(),
                }
            } else if image_url.url.starts_with("https://") || image_url.url.starts_with("http://")
            {
                Source::Url {
                    url: image_url.url.clone(),
                }
            } else {
                return Err(unsupported(
                    "this image URL: use https:// or a base64 data: URL",
                ));
            };
            Ok(Block::Image { source })
        }
        ContentPart::File { file } => {
            // Anthropic reads PDFs as `document` blocks; OpenAI file ids mean nothing to it.
            match file.file_data.as_deref().and_then(DataUrl::parse) {
                Some(data) if data.media_type == "application/pdf" => Ok(Block::Document {
                    source: Source::Base64 {
                        media_type: data.media_type.to_owned(),
                        data: data.data.to_owned(),
                    },
                }),
                _ => Err(unsupported(
                    "files other than PDFs sent as base64 data: URLs",
                )),
            }
        }
        ContentPart::InputAudio { .. } => Err(unsupported("audio input")),
        ContentPart::Refusal { .. } => Err(unsupported("refusal parts in user messages")),
    }
}
