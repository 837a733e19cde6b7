//! `POST /v1/responses/compact` for a target without it: the conversation (`instructions` and
//! `input`, the host having replayed `previous_response_id` into it) goes to the model as one
//! chat call that ends by asking for a summary, and the answer comes back in the compacted
//! response's shape: the conversation's user messages, then one compaction item of the
//! gateway's own making carrying the summary (`wasmgate_plugin_sdk::compaction`), which the next
//! `responses.create` on any target reads back as a message.
//!
//! Reference: <https://platform.openai.com/docs/api-reference/responses/compact> (the request
//! takes `model`, `input`, `instructions`, `previous_response_id` and prompt-cache and service
//! settings; the answer is `{"id", "object": "response.compaction", "created_at", "output",
//! "usage"}`).

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use wasmgate_plugin_sdk::canonical::{
    ChatAnswer, ChatBody, ChatContent, ChatMessage, Dropped, Fields, read,
};
use wasmgate_plugin_sdk::{AnswerInfo, Canonical, Decoded, Failure, Framing, Usage, compaction};

use crate::input;
use crate::response::{item_id, usage_json, usage_of};

/// The route's name, as `describe` declares it.
pub const ROUTE: &str = "compact";

/// What the model is asked, after the conversation, to write the summary.
pub const INSTRUCTION: &str = "Your context is about to be compacted: everything above will be \
replaced by the summary you write now. Write it for whoever continues this conversation with no \
other record of it: the task and its goal, what was decided and done, what was found (names, \
paths, numbers, errors as they were), what the user asked for and prefers, and what remains to \
do next. Answer with the summary only.";

/// The fields the reference takes that have no canonical counterpart: read by OpenAI only.
const UPSTREAM_ONLY: &[&str] = &[
    "image",
    "prompt_cache_key",
    "prompt_cache_options",
    "prompt_cache_retention",
    "service_tier",
];

/// What the answer needs back from the request: the user messages it repeats.
#[derive(serde::Serialize, Deserialize, Default)]
struct Echo {
    user_messages: Vec<Value>,
}

pub fn decode(body: &str) -> Result<Decoded, Failure> {
    let mut fields = Fields::parse(body)?;
    let mut dropped = Dropped::default();
    let model: String = fields.require("model")?;
    let instructions = fields.take_raw("instructions");
    let input = fields.take_raw("input");
    let mut messages = input::translate(instructions, input, &mut dropped)?;
    if !messages
        .iter()
        .any(|m| !matches!(m, ChatMessage::System { .. }))
    {
        return Err(
            Failure::invalid_request("input: there is no conversation to compact")
                .with_param("input"),
        );
    }
    messages.push(ChatMessage::User {
        content: ChatContent::Text(INSTRUCTION.to_owned()),
    });
    let echo = Echo {
        user_messages: user_messages(input)?,
    };
    // The host reads `previous_response_id` (it replayed it into `input`).
    fields.take_raw("previous_response_id");
    for name in UPSTREAM_ONLY {
        if fields.take_raw(name).is_some() {
            dropped.push(*name);
        }
    }
    for name in fields.rest() {
        dropped.push(name);
    }
    let chat = ChatBody {
        model: model.clone(),
        messages,
        stream: false,
        ..ChatBody::default()
    };
    Ok(Decoded {
        operation: Canonical::ChatCompletions,
        framing: Framing::Sse,
        model,
        stream: false,
        body: chat.to_json()?,
        dropped: dropped.into_vec(),
        echo: serde_json::to_string(&echo)
            .map_err(|_| Failure::upstream("could not write the request's echo"))?,
    })
}

/// The input's user messages, in order, as input items of the long form: what the compacted
/// output begins with. (`input::translate` has checked their shape already.)
fn user_messages(input: Option<&RawValue>) -> Result<Vec<Value>, Failure> {
    let Some(input) = input else {
        return Ok(Vec::new());
    };
    let items: Vec<Value> = if input.get().starts_with('"') {
        vec![json!({"role": "user", "content": read::<String>("input", input)?})]
    } else {
        read("input", input)?
    };
    Ok(items
        .into_iter()
        .filter(|item| {
            item["role"] == "user" && (item.get("type").is_none() || item["type"] == "message")
        })
        .map(|item| {
            let content = match &item["content"] {
                Value::String(text) => json!([{"type": "input_text", "text": text}]),
                parts => parts.clone(),
            };
            json!({"type": "message", "role": "user", "content": content})
        })
        .collect())
}

/// The compacted response: the user messages, then the gateway's compaction item carrying the
/// model's summary.
pub fn encode(
    info: &AnswerInfo,
    completion: &str,
    usage: Option<Usage>,
) -> Result<String, Failure> {
    let answer = ChatAnswer::parse(completion)?;
    let reasoning = answer.usage.and_then(|u| u.reasoning_tokens());
    let usage = usage_of(usage, answer.usage);
    let (message, _) = answer.into_message();
    let summary = message.content.unwrap_or_default();
    if summary.trim().is_empty() {
        return Err(Failure::upstream(
            "the model wrote no summary to compact into",
        ));
    }
    let echo: Echo = serde_json::from_str(&info.echo).unwrap_or_default();
    let mut output = echo.user_messages;
    output.push(compaction::item(
        &item_id(info, "cmp", output.len()),
        &summary,
    ));
    let compacted = json!({
        "id": info.id,
        "object": "response.compaction",
        "created_at": info.created,
        "output": output,
        "usage": usage_json(&usage, reasoning),
    });
    Ok(compacted.to_string())
}
