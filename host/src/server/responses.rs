//! The stored side of OpenAI's Responses API: `GET /v1/responses/{id}`, `DELETE
//! /v1/responses/{id}` and `GET /v1/responses/{id}/input_items`, answered from the responses the
//! gateway kept (`ledger::responses`), whichever upstream produced them.
//!
//! Auth is that of the `/v1/*` endpoints; a response of another project is a 404 like one that
//! does not exist, so that ids cannot be probed across projects.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::store_call::blocking;
use crate::clip::echo;
use crate::error::ApiError;
use crate::pipeline::caller as auth;
use crate::state::AppState;

/// Bytes of a response id, at most: longer than any the gateway or an upstream gives.
const ID_MAX: usize = 128;
const LIMIT_DEFAULT: usize = 20;
const LIMIT_MAX: usize = 100;

pub async fn retrieve(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let project = caller_project(&state, &headers).await?;
    let stored = find(&state, project, id).await?;
    Ok(json_text(stored.response))
}

pub async fn delete(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let project = caller_project(&state, &headers).await?;
    let id = possible(id)?;
    let deleted = blocking(&state, {
        let id = id.clone();
        move |store| store.delete_response(&project, &id)
    })
    .await?;
    if !deleted {
        return Err(ApiError::ResponseNotFound(id));
    }
    Ok(Json(
        json!({"id": echo(&id), "object": "response", "deleted": true}),
    ))
}

/// Other parameters (`include`, which the SDKs may send) are accepted and ignored: stored
/// items are returned whole.
#[derive(Deserialize)]
pub struct ItemsQuery {
    #[serde(default)]
    limit: Option<String>,
    #[serde(default)]
    order: Option<String>,
    #[serde(default)]
    after: Option<String>,
}

pub async fn input_items(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(query): Query<ItemsQuery>,
) -> Result<Json<Value>, ApiError> {
    let project = caller_project(&state, &headers).await?;
    let limit = match query.limit.as_deref() {
        None => LIMIT_DEFAULT,
        Some(text) => match text.parse::<usize>() {
            Ok(n) if (1..=LIMIT_MAX).contains(&n) => n,
            _ => {
                return Err(invalid(
                    "limit",
                    "'limit' must be an integer from 1 to 100.",
                ));
            }
        },
    };
    let ascending = match query.order.as_deref() {
        None | Some("desc") => false,
        Some("asc") => true,
        Some(_) => return Err(invalid("order", "'order' must be 'asc' or 'desc'.")),
    };
    let stored = find(&state, project, id).await?;
    let mut items: Vec<Value> = serde_json::from_str(&stored.input_items)
        .map_err(|_| ApiError::LedgerUnavailable("a stored response does not parse".into()))?;
    if !ascending {
        items.reverse();
    }
    let start = match query.after.as_deref() {
        None => 0,
        Some(after) => match items.iter().position(|item| item["id"] == after) {
            Some(i) => i + 1,
            None => return Err(invalid("after", "'after' names no item of this response.")),
        },
    };
    let page: Vec<Value> = items.iter().skip(start).take(limit).cloned().collect();
    let has_more = start + page.len() < items.len();
    Ok(Json(json!({
        "object": "list",
        "data": page,
        "first_id": page.first().map(|item| item["id"].clone()),
        "last_id": page.last().map(|item| item["id"].clone()),
        "has_more": has_more,
    })))
}

async fn caller_project(state: &AppState, headers: &HeaderMap) -> Result<String, ApiError> {
    let required = state.gateway.load().config.auth.required;
    Ok(auth::caller(state, headers, required).await?.project)
}

async fn find(
    state: &AppState,
    project: String,
    id: String,
) -> Result<crate::ledger::responses::StoredResponse, ApiError> {
    let id = possible(id)?;
    let found = blocking(state, {
        let id = id.clone();
        move |store| store.response(&project, &id)
    })
    .await?;
    found.ok_or(ApiError::ResponseNotFound(id))
}

/// An id some response could have; any other is not found without asking the store.
fn possible(id: String) -> Result<String, ApiError> {
    if id.is_empty() || id.len() > ID_MAX {
        return Err(ApiError::ResponseNotFound(id));
    }
    Ok(id)
}

fn invalid(param: &str, message: &str) -> ApiError {
    ApiError::InvalidField {
        param: param.to_owned(),
        message: message.to_owned(),
    }
}

/// A stored JSON document, sent as it was kept.
fn json_text(body: String) -> Response {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            axum::http::HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}
