//! The texts of a Chat Completions request, as a guard reads and rewrites them: every string a
//! model or an upstream reads as text, wherever it stands (messages, tool and response schemas,
//! names, `user`, `metadata`), and the text inside a `data:` URL of a text media type.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};
use serde_json::Value;

/// Schema keywords whose strings are structure, not text: rewriting them would break the schema
/// (a `required` entry names a property key, which is never rewritten).
const SCHEMA_STRUCTURE: [&str; 6] = ["type", "format", "$ref", "$schema", "$id", "required"];

/// Characters a percent-encoded `data:` URL keeps as they are.
const DATA_URL_KEEP: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// The texts of a Chat Completions request a guard reads and may rewrite, `f` called on each in
/// place: each message's content (a string, the `text` of its parts, the text of a `data:` URL
/// of a text type in an image or file part), its `name` and `refusal`, its tool calls'
/// arguments; each tool's (and legacy function's) description and parameter schema
/// (descriptions, titles, enums, examples, defaults, nested properties); `response_format`'s
/// schema; `prediction`; the top-level `user` and the values of `metadata`.
pub fn request_texts(request: &mut Value, mut f: impl FnMut(&mut String)) {
    let f = &mut f;
    if let Some(Value::Array(messages)) = request.get_mut("messages") {
        for message in messages {
            message_texts(message, f);
        }
    }
    if let Some(Value::Array(tools)) = request.get_mut("tools") {
        for tool in tools {
            if let Some(function) = tool.get_mut("function") {
                function_texts(function, f);
            }
        }
    }
    if let Some(Value::Array(functions)) = request.get_mut("functions") {
        for function in functions {
            function_texts(function, f);
        }
    }
    if let Some(schema) = request.pointer_mut("/response_format/json_schema") {
        function_texts(schema, f);
    }
    if let Some(prediction) = request.pointer_mut("/prediction/content") {
        content_texts(prediction, f);
    }
    if let Some(Value::String(user)) = request.get_mut("user") {
        f(user);
    }
    if let Some(Value::Object(metadata)) = request.get_mut("metadata") {
        for value in metadata.values_mut() {
            if let Value::String(value) = value {
                f(value);
            }
        }
    }
}

fn message_texts(message: &mut Value, f: &mut impl FnMut(&mut String)) {
    let Value::Object(message) = message else {
        return;
    };
    if let Some(content) = message.get_mut("content") {
        content_texts(content, f);
    }
    for field in ["name", "refusal"] {
        if let Some(Value::String(text)) = message.get_mut(field) {
            f(text);
        }
    }
    if let Some(Value::Array(calls)) = message.get_mut("tool_calls") {
        for call in calls {
            if let Some(Value::String(args)) = call.pointer_mut("/function/arguments") {
                f(args);
            }
        }
    }
    if let Some(Value::String(args)) = message
        .get_mut("function_call")
        .and_then(|c| c.get_mut("arguments"))
    {
        f(args);
    }
}

/// A message's content: a string, or parts.
fn content_texts(content: &mut Value, f: &mut impl FnMut(&mut String)) {
    match content {
        Value::String(text) => f(text),
        Value::Array(parts) => {
            for part in parts {
                if let Some(Value::String(text)) = part.get_mut("text") {
                    f(text);
                }
                for url in ["/image_url/url", "/file/file_data"] {
                    if let Some(Value::String(url)) = part.pointer_mut(url) {
                        data_url_text(url, f);
                    }
                }
            }
        }
        _ => {}
    }
}

/// A function (a tool's, or `response_format`'s schema): its description and its schema.
fn function_texts(function: &mut Value, f: &mut impl FnMut(&mut String)) {
    if let Some(Value::String(description)) = function.get_mut("description") {
        f(description);
    }
    for schema in ["parameters", "schema"] {
        if let Some(schema) = function.get_mut(schema) {
            schema_texts(schema, f);
        }
    }
}

/// Every string of a JSON schema but its structure ([`SCHEMA_STRUCTURE`]); property names are
/// keys, never rewritten.
fn schema_texts(schema: &mut Value, f: &mut impl FnMut(&mut String)) {
    match schema {
        Value::String(text) => f(text),
        Value::Array(items) => items.iter_mut().for_each(|item| schema_texts(item, f)),
        Value::Object(fields) => {
            for (key, value) in fields {
                if !SCHEMA_STRUCTURE.contains(&key.as_str()) {
                    schema_texts(value, f);
                }
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// Whether a media type is read as text.
pub(crate) fn is_text_type(media_type: &str) -> bool {
    let media_type = media_type.trim().to_ascii_lowercase();
    media_type.is_empty()
        || media_type.starts_with("text/")
        || matches!(
            media_type.as_str(),
            "application/json" | "application/xml" | "application/x-www-form-urlencoded"
        )
        || media_type.ends_with("+json")
        || media_type.ends_with("+xml")
}

/// The text a `data:` URL of a text type carries (RFC 2397: no type is `text/plain`), given to
/// `f` and written back in the URL's own encoding when `f` changed it.
fn data_url_text(url: &mut String, f: &mut impl FnMut(&mut String)) {
    let Some((header, data)) = url.strip_prefix("data:").and_then(|r| r.split_once(',')) else {
        return;
    };
    let mut params = header.split(';');
    if !params.next().is_some_and(is_text_type) {
        return;
    }
    let base64 = params.any(|p| p.trim().eq_ignore_ascii_case("base64"));
    let decoded = if base64 {
        match STANDARD.decode(data.trim()) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(_) => return,
        }
    } else {
        percent_decode_str(data).decode_utf8_lossy().into_owned()
    };
    let mut text = decoded.clone();
    f(&mut text);
    if text == decoded {
        return;
    }
    let encoded = if base64 {
        STANDARD.encode(text.as_bytes())
    } else {
        utf8_percent_encode(&text, DATA_URL_KEEP).to_string()
    };
    *url = format!("data:{header},{encoded}");
}

/// Where the texts of a request stood, when the gateway showed a body of another route (an
/// embeddings input, a pass-through body, a batch line, a count) to the guard as messages: the
/// route's name (`embeddings`, `messages.count_tokens`, `passthrough`) and, for each message in
/// order, the JSON pointer (RFC 6901) of its text in what the route sends (for `passthrough`,
/// under `/body`, `/query/<i>/1` or `/headers/<i>/1`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct Origin {
    /// The route's name.
    pub route: String,
    /// For each message, the JSON pointer of its text.
    pub at: Vec<String>,
}

/// The request's [`Origin`]; `None` for a Chat Completions request shown as it is.
pub fn request_origin(request: &Value) -> Option<Origin> {
    serde_json::from_value(request.get("wasmgate")?.clone()).ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn texts(mut request: Value) -> Vec<String> {
        let mut seen = Vec::new();
        request_texts(&mut request, |t| seen.push(t.clone()));
        seen
    }

    #[test]
    fn every_field_that_carries_text_is_read() {
        let request = json!({
            "model": "m",
            "user": "u-mail",
            "metadata": {"k": "meta"},
            "messages": [
                {"role": "user", "name": "who", "content": [
                    {"type": "text", "text": "part"},
                    {"type": "image_url", "image_url": {"url": "data:text/plain,plain%20text"}},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}}]},
                {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "args"}}]}],
            "tools": [{"type": "function", "function": {"name": "f", "description": "tool",
                "parameters": {"type": "object", "required": ["city"], "properties": {"city": {
                    "type": "string", "description": "param", "enum": ["e1"], "examples": ["ex"],
                    "default": "def"}}}}}],
            "response_format": {"type": "json_schema", "json_schema": {"name": "n",
                "description": "rf", "schema": {"type": "object", "properties": {
                    "x": {"type": "string", "description": "nested"}}}}}
        });
        let mut seen = texts(request);
        seen.sort();
        let mut expected = [
            "part",
            "plain text",
            "who",
            "args",
            "tool",
            "param",
            "e1",
            "ex",
            "def",
            "rf",
            "nested",
            "u-mail",
            "meta",
        ];
        expected.sort_unstable();
        assert_eq!(seen, expected);
    }

    #[test]
    fn a_text_data_url_is_rewritten_in_its_own_encoding() {
        let plain = "card 4111";
        let b64 = STANDARD.encode(plain);
        let mut request = json!({"messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": format!("data:text/plain;base64,{b64}")}},
            {"type": "image_url", "image_url": {"url": "data:,card%204111"}}]}]});
        request_texts(&mut request, |t| *t = t.replace("4111", "[CARD]"));
        let parts = &request["messages"][0]["content"];
        let url = parts[0]["image_url"]["url"].as_str().unwrap();
        let data = url.strip_prefix("data:text/plain;base64,").unwrap();
        assert_eq!(STANDARD.decode(data).unwrap(), b"card [CARD]");
        assert_eq!(parts[1]["image_url"]["url"], "data:,card%20%5BCARD%5D");
    }

    #[test]
    fn a_shown_body_says_where_its_texts_stood_and_a_chat_does_not() {
        let shown = json!({"model": "m", "messages": [{"role": "user", "content": "a"}],
            "wasmgate": {"route": "embeddings", "at": ["/input/0"]}});
        assert_eq!(
            request_origin(&shown),
            Some(Origin {
                route: "embeddings".into(),
                at: vec!["/input/0".into()]
            })
        );
        assert_eq!(request_origin(&json!({"model": "m", "messages": []})), None);
    }
}
