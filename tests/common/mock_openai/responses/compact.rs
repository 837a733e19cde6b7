//! `POST /v1/responses/compact`, after platform.openai.com/docs/api-reference/responses/compact:
//! the request takes only the conversation (`input`, `instructions`, `previous_response_id`)
//! and prompt-cache and service settings; the answer is `{"id", "object":
//! "response.compaction", "created_at", "output", "usage"}`, its output every user message of
//! the conversation followed by one `compaction` item whose `encrypted_content` only the API
//! can read, which `POST /v1/responses` takes back as an input item and refuses forged.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::super::Shared;
use super::{context_of, error, items, tokens, unauthorized, unknown_parameter, validate};

/// The body parameters `responses.compact` takes (openai-python's `ResponseCompactParams`).
const PARAMETERS: &[&str] = &[
    "image",
    "input",
    "instructions",
    "model",
    "previous_response_id",
    "prompt_cache_key",
    "prompt_cache_options",
    "prompt_cache_retention",
    "service_tier",
];

/// The output tokens the mock's summary costs.
pub const SUMMARY_TOKENS: u64 = 48;

/// What only the mock can make: a compaction's `encrypted_content`, its number sealed.
pub fn sealed(n: u64) -> String {
    let number = format!("{n:016x}");
    let digest = Sha256::digest(format!("mock-openai-compaction\0{number}"));
    format!("gAAAAAB{number}{}", hex::encode(digest))
}

/// A compaction item with the id `id` (one of the mock's, which end in a hex number), sealed.
pub fn item(id: &str) -> Value {
    let number = id
        .get(id.len().saturating_sub(16)..)
        .and_then(|digits| u64::from_str_radix(digits, 16).ok())
        .unwrap_or_default();
    json!({"id": id, "type": "compaction", "encrypted_content": sealed(number)})
}

/// Whether a `POST /v1/responses` asks for server-side compaction (`context_management`) and
/// its context is over the threshold.
pub(super) fn due(request: &Value, context: &[Value]) -> bool {
    let threshold = request["context_management"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|entry| entry["type"] == "compaction")
        .and_then(|entry| entry["compact_threshold"].as_u64());
    threshold.is_some_and(|t| context.iter().map(tokens).sum::<u64>() > t)
}

/// Whether `content` is a compaction the mock made.
pub fn unsealed(content: &str) -> bool {
    content
        .strip_prefix("gAAAAAB")
        .and_then(|rest| rest.get(..16))
        .and_then(|number| u64::from_str_radix(number, 16).ok())
        .is_some_and(|n| sealed(n) == content)
}

pub(in super::super) async fn compact(
    State(shared): State<std::sync::Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request = super::super::record(&shared, "/v1/responses/compact", &headers, &body).await;
    if let Some(refused) = unauthorized(&headers) {
        return refused;
    }
    let Some(fields) = request.as_object() else {
        return error(400, "The body must be an object.", None, None);
    };
    if let Some(refused) = unknown_parameter(fields, PARAMETERS) {
        return refused;
    }
    if !request["model"].is_string() {
        return error(
            400,
            "Missing required parameter: 'model'.",
            Some("model"),
            Some("missing_required_parameter"),
        );
    }
    if let Err(r) = validate::prompt(fields) {
        return error(400, &r.message, r.param.as_deref(), r.code);
    }
    let store = shared.responses.lock().await;
    let mut counter = shared.response_ids.lock().await;
    let mut next_id = |prefix: &str| {
        *counter += 1;
        format!("{prefix}_68af{:040x}", *counter)
    };
    let input = items(&request["input"], &mut next_id);
    let context = match context_of(&store, None, &request, &input) {
        Ok(context) => context,
        Err(refused) => return *refused,
    };
    if context.is_empty() {
        return error(
            400,
            "Missing required parameter: 'input'.",
            Some("input"),
            Some("missing_required_parameter"),
        );
    }
    let mut output: Vec<Value> = context
        .iter()
        .filter(|item| item["type"] == "message" && item["role"] == "user")
        .cloned()
        .collect();
    output.push(item(&next_id("cmp")));
    let id = next_id("resp");
    let input_tokens = tokens(&request["instructions"]) + context.iter().map(tokens).sum::<u64>();
    let usage = json!({
        "input_tokens": input_tokens, "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": SUMMARY_TOKENS, "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input_tokens + SUMMARY_TOKENS,
    });
    axum::Json(json!({
        "id": id, "object": "response.compaction", "created_at": 1_741_476_542,
        "output": output, "usage": usage,
    }))
    .into_response()
}
