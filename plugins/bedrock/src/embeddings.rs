//! Embeddings with Amazon Titan Text Embeddings (`amazon.titan-embed-text-v2:0`, v1) through
//! `InvokeModel`.
//!
//! Titan embeds one text per request (`{"inputText": ...}`), and a plugin prepares exactly one
//! upstream request per client request, so only a single input is accepted: a string, or a list
//! of one string. A longer list is refused rather than silently truncated; clients send one
//! request per text instead.

use serde::{Deserialize, Serialize};
use wasmgate_plugin_sdk::embeddings::{
    EmbeddingsInput, EmbeddingsRequest, EncodingFormat, embeddings_body,
};
use wasmgate_plugin_sdk::{Completion, PluginError, RequestInfo, Usage};

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TitanRequest {
    input_text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    dimensions: Option<u32>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TitanResponse {
    embedding: Vec<f32>,
    #[serde(default)]
    input_text_token_count: u64,
}

/// Whether `model` is a Titan text embeddings model, the only embeddings format spoken here.
fn is_titan_embed(model: &str) -> bool {
    model.starts_with("amazon.titan-embed-text")
}

pub fn build(model: &str, body: &str) -> Result<TitanRequest, PluginError> {
    if !is_titan_embed(model) {
        return Err(PluginError::invalid_request(format!(
            "this provider embeds with Amazon Titan Text Embeddings (amazon.titan-embed-text-*), \
             not `{model}`"
        ))
        .with_param("model"));
    }
    let request = EmbeddingsRequest::parse(body)?;
    let input_text = match request.input {
        EmbeddingsInput::One(text) => text,
        EmbeddingsInput::Many(mut texts) if texts.len() == 1 => texts.remove(0),
        EmbeddingsInput::Many(_) => {
            return Err(PluginError::invalid_request(
                "Amazon Titan embeds one text per request: send `input` as a single string",
            )
            .with_param("input"));
        }
    };
    Ok(TitanRequest {
        input_text,
        dimensions: request.dimensions,
    })
}

/// `parse_response` is not given the request body, so it cannot honour `encoding_format:
/// base64`: vectors are always numbers, which OpenAI's clients accept either way.
pub fn parse(request: &RequestInfo, body: &[u8]) -> Result<Completion, PluginError> {
    let response: TitanResponse = serde_json::from_slice(body).map_err(|_| {
        PluginError::upstream("Bedrock answered with a body that is not a Titan embedding")
    })?;
    let usage = Usage {
        input_tokens: response.input_text_token_count,
        output_tokens: 0,
        cached_input_tokens: 0,
        cache_write_tokens: 0,
        reasoning_tokens: 0,
        images: 0,
        search_units: 0,
        audio_ms: 0,
        characters: 0,
    };
    let body = embeddings_body(
        &request.model,
        &[response.embedding],
        EncodingFormat::Float,
        &usage,
    );
    Ok(Completion {
        body,
        usage: Some(usage),
    })
}
