//! OpenAI's Files and Batch APIs through the gateway: `/v1/files` and `/v1/batches`.
//!
//! - [`lines`]: a batch input file's lines checked (JSON, unique `custom_id`, endpoint, a model
//!   the key may use, one provider entry for all) and rewritten for the upstream.
//! - [`target`]: where a line's model leads, a virtual model's included.
//! - [`spool`]: an upload held on disk while its lines are checked, then streamed upstream;
//!   [`guarded`]: its lines' bodies through the request guards.
//! - [`upstream`]: one Files or Batch API call at a provider entry, shaped by its plugin.
//! - [`objects`]: file and batch objects with the gateway's ids (each its project's).
//! - [`files`]: the Files API; [`jobs`]: the Batch API, budgets checked before submission.
//! - [`meter`]: a finished batch's output metered, one record per line at the batch price.
//! - [`poll`]: batches followed to their end, and metered once across replicas.
//!
//! - [`anthropic`]: batches run on Anthropic's Message Batches, lines translated as live
//!   requests are; [`results`]: its results translated back into OpenAI's output lines.
//!
//! A provider runs these APIs when its plugin lists [`upstream::DIALECT`] in
//! `native-dialects`: `openai` (for OpenAI's own base URL, or with `batches: true`) and
//! `azure-openai` do; `anthropic` lists [`anthropic::DIALECT`] instead.

pub mod anthropic;
pub mod files;
mod guarded;
pub mod jobs;
pub mod lines;
mod meter;
pub mod objects;
pub mod poll;
pub mod results;
pub mod spool;
mod target;
pub mod upstream;

use axum::http::HeaderMap;

use crate::error::ApiError;
use crate::ledger::Store;
use crate::pipeline::caller as auth;
use crate::state::AppState;

/// Runs `query` on the ledger's store on a blocking thread.
pub async fn store_call<T: Send + 'static>(
    state: &AppState,
    query: impl FnOnce(&dyn Store) -> anyhow::Result<T> + Send + 'static,
) -> Result<T, ApiError> {
    let store = state.ledger.store();
    match tokio::task::spawn_blocking(move || query(store.as_ref())).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(ApiError::LedgerUnavailable(e.to_string())),
        Err(e) => Err(ApiError::LedgerUnavailable(e.to_string())),
    }
}

/// Who is asking, as for any `/v1/*` request.
pub async fn caller(
    state: &AppState,
    headers: &HeaderMap,
) -> Result<crate::auth::Caller, ApiError> {
    let required = state.gateway.load().config.auth.required;
    auth::caller(state, headers, required).await
}

/// `after` and `limit` of a list, as OpenAI defines them: `limit` from 1 to `max`.
pub fn page(limit: Option<&str>, default: usize, max: usize) -> Result<usize, ApiError> {
    match limit {
        None => Ok(default),
        Some(text) => match text.parse::<usize>() {
            Ok(n) if (1..=max).contains(&n) => Ok(n),
            _ => Err(ApiError::InvalidField {
                param: "limit".to_owned(),
                message: format!("'limit' must be an integer from 1 to {max}."),
            }),
        },
    }
}

/// Bytes of an id in a path, at most: any longer is not found without asking the store.
const ID_MAX: usize = 64;

/// `id` if some object could have it.
pub fn possible(id: String, what: &'static str) -> Result<String, ApiError> {
    if id.is_empty() || id.len() > ID_MAX {
        return Err(ApiError::ObjectNotFound { what, id });
    }
    Ok(id)
}
