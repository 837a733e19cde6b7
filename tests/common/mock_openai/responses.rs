//! A strict mock of OpenAI's Responses API (`POST /v1/responses`, `GET`/`DELETE
//! /v1/responses/{id}`, `GET /v1/responses/{id}/input_items`, `POST /v1/responses/compact` in
//! `compact.rs`), after
//! platform.openai.com/docs/api-reference/responses. It refuses what the real API refuses
//! (`validate.rs`, and below what needs the stored responses) and answers as it does:
//!
//! | request | answer |
//! |---|---|
//! | no `Authorization: Bearer sk-upstream-secret` | 401 `invalid_api_key` |
//! | an unknown parameter or input item field | 400 `unknown_parameter` |
//! | `previous_response_id` not stored | 400 `previous_response_not_found` |
//! | a `function_call_output` whose `call_id` no `function_call` in the input or the previous response has | 400 |
//! | a reasoning item sent back with `encrypted_content` the mock did not issue, or without it and not stored | 400 |
//! | a `compaction` item whose `encrypted_content` the mock did not issue | 400 `invalid_encrypted_content` |
//! | a reasoning model (`o1`.., `o3`.., `o4`.., `gpt-5`..) | a reasoning item first; its `encrypted_content` with `include: ["reasoning.encrypted_content"]` |
//! | function tools, `tool_choice` not `none`, and the input does not end with a `function_call_output` | a `function_call` of the first function (or the one `tool_choice` names) |
//! | `context_management: [{"type": "compaction", "compact_threshold": N}]` and a context of more than N tokens | a `compaction` item first, then the answer |
//! | anything else | a `message` whose text counts the user turns it saw (so a chain can be checked) |
//!
//! `store` (default true) keeps the response; usage counts the context (about four characters a
//! token), `cached_tokens` the longest context prefix seen before, `reasoning_tokens` 64 on a
//! reasoning model. Streams send the full `response.*` sequence with `sequence_number`s in 7-byte
//! pieces.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::Shared;

mod answer;
pub mod compact;
pub mod socket;
mod stored;
mod stream;
mod validate;

use answer::{Plan, response_object, usage};
pub(super) use stored::{delete, input_items, retrieve};

/// The key the mock expects: `config_for`'s `api_key`.
pub const API_KEY: &str = "sk-upstream-secret";
/// How every answer's text starts; it ends with `(user turns: N)`.
pub const TEXT_PREFIX: &str = "Hello from the mock Responses API!";
pub const CALL_ARGUMENTS: &str = r#"{"city":"Paris","unit":"celsius"}"#;
pub const REASONING_SUMMARY: &str = "The user wants a short answer; nothing to look up.";
pub const REASONING_TOKENS: u64 = 64;

/// The text of an answer that saw `user_turns` user messages.
pub fn answer_text(user_turns: usize) -> String {
    format!("{TEXT_PREFIX} (user turns: {user_turns})")
}

/// A response the mock stored (`store` was not false).
#[derive(Clone, Debug)]
pub struct Stored {
    pub response: Value,
    /// This request's own input items, with ids.
    pub input_items: Vec<Value>,
    /// Everything a follow-up sees: the earlier context, this input and this output.
    pub context: Vec<Value>,
}

pub(super) fn reasoning_model(model: &str) -> bool {
    let b = model.as_bytes();
    model.starts_with("gpt-5") || (b.len() > 1 && b[0] == b'o' && b[1].is_ascii_digit())
}

/// What only the mock can make: a reasoning item's `encrypted_content`, bound to its id and its
/// summary's text.
pub fn encrypted_content(id: &str, summary: &Value) -> String {
    let text: Vec<&str> = summary
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|part| part["text"].as_str())
        .collect();
    let digest = Sha256::digest(format!("mock-openai-reasoning\0{id}\0{}", text.join("\0")));
    format!("gAAAAAB{}", hex::encode(digest))
}

fn error(status: u16, message: &str, param: Option<&str>, code: Option<&str>) -> Response {
    let kind = if status >= 500 {
        "server_error"
    } else {
        "invalid_request_error"
    };
    let body = json!({"error": {"message": message, "type": kind, "param": param, "code": code}});
    (
        StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST),
        axum::Json(body),
    )
        .into_response()
}

fn unauthorized(headers: &HeaderMap) -> Option<Response> {
    let given = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    match given {
        Some(key) if key == API_KEY => None,
        Some(key) => {
            // OpenAI shows a key's first characters only; so does the mock.
            let shown: String = key.chars().take(3).collect();
            Some(error(
                401,
                &format!(
                    "Incorrect API key provided: {shown}***. You can find your API key at https://platform.openai.com/account/api-keys."
                ),
                None,
                Some("invalid_api_key"),
            ))
        }
        None => Some(error(
            401,
            "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (i.e. basic auth username), or as the password field (i.e. user: YOUR_KEY).",
            None,
            None,
        )),
    }
}

/// Input as items of the long form, with ids: what `input_items` lists and a follow-up sees.
fn items(input: &Value, next_id: &mut dyn FnMut(&str) -> String) -> Vec<Value> {
    let raw = match input {
        Value::String(text) => vec![json!({"role": "user", "content": text})],
        Value::Array(items) => items.clone(),
        _ => Vec::new(),
    };
    raw.into_iter()
        .map(|mut item| {
            if item.get("type").is_none() {
                item["type"] = json!("message");
            }
            if item["type"] == "message"
                && let Some(text) = item["content"].as_str()
            {
                let part = if item["role"] == "assistant" {
                    "output_text"
                } else {
                    "input_text"
                };
                item["content"] = json!([{"type": part, "text": text}]);
            }
            if item.get("id").is_none() {
                let prefix = match item["type"].as_str() {
                    Some("function_call_output") => "fco",
                    _ => "msg",
                };
                item["id"] = json!(next_id(prefix));
            }
            item
        })
        .collect()
}

/// An item as the cache sees it: ids and statuses differ between a chain and a resend, and a
/// client may send the keys in another order.
fn cache_form(item: &Value) -> String {
    fn canonical(value: &Value) -> Value {
        match value {
            Value::Object(o) => {
                let mut keys: Vec<&String> = o
                    .keys()
                    .filter(|k| !matches!(k.as_str(), "id" | "status"))
                    .collect();
                keys.sort();
                Value::Object(
                    keys.into_iter()
                        .map(|k| (k.clone(), canonical(&o[k])))
                        .collect(),
                )
            }
            Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
            other => other.clone(),
        }
    }
    canonical(item).to_string()
}

fn tokens(value: &Value) -> u64 {
    fn chars(value: &Value) -> usize {
        match value {
            Value::String(s) => s.chars().count(),
            Value::Array(items) => items.iter().map(chars).sum(),
            Value::Object(o) => o
                .iter()
                .filter(|(k, _)| {
                    !matches!(
                        k.as_str(),
                        "id" | "type" | "status" | "encrypted_content" | "call_id"
                    )
                })
                .map(|(_, v)| chars(v))
                .sum(),
            _ => 0,
        }
    }
    chars(value).div_ceil(4) as u64
}

pub(super) async fn create(
    State(shared): State<std::sync::Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request = super::record(&shared, "/v1/responses", &headers, &body).await;
    if let Some(refused) = unauthorized(&headers) {
        return refused;
    }
    match respond(&shared, &request, None).await {
        Ok((response, _)) if request["stream"] == true => stream::events(&request, &response),
        Ok((response, _)) => axum::Json(response).into_response(),
        Err(refused) => *refused,
    }
}

/// The response to `request` (checked), and all a follow-up sees of it; or the refusal. A
/// `previous_response_id` names a stored response, or `connection`'s last (a socket's, kept
/// whether stored or not).
async fn respond(
    shared: &Shared,
    request: &Value,
    connection: Option<&(String, Stored)>,
) -> Result<(Value, Stored), Box<Response>> {
    if let Err(r) = validate::request(request) {
        return Err(Box::new(error(400, &r.message, r.param.as_deref(), r.code)));
    }
    let mut store = shared.responses.lock().await;
    let mut counter = shared.response_ids.lock().await;
    let mut next_id = |prefix: &str| {
        *counter += 1;
        format!("{prefix}_68af{:040x}", *counter)
    };
    let input = items(&request["input"], &mut next_id);
    let context = context_of(&store, connection, request, &input)?;
    let plan = Plan::new(request, &input, &context);
    let mut output = plan.output(&mut next_id);
    // Server-side compaction: a context over the threshold is compacted first.
    if compact::due(request, &context) {
        output.insert(0, compact::item(&next_id("cmp")));
    }
    let id = next_id("resp");
    let usage = usage(shared, request, &context, &output, plan.reasoning).await;
    let response = response_object(request, &id, "completed", &output, Some(usage));
    let mut full = context.clone();
    full.extend(output.iter().cloned());
    let stored = Stored {
        response: response.clone(),
        input_items: input,
        context: full,
    };
    if request["store"] != false {
        store.insert(id, stored.clone());
    }
    Ok((response, stored))
}

/// What a request's answer sees: the context of its `previous_response_id`, then its `input`
/// items, each checked against what came before it; or the refusal.
fn context_of(
    store: &std::collections::HashMap<String, Stored>,
    connection: Option<&(String, Stored)>,
    request: &Value,
    input: &[Value],
) -> Result<Vec<Value>, Box<Response>> {
    let mut context = match request["previous_response_id"].as_str() {
        None => Vec::new(),
        Some(id) => match (connection.filter(|(last, _)| last == id))
            .map(|(_, stored)| stored)
            .or_else(|| store.get(id))
        {
            Some(stored) => stored.context.clone(),
            None => {
                return Err(Box::new(error(
                    400,
                    &format!("Previous response with id '{id}' not found."),
                    Some("previous_response_id"),
                    Some("previous_response_not_found"),
                )));
            }
        },
    };
    let known_ids: Vec<String> = (store.values())
        .chain(connection.map(|(_, stored)| stored))
        .flat_map(|s| {
            s.context
                .iter()
                .filter_map(|i| i["id"].as_str().map(str::to_owned))
        })
        .collect();
    for (i, item) in input.iter().enumerate() {
        if let Some(refused) = check_against_context(item, i, &context, &known_ids) {
            return Err(Box::new(refused));
        }
        context.push(item.clone());
    }
    Ok(context)
}

/// A refusal of the first field of `fields` that `allowed` does not name, if any.
fn unknown_parameter(
    fields: &serde_json::Map<String, Value>,
    allowed: &[&str],
) -> Option<Response> {
    let unknown = fields.keys().find(|k| !allowed.contains(&k.as_str()))?;
    Some(error(
        400,
        &format!("Unknown parameter: '{unknown}'."),
        Some(unknown),
        Some("unknown_parameter"),
    ))
}

/// The checks that need what came before: a tool output answers a call, reasoning comes back
/// as the mock issued it. The refusal, if any.
fn check_against_context(
    item: &Value,
    i: usize,
    context: &[Value],
    stored_ids: &[String],
) -> Option<Response> {
    match item["type"].as_str() {
        Some("function_call_output") => {
            let call_id = item["call_id"].as_str().unwrap_or_default();
            let called = context
                .iter()
                .any(|c| c["type"] == "function_call" && c["call_id"] == call_id);
            if !called {
                return Some(error(
                    400,
                    &format!("No tool call found for function call output with call_id {call_id}."),
                    Some("input"),
                    None,
                ));
            }
        }
        Some("reasoning") => {
            let id = item["id"].as_str().unwrap_or_default();
            match item["encrypted_content"].as_str() {
                Some(sealed) if sealed == encrypted_content(id, &item["summary"]) => {}
                Some(_) => {
                    return Some(error(
                        400,
                        &format!("The encrypted content for item {id} could not be verified."),
                        Some(&format!("input[{i}].encrypted_content")),
                        Some("invalid_encrypted_content"),
                    ));
                }
                None if stored_ids.iter().any(|s| s == id) => {}
                None => {
                    return Some(error(
                        404,
                        &format!(
                            "Item with id '{id}' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input."
                        ),
                        Some("input"),
                        None,
                    ));
                }
            }
        }
        Some("compaction") => {
            let content = item["encrypted_content"].as_str().unwrap_or_default();
            if !compact::unsealed(content) {
                return Some(error(
                    400,
                    "The encrypted content of the compaction item could not be verified.",
                    Some(&format!("input[{i}].encrypted_content")),
                    Some("invalid_encrypted_content"),
                ));
            }
        }
        Some("item_reference") => {
            let id = item["id"].as_str().unwrap_or_default();
            if !stored_ids.iter().any(|s| s == id) {
                return Some(error(
                    404,
                    &format!("Item with id '{id}' not found."),
                    Some("input"),
                    None,
                ));
            }
        }
        _ => {}
    }
    None
}

/// `POST /v1/responses/input_tokens`: OpenAI's count of a Responses request's input, which
/// takes the request's context fields only (no `stream`, `store` or sampling settings).
pub(super) async fn input_tokens(
    State(shared): State<std::sync::Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request = super::record(&shared, "/v1/responses/input_tokens", &headers, &body).await;
    if let Some(refused) = unauthorized(&headers) {
        return refused;
    }
    const ALLOWED: [&str; 11] = [
        "conversation",
        "input",
        "instructions",
        "model",
        "parallel_tool_calls",
        "previous_response_id",
        "reasoning",
        "text",
        "tool_choice",
        "tools",
        "truncation",
    ];
    let Some(fields) = request.as_object() else {
        return error(400, "The body must be an object.", None, None);
    };
    if let Some(refused) = unknown_parameter(fields, &ALLOWED) {
        return refused;
    }
    if let Err(r) = validate::prompt(fields) {
        return error(400, &r.message, r.param.as_deref(), r.code);
    }
    let counted = tokens(&request["input"]) + tokens(&request["instructions"]);
    axum::Json(json!({"object": "response.input_tokens", "input_tokens": counted})).into_response()
}
