//! The echo provider: answers every request locally and deterministically, with no upstream and
//! no key, so that the gateway can be tested and demonstrated end to end offline.
//!
//! Chat replies with the last user message (or the `reply` option), and turns
//! `call <function> <json arguments>` into a tool call when the request offers tools. Embeddings
//! are unit vectors derived from a hash of each input; images are a 1x1 PNG. Text completions
//! echo their prompt, moderations flag nothing, rerank orders by shared words (`text_ops`).

mod chat;
mod chunks;
mod embeddings;
mod images;
mod text_ops;

use std::num::NonZeroU32;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Deserialize;
use serde_json::{Value, json};
use wasmgate_plugin_sdk::{
    CanonicalRequest, Completion, Entry, NoStream, Operation, PluginError, Prepared, Provider,
};

/// The `options:` of an entry.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    /// A fixed reply instead of the echo.
    reply: Option<String>,
    /// Words per streamed chunk.
    chunk_size: Option<NonZeroU32>,
}

struct Echo;

impl Provider for Echo {
    type Settings = Settings;
    type Decoder = NoStream;
    const LOCAL: bool = true;

    fn prepare(
        entry: &Entry<Settings>,
        request: CanonicalRequest,
    ) -> Result<Prepared, PluginError> {
        let settings = &entry.settings;
        match request.operation {
            Operation::ChatCompletions => {
                let chunk_size = settings.chunk_size.map_or(1, NonZeroU32::get);
                let body = parse_body(&request.body)?;
                chat::answer(&request, &body, settings.reply.clone(), chunk_size)
            }
            Operation::Embeddings => {
                let body = parse_body(&request.body)?;
                embeddings::answer(&request, &body).map(Prepared::Local)
            }
            Operation::ImageGenerations => {
                images::answer(&parse_body(&request.body)?).map(Prepared::Local)
            }
            Operation::ListModels => Ok(Prepared::Local(list_models(&entry.models))),
            Operation::Completions => {
                text_ops::completion(&request, &parse_body(&request.body)?, now())
            }
            Operation::Moderations => {
                text_ops::moderation(&request, &parse_body(&request.body)?).map(Prepared::Local)
            }
            Operation::Rerank => text_ops::rerank(&parse_body(&request.body)?).map(Prepared::Local),
            Operation::AudioTranscriptions
            | Operation::AudioTranslations
            | Operation::AudioSpeech => Err(PluginError::invalid_request(
                "the echo provider serves no audio",
            )),
        }
    }
}

wasmgate_plugin_sdk::export_provider!(Echo);

fn parse_body(body: &str) -> Result<Value, PluginError> {
    let value: Value = serde_json::from_str(body)
        .map_err(|_| PluginError::invalid_request("the request body is not JSON"))?;
    if !value.is_object() {
        return Err(PluginError::invalid_request(
            "the request body is not a JSON object",
        ));
    }
    Ok(value)
}

fn list_models(models: &[String]) -> Completion {
    let data: Vec<Value> = models
        .iter()
        .map(|id| json!({"id": id, "object": "model", "created": 0, "owned_by": "echo"}))
        .collect();
    Completion {
        body: json!({"object": "list", "data": data}).to_string(),
        usage: None,
    }
}

/// The current time in Unix seconds, as OpenAI's `created`.
fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// 64-bit FNV-1a: tiny, stable across builds and platforms, good enough to tell inputs apart.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// An `invalid-request` error naming the parameter at fault.
fn bad_param(param: &str, message: &str) -> PluginError {
    PluginError::invalid_request(message).with_param(param)
}

#[cfg(test)]
mod tests;
