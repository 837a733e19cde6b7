//! The request log: `POST /usage/requests` (the caller's project's records, newest first,
//! filtered, a page at a time) and `GET /usage/requests/{request_id}` (one of them).
//!
//! Auth and project scoping are those of the other `/usage/*` endpoints (see [`crate::pipeline::auth`]): a
//! record of another project is never shown, and asked for by id it is a 404 like one that does
//! not exist, so that ids of other projects cannot be probed.
//!
//! A page's `next_cursor` is the position of its last record (time and request id) with a
//! fingerprint of the query's project and filters, hex-encoded. It is not secret (it names a
//! record the caller was shown) but it is checked: a cursor that does not decode, or that was
//! made for other filters or another project, is a 400 on `cursor` rather than a page of
//! something else. The time range may change between pages (an open `end_time_us` is "now").

use std::sync::Arc;

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::store_call::blocking;
use super::usage::{asked, bounded_tags, given, range, user_filter};
use crate::clip::echo;
use crate::error::ApiError;
use crate::ledger::UsageRecord;
use crate::ledger::requests::{
    self, GuardFilter, LIMIT_DEFAULT, LIMIT_MAX, Position, RequestQuery, StatusClass,
};
use crate::ledger::time::format_utc;
use crate::pipeline::request::MODEL_MAX;
use crate::pipeline::request::end_user::TEXT_MAX;
use crate::state::AppState;

/// Bytes of a request id, at most: what the gateway accepts in `x-request-id`.
const REQUEST_ID_MAX: usize = 128;
/// Bytes of an API key id filter, at most (ids are `key_` and 16 hex digits).
const KEY_ID_MAX: usize = 64;
const CURSOR_VERSION: u8 = 1;
const FINGERPRINT: usize = 8;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    #[serde(default)]
    start_time_us: Option<i64>,
    #[serde(default)]
    end_time_us: Option<i64>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    provider: Option<String>,
    #[serde(default)]
    user_id: Option<String>,
    #[serde(default)]
    user_name: Option<String>,
    #[serde(default, deserialize_with = "bounded_tags")]
    user_tags: Option<Vec<String>>,
    #[serde(default)]
    api_key_id: Option<String>,
    /// A Realtime session's responses.
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    dialect: Option<String>,
    /// Records with a verdict of this guard.
    #[serde(default)]
    guard: Option<String>,
    /// Records with a guard's verdict of this action, or `any` verdict.
    #[serde(default)]
    guard_action: Option<String>,
    #[serde(default)]
    limit: Option<u64>,
    #[serde(default)]
    cursor: Option<String>,
}

pub async fn list(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Value>, ApiError> {
    let (project, q): (_, ListQuery) = asked(&state, &headers, body).await?;
    let (start_us, end_us) = range(q.start_time_us, q.end_time_us)?;
    let invalid = |param: &str, message: String| ApiError::InvalidField {
        param: param.to_owned(),
        message,
    };
    let status = match q.status.as_deref() {
        None => None,
        Some(name) => Some(StatusClass::parse(name).ok_or_else(|| {
            invalid(
                "status",
                format!(
                    "'status' must be one of 2xx, 4xx, 5xx, error; got '{}'.",
                    echo(name)
                ),
            )
        })?),
    };
    // The registry's dialects record under their declared names; pass-through requests too.
    let names: Vec<String> = state
        .gateway
        .load()
        .dialects
        .iter()
        .map(|d| d.name.clone())
        .chain(["passthrough".to_owned()])
        .collect();
    let registry: Vec<&str> = names.iter().map(String::as_str).collect();
    let operation = match q.dialect.as_deref() {
        None => None,
        Some(name) => Some(requests::operation_of(name, &registry).ok_or_else(|| {
            let known: Vec<&str> = requests::dialects(&registry).collect();
            invalid(
                "dialect",
                format!(
                    "'dialect' must be one of {}; got '{}'.",
                    known.join(", "),
                    echo(name)
                ),
            )
        })?),
    };
    let guard = guard_filter(q.guard, q.guard_action)?;
    let limit = match q.limit {
        None => LIMIT_DEFAULT,
        Some(n @ 1..) if n <= LIMIT_MAX as u64 => n as usize,
        Some(_) => {
            return Err(invalid(
                "limit",
                format!("'limit' must be from 1 to {LIMIT_MAX}."),
            ));
        }
    };
    let mut query = RequestQuery {
        project,
        start_us,
        end_us,
        model: given("model", q.model, MODEL_MAX)?,
        provider: given("provider", q.provider, TEXT_MAX)?,
        users: user_filter(q.user_id, q.user_name, q.user_tags)?,
        api_key_id: given("api_key_id", q.api_key_id, KEY_ID_MAX)?,
        session_id: given("session_id", q.session_id, KEY_ID_MAX)?,
        status,
        operation: operation.map(str::to_owned),
        guard,
        after: None,
        limit,
    };
    let fingerprint = fingerprint(&query);
    if let Some(cursor) = &q.cursor {
        query.after = Some(decode(cursor, &fingerprint).ok_or_else(|| {
            invalid(
                "cursor",
                "'cursor' is not a cursor this query's pages gave (same project and filters)."
                    .to_owned(),
            )
        })?);
    }
    let mut page = blocking(&state, {
        let query = query.clone();
        move |store| requests::page(store, &query)
    })
    .await?;
    let has_more = page.len() > limit;
    page.truncate(limit);
    let next_cursor = match page.last() {
        Some(last) if has_more => Value::from(encode(&Position::of(last), &fingerprint)),
        _ => Value::Null,
    };
    Ok(Json(json!({
        "object": "list",
        "data": page.iter().map(record_json).collect::<Vec<_>>(),
        "has_more": has_more,
        "next_cursor": next_cursor,
        "period_start": start_us,
        "period_end": end_us,
    })))
}

pub async fn one(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(request_id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let project = super::admin_auth::usage_project(&state, &headers).await?;
    // Longer than any id the gateway gives or accepts: no record has it.
    if request_id.is_empty() || request_id.len() > REQUEST_ID_MAX {
        return Err(ApiError::RequestNotFound(request_id));
    }
    let found = blocking(&state, {
        let request_id = request_id.clone();
        move |store| store.project_record(&project, &request_id)
    })
    .await?;
    match found {
        Some(record) => Ok(Json(record_json(&record))),
        None => Err(ApiError::RequestNotFound(request_id)),
    }
}

/// The guard filter of `guard` (a guard's name) and `guard_action` (an action, or `any`).
fn guard_filter(
    guard: Option<String>,
    action: Option<String>,
) -> Result<Option<GuardFilter>, ApiError> {
    let invalid = |param: &str, message: String| ApiError::InvalidField {
        param: param.to_owned(),
        message,
    };
    if let Some(name) = &guard
        && !crate::config::guards::valid_name(name)
    {
        return Err(invalid(
            "guard",
            "'guard' must be a guard's name (1 to 64 letters, digits, `-` or `_`).".to_owned(),
        ));
    }
    let asked = guard.is_some() || action.is_some();
    let action = match action.as_deref() {
        None | Some("any") => None,
        Some(a) if requests::GUARD_ACTIONS.contains(&a) => Some(a.to_owned()),
        Some(a) => {
            return Err(invalid(
                "guard_action",
                format!(
                    "'guard_action' must be any or one of {}; got '{}'.",
                    requests::GUARD_ACTIONS.join(", "),
                    echo(a)
                ),
            ));
        }
    };
    Ok(asked.then_some(GuardFilter { guard, action }))
}

/// A record as the API shows it: times in µs (and the start in UTC), money in USD.
fn record_json(r: &UsageRecord) -> Value {
    json!({
        "object": "usage.request",
        "request_id": r.request_id,
        "time_us": r.time_us,
        "time": format_utc(r.time_us),
        "project": r.project,
        "api_key_id": r.api_key_id,
        "user": {"id": r.user_id, "name": r.user_name, "tags": r.user_tags},
        "dialect": requests::dialect_of(&r.operation),
        "operation": r.operation,
        "provider": r.provider,
        "model": r.model,
        "status": r.status,
        "error_type": r.error_type,
        "input_tokens": r.input_tokens,
        "output_tokens": r.output_tokens,
        "cached_input_tokens": r.cached_input_tokens,
        "reasoning_tokens": r.reasoning_tokens,
        "cache_write_tokens": r.cache_write_tokens,
        "cost": r.cost_micros.map(|c| c as f64 / 1_000_000.0),
        "latency_us": r.latency_us,
        "ttft_us": r.ttft_us,
        "estimated": r.estimated,
        "guards": r.guards.as_deref().and_then(|g| serde_json::from_str::<Value>(g).ok()),
        "bytes_in": r.bytes_in,
        "bytes_out": r.bytes_out,
        "session_id": r.session_id,
    })
}

/// What a cursor is bound to: the project and every filter (not the range, nor the limit).
fn fingerprint(q: &RequestQuery) -> [u8; FINGERPRINT] {
    let canonical = json!([
        q.project,
        q.model,
        q.provider,
        q.users.user_id,
        q.users.user_name,
        q.users.user_tags,
        q.api_key_id,
        q.session_id,
        q.status.map(StatusClass::name),
        q.operation,
        q.guard.as_ref().map(|g| (&g.guard, &g.action)),
    ]);
    let digest = Sha256::digest(canonical.to_string().as_bytes());
    let mut out = [0; FINGERPRINT];
    out.copy_from_slice(&digest[..FINGERPRINT]);
    out
}

/// Version, time (8 bytes, big-endian), fingerprint, request id; in hex.
fn encode(at: &Position, fingerprint: &[u8; FINGERPRINT]) -> String {
    let mut bytes = vec![CURSOR_VERSION];
    bytes.extend_from_slice(&at.time_us.to_be_bytes());
    bytes.extend_from_slice(fingerprint);
    bytes.extend_from_slice(at.request_id.as_bytes());
    hex::encode(bytes)
}

fn decode(cursor: &str, fingerprint: &[u8; FINGERPRINT]) -> Option<Position> {
    const HEAD: usize = 1 + 8 + FINGERPRINT;
    if cursor.len() > 2 * (HEAD + REQUEST_ID_MAX) {
        return None;
    }
    let bytes = hex::decode(cursor).ok()?;
    let (head, id) = bytes.split_at_checked(HEAD)?;
    let time_us = i64::from_be_bytes(head[1..9].try_into().ok()?);
    let request_id = String::from_utf8(id.to_vec()).ok()?;
    (head[0] == CURSOR_VERSION
        && &head[9..] == fingerprint
        && time_us >= 0
        && !request_id.is_empty())
    .then_some(Position {
        time_us,
        request_id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_reads_back_only_under_its_own_filters() {
        let query = RequestQuery {
            project: "p".to_owned(),
            model: Some("m".to_owned()),
            ..RequestQuery::default()
        };
        let at = Position {
            time_us: 1_700_000_000_000_000,
            request_id: "req-1".to_owned(),
        };
        let mine = fingerprint(&query);
        let cursor = encode(&at, &mine);
        assert_eq!(decode(&cursor, &mine), Some(at));
        let other = fingerprint(&RequestQuery {
            project: "q".to_owned(),
            ..query.clone()
        });
        assert_eq!(decode(&cursor, &other), None, "another project");
        let other = fingerprint(&RequestQuery {
            model: None,
            ..query
        });
        assert_eq!(decode(&cursor, &other), None, "other filters");
        for bad in [
            "",
            "zz",
            "01",
            &cursor[..cursor.len() - 1],
            &"00".repeat(500),
        ] {
            assert_eq!(decode(bad, &mine), None, "{bad}");
        }
    }
}
