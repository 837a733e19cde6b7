//! Alerts: every `alerts.interval_ms` the rules read the ledger (`rules.rs`) and this replica's
//! own state (`local.rs`); each alert they call for is claimed in the ledger (so that it fires
//! once, whichever replica sees it first), and a claimed one is sent to every sink
//! (`deliver.rs`), each delivery recorded. The rules read what the ledger and the router already
//! have, so the request path does no work for them.
//!
//! Each replica remembers the alerts it knows were fired (claimed by it or by another), so that
//! it claims each once, not every look. A replica's own alerts (a circuit opening, its journal
//! filling) matter most when the ledger's database is down, when nothing can be claimed: those
//! are sent unclaimed then, once per replica, rather than not at all.

mod budgets;
pub mod deliver;
mod local;
mod rules;

use std::collections::HashSet;
use std::sync::{Arc, Weak};

use crate::config::alerts::AlertsConfig;
use crate::ledger::Store;
use crate::ledger::alerts::Fired;
use crate::ledger::time::now_us;
use crate::state::AppState;

/// An alert's name: rule, subject, threshold, period.
type Name = (String, String, i64, i64);

/// Alerts known fired are remembered while their period started less than this long ago (µs):
/// a week, the longest period of a replica's own rules (older ones are claimed again, which the
/// ledger refuses).
const KNOWN_KEPT_US: i64 = 7 * 86_400 * 1_000_000;

/// Looks for alerts each interval for as long as the state lives (nothing when no rule and
/// sink are configured).
pub fn spawn(state: &Arc<AppState>) -> tokio::task::JoinHandle<()> {
    let weak: Weak<AppState> = Arc::downgrade(state);
    tokio::spawn(async move {
        let mut known = HashSet::new();
        loop {
            let Some(state) = weak.upgrade() else { return };
            let interval = state.gateway.load().config.alerts.interval();
            if let Err(e) = round(&state, &mut known).await {
                tracing::warn!("looking for alerts: {e:#}");
            }
            drop(state);
            tokio::time::sleep(interval).await;
        }
    })
}

/// This replica's journal or queue among the replicas: its host, and its journal's slot.
fn holder(state: &AppState) -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let place = match state.ledger.journal() {
        Some(journal) => journal.dir().display().to_string(),
        None => format!("process {}", std::process::id()),
    };
    format!("{} {place}", host.trim())
}

/// One look: the alerts due, each claimed and, if this replica took it, sent.
async fn round(state: &AppState, known: &mut HashSet<Name>) -> anyhow::Result<()> {
    let gateway = state.gateway.load_full();
    let config = gateway.config.alerts.clone();
    if !config.active() {
        return Ok(());
    }
    let now = now_us();
    let seen = local::Seen {
        circuits: state.stats.open_circuits(),
        fill: state.ledger.fill(),
        holder: holder(state),
    };
    let local = local::due(&config, &seen, now);
    let scoped = budgets::of_limits(&gateway.config.limits);
    let store = state.ledger.store();
    known.retain(|name| name.3 > now - KNOWN_KEPT_US);
    let Claimed {
        taken,
        unreachable,
        known: now_known,
    } = {
        let (store, known) = (Arc::clone(&store), std::mem::take(known));
        tokio::task::spawn_blocking(move || {
            claim(&config, &scoped, store.as_ref(), local, now, known)
        })
        .await?
    };
    *known = now_known;
    for fired in taken.into_iter().chain(unreachable) {
        tracing::warn!(rule = %fired.rule, "alert: {}", fired.message);
        for sink in &gateway.config.alerts.sinks {
            let delivery = deliver::deliver(&state.http, sink, &fired).await;
            if delivery.delivered_us.is_none() {
                tracing::error!(sink = %sink.name, "an alert could not be delivered");
            }
            let (store, fired) = (Arc::clone(&store), fired.clone());
            if let Err(e) =
                tokio::task::spawn_blocking(move || store.record_delivery(&fired, &delivery))
                    .await?
            {
                tracing::warn!("recording an alert's delivery: {e:#}");
            }
        }
    }
    Ok(())
}

fn name(fired: &Fired) -> Name {
    (
        fired.rule.clone(),
        fired.subject.clone(),
        fired.threshold,
        fired.period_us,
    )
}

/// What one look claimed.
struct Claimed {
    /// Taken by this replica: to send.
    taken: Vec<Fired>,
    /// This replica's own alerts that could not be claimed (the ledger is unreachable), not
    /// sent before: to send.
    unreachable: Vec<Fired>,
    /// What was known, and what this look learnt.
    known: HashSet<Name>,
}

/// The alerts due, not `known`, that this call took: of one rule and subject, only the highest
/// threshold taken now is sent (the lower ones taken with it are passed). The ledger's rules
/// are skipped when the ledger cannot be read; `local`'s alerts are claimed all the same.
fn claim(
    config: &AlertsConfig,
    scoped: &[budgets::ScopedBudget],
    store: &dyn Store,
    local: Vec<Fired>,
    now: i64,
    known: HashSet<Name>,
) -> Claimed {
    let from_ledger = rules::due(config, scoped, store, now).unwrap_or_else(|e| {
        tracing::warn!("reading the ledger for alerts: {e:#}");
        Vec::new()
    });
    let mut claimed = Claimed {
        taken: Vec::new(),
        unreachable: Vec::new(),
        known,
    };
    let local = local.into_iter().map(|f| (true, f));
    for (is_local, fired) in local.chain(from_ledger.into_iter().map(|f| (false, f))) {
        if claimed.known.contains(&name(&fired)) {
            continue;
        }
        match store.claim_alert(&fired) {
            Ok(true) => {
                claimed.known.insert(name(&fired));
            }
            Ok(false) => {
                claimed.known.insert(name(&fired));
                continue;
            }
            Err(e) => {
                tracing::warn!(rule = %fired.rule, "claiming an alert: {e:#}");
                if is_local {
                    claimed.known.insert(name(&fired));
                    claimed.unreachable.push(fired);
                }
                continue;
            }
        }
        let taken = &mut claimed.taken;
        match taken
            .iter_mut()
            .find(|t| t.rule == fired.rule && t.subject == fired.subject)
        {
            Some(lower) if lower.threshold < fired.threshold => *lower = fired,
            Some(_) => {}
            None => taken.push(fired),
        }
    }
    claimed
}
