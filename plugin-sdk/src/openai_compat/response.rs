//! Complete (non-streamed) OpenAI responses: passed through, with usage read on the way.

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;

use crate::{Completion, HttpResponse, Operation, PluginError, Usage, openai_error, openai_usage};

/// The parts of any OpenAI response body that matter here; the rest is skipped unbuilt.
#[derive(Deserialize)]
struct Envelope {
    usage: Option<Value>,
    data: Option<Vec<IgnoredAny>>,
}

/// Turns an upstream's OpenAI-format response to `operation` into the completion: an error status
/// into a typed error ([`openai_error`]), a success into the same body with its usage (images
/// generated are counted from `data`).
pub fn parse_response(
    operation: Operation,
    response: HttpResponse,
) -> Result<Completion, PluginError> {
    match operation {
        Operation::AudioTranscriptions | Operation::AudioTranslations => {
            return super::parse_transcription(response);
        }
        Operation::Rerank => return super::parse_rerank(response),
        _ => {}
    }
    if !response.is_success() {
        return Err(openai_error(response.status, &response.body));
    }
    let envelope: Envelope = serde_json::from_slice(&response.body)
        .map_err(|_| PluginError::upstream("upstream answered with a body that is not JSON"))?;
    let tokens = envelope.usage.as_ref().and_then(openai_usage);
    let usage = match operation {
        Operation::ImageGenerations => {
            let images = envelope.data.map_or(0, |d| d.len());
            Some(Usage {
                images: u32::try_from(images).unwrap_or(u32::MAX),
                ..tokens.unwrap_or_default()
            })
        }
        // Moderation is free and reports no usage: a zero usage prices it at what it costs.
        Operation::Moderations => Some(tokens.unwrap_or_default()),
        Operation::ChatCompletions
        | Operation::Completions
        | Operation::Embeddings
        | Operation::ListModels
        | Operation::Rerank
        | Operation::AudioTranscriptions
        | Operation::AudioTranslations
        | Operation::AudioSpeech => tokens,
    };
    // The bytes were just parsed as JSON, which is UTF-8, so this moves them without a copy.
    let body = String::from_utf8(response.body)
        .map_err(|_| PluginError::upstream("upstream answered with a body that is not UTF-8"))?;
    Ok(Completion { body, usage })
}
