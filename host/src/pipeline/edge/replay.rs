//! Responses kept and replayed: an answer the client asks to keep (`store`, the default) is
//! kept in the ledger's database whichever upstream answered, and a `previous_response_id` is
//! replayed from there into `input`, so that a conversation can move between providers and
//! replicas.

use serde_json::Value;
use serde_json::value::RawValue;

use super::keeper::Keeper;
use crate::error::ApiError;
use crate::ledger::responses::{self, HistoryError};
use crate::pipeline::context::Context;
use crate::pipeline::request::raw_json::{self, Fields};

/// Responses: replays `previous_response_id`'s conversation into `input`, and says where the
/// answer is to be kept (none with `store: false`).
pub(super) async fn replay(cx: &Context, fields: &mut Fields) -> Result<Option<Keeper>, ApiError> {
    let store = cx.ledger.store();
    let project = cx.caller.project.clone();
    let keep = fields.get("store").is_none_or(|raw| raw.get() != "false");
    // Left in the body for the plugin (the response object echoes it); out of what a native
    // target gets (see `decode`), since the conversation is replayed into `input` here.
    let previous_id = fields
        .get("previous_response_id")
        .and_then(|raw| raw_json::string(raw));
    let mut input = input_items(fields.get("input").map(|raw| &**raw));
    let mut kept = input.clone();
    kept.iter_mut().for_each(long_form);
    if let Some(previous) = &previous_id {
        let history = {
            let (store, project, previous) = (store.clone(), project.clone(), previous.clone());
            tokio::task::spawn_blocking(move || {
                responses::history(store.as_ref(), &project, &previous)
            })
            .await
            .map_err(|e| ApiError::LedgerUnavailable(e.to_string()))?
        };
        let mut history = history.map_err(|e| match e {
            HistoryError::NotFound => ApiError::PreviousResponseNotFound(previous.clone()),
            HistoryError::TooLong => ApiError::ConversationTooLong(previous.clone()),
            HistoryError::Corrupt(detail) | HistoryError::Store(detail) => {
                ApiError::LedgerUnavailable(detail)
            }
        })?;
        history.retain_mut(replayable);
        history.append(&mut input);
        input = history;
    }
    if previous_id.is_some() {
        let raw = serde_json::value::to_raw_value(&input)
            .map_err(|e| ApiError::InvalidJson(e.to_string()))?;
        fields.insert("input".to_owned(), raw);
    }
    Ok(keep.then(|| Keeper {
        store,
        project,
        previous_id,
        input_items: Value::Array(kept).to_string(),
    }))
}

/// A request's `input` as items: a string is one user message.
fn input_items(input: Option<&RawValue>) -> Vec<Value> {
    let Some(raw) = input else {
        return Vec::new();
    };
    match serde_json::from_str::<Value>(raw.get()) {
        Ok(Value::String(text)) => vec![serde_json::json!({
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": text}],
        })],
        Ok(Value::Array(items)) => items,
        // Not the API's shape: the dialect plugin names the fault.
        Ok(_) | Err(_) => Vec::new(),
    }
}

/// An input item as `GET /v1/responses/{id}/input_items` lists it: typed, with an id, and a
/// message's text as content parts (`input_text`, or `output_text` for the assistant's).
fn long_form(item: &mut Value) {
    let Value::Object(fields) = item else {
        return;
    };
    if !fields.contains_key("type") && fields.contains_key("role") {
        fields.insert("type".to_owned(), Value::from("message"));
    }
    if fields.get("type").and_then(Value::as_str) == Some("message")
        && let Some(Value::String(text)) = fields.get("content")
    {
        let part = match fields.get("role").and_then(Value::as_str) {
            Some("assistant") => "output_text",
            _ => "input_text",
        };
        let content = serde_json::json!([{"type": part, "text": text}]);
        fields.insert("content".to_owned(), content);
    }
    if !fields.contains_key("id") {
        let id = format!("msg_{}", uuid::Uuid::new_v4().simple());
        fields.insert("id".to_owned(), Value::String(id));
    }
}

/// Whether a kept item can be sent again, made so: ids and statuses of kept items are the
/// gateway's (or another upstream's), so they are left out; a reasoning item means something
/// only with its encrypted content.
fn replayable(item: &mut Value) -> bool {
    let Value::Object(fields) = item else {
        return false;
    };
    match fields.get("type").and_then(Value::as_str) {
        Some("reasoning") => fields.contains_key("encrypted_content"),
        Some("message" | "function_call" | "function_call_output") | None => {
            fields.remove("id");
            fields.remove("status");
            true
        }
        Some(_) => true,
    }
}
