//! Image generations: `n` copies of a transparent 1x1 PNG.

use serde_json::{Value, json};
use wasmgate_plugin_sdk::{Completion, PluginError, Usage};

use crate::{bad_param, now};

/// A valid 1x1 transparent PNG (grey and alpha, 67 bytes), base64-encoded.
const PNG_1X1: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";
/// OpenAI's own limit on `n`.
const MAX_IMAGES: u32 = 10;

pub fn answer(body: &Value) -> Result<Completion, PluginError> {
    let prompt = body
        .get("prompt")
        .and_then(Value::as_str)
        .ok_or_else(|| bad_param("prompt", "`prompt` must be a string"))?;
    let n = match body.get("n") {
        None | Some(Value::Null) => 1,
        Some(n) => n
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| (1..=MAX_IMAGES).contains(n))
            .ok_or_else(|| {
                bad_param(
                    "n",
                    &format!("`n` must be an integer from 1 to {MAX_IMAGES}"),
                )
            })?,
    };
    let image = json!({"b64_json": PNG_1X1, "revised_prompt": prompt});
    let data: Vec<Value> = (0..n).map(|_| image.clone()).collect();
    let body = json!({"created": now(), "data": data});
    Ok(Completion {
        body: body.to_string(),
        usage: Some(Usage {
            images: n,
            ..Usage::default()
        }),
    })
}
