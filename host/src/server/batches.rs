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
use crate::pipeline::ApiError;
use crate::state::AppState;

/// A list's query (`GET /v1/files`, `GET /v1/batches`); `order` is accepted as `desc` only, the
/// order both are listed in.
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
    fn check(&self) -> Result<(), ApiError> {
        match self.order.as_deref() {
            None | Some("desc") => Ok(()),
            Some(_) => Err(ApiError::InvalidField {
                param: "order".to_owned(),
                message: "'order' may only be 'desc' here.".to_owned(),
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
    query.check()?;
    files::list(&state, &headers, query.purpose, query.after, query.limit)
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
    let upstream = files::content(&state, &headers, id).await?;
    let content_type = upstream
        .headers()
        .get(header::CONTENT_TYPE)
        .cloned()
        .unwrap_or_else(|| HeaderValue::from_static("application/octet-stream"));
    let mut response = Body::from_stream(upstream.bytes_stream()).into_response();
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
    query.check()?;
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
