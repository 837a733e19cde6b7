//! The conversation: OpenAI messages to Converse's `system` blocks and alternating `messages`.
//!
//! System and developer messages, wherever they are, become `system` text blocks. Tool results
//! become `toolResult` blocks of a user message, and consecutive messages of one role are merged
//! into one, as Converse expects user and assistant turns to alternate.

use serde::Serialize;
use serde_json::Value;
use wasmgate_plugin_sdk::PluginError;
use wasmgate_plugin_sdk::chat::{Content, ContentPart, DataUrl, Message};

#[derive(Debug, Serialize)]
pub struct ConverseMessage {
    role: Role,
    content: Vec<Block>,
}

impl ConverseMessage {
    /// Whether the message holds a tool use or a tool result.
    pub fn has_tool_blocks(&self) -> bool {
        self.content
            .iter()
            .any(|b| matches!(b, Block::ToolUse(_) | Block::ToolResult(_)))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Role {
    User,
    Assistant,
}

/// A content block: Converse writes the kind as the block's only key.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Block {
    Text(String),
    Image(Image),
    ToolUse(ToolUse),
    ToolResult(ToolResult),
}

#[derive(Debug, Serialize)]
pub struct Image {
    format: &'static str,
    source: ImageSource,
}

/// Blobs are base64 strings in Converse's JSON.
#[derive(Debug, Serialize)]
struct ImageSource {
    bytes: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolUse {
    tool_use_id: String,
    name: String,
    input: Value,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    tool_use_id: String,
    content: Vec<Block>,
}

/// A `system` entry.
#[derive(Debug, Serialize)]
pub struct SystemText {
    text: String,
}

/// The `system` blocks and the messages.
pub fn translate(
    messages: &[Message],
) -> Result<(Vec<SystemText>, Vec<ConverseMessage>), PluginError> {
    let mut system = Vec::new();
    let mut out: Vec<ConverseMessage> = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        let text_of = |content: &Content| {
            content.text().ok_or_else(|| {
                PluginError::invalid_request("this message may only hold text")
                    .with_param(format!("messages[{i}].content"))
            })
        };
        match message {
            Message::System { content } | Message::Developer { content } => {
                let text = text_of(content)?;
                if !text.is_empty() {
                    system.push(SystemText { text });
                }
            }
            Message::User { content } => {
                let blocks = content
                    .parts()
                    .iter()
                    .enumerate()
                    .map(|(j, part)| user_block(part, &format!("messages[{i}].content[{j}]")))
                    .collect::<Result<Vec<_>, _>>()?;
                push(&mut out, Role::User, blocks);
            }
            Message::Assistant {
                content,
                tool_calls,
            } => {
                let mut blocks = Vec::new();
                if let Some(content) = content {
                    let text = text_of(content)?;
                    // Converse refuses blank text blocks.
                    if !text.trim().is_empty() {
                        blocks.push(Block::Text(text));
                    }
                }
                for call in tool_calls.iter().flatten() {
                    blocks.push(Block::ToolUse(ToolUse {
                        tool_use_id: call.id.clone(),
                        name: call.function.name.clone(),
                        input: call
                            .function
                            .arguments_value()
                            .map_err(|e| e.with_param(format!("messages[{i}].tool_calls")))?,
                    }));
                }
                if !blocks.is_empty() {
                    push(&mut out, Role::Assistant, blocks);
                }
            }
            Message::Tool {
                content,
                tool_call_id,
            } => {
                let block = Block::ToolResult(ToolResult {
                    tool_use_id: tool_call_id.clone(),
                    content: vec![Block::Text(text_of(content)?)],
                });
                push(&mut out, Role::User, vec![block]);
            }
        }
    }
    Ok((system, out))
}

/// Appends `blocks` as a turn of `role`, merged into the last message when that has the same
/// role (consecutive tool results, a user message after tool results).
fn push(out: &mut Vec<ConverseMessage>, role: Role, blocks: Vec<Block>) {
    match out.last_mut().filter(|m| m.role == role) {
        Some(last) => last.content.extend(blocks),
        None => out.push(ConverseMessage {
            role,
            content: blocks,
        }),
    }
}

/// One part of a user message. `param` names it in errors.
fn user_block(part: &ContentPart, param: &str) -> Result<Block, PluginError> {
    let unsupported = |what: &str| {
        PluginError::invalid_request(format!("Bedrock's Converse API does not accept {what}"))
            .with_param(param)
    };
    match part {
        ContentPart::Text { text } => Ok(Block::Text(text.clone())),
        ContentPart::ImageUrl { image_url } => {
            // Converse takes image bytes only; the gateway does not fetch URLs for it.
            let data = DataUrl::parse(&image_url.url)
                .ok_or_else(|| unsupported("image URLs: send the image as a base64 data: URL"))?;
            let format = match data.media_type.to_ascii_lowercase().as_str() {
                "image/png" => "png",
                "image/jpeg" | "image/jpg" => "jpeg",
                "image/gif" => "gif",
                "image/webp" => "webp",
                _ => return Err(unsupported("images other than PNG, JPEG, GIF or WebP")),
            };
            Ok(Block::Image(Image {
                format,
                source: ImageSource {
                    bytes: data.data.to_owned(),
                },
            }))
        }
        ContentPart::File { .. } => Err(unsupported("file parts")),
        ContentPart::InputAudio { .. } => Err(unsupported("audio input")),
        ContentPart::Refusal { .. } => Err(unsupported("refusal parts in user messages")),
    }
}
