//! Batches followed to their end: each not yet metered is asked of its upstream (every
//! `batches.poll_interval_ms`, and whenever a client asks for it); its latest object is kept,
//! and once it has ended its output file is metered, by whichever replica claims it first.

use std::sync::{Arc, Weak};

use serde_json::Value;

use super::meter::{self, LEASE_US};
use super::objects::{self, is_terminal};
use super::store_call;
use super::upstream::{self, Api, Call};
use crate::error::ApiError;
use crate::ledger::StoredBatch;
use crate::ledger::time::now_us;
use crate::state::AppState;

/// Batches asked after in one round, at most.
const ROUND: usize = 100;

/// Asks the upstream for `batch`'s state, keeps it, and meters the batch if it has ended.
/// A batch already metered is answered from the ledger: it will not change.
pub async fn refresh(state: &AppState, batch: StoredBatch) -> Result<StoredBatch, ApiError> {
    if batch.metered_us.is_some() {
        return Ok(batch);
    }
    let gateway = state.gateway.load_full();
    let provider = upstream::provider(&gateway, &batch.provider)?;
    let response = upstream::send(
        state,
        &gateway,
        provider,
        Call::RetrieveBatch(&batch.upstream_id),
    )
    .await?;
    let previous = serde_json::from_str(&batch.object).unwrap_or(Value::Null);
    let raw = upstream::batch_json(provider, response, &previous).await?;
    let status = raw
        .get("status")
        .and_then(Value::as_str)
        .unwrap_or("in_progress")
        .chars()
        .take(32)
        .collect::<String>();
    for file in objects::result_files(&batch, &raw)? {
        store_call(state, move |store| store.put_file(&file)).await?;
    }
    let object = objects::batch_object(&batch, raw.clone());
    let text = object.to_string();
    let mut batch = StoredBatch {
        status: status.clone(),
        object: text.clone(),
        ..batch
    };
    {
        let (project, id) = (batch.project.clone(), batch.id.clone());
        store_call(state, move |store| {
            store.update_batch(&project, &id, &status, &text)
        })
        .await?;
    }
    if is_terminal(&batch.status) {
        meter_once(state, &gateway, &mut batch, &raw).await?;
    }
    Ok(batch)
}

/// Meters an ended batch unless another replica holds it or it is metered already.
async fn meter_once(
    state: &AppState,
    gateway: &crate::gateway::Gateway,
    batch: &mut StoredBatch,
    raw: &Value,
) -> Result<(), ApiError> {
    let now = now_us();
    let claimed = {
        let (project, id) = (batch.project.clone(), batch.id.clone());
        store_call(state, move |store| {
            store.claim_metering(&project, &id, now, now + LEASE_US)
        })
        .await?
    };
    if !claimed {
        return Ok(());
    }
    let provider = upstream::provider(gateway, &batch.provider)?;
    let lines = match raw.get("output_file_id").filter(|v| !v.is_null()) {
        // Every line that ran, succeeded or not, from Anthropic's results.
        _ if upstream::api(provider) == Some(Api::Anthropic) => {
            let all = format!("{}.all", batch.upstream_id);
            meter::meter(state, gateway, provider, batch, raw, &all).await?
        }
        Some(output) => {
            let output = objects::upstream_id(&batch.provider, Some(output))?;
            meter::meter(state, gateway, provider, batch, raw, &output).await?
        }
        // Failed or cancelled before any request ran: nothing to bill.
        None => 0,
    };
    let at = now_us();
    let (project, id) = (batch.project.clone(), batch.id.clone());
    store_call(state, move |store| store.metered(&project, &id, at, lines)).await?;
    batch.metered_us = Some(at);
    batch.metered_lines = lines;
    tracing::info!(batch = %batch.id, lines, "batch metered");
    Ok(())
}

/// Asks after every batch not yet metered, each `interval`, for as long as the state lives.
pub fn spawn(state: &Arc<AppState>) -> tokio::task::JoinHandle<()> {
    let weak: Weak<AppState> = Arc::downgrade(state);
    tokio::spawn(async move {
        loop {
            let Some(state) = weak.upgrade() else { return };
            let interval = state.gateway.load().config.batches.poll_interval();
            round(&state).await;
            drop(state);
            tokio::time::sleep(interval).await;
        }
    })
}

async fn round(state: &AppState) {
    let open = match store_call(state, |store| store.unmetered_batches(ROUND)).await {
        Ok(open) => open,
        Err(e) => {
            tracing::warn!("listing the batches to follow: {e}");
            return;
        }
    };
    for batch in open {
        let id = batch.id.clone();
        if let Err(e) = refresh(state, batch).await {
            tracing::warn!(batch = %id, "following a batch: {e}");
        }
    }
}
