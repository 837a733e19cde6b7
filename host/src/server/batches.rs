//! The handlers of OpenAI's Files and Batch APIs (`/v1/files`, `/v1/batches`): each turns its
//! HTTP request into a call of [`crate::batches`], and the answer into a response.

use std::sync::Arc;

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;

use crate::batches::{files, jobs};
use crate::error::ApiError;
use crate::ledger::Order;
use crate::state::AppState;

/// A list's query (`GET /v1/files`, `GET /v1/batches`). `order` is the Files API's (`asc` or
/// `desc`, by creation); the Batch API defines none, so there only its own order, `desc`, passes.
#[derive(Deserialize)]
pub struct ListQuery {
    #[serde(default)]
    after: Option<String>,
    #[serde(default)]
    limit: Option<String>,
    #[serde(default)]
    purpose: Option<String>,
    #[serde(default)]
    order: Option<String>,
}

impl ListQuery {
    /// The order asked for; `asc` only where `asc_allowed` (the Files API).
    fn order(&self, asc_allowed: bool) -> Result<Order, ApiError> {
        match self.order.as_deref() {
            None | Some("desc") => Ok(Order::Desc),
            Some("asc") if asc_allowed => Ok(Order::Asc),
            Some(_) => Err(ApiError::InvalidField {
                param: "order".to_owned(),
                message: if asc_allowed {
                    "'order' must be 'asc' or 'desc'.".to_owned()
                } else {
                    "'order' may only be 'desc' here.".to_owned()
                },
            }),
        }
    }
}

pub async fn upload_file(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Value>, ApiError> {
    files::upload(&state, &headers, body).await.map(Json)
}

pub async fn list_files(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Query(query): Query<ListQuery>,
) -> Result<Json<Value>, ApiError> {
    let order = query.order(true)?;
    files::list(
        &state,
        &headers,
        query.purpose,
        query.after,
        order,
        query.limit,
    )
    .await
    .map(Json)
}

pub async fn retrieve_file(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    files::retrieve(&state, &headers, id).await.map(Json)
}

pub async fn delete_file(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    files::delete(&state, &headers, id).await.map(Json)
}

/// The file's bytes, streamed from the upstream as they arrive.
pub async fn file_content(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let content = files::content(&state, &headers, id).await?;
    let content_type = HeaderValue::from_str(&content.content_type)
        .unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream"));
    let mut response = Body::from_stream(content.body).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, content_type);
    Ok(response)
}

pub async fn create_batch(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Value>, ApiError> {
    // Read here under the endpoint's own bound, so that a longer body is OpenAI's JSON 413.
    let body = axum::body::to_bytes(body, jobs::CREATE_MAX)
        .await
        .map_err(|_| ApiError::BodyTooLarge(jobs::CREATE_MAX))?;
    jobs::create(&state, &headers, &body).await.map(Json)
}

pub async fn list_batches(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Query(query): Query<ListQuery>,
) -> Result<Json<Value>, ApiError> {
    query.order(false)?;
    jobs::list(&state, &headers, query.after, query.limit)
        .await
        .map(Json)
}

pub async fn retrieve_batch(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    jobs::retrieve(&state, &headers, id).await.map(Json)
}

pub async fn cancel_batch(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    jobs::cancel(&state, &headers, id).await.map(Json)
}
