//! Embeddings: OpenAI's request to `POST /v2/embed` (`texts`, the configured `input_type`,
//! float vectors), and the answer back to OpenAI's embeddings list.
//!
//! `parse_response` is not given the request body, so it cannot honour `encoding_format:
//! base64`: vectors are always numbers, which OpenAI's clients accept either way.

use serde::{Deserialize, Serialize};
use wasmgate_plugin_sdk::embeddings::{EmbeddingsRequest, EncodingFormat, embeddings_body};
use wasmgate_plugin_sdk::{Completion, PluginError, RequestInfo, Usage};

use crate::settings::InputType;

#[derive(Debug, Serialize)]
pub struct EmbedRequest {
    model: String,
    texts: Vec<String>,
    input_type: InputType,
    embedding_types: [&'static str; 1],
    /// Only the models that can shorten their vectors (embed v4) accept it.
    #[serde(skip_serializing_if = "Option::is_none")]
    output_dimension: Option<u32>,
}

pub fn build(body: &str, input_type: InputType) -> Result<EmbedRequest, PluginError> {
    let request = EmbeddingsRequest::parse(body)?;
    Ok(EmbedRequest {
        texts: request.texts().into_iter().map(str::to_owned).collect(),
        model: request.model,
        input_type,
        embedding_types: ["float"],
        output_dimension: request.dimensions,
    })
}

#[derive(Deserialize)]
struct EmbedResponse {
    embeddings: Embeddings,
    meta: Option<Meta>,
}

#[derive(Deserialize)]
struct Embeddings {
    float: Vec<Vec<f32>>,
}

#[derive(Deserialize)]
struct Meta {
    billed_units: Option<BilledUnits>,
}

#[derive(Deserialize)]
struct BilledUnits {
    input_tokens: Option<u64>,
}

pub fn parse(request: &RequestInfo, body: &[u8]) -> Result<Completion, PluginError> {
    let response: EmbedResponse = serde_json::from_slice(body).map_err(|_| {
        PluginError::upstream("Cohere answered with embeddings that could not be read")
    })?;
    let usage = response
        .meta
        .and_then(|m| m.billed_units)
        .and_then(|b| b.input_tokens)
        .map(|tokens| Usage::tokens(tokens, 0));
    let body = embeddings_body(
        &request.model,
        &response.embeddings.float,
        EncodingFormat::Float,
        &usage.unwrap_or_default(),
    );
    Ok(Completion { body, usage })
}
