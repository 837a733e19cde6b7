//! OpenAI's Batch API: create (the key's budget and limits checked against what the batch may
//! cost before it is submitted), retrieve (asked of the upstream unless it has ended), cancel
//! and list. Each batch is its project's: another project's id is not found.
//!
//! What a batch may cost is its input file's estimate, made when its lines were checked: each
//! line's prompt tokens by the gateway's tokenizer plus its `max_tokens` (or
//! `max_completion_tokens`; 1,024 when it sets neither), at the catalog's batch price. The limit
//! rules see the batch as one request of that many tokens and that cost; an admitted batch's
//! estimate is settled at once, so it counts against the key's budget from its submission. The
//! ledger then holds what each line really cost, once the batch has ended.

use axum::http::HeaderMap;
use serde_json::{Value, json};

use super::anthropic;
use super::lines::ENDPOINTS;
use super::objects::{self, batch_object};
use super::upstream::{self, Api, Call};
use super::{caller, poll, possible, store_call};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::gateway::Gateway;
use crate::ledger::StoredBatch;
use crate::ledger::time::now_us;
use crate::limits::{Facts, Refusal};
use crate::pipeline::request::raw_json;
use crate::plugins::Settlement;
use crate::state::AppState;

const LIST_DEFAULT: usize = 20;
const LIST_MAX: usize = 100;
/// Bytes of a create request's body, at most (`metadata` is the largest part).
pub const CREATE_MAX: usize = 64 << 10;

fn invalid(param: &str, message: impl Into<String>) -> ApiError {
    ApiError::InvalidField {
        param: param.to_owned(),
        message: message.into(),
    }
}

/// `POST /v1/batches`.
pub async fn create(state: &AppState, headers: &HeaderMap, body: &[u8]) -> Result<Value, ApiError> {
    let caller = caller(state, headers).await?;
    if body.len() > CREATE_MAX {
        return Err(ApiError::BodyTooLarge(CREATE_MAX));
    }
    let mut fields =
        raw_json::object(body, 16).map_err(|e| ApiError::InvalidJson(e.to_string()))?;
    let text = |fields: &raw_json::Fields, name: &str| -> Result<String, ApiError> {
        fields
            .get(name)
            .and_then(|raw| raw_json::string(raw))
            .ok_or_else(|| invalid(name, format!("'{name}' is required, a string.")))
    };
    let input_file_id = text(&fields, "input_file_id")?;
    let endpoint = text(&fields, "endpoint")?;
    if !ENDPOINTS.iter().any(|(e, _)| *e == endpoint) {
        return Err(invalid(
            "endpoint",
            format!(
                "'endpoint' must be one of {}.",
                ENDPOINTS.map(|(e, _)| e).join(", ")
            ),
        ));
    }
    if text(&fields, "completion_window")? != "24h" {
        return Err(invalid(
            "completion_window",
            "'completion_window' must be '24h'.",
        ));
    }
    let project = caller.project.clone();
    let file = {
        let id = possible(input_file_id.clone(), "File")?;
        store_call(state, move |store| store.file(&project, &id))
            .await?
            .ok_or(ApiError::ObjectNotFound {
                what: "File",
                id: input_file_id.clone(),
            })?
    };
    let Some(model) = file.model.clone().filter(|_| file.purpose == "batch") else {
        return Err(invalid(
            "input_file_id",
            "The file was not uploaded with purpose 'batch'.",
        ));
    };
    if !caller.limits.allows_model(&model) {
        return Err(ApiError::ModelNotAllowed(model));
    }
    let gateway = state.gateway.load_full();
    check_budget(&gateway, &caller, &model, &file).await?;
    let provider = upstream::provider(&gateway, &file.provider)?;
    let raw = match upstream::api(provider) {
        Some(Api::Anthropic) => {
            if endpoint != "/v1/chat/completions" {
                return Err(invalid(
                    "endpoint",
                    "Anthropic's Message Batches run '/v1/chat/completions' only.",
                ));
            }
            let dir = gateway.config.batches.spool_dir();
            let held = anthropic::held_path(&dir, &file.id);
            let body = anthropic::requests_body(&held, &dir).await?;
            let response =
                upstream::send(state, &gateway, provider, Call::SubmitRequests(&body)).await?;
            let asked = serde_json::to_value(&fields).unwrap_or_default();
            upstream::batch_json(provider, response, &asked).await?
        }
        Some(Api::OpenAi) | None => {
            if let Ok(upstream) = serde_json::value::to_raw_value(&file.upstream_id) {
                fields.insert("input_file_id".to_owned(), upstream);
            }
            let request = serde_json::to_string(&fields).unwrap_or_default();
            let response =
                upstream::send(state, &gateway, provider, Call::CreateBatch(request)).await?;
            upstream::json(provider, response).await?
        }
    };
    let mut batch = StoredBatch {
        project: caller.project,
        id: objects::new_id("batch_"),
        provider: provider.name.to_string(),
        upstream_id: objects::upstream_id(&provider.name, raw.get("id"))?,
        api_key_id: caller.key_id,
        model,
        input_file_id: file.id,
        created_us: now_us(),
        status: raw
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or("validating")
            .chars()
            .take(32)
            .collect(),
        ..StoredBatch::default()
    };
    let object = batch_object(&batch, raw);
    batch.object = object.to_string();
    store_call(state, move |store| store.put_batch(&batch)).await?;
    Ok(object)
}

/// The limit rules (the config's and the key's own budget) on what the batch may cost; an
/// admitted estimate is spent at once.
async fn check_budget(
    gateway: &Gateway,
    caller: &Caller,
    model: &str,
    file: &crate::ledger::StoredFile,
) -> Result<(), ApiError> {
    if gateway.limits.is_empty_for(&caller.limits) {
        return Ok(());
    }
    let tokens = u32::try_from(file.estimate_tokens).unwrap_or(u32::MAX);
    let facts = Facts {
        project: &caller.project,
        api_key_id: caller.key_id.as_deref(),
        user_id: None,
        model,
        estimated_input_tokens: tokens,
        max_output_tokens: Some(0),
        estimated_cost_micros: file.estimate_micros,
        key_limits: &caller.limits,
    };
    let admission = gateway
        .limits
        .admit(&facts)
        .await
        .map_err(|refusal| match refusal {
            Refusal::Denied(denial) => ApiError::LimitExceeded(denial),
            Refusal::Unavailable(failure) => ApiError::limits_unavailable(failure),
        })?;
    admission
        .settle(Settlement {
            input_tokens: u64::from(tokens),
            output_tokens: 0,
            cost_micros: file.estimate_micros,
            succeeded: true,
        })
        .await;
    Ok(())
}

/// The caller's batch `id`, as the ledger has it.
async fn find(state: &AppState, headers: &HeaderMap, id: String) -> Result<StoredBatch, ApiError> {
    let project = caller(state, headers).await?.project;
    let id = possible(id, "Batch")?;
    let lookup = id.clone();
    store_call(state, move |store| store.batch(&project, &lookup))
        .await?
        .ok_or(ApiError::ObjectNotFound { what: "Batch", id })
}

fn object_of(batch: &StoredBatch) -> Value {
    serde_json::from_str(&batch.object).unwrap_or_else(|_| json!({"id": batch.id}))
}

/// `GET /v1/batches/{id}`: asked of the upstream now, unless it has ended and been metered.
pub async fn retrieve(
    state: &AppState,
    headers: &HeaderMap,
    id: String,
) -> Result<Value, ApiError> {
    let batch = find(state, headers, id).await?;
    let batch = poll::refresh(state, batch).await?;
    Ok(object_of(&batch))
}

/// `POST /v1/batches/{id}/cancel`.
pub async fn cancel(state: &AppState, headers: &HeaderMap, id: String) -> Result<Value, ApiError> {
    let batch = find(state, headers, id).await?;
    let gateway = state.gateway.load_full();
    let provider = upstream::provider(&gateway, &batch.provider)?;
    let response = upstream::send(
        state,
        &gateway,
        provider,
        Call::CancelBatch(&batch.upstream_id),
    )
    .await?;
    let raw = upstream::batch_json(provider, response, &object_of(&batch)).await?;
    let status: String = raw
        .get("status")
        .and_then(Value::as_str)
        .unwrap_or("cancelling")
        .chars()
        .take(32)
        .collect();
    let object = batch_object(&batch, raw);
    let text = object.to_string();
    let (project, id) = (batch.project, batch.id);
    store_call(state, move |store| {
        store.update_batch(&project, &id, &status, &text)
    })
    .await?;
    Ok(object)
}

/// `GET /v1/batches`: newest first, as last seen (the poller keeps them current).
pub async fn list(
    state: &AppState,
    headers: &HeaderMap,
    after: Option<String>,
    limit: Option<String>,
) -> Result<Value, ApiError> {
    let project = caller(state, headers).await?.project;
    let limit = super::page(limit.as_deref(), LIST_DEFAULT, LIST_MAX)?;
    let mut batches = store_call(state, move |store| {
        store.batches(&project, after.as_deref(), limit + 1)
    })
    .await?;
    let has_more = batches.len() > limit;
    batches.truncate(limit);
    Ok(objects::list(
        batches.iter().map(object_of).collect(),
        has_more,
    ))
}
