//! Embeddings: one text goes to `:embedContent`, a list to `:batchEmbedContents`; both answers
//! become OpenAI's embeddings list.
//!
//! `parse_response` is not given the request body, so it cannot honour `encoding_format:
//! base64`: vectors are always numbers, which OpenAI's clients accept either way.

use serde::{Deserialize, Serialize};
use wasmgate_plugin_sdk::embeddings::{
    EmbeddingsInput, EmbeddingsRequest, EncodingFormat, embeddings_body,
};
use wasmgate_plugin_sdk::{Completion, PluginError, RequestInfo, Usage};

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EmbedContentRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<String>,
    content: TextContent,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_dimensionality: Option<u32>,
}

#[derive(Debug, Serialize)]
pub struct TextContent {
    parts: [TextPart; 1],
}

#[derive(Debug, Serialize)]
struct TextPart {
    text: String,
}

#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum EmbedBody {
    One(EmbedContentRequest),
    Batch { requests: Vec<EmbedContentRequest> },
}

/// The method and body for an OpenAI embeddings body, for `model` (a `models/...` path).
pub fn build(body: &str, model: &str) -> Result<(&'static str, EmbedBody), PluginError> {
    let request = EmbeddingsRequest::parse(body)?;
    let embed = |text: &str, model: Option<String>| EmbedContentRequest {
        model,
        content: TextContent {
            parts: [TextPart {
                text: text.to_owned(),
            }],
        },
        output_dimensionality: request.dimensions,
    };
    Ok(match &request.input {
        EmbeddingsInput::One(text) => ("embedContent", EmbedBody::One(embed(text, None))),
        // Each request of a batch names the model again, as the reference requires.
        EmbeddingsInput::Many(texts) => (
            "batchEmbedContents",
            EmbedBody::Batch {
                requests: texts
                    .iter()
                    .map(|t| embed(t, Some(model.to_owned())))
                    .collect(),
            },
        ),
    })
}

#[derive(Deserialize)]
struct EmbedResponse {
    embedding: Option<ContentEmbedding>,
    embeddings: Option<Vec<ContentEmbedding>>,
}

#[derive(Deserialize)]
struct ContentEmbedding {
    values: Vec<f32>,
}

pub fn parse(request: &RequestInfo, body: &[u8]) -> Result<Completion, PluginError> {
    let response: EmbedResponse = serde_json::from_slice(body).map_err(|_| {
        PluginError::upstream("Gemini answered with embeddings that could not be read")
    })?;
    let vectors: Vec<Vec<f32>> = match (response.embedding, response.embeddings) {
        (Some(one), _) => vec![one.values],
        (None, Some(many)) => many.into_iter().map(|e| e.values).collect(),
        (None, None) => return Err(PluginError::upstream("Gemini answered with no embeddings")),
    };
    // Gemini reports no token counts for embeddings, and the texts are not at hand here to count.
    let body = embeddings_body(
        &request.model,
        &vectors,
        EncodingFormat::Float,
        &Usage::default(),
    );
    Ok(Completion { body, usage: None })
}
