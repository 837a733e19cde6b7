//! The system prompt and the messages, into canonical chat messages.
//!
//! A user turn's `tool_result` blocks become `tool` messages, placed before the rest of the turn
//! (Anthropic puts them first too); images inside tool results, which a `tool` message cannot
//! hold, move into the user message that follows. An assistant turn's `tool_use` blocks become
//! its `tool_calls`. Thinking blocks sent back, and blocks of server tools, are dropped.

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;
use wasmgate_plugin_sdk::Failure;
use wasmgate_plugin_sdk::canonical::{
    ChatContent, ChatFile, ChatImageUrl, ChatMessage, ChatPart, ChatToolCall, Dropped, read,
};

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum Role {
    User,
    Assistant,
}

#[derive(Deserialize)]
struct Message<'a> {
    role: Role,
    #[serde(borrow)]
    content: &'a RawValue,
}

/// A content block: a struct rather than a tagged enum, so that `input` and `content` stay raw
/// JSON (serde cannot read a [`RawValue`] through an enum's buffering) and block types added
/// later read as well as known ones.
#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type")]
    kind: String,
    text: Option<String>,
    #[serde(borrow)]
    source: Option<&'a RawValue>,
    title: Option<String>,
    id: Option<String>,
    name: Option<String>,
    #[serde(borrow)]
    input: Option<&'a RawValue>,
    tool_use_id: Option<String>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
    is_error: Option<bool>,
    cache_control: Option<IgnoredAny>,
    citations: Option<IgnoredAny>,
}

/// An image's or document's `source`: `base64`, `url`, a document's `text` or `content` blocks,
/// or a Files API `file` id (which no canonical upstream knows). A struct, as [`Block`] is.
#[derive(Deserialize)]
struct Source<'a> {
    #[serde(rename = "type")]
    kind: String,
    media_type: Option<String>,
    data: Option<String>,
    url: Option<String>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
}

pub fn translate(
    system: Option<&RawValue>,
    messages: &RawValue,
    dropped: &mut Dropped,
) -> Result<Vec<ChatMessage>, Failure> {
    let messages: Vec<Message> = read("messages", messages)?;
    let mut out = Vec::with_capacity(messages.len() + 1);
    if let Some(system) = system {
        let text = text_of(system, "system", dropped)?;
        if !text.is_empty() {
            out.push(ChatMessage::System {
                content: ChatContent::Text(text),
            });
        }
    }
    for (i, message) in messages.into_iter().enumerate() {
        let path = format!("messages[{i}].content");
        match message.role {
            Role::User => user(message.content, &path, &mut out, dropped)?,
            Role::Assistant => assistant(message.content, &path, &mut out, dropped)?,
        }
    }
    Ok(out)
}

/// Content that is a string or text blocks (the system prompt, a tool result), as one text.
fn text_of(raw: &RawValue, path: &str, dropped: &mut Dropped) -> Result<String, Failure> {
    if raw.get().starts_with('"') {
        return read(path, raw);
    }
    let mut texts = Vec::new();
    for (j, block) in read::<Vec<Block>>(path, raw)?.into_iter().enumerate() {
        let path = format!("{path}[{j}]");
        note_dropped_fields(&block, &path, dropped);
        match (block.kind.as_str(), block.text) {
            ("text", Some(text)) => texts.push(text),
            _ => dropped.push(path),
        }
    }
    Ok(texts.join("\n\n"))
}

fn note_dropped_fields(block: &Block, path: &str, dropped: &mut Dropped) {
    if block.cache_control.is_some() {
        dropped.field(path, "cache_control");
    }
    if block.citations.is_some() {
        dropped.field(path, "citations");
    }
}

fn blocks<'a>(raw: &'a RawValue, path: &str) -> Result<Option<Vec<Block<'a>>>, Failure> {
    if raw.get().starts_with('"') {
        Ok(None)
    } else {
        read(path, raw).map(Some)
    }
}

fn user(
    raw: &RawValue,
    path: &str,
    out: &mut Vec<ChatMessage>,
    dropped: &mut Dropped,
) -> Result<(), Failure> {
    let Some(blocks) = blocks(raw, path)? else {
        out.push(ChatMessage::User {
            content: ChatContent::Text(read(path, raw)?),
        });
        return Ok(());
    };
    let mut parts = Vec::new();
    for (j, block) in blocks.into_iter().enumerate() {
        let path = format!("{path}[{j}]");
        note_dropped_fields(&block, &path, dropped);
        match block.kind.as_str() {
            "tool_result" => {
                let id = required(block.tool_use_id, &path, "tool_use_id")?;
                let mut text = match block.content {
                    Some(content) => {
                        tool_result(content, &format!("{path}.content"), &mut parts, dropped)?
                    }
                    None => String::new(),
                };
                // A tool message has no error flag: the model learns it from the text.
                if block.is_error == Some(true) {
                    text.insert_str(0, "Error: ");
                }
                out.push(ChatMessage::Tool {
                    tool_call_id: id,
                    content: ChatContent::Text(text),
                });
            }
            _ => match part(block, &path, dropped)? {
                Some(part) => parts.push(part),
                None => dropped.push(path),
            },
        }
    }
    if !parts.is_empty() {
        out.push(ChatMessage::User {
            content: ChatContent::from_parts(parts),
        });
    }
    Ok(())
}

/// A tool result's content as text; its images go to `images`, for the user message after it.
fn tool_result(
    raw: &RawValue,
    path: &str,
    images: &mut Vec<ChatPart>,
    dropped: &mut Dropped,
) -> Result<String, Failure> {
    let Some(blocks) = blocks(raw, path)? else {
        return read(path, raw);
    };
    let mut texts = Vec::new();
    for (k, block) in blocks.into_iter().enumerate() {
        let path = format!("{path}[{k}]");
        note_dropped_fields(&block, &path, dropped);
        match part(block, &path, dropped)? {
            Some(ChatPart::Text { text }) => texts.push(text),
            Some(other) => images.push(other),
            None => dropped.push(path),
        }
    }
    Ok(texts.join("\n"))
}

/// A text, image or document block as a part; `None` for blocks with no canonical form.
fn part(block: Block, path: &str, dropped: &mut Dropped) -> Result<Option<ChatPart>, Failure> {
    let source_path = format!("{path}.source");
    let source = |raw| source(raw, &source_path);
    Ok(match block.kind.as_str() {
        "text" => Some(ChatPart::Text {
            text: required(block.text, path, "text")?,
        }),
        "image" => {
            let source = source(block.source)?;
            match source.kind.as_str() {
                "base64" => Some(image(data_url(source, &source_path)?)),
                "url" => Some(image(required(source.url, &source_path, "url")?)),
                _ => None,
            }
        }
        "document" => {
            let source = source(block.source)?;
            match source.kind.as_str() {
                "base64" => Some(ChatPart::File {
                    file: ChatFile {
                        file_data: Some(data_url(source, &source_path)?),
                        file_id: None,
                        // OpenAI wants a name with inline file data.
                        filename: Some(block.title.unwrap_or_else(|| "document.pdf".to_owned())),
                    },
                }),
                "text" => Some(ChatPart::Text {
                    text: required(source.data, &source_path, "data")?,
                }),
                "content" => {
                    let path = format!("{source_path}.content");
                    let content = source.content.ok_or_else(|| missing(&path))?;
                    Some(ChatPart::Text {
                        text: text_of(content, &path, dropped)?,
                    })
                }
                _ => None,
            }
        }
        _ => None,
    })
}

fn data_url(source: Source, path: &str) -> Result<String, Failure> {
    let media_type = required(source.media_type, path, "media_type")?;
    let data = required(source.data, path, "data")?;
    Ok(format!("data:{media_type};base64,{data}"))
}

fn source<'a>(raw: Option<&'a RawValue>, path: &str) -> Result<Source<'a>, Failure> {
    read(path, raw.ok_or_else(|| missing(path))?)
}

fn image(url: String) -> ChatPart {
    ChatPart::ImageUrl {
        image_url: ChatImageUrl { url, detail: None },
    }
}

fn assistant(
    raw: &RawValue,
    path: &str,
    out: &mut Vec<ChatMessage>,
    dropped: &mut Dropped,
) -> Result<(), Failure> {
    let Some(blocks) = blocks(raw, path)? else {
        out.push(ChatMessage::Assistant {
            content: Some(ChatContent::Text(read(path, raw)?)),
            tool_calls: Vec::new(),
        });
        return Ok(());
    };
    let mut text = String::new();
    let mut calls = Vec::new();
    for (j, block) in blocks.into_iter().enumerate() {
        let path = format!("{path}[{j}]");
        note_dropped_fields(&block, &path, dropped);
        match block.kind.as_str() {
            "text" => text.push_str(&required(block.text, &path, "text")?),
            "tool_use" => {
                let id = required(block.id, &path, "id")?;
                let name = required(block.name, &path, "name")?;
                let arguments = block
                    .input
                    .map_or_else(|| "{}".to_owned(), |raw| raw.get().to_owned());
                calls.push(ChatToolCall::new(id, name, arguments));
            }
            // thinking, redacted_thinking (their signatures mean nothing elsewhere), server
            // tool calls and their results.
            _ => dropped.push(path),
        }
    }
    // A turn left empty (thinking only) says nothing.
    if !text.is_empty() || !calls.is_empty() {
        out.push(ChatMessage::Assistant {
            content: (!text.is_empty()).then_some(ChatContent::Text(text)),
            tool_calls: calls,
        });
    }
    Ok(())
}

fn required(value: Option<String>, path: &str, field: &str) -> Result<String, Failure> {
    value.ok_or_else(|| missing(&format!("{path}.{field}")))
}

fn missing(path: &str) -> Failure {
    Failure::invalid_request(format!("{path}: Field required")).with_param(path)
}
