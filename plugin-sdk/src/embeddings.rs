//! OpenAI's embeddings request and response, for plugins whose upstream embeds differently.

use serde::{Deserialize, Serialize};

use crate::{PluginError, Usage};

/// An OpenAI `POST /v1/embeddings` body.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct EmbeddingsRequest {
    /// The upstream model name.
    pub model: String,
    /// One text or several.
    pub input: EmbeddingsInput,
    /// How vectors are written in the answer.
    #[serde(default)]
    pub encoding_format: EncodingFormat,
    /// The number of dimensions wanted, for models that can shorten their vectors.
    pub dimensions: Option<u32>,
}

/// `input`: one text or a list. Token-id arrays are refused: other upstreams cannot read
/// OpenAI's token ids.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum EmbeddingsInput {
    /// A single text.
    One(String),
    /// Several texts.
    Many(Vec<String>),
}

/// `encoding_format`.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum EncodingFormat {
    /// A JSON array of numbers.
    #[default]
    Float,
    /// The little-endian `f32`s in base64 (what OpenAI's Python client asks for by default).
    Base64,
}

impl EmbeddingsRequest {
    /// Reads a canonical embeddings body.
    pub fn parse(body: &str) -> Result<Self, PluginError> {
        serde_json::from_str(body).map_err(|_| {
            PluginError::invalid_request(
                "this provider embeds text: `input` must be a string or a list of strings",
            )
            .with_param("input")
        })
    }

    /// The texts to embed, in order.
    pub fn texts(&self) -> Vec<&str> {
        match &self.input {
            EmbeddingsInput::One(text) => vec![text.as_str()],
            EmbeddingsInput::Many(texts) => texts.iter().map(String::as_str).collect(),
        }
    }
}

/// OpenAI's embeddings `list` body for `vectors`, in input order. Typed rather than built as a
/// `Value`, which would widen each `f32` and print digits the model never produced.
pub fn embeddings_body(
    model: &str,
    vectors: &[Vec<f32>],
    format: EncodingFormat,
    usage: &Usage,
) -> String {
    #[derive(Serialize)]
    struct List<'a> {
        object: &'static str,
        data: Vec<Item<'a>>,
        model: &'a str,
        usage: ListUsage,
    }
    #[derive(Serialize)]
    struct Item<'a> {
        object: &'static str,
        index: usize,
        embedding: Embedding<'a>,
    }
    #[derive(Serialize)]
    #[serde(untagged)]
    enum Embedding<'a> {
        Float(&'a [f32]),
        Base64(String),
    }
    #[derive(Serialize)]
    struct ListUsage {
        prompt_tokens: u64,
        total_tokens: u64,
    }
    let data = vectors
        .iter()
        .enumerate()
        .map(|(index, vector)| Item {
            object: "embedding",
            index,
            embedding: match format {
                EncodingFormat::Float => Embedding::Float(vector),
                EncodingFormat::Base64 => Embedding::Base64(base64_f32(vector)),
            },
        })
        .collect();
    let list = List {
        object: "list",
        data,
        model,
        usage: ListUsage {
            prompt_tokens: usage.input_tokens,
            total_tokens: usage.input_tokens,
        },
    };
    // Serialising these types cannot fail: no maps with non-string keys, no failing impls.
    serde_json::to_string(&list).unwrap_or_default()
}

/// Standard base64 (with padding) of the vector's little-endian `f32` bytes.
fn base64_f32(vector: &[f32]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes: Vec<u8> = vector.iter().flat_map(|f| f.to_le_bytes()).collect();
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for group in bytes.chunks(3) {
        let b = [
            group[0],
            group.get(1).copied().unwrap_or(0),
            group.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= group.len() {
                out.push(char::from(ALPHABET[((n >> shift) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    #[test]
    fn reads_inputs() {
        let req = EmbeddingsRequest::parse(r#"{"model":"m","input":["a","b"]}"#).unwrap();
        assert_eq!(req.texts(), ["a", "b"]);
        assert_eq!(req.encoding_format, EncodingFormat::Float);
        let req =
            EmbeddingsRequest::parse(r#"{"model":"m","input":"a","encoding_format":"base64"}"#)
                .unwrap();
        assert_eq!(req.texts(), ["a"]);
        assert_eq!(req.encoding_format, EncodingFormat::Base64);
        let err = EmbeddingsRequest::parse(r#"{"model":"m","input":[[1,2]]}"#).unwrap_err();
        assert_eq!(err.param.as_deref(), Some("input"));
    }

    #[test]
    fn base64_is_little_endian_f32() {
        // 1.0f32 = 00 00 80 3f
        assert_eq!(base64_f32(&[1.0]), "AACAPw==");
        assert_eq!(base64_f32(&[1.0, 1.0]), "AACAPwAAgD8=");
        assert_eq!(base64_f32(&[]), "");
    }

    #[test]
    fn floats_keep_their_f32_digits() {
        let body = embeddings_body(
            "m",
            &[vec![0.013_168_523]],
            EncodingFormat::Float,
            &Usage::default(),
        );
        assert!(body.contains("[0.013168523]"), "{body}");
    }

    #[test]
    fn body_lists_vectors_in_order() {
        let body = embeddings_body(
            "m",
            &[vec![0.5], vec![0.25]],
            EncodingFormat::Float,
            &Usage::tokens(3, 0),
        );
        let body: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(body["data"][1]["index"], 1);
        assert_eq!(body["data"][1]["embedding"], json!([0.25]));
        assert_eq!(
            body["usage"],
            json!({"prompt_tokens": 3, "total_tokens": 3})
        );
    }
}
