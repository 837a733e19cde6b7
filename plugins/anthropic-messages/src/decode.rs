//! A Messages request's top-level fields, into a canonical chat body.

use serde::Deserialize;
use serde_json::value::RawValue;
use wasmgate_plugin_sdk::canonical::{ChatBody, Dropped, Fields};
use wasmgate_plugin_sdk::{Canonical, Decoded, Failure, Framing};

use crate::{conversation, tools};

/// The longest `metadata.user_id` passed on as `user`: OpenAI refuses a longer `user` with a 400,
/// and Claude Code's ids are about 150 bytes.
const USER_MAX: usize = 64;

/// Fields with no canonical counterpart, dropped without a look inside.
const DROPPED: &[&str] = &["top_k", "thinking"];

#[derive(Deserialize)]
struct Metadata {
    user_id: Option<String>,
}

pub fn decode(body: &str) -> Result<Decoded, Failure> {
    let mut fields = Fields::parse(body)?;
    let mut dropped = Dropped::default();
    let model: String = fields.require("model")?;
    let messages: &RawValue = fields.take_raw("messages").ok_or_else(|| {
        Failure::invalid_request("messages: Field required").with_param("messages")
    })?;
    let system = fields.take_raw("system");
    let stream = fields.take::<bool>("stream")?.unwrap_or(false);

    let mut chat = ChatBody {
        model: model.clone(),
        messages: conversation::translate(system, messages, &mut dropped)?,
        stream,
        max_completion_tokens: fields.take("max_tokens")?,
        temperature: fields.take("temperature")?,
        top_p: fields.take("top_p")?,
        stop: fields.take("stop_sequences")?.unwrap_or_default(),
        ..ChatBody::default()
    };
    if let Some(raw) = fields.take_raw("tools") {
        chat.tools = tools::tools(raw, &mut dropped)?;
    }
    if let Some(raw) = fields.take_raw("tool_choice") {
        let choice = tools::tool_choice(raw, &chat.tools, &mut dropped)?;
        chat.tool_choice = choice.choice;
        chat.parallel_tool_calls = choice.parallel;
    }
    for name in chat.drop_tool_settings_without_tools() {
        dropped.push(name);
    }
    if let Some(metadata) = fields.take::<Metadata>("metadata")? {
        match metadata.user_id {
            Some(user) if user.len() <= USER_MAX => chat.user = Some(user),
            Some(_) => dropped.push("metadata.user_id"),
            None => {}
        }
    }
    for name in DROPPED {
        if fields.take_raw(name).is_some() {
            dropped.push(*name);
        }
    }
    for name in fields.rest() {
        dropped.push(name);
    }
    Ok(Decoded {
        operation: Canonical::ChatCompletions,
        framing: Framing::Sse,
        model,
        stream,
        body: chat.to_json()?,
        dropped: dropped.into_vec(),
        echo: "{}".to_owned(),
    })
}

/// A `count_tokens` body as a Messages body: the endpoint takes one without `max_tokens`, which
/// [`decode`] requires of `/v1/messages`.
pub fn with_max_tokens(body: &str) -> Result<String, Failure> {
    let mut value: serde_json::Value = serde_json::from_str(body)
        .map_err(|e| Failure::invalid_request(format!("The body is not valid JSON: {e}")))?;
    if let Some(fields) = value.as_object_mut() {
        fields
            .entry("max_tokens")
            .or_insert_with(|| serde_json::Value::from(1));
    }
    Ok(value.to_string())
}
