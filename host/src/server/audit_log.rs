//! The audit log over HTTP, and how the admin API writes to it.
//!
//! `GET /admin/audit` (an admin key, or a console session with the admin role) lists entries in chain order, filtered by
//! `actor`, `action`, `target`, `since` and `until` (µs since the epoch, `until` excluded),
//! paged with `after` (the last `seq` seen) and `limit` (default 100, at most 1,000); each entry
//! carries its `prev_hash` and `hash`, so a reader can check the chain itself.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use serde::Deserialize;
use serde_json::{Value, json};

use super::admin_auth::{Access, Principal, principal};
use super::routes::{Outbound, Table, methods};
use super::store_call::blocking;
use crate::error::ApiError;
use crate::ledger::audit::{AuditAction, AuditChange, AuditFilter, FIELD_MAX, PAGE_MAX};
use crate::ledger::time::now_us;
use crate::state::AppState;

const LIMIT_DEFAULT: usize = 100;

/// The audit log's route.
pub fn routes(table: Table) -> Table {
    let audit = Outbound::Nothing("the gateway's own audit log");
    table.route("/admin/audit", methods().get(audit, list))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    actor: Option<String>,
    action: Option<String>,
    target: Option<String>,
    since: Option<i64>,
    until: Option<i64>,
    after: Option<i64>,
    limit: Option<usize>,
}

async fn list(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Query(query): Query<ListQuery>,
) -> Result<Json<Value>, ApiError> {
    principal(&state, &headers, Access::Read)
        .await?
        .require_admin("reading the audit log")?;
    for (param, value) in [
        ("actor", &query.actor),
        ("action", &query.action),
        ("target", &query.target),
    ] {
        if value.as_ref().is_some_and(|v| v.len() > FIELD_MAX) {
            return Err(ApiError::InvalidField {
                param: param.to_owned(),
                message: format!("{param}: at most {FIELD_MAX} bytes"),
            });
        }
    }
    if let Some(action) = &query.action
        && AuditAction::parse(action).is_none()
    {
        let known: Vec<&str> = AuditAction::ALL.iter().map(|a| a.name()).collect();
        return Err(ApiError::InvalidField {
            param: "action".to_owned(),
            message: format!("action: one of {}", known.join(", ")),
        });
    }
    let limit = query.limit.unwrap_or(LIMIT_DEFAULT);
    if !(1..=PAGE_MAX).contains(&limit) {
        return Err(ApiError::InvalidField {
            param: "limit".to_owned(),
            message: format!("limit: from 1 to {PAGE_MAX}"),
        });
    }
    let filter = AuditFilter {
        actor: query.actor,
        action: query.action,
        target: query.target,
        since_us: query.since,
        until_us: query.until,
        after_seq: query.after.unwrap_or(0).max(0),
        // One more than asked, to tell whether there is more.
        limit: limit + 1,
    };
    let mut entries = blocking(&state, move |store| store.audit_entries(&filter)).await?;
    let has_more = entries.len() > limit;
    entries.truncate(limit);
    let data: Vec<Value> = entries.iter().map(|e| e.to_json()).collect();
    Ok(Json(
        json!({"object": "list", "data": data, "has_more": has_more}),
    ))
}

/// Records a change the admin API made for `by` (an admin key, or a console session's OIDC
/// subject). The change is already made: should the log
/// not take it, the call answers 503 saying so, rather than let it pass unrecorded.
pub(super) async fn record(
    state: &AppState,
    by: &Principal,
    action: AuditAction,
    target: &str,
    before: Option<String>,
    after: Option<String>,
) -> Result<(), ApiError> {
    let change = AuditChange {
        actor: by.actor(),
        origin: by.origin().to_owned(),
        action,
        target: target.to_owned(),
        before,
        after,
    };
    blocking(state, move |store| store.append_audit(change, now_us()))
        .await
        .map(drop)
        .map_err(|e| {
            tracing::error!("the audit log did not take a change: {e}");
            ApiError::LedgerUnavailable(
                "the change was made but the audit log could not record it".to_owned(),
            )
        })
}
