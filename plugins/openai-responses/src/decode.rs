//! A Responses request's top-level fields, into a canonical chat body and the echo.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::value::RawValue;
use wasmgate_plugin_sdk::canonical::{ChatBody, Dropped, Fields, read};
use wasmgate_plugin_sdk::{Canonical, Decoded, Failure, Framing};

use crate::{input, tools};

/// Fields the host handles (stored responses, `include`) and the response object echoes or not:
/// neither dropped nor sent upstream.
const HOST_FIELDS: &[&str] = &["store", "previous_response_id", "include", "metadata"];

/// Fields with no canonical counterpart that the response object still echoes.
const ECHOED_ONLY: &[&str] = &[
    "truncation",
    "service_tier",
    "prompt_cache_key",
    "top_logprobs",
    "background",
    "max_tool_calls",
];

/// What the response object echoes of the request, as the client sent it.
pub type Echo = BTreeMap<String, Box<RawValue>>;

#[derive(Deserialize)]
struct Reasoning {
    effort: Option<String>,
    summary: Option<serde::de::IgnoredAny>,
    generate_summary: Option<serde::de::IgnoredAny>,
}

pub fn decode(body: &str) -> Result<Decoded, Failure> {
    let mut fields = Fields::parse(body)?;
    let mut dropped = Dropped::default();
    let mut echo = Echo::new();
    let model: String = fields.require("model")?;
    let stream = fields.take::<bool>("stream")?.unwrap_or(false);
    let input = fields.take_raw("input");
    let mut take = |name: &str| {
        let raw = fields.take_raw(name)?;
        echo.insert(name.to_owned(), raw.to_owned());
        Some(raw)
    };

    let instructions = take("instructions");
    let messages = input::translate(instructions, input, &mut dropped)?;
    if messages.is_empty() {
        return Err(Failure::invalid_request("input: Field required").with_param("input"));
    }
    let mut chat = ChatBody {
        model: model.clone(),
        messages,
        stream,
        ..ChatBody::default()
    };
    chat.max_completion_tokens = typed(take("max_output_tokens"), "max_output_tokens")?;
    chat.temperature = typed(take("temperature"), "temperature")?;
    chat.top_p = typed(take("top_p"), "top_p")?;
    chat.parallel_tool_calls = typed(take("parallel_tool_calls"), "parallel_tool_calls")?;
    let user: Option<String> = typed(take("user"), "user")?;
    let safety: Option<String> = typed(take("safety_identifier"), "safety_identifier")?;
    chat.user = user.or(safety);
    if let Some(raw) = take("tools") {
        chat.tools = tools::tools(raw, &mut dropped)?;
    }
    if let Some(raw) = take("tool_choice") {
        chat.tool_choice = tools::tool_choice(raw, &chat.tools, &mut dropped)?;
    }
    for name in chat.drop_tool_settings_without_tools() {
        dropped.push(name);
    }
    if let Some(raw) = take("text") {
        chat.response_format = tools::text_format(raw, &mut dropped)?;
    }
    if let Some(reasoning) = typed::<Reasoning>(take("reasoning"), "reasoning")? {
        chat.reasoning_effort = reasoning.effort;
        if reasoning.summary.is_some() {
            dropped.push("reasoning.summary");
        }
        if reasoning.generate_summary.is_some() {
            dropped.push("reasoning.generate_summary");
        }
    }
    for name in ECHOED_ONLY {
        if take(name).is_some() {
            dropped.push(*name);
        }
    }
    for name in HOST_FIELDS {
        if let Some(raw) = fields.take_raw(name) {
            // `include` is not part of the response object.
            if *name != "include" {
                echo.insert((*name).to_owned(), raw.to_owned());
            }
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
        echo: serde_json::to_string(&echo)
            .map_err(|_| Failure::upstream("could not write the request's echo"))?,
    })
}

fn typed<'a, T: Deserialize<'a>>(
    raw: Option<&'a RawValue>,
    name: &str,
) -> Result<Option<T>, Failure> {
    raw.map(|raw| read(name, raw)).transpose()
}
