//! `instructions` and `input`, into canonical chat messages.
//!
//! `input` is a string (one user message) or a list of items: messages (with or without
//! `"type": "message"`), function calls (merged into the assistant message before them, so that
//! a turn's text and calls are one assistant message, as chat completions have them) and their
//! outputs (`tool` messages), and the gateway's own compaction items (the summary they carry, as
//! a user message). Reasoning items, item references, OpenAI's compaction items and calls of
//! built-in tools have no canonical form and are dropped.

use serde::Deserialize;
use serde_json::value::RawValue;
use wasmgate_plugin_sdk::canonical::{
    ChatContent, ChatFile, ChatImageUrl, ChatMessage, ChatPart, ChatToolCall, Dropped, read,
};
use wasmgate_plugin_sdk::{Failure, compaction};

#[derive(Deserialize)]
struct Item<'a> {
    #[serde(rename = "type")]
    kind: Option<String>,
    role: Option<String>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
    call_id: Option<String>,
    name: Option<String>,
    arguments: Option<String>,
    #[serde(borrow)]
    output: Option<&'a RawValue>,
    encrypted_content: Option<String>,
}

/// A content part of a message or of a function call's output.
#[derive(Deserialize)]
struct Part {
    #[serde(rename = "type")]
    kind: String,
    text: Option<String>,
    refusal: Option<String>,
    image_url: Option<String>,
    detail: Option<String>,
    file_id: Option<String>,
    file_data: Option<String>,
    filename: Option<String>,
}

pub fn translate(
    instructions: Option<&RawValue>,
    input: Option<&RawValue>,
    dropped: &mut Dropped,
) -> Result<Vec<ChatMessage>, Failure> {
    let mut out = Vec::new();
    if let Some(raw) = instructions {
        if raw.get().starts_with('"') {
            let text: String = read("instructions", raw)?;
            if !text.is_empty() {
                out.push(ChatMessage::System {
                    content: ChatContent::Text(text),
                });
            }
        } else {
            dropped.push("instructions");
        }
    }
    let Some(input) = input else {
        return Ok(out);
    };
    if input.get().starts_with('"') {
        out.push(ChatMessage::User {
            content: ChatContent::Text(read("input", input)?),
        });
        return Ok(out);
    }
    let items: Vec<Item> = read("input", input)?;
    for (i, item) in items.into_iter().enumerate() {
        let path = format!("input[{i}]");
        let kind = item
            .kind
            .as_deref()
            .unwrap_or(if item.role.is_some() { "message" } else { "" });
        match kind {
            "message" => out.push(message(item, &path, dropped)?),
            "function_call" => {
                let call = ChatToolCall::new(
                    required(item.call_id, &path, "call_id")?,
                    required(item.name, &path, "name")?,
                    item.arguments.unwrap_or_default(),
                );
                match out.last_mut() {
                    Some(ChatMessage::Assistant { tool_calls, .. }) => tool_calls.push(call),
                    _ => out.push(ChatMessage::Assistant {
                        content: None,
                        tool_calls: vec![call],
                    }),
                }
            }
            "function_call_output" => {
                let id = required(item.call_id, &path, "call_id")?;
                let output = item
                    .output
                    .ok_or_else(|| missing(&format!("{path}.output")))?;
                let text = output_text(output, &format!("{path}.output"), dropped)?;
                out.push(ChatMessage::Tool {
                    tool_call_id: id,
                    content: ChatContent::Text(text),
                });
            }
            // The gateway's own compaction (a summary it wrote, see `compact.rs`) is read as
            // that summary; OpenAI's is sealed for OpenAI alone.
            "compaction" => match item
                .encrypted_content
                .as_deref()
                .and_then(compaction::summary)
            {
                Some(summary) => out.push(ChatMessage::User {
                    content: ChatContent::Text(compaction::text(summary)),
                }),
                None => dropped.push(path),
            },
            // reasoning, item_reference, and the calls of built-in tools and their outputs.
            _ => dropped.push(path),
        }
    }
    Ok(out)
}

fn message(item: Item, path: &str, dropped: &mut Dropped) -> Result<ChatMessage, Failure> {
    let role = required(item.role, path, "role")?;
    let content_path = format!("{path}.content");
    let content = item.content.ok_or_else(|| missing(&content_path))?;
    let parts = parts(content, &content_path, dropped)?;
    let text = || {
        parts
            .iter()
            .filter_map(|part| match part {
                ChatPart::Text { text } | ChatPart::Refusal { refusal: text } => {
                    Some(text.as_str())
                }
                ChatPart::ImageUrl { .. } | ChatPart::File { .. } => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    Ok(match role.as_str() {
        "user" => ChatMessage::User {
            content: ChatContent::from_parts(parts),
        },
        "assistant" => ChatMessage::Assistant {
            content: Some(ChatContent::Text(text())),
            tool_calls: Vec::new(),
        },
        "system" => ChatMessage::System {
            content: ChatContent::Text(text()),
        },
        "developer" => ChatMessage::Developer {
            content: ChatContent::Text(text()),
        },
        _ => {
            return Err(Failure::invalid_request(format!(
                "{path}.role: must be one of `user`, `assistant`, `system`, `developer`"
            ))
            .with_param(format!("{path}.role")));
        }
    })
}

/// A message's content: a string, or parts (text, images, files, earlier output and refusals).
fn parts(raw: &RawValue, path: &str, dropped: &mut Dropped) -> Result<Vec<ChatPart>, Failure> {
    Ok(indexed_parts(raw, path, dropped)?
        .into_iter()
        .map(|(_, part)| part)
        .collect())
}

/// The parts of a content, each with its index in the client's list.
fn indexed_parts(
    raw: &RawValue,
    path: &str,
    dropped: &mut Dropped,
) -> Result<Vec<(usize, ChatPart)>, Failure> {
    if raw.get().starts_with('"') {
        return Ok(vec![(
            0,
            ChatPart::Text {
                text: read(path, raw)?,
            },
        )]);
    }
    let mut out = Vec::new();
    for (j, part) in read::<Vec<Part>>(path, raw)?.into_iter().enumerate() {
        let path = format!("{path}[{j}]");
        let converted = match part.kind.as_str() {
            "input_text" | "output_text" | "text" => Some(ChatPart::Text {
                text: required(part.text, &path, "text")?,
            }),
            "refusal" => Some(ChatPart::Refusal {
                refusal: required(part.refusal, &path, "refusal")?,
            }),
            "input_image" => part.image_url.map(|url| ChatPart::ImageUrl {
                image_url: ChatImageUrl {
                    url,
                    detail: part.detail,
                },
            }),
            "input_file" if part.file_data.is_some() || part.file_id.is_some() => {
                Some(ChatPart::File {
                    file: ChatFile {
                        file_data: part.file_data,
                        file_id: part.file_id,
                        filename: part.filename,
                    },
                })
            }
            // Images by file id, files by URL, audio, and part types added later.
            _ => None,
        };
        match converted {
            Some(part) => out.push((j, part)),
            None => dropped.push(path),
        }
    }
    Ok(out)
}

/// A function call's output as text: a string, or the text of its parts.
fn output_text(raw: &RawValue, path: &str, dropped: &mut Dropped) -> Result<String, Failure> {
    if raw.get().starts_with('"') {
        return read(path, raw);
    }
    let mut texts = Vec::new();
    for (j, part) in indexed_parts(raw, path, dropped)? {
        match part {
            ChatPart::Text { text } => texts.push(text),
            // A tool message holds text only.
            ChatPart::Refusal { .. } | ChatPart::ImageUrl { .. } | ChatPart::File { .. } => {
                dropped.push(format!("{path}[{j}]"));
            }
        }
    }
    Ok(texts.join("\n"))
}

fn required(value: Option<String>, path: &str, field: &str) -> Result<String, Failure> {
    value.ok_or_else(|| missing(&format!("{path}.{field}")))
}

fn missing(path: &str) -> Failure {
    Failure::invalid_request(format!("{path}: Field required")).with_param(path)
}
