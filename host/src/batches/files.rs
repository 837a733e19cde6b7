//! OpenAI's Files API: upload (a batch input file's lines checked first), list, retrieve,
//! delete and content. Each file is its project's: another project's id is not found.
//!
//! A file of purpose `batch` goes to the provider entry its lines' model leads to; a file of
//! another purpose (passed on as it came) to the first entry that runs the Files API.

use axum::body::Body;
use axum::http::HeaderMap;
use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use serde_json::{Value, json};

use super::guarded;
use super::lines::LineChecker;
use super::objects::{self, file_object};
use super::results::{self, Results};
use super::upstream::{self, Api, Call, DIALECT};
use super::{anthropic, caller, possible, spool, store_call};
use crate::error::ApiError;
use crate::ledger::time::now_us;
use crate::ledger::{Order, StoredFile};
use crate::state::AppState;

/// Files listed at most per page (OpenAI's bound), and by default.
const LIST_MAX: usize = 10_000;

/// `POST /v1/files`.
pub async fn upload(state: &AppState, headers: &HeaderMap, body: Body) -> Result<Value, ApiError> {
    let caller = caller(state, headers).await?;
    let gateway = state.gateway.load_full();
    let config = &gateway.config.batches;
    let dir = config.spool_dir();
    let form = spool::read_form(headers, body, &dir, config.max_file_bytes).await?;
    // What the client sent, not the rewritten lines sent on.
    let uploaded_bytes = i64::try_from(form.file.bytes).unwrap_or(i64::MAX);
    let (file, checked) = if form.purpose == "batch" {
        let mut checker = LineChecker::new(&gateway, &caller.limits);
        let rewritten = spool::check_lines(&form.file, &dir, &mut checker).await?;
        let checked = checker.finish()?;
        let model = &checked.model;
        let guarded = guarded::lines(state, &gateway, &caller, model, rewritten, &dir).await?;
        (guarded, Some(checked))
    } else {
        guarded::other_purpose(&gateway, &caller)?;
        (form.file, None)
    };
    let provider = match &checked {
        Some(checked) => upstream::provider(&gateway, &checked.provider)?,
        None => gateway
            .providers
            .iter()
            .find(|p| p.native.iter().any(|d| d == DIALECT))
            .ok_or_else(|| ApiError::InvalidField {
                param: "purpose".to_owned(),
                message: "No provider of this gateway runs OpenAI's Files API.".to_owned(),
            })?,
    };
    let id = objects::new_id("file-");
    let upstream_id = match upstream::api(provider) {
        // Anthropic keeps no files: the gateway holds the lines, translated.
        Some(Api::Anthropic) => {
            let held = anthropic::held_path(&dir, &id);
            anthropic::translate_lines(provider, &file, &held).await?;
            id.clone()
        }
        Some(Api::OpenAi) | None => {
            let response = upstream::send(
                state,
                &gateway,
                provider,
                Call::UploadFile {
                    purpose: &form.purpose,
                    fields: &form.fields,
                    filename: &form.filename,
                    file: &file,
                },
            )
            .await?;
            let answer = upstream::json(provider, response).await?;
            objects::upstream_id(&provider.name, answer.get("id"))?
        }
    };
    let stored = StoredFile {
        project: caller.project,
        id,
        provider: provider.name.to_string(),
        upstream_id,
        purpose: form.purpose,
        filename: form.filename,
        bytes: uploaded_bytes,
        created_us: now_us(),
        model: checked.as_ref().map(|c| c.model.clone()),
        lines: checked
            .as_ref()
            .map_or(0, |c| i64::try_from(c.lines).unwrap_or(i64::MAX)),
        estimate_micros: checked.as_ref().and_then(|c| c.estimate_micros),
        estimate_tokens: checked
            .as_ref()
            .map_or(0, |c| i64::try_from(c.estimate_tokens).unwrap_or(i64::MAX)),
    };
    let object = file_object(&stored);
    store_call(state, move |store| store.put_file(&stored)).await?;
    Ok(object)
}

/// The caller's file `id`.
pub async fn find(
    state: &AppState,
    headers: &HeaderMap,
    id: String,
) -> Result<StoredFile, ApiError> {
    let project = caller(state, headers).await?.project;
    let id = possible(id, "File")?;
    let lookup = id.clone();
    store_call(state, move |store| store.file(&project, &lookup))
        .await?
        .ok_or(ApiError::ObjectNotFound { what: "File", id })
}

/// `GET /v1/files/{id}`.
pub async fn retrieve(
    state: &AppState,
    headers: &HeaderMap,
    id: String,
) -> Result<Value, ApiError> {
    Ok(file_object(&find(state, headers, id).await?))
}

/// `GET /v1/files`: newest first, `after` one the last page ended with.
pub async fn list(
    state: &AppState,
    headers: &HeaderMap,
    purpose: Option<String>,
    after: Option<String>,
    order: Order,
    limit: Option<String>,
) -> Result<Value, ApiError> {
    let project = caller(state, headers).await?.project;
    let limit = super::page(limit.as_deref(), LIST_MAX, LIST_MAX)?;
    let mut files = store_call(state, move |store| {
        store.files(
            &project,
            purpose.as_deref(),
            after.as_deref(),
            order,
            limit + 1,
        )
    })
    .await?;
    let has_more = files.len() > limit;
    files.truncate(limit);
    Ok(objects::list(
        files.iter().map(file_object).collect(),
        has_more,
    ))
}

/// `DELETE /v1/files/{id}`: at the upstream, then here.
pub async fn delete(state: &AppState, headers: &HeaderMap, id: String) -> Result<Value, ApiError> {
    let file = find(state, headers, id).await?;
    let gateway = state.gateway.load_full();
    let provider = upstream::provider(&gateway, &file.provider)?;
    if upstream::api(provider) == Some(Api::Anthropic) {
        if results::named(&file.upstream_id).is_none() {
            let held = anthropic::held_path(&gateway.config.batches.spool_dir(), &file.id);
            if let Err(e) = tokio::fs::remove_file(held).await {
                tracing::warn!(file = %file.id, "removing a held batch file: {e}");
            }
        }
    } else {
        let response = upstream::send(
            state,
            &gateway,
            provider,
            Call::DeleteFile(&file.upstream_id),
        )
        .await?;
        // The answer says no more than the status did.
        drop(response);
    }
    let (project, id) = (file.project.clone(), file.id.clone());
    store_call(state, move |store| store.delete_file(&project, &id)).await?;
    Ok(json!({"id": file.id, "object": "file", "deleted": true}))
}

/// A file's content, as it is read.
pub struct Content {
    pub content_type: String,
    pub body: BoxStream<'static, Result<Bytes, ApiError>>,
}

/// `GET /v1/files/{id}/content`: the upstream's answer (or, for Anthropic, the lines the
/// gateway holds or the batch's results translated), streamed through as it arrives.
pub async fn content(
    state: &AppState,
    headers: &HeaderMap,
    id: String,
) -> Result<Content, ApiError> {
    let file = find(state, headers, id).await?;
    let gateway = state.gateway.load_full();
    let provider = upstream::provider(&gateway, &file.provider)?;
    let jsonl = "application/jsonl".to_owned();
    if upstream::api(provider) == Some(Api::Anthropic) {
        if let Some((batch, kind)) = results::named(&file.upstream_id) {
            let response =
                upstream::send(state, &gateway, provider, Call::BatchResults(batch)).await?;
            let model = file.model.clone().unwrap_or_default();
            let body = Results::new(provider, response, model, kind).into_stream();
            return Ok(Content {
                content_type: jsonl,
                body,
            });
        }
        let held = anthropic::held_path(&gateway.config.batches.spool_dir(), &file.id);
        let reader = tokio::fs::File::open(held)
            .await
            .map_err(|e| ApiError::SpoolFailed(e.to_string()))?;
        let body = tokio_util::io::ReaderStream::with_capacity(reader, 256 << 10)
            .map(|chunk| chunk.map_err(|e| ApiError::SpoolFailed(e.to_string())))
            .boxed();
        return Ok(Content {
            content_type: jsonl,
            body,
        });
    }
    let response = upstream::send(
        state,
        &gateway,
        provider,
        Call::FileContent(&file.upstream_id),
    )
    .await?;
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/octet-stream")
        .to_owned();
    let name = provider.name.to_string();
    let body = response
        .bytes_stream()
        .map(move |chunk| {
            chunk.map_err(|e| ApiError::UpstreamUnreachable {
                provider: name.clone(),
                detail: e.without_url().to_string(),
            })
        })
        .boxed();
    Ok(Content { content_type, body })
}
