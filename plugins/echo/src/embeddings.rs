//! Embeddings: a deterministic unit vector per input, derived from a hash of the input.

use serde_json::{Value, json};
use wasmgate_plugin_sdk::{CanonicalRequest, Completion, PluginError, Usage, count_tokens};

use crate::{bad_param, fnv1a};

const DEFAULT_DIMENSIONS: u64 = 16;
/// Above OpenAI's largest model (3072), below what would strain a plugin's memory.
const MAX_DIMENSIONS: u64 = 8192;

/// One input: text, or text already tokenized by the client.
enum Input<'a> {
    Text(&'a str),
    Tokens(&'a [Value]),
}

pub fn answer(request: &CanonicalRequest, body: &Value) -> Result<Completion, PluginError> {
    let inputs = inputs(body.get("input"))?;
    let dimensions = match body.get("dimensions") {
        None | Some(Value::Null) => DEFAULT_DIMENSIONS,
        Some(d) => d
            .as_u64()
            .filter(|d| (1..=MAX_DIMENSIONS).contains(d))
            .ok_or_else(|| {
                bad_param(
                    "dimensions",
                    &format!("`dimensions` must be an integer from 1 to {MAX_DIMENSIONS}"),
                )
            })?,
    };
    let base64 = match body.get("encoding_format").and_then(Value::as_str) {
        None | Some("float") => false,
        Some("base64") => true,
        Some(_) => {
            return Err(bad_param(
                "encoding_format",
                "`encoding_format` must be `float` or `base64`",
            ));
        }
    };

    let mut tokens = 0u64;
    let mut data = Vec::with_capacity(inputs.len());
    for (index, input) in inputs.iter().enumerate() {
        let seed = match input {
            Input::Text(text) => {
                tokens += u64::from(count_tokens(text));
                fnv1a(text.as_bytes())
            }
            Input::Tokens(ids) => {
                tokens += ids.len() as u64;
                let bytes: Vec<u8> = ids
                    .iter()
                    .flat_map(|id| id.as_u64().unwrap_or(0).to_le_bytes())
                    .collect();
                fnv1a(&bytes)
            }
        };
        let vector = unit_vector(seed, dimensions);
        let embedding = if base64 {
            let bytes: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
            Value::String(base64_encode(&bytes))
        } else {
            json!(vector)
        };
        data.push(json!({"object": "embedding", "index": index, "embedding": embedding}));
    }
    let body = json!({
        "object": "list",
        "data": data,
        "model": request.model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    });
    Ok(Completion {
        body: body.to_string(),
        usage: Some(Usage::tokens(tokens, 0)),
    })
}

/// Reads `input`: a string, a list of strings, a list of token ids, or a list of such lists.
fn inputs(input: Option<&Value>) -> Result<Vec<Input<'_>>, PluginError> {
    let bad = || {
        bad_param(
            "input",
            "`input` must be a string, a list of strings, or token ids",
        )
    };
    let is_token = |v: &Value| v.as_u64().is_some();
    match input {
        Some(Value::String(text)) => Ok(vec![Input::Text(text)]),
        Some(Value::Array(items)) if items.is_empty() => {
            Err(bad_param("input", "`input` must not be empty"))
        }
        Some(Value::Array(items)) if items.iter().all(is_token) => Ok(vec![Input::Tokens(items)]),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(text) => Ok(Input::Text(text)),
                Value::Array(ids) if !ids.is_empty() && ids.iter().all(is_token) => {
                    Ok(Input::Tokens(ids))
                }
                _ => Err(bad()),
            })
            .collect(),
        _ => Err(bad()),
    }
}

/// A vector of `dimensions` values in [-1, 1) from a SplitMix64 sequence seeded by `seed`,
/// scaled to length 1 as OpenAI's embeddings are.
fn unit_vector(seed: u64, dimensions: u64) -> Vec<f32> {
    let mut state = seed;
    let mut next = || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    // The top 53 bits make an exact f64 in [0, 1).
    let values: Vec<f64> = (0..dimensions)
        .map(|_| (next() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0)
        .collect();
    let norm = values.iter().map(|v| v * v).sum::<f64>().sqrt();
    if norm == 0.0 {
        let mut unit = vec![0.0; values.len()];
        unit[0] = 1.0;
        return unit;
    }
    values.iter().map(|v| (v / norm) as f32).collect()
}

/// Standard base64 with padding, for `encoding_format: base64`.
pub fn base64_encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for group in bytes.chunks(3) {
        let b = [
            group[0],
            *group.get(1).unwrap_or(&0),
            *group.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= group.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}
