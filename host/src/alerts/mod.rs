//! Alerts: every `alerts.interval_ms` the rules (`rules.rs`) read the ledger, each alert they
//! call for is claimed in the ledger (so that it fires once, whichever replica sees it first),
//! and a claimed one is sent to every sink (`deliver.rs`), each delivery recorded. The rules read
//! what the ledger already has, so the request path does no work for them.

pub mod deliver;
mod rules;

use std::sync::{Arc, Weak};

use crate::ledger::Store;
use crate::ledger::alerts::Fired;
use crate::ledger::time::now_us;
use crate::state::AppState;

/// Looks for alerts each interval for as long as the state lives (nothing when no rule and
/// sink are configured).
pub fn spawn(state: &Arc<AppState>) -> tokio::task::JoinHandle<()> {
    let weak: Weak<AppState> = Arc::downgrade(state);
    tokio::spawn(async move {
        loop {
            let Some(state) = weak.upgrade() else { return };
            let interval = state.gateway.load().config.alerts.interval();
            if let Err(e) = round(&state).await {
                tracing::warn!("looking for alerts: {e:#}");
            }
            drop(state);
            tokio::time::sleep(interval).await;
        }
    })
}

/// One look: the alerts due, each claimed and, if this replica took it, sent.
async fn round(state: &AppState) -> anyhow::Result<()> {
    let gateway = state.gateway.load_full();
    let config = gateway.config.alerts.clone();
    if !config.active() {
        return Ok(());
    }
    let store = state.ledger.store();
    let claimed = {
        let store = Arc::clone(&store);
        tokio::task::spawn_blocking(move || claim(&config, store.as_ref())).await??
    };
    for fired in claimed {
        tracing::warn!(rule = %fired.rule, "alert: {}", fired.message);
        for sink in &gateway.config.alerts.sinks {
            let delivery = deliver::deliver(&state.http, sink, &fired).await;
            if delivery.delivered_us.is_none() {
                tracing::error!(sink = %sink.name, "an alert could not be delivered");
            }
            let (store, fired) = (Arc::clone(&store), fired.clone());
            tokio::task::spawn_blocking(move || store.record_delivery(&fired, &delivery)).await??;
        }
    }
    Ok(())
}

/// The alerts due that this call took: of one rule and subject, only the highest threshold
/// taken now is sent (the lower ones taken with it are passed).
fn claim(
    config: &crate::config::alerts::AlertsConfig,
    store: &dyn Store,
) -> anyhow::Result<Vec<Fired>> {
    let mut taken: Vec<Fired> = Vec::new();
    for fired in rules::due(config, store, now_us())? {
        if !store.claim_alert(&fired)? {
            continue;
        }
        match taken
            .iter_mut()
            .find(|t| t.rule == fired.rule && t.subject == fired.subject)
        {
            Some(lower) if lower.threshold < fired.threshold => *lower = fired,
            Some(_) => {}
            None => taken.push(fired),
        }
    }
    Ok(taken)
}
