//! The admin API, for automation: project keys created, listed, read with their spend so far,
//! changed and revoked over HTTP.
//!
//! - `POST /admin/keys` makes a key (`project` required; `name`, `models`, `expires`, `rpm`,
//!   `tpm`, `budget_usd`, `budget_period`, `guards` as `wasmgate keys create` takes them) and
//!   answers 201 with the key itself, shown this once. `guards` names entries of the running
//!   config's `guards:`; an unknown one is refused.
//!   `tpm`, `budget_usd`, `budget_period`, `passthrough` as `wasmgate keys create` takes them) and
//!   answers 201 with the key itself, shown this once.
//! - `GET /admin/keys` (optionally `?project=`) and `GET /admin/keys/{id}`: keys with their
//!   limits and spend so far, never the secret.
//! - `PATCH /admin/keys/{id}` changes the fields it names; `null` clears one.
//! - `DELETE /admin/keys/{id}` revokes the key.
//!
//! Every call needs `Authorization: Bearer wgadm_…`, an admin key from `wasmgate admin-key
//! create` (stored hashed in `admin_keys`, looked up on every call, so a revoked one stops at
//! once), or a console session whose roles cover the key's project (see [`super::admin_auth`]).
//! No key is a 401; a valid project key a 403 (it names a real credential, of the wrong
//! kind); anything else a 401.

use std::sync::Arc;

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use serde::{Deserialize, Deserializer};
use serde_json::{Value, json};

use super::admin_auth::{Access, principal};
use super::audit_log::record;
use super::routes::{Outbound, Table, methods};
use super::store_call::blocking;
use super::usage::parse;
use crate::auth;
use crate::error::ApiError;
use crate::ledger::audit::{AuditAction, key_value};
use crate::ledger::keys::{KEY_ID_MAX, Spend, parse_expiry, usd_to_micros};
use crate::ledger::time::{format_utc, now_us};
use crate::ledger::{ApiKey, BudgetPeriod, KeyChanges, KeyLimits};
use crate::pipeline::request::body;
use crate::state::AppState;

/// The routes of the admin API.
pub fn routes(table: Table) -> Table {
    let keys = Outbound::Nothing("the gateway's own keys");
    table
        .route("/admin/keys", methods().get(keys, list).post(keys, create))
        .route(
            "/admin/keys/{id}",
            methods()
                .get(keys, one)
                .patch(keys, update)
                .delete(keys, revoke),
        )
}

/// The admin key the request is sent with, or why it may not call the admin API.
/// A field of a PATCH body: absent (`None`), `null` (`Some(None)`) or a value.
fn field<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// What `POST` and `PATCH` take.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct KeyBody {
    #[serde(default)]
    project: Option<String>,
    #[serde(default, deserialize_with = "field")]
    name: Option<Option<String>>,
    #[serde(default, deserialize_with = "field")]
    models: Option<Option<Vec<String>>>,
    #[serde(default, deserialize_with = "field")]
    expires: Option<Option<String>>,
    #[serde(default, deserialize_with = "field")]
    rpm: Option<Option<i64>>,
    #[serde(default, deserialize_with = "field")]
    tpm: Option<Option<i64>>,
    #[serde(default, deserialize_with = "field")]
    budget_usd: Option<Option<f64>>,
    #[serde(default)]
    budget_period: Option<String>,
    #[serde(default, deserialize_with = "field")]
    guards: Option<Option<Vec<String>>>,
    /// MCP tool patterns (`<server>/<tool>`); `null` or `[]` allows every tool.
    #[serde(default, deserialize_with = "field")]
    tools: Option<Option<Vec<String>>>,
    passthrough: Option<Option<Vec<String>>>,
}

impl KeyBody {
    fn changes(self, now: i64) -> Result<KeyChanges, ApiError> {
        let invalid = |param: &str, message: String| ApiError::InvalidField {
            param: param.to_owned(),
            message,
        };
        let expires_us = match self.expires {
            None => None,
            Some(None) => Some(None),
            Some(Some(text)) => Some(parse_expiry(&text, now).map_err(|e| invalid("expires", e))?),
        };
        let budget_micros = match self.budget_usd {
            None => None,
            Some(None) => Some(None),
            Some(Some(usd)) => Some(Some(usd_to_micros(usd).ok_or_else(|| {
                invalid("budget_usd", "budget_usd: dollars above 0".to_owned())
            })?)),
        };
        let budget_period = match self.budget_period.as_deref() {
            None => None,
            Some(p) => Some(BudgetPeriod::parse(p).ok_or_else(|| {
                invalid(
                    "budget_period",
                    "budget_period: day, month or total".to_owned(),
                )
            })?),
        };
        Ok(KeyChanges {
            name: self.name,
            models: self.models.map(Option::unwrap_or_default),
            expires_us,
            requests_per_minute: self.rpm,
            tokens_per_minute: self.tpm,
            budget_micros,
            budget_period,
            guards: self.guards.map(Option::unwrap_or_default),
            tools: self.tools.map(Option::unwrap_or_default),
            passthrough: self.passthrough.map(Option::unwrap_or_default),
        })
    }
}

/// Refuses guard names the running config does not have: a key's requests would all fail.
fn known_guards(state: &AppState, limits: &KeyLimits) -> Result<(), ApiError> {
    let gateway = state.gateway.load();
    match (limits.guards.iter()).find(|name| gateway.guards.named(name).is_none()) {
        Some(name) => Err(ApiError::InvalidField {
            param: "guards".to_owned(),
            message: format!(
                "guards: no guard is named `{}` in the config's `guards:`",
                crate::clip::echo(name)
            ),
        }),
        None => Ok(()),
    }
}

/// Applies `changes`, the failing field named as the body names it.
fn apply(
    changes: KeyChanges,
    name: Option<String>,
    limits: &KeyLimits,
) -> Result<(Option<String>, KeyLimits), ApiError> {
    changes.apply(name, limits).map_err(|message| {
        let flag = message.split(':').next().unwrap_or("");
        let param = match flag {
            "budget" => "budget_usd",
            "budget-period" => "budget_period",
            other => other,
        };
        ApiError::InvalidField {
            param: param.to_owned(),
            message,
        }
    })
}

async fn create(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Body,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let by = principal(&state, &headers, Access::Write).await?;
    let (bytes, _reservation) = body::read(&state, body).await?;
    let mut asked: KeyBody = parse(&bytes)?;
    let project = asked.project.take().unwrap_or_default();
    if let Err(rule) = auth::check_project(&project) {
        return Err(ApiError::InvalidField {
            param: "project".to_owned(),
            message: format!("project: a project id is {rule}"),
        });
    }
    by.require_manager(&project)?;
    let now = now_us();
    let (name, limits) = apply(asked.changes(now)?, None, &KeyLimits::default())?;
    known_guards(&state, &limits)?;
    let (secret, mut stored) = auth::generate(&project, name.as_deref(), now);
    stored.limits = limits;
    let key = stored.clone();
    blocking(&state, move |store| store.insert_key(&stored)).await?;
    let after = Some(key_value(&key));
    record(&state, &by, AuditAction::KeyCreate, &key.id, None, after).await?;
    let mut answer = shown(&key, None, now);
    answer["key"] = secret.into();
    Ok((StatusCode::CREATED, Json(answer)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    project: Option<String>,
}

async fn list(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Query(query): Query<ListQuery>,
) -> Result<Json<Value>, ApiError> {
    let by = principal(&state, &headers, Access::Read).await?;
    if let Some(project) = &query.project {
        by.require_manager(project)?;
    }
    let managed = by.managed();
    if managed.as_ref().is_some_and(Vec::is_empty) {
        return Err(ApiError::RoleForbidden(
            "listing keys needs the admin or a project_admin role".to_owned(),
        ));
    }
    let now = now_us();
    let keys = blocking(&state, move |store| {
        let keys = store.keys(query.project.as_deref())?;
        keys.into_iter()
            .filter(|k| managed.as_ref().is_none_or(|m| m.contains(&k.project)))
            .map(|k| Ok((Spend::of(store, &k, now)?, k)))
            .collect::<anyhow::Result<Vec<_>>>()
    })
    .await?;
    let data: Vec<Value> = keys
        .iter()
        .map(|(spend, k)| shown(k, Some(*spend), now))
        .collect();
    Ok(Json(json!({"object": "list", "data": data})))
}

async fn one(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let by = principal(&state, &headers, Access::Read).await?;
    let (key, spend) = with_spend(&state, id).await?;
    by.require_manager(&key.project)?;
    Ok(Json(shown(&key, Some(spend), now_us())))
}

async fn update(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Body,
) -> Result<Json<Value>, ApiError> {
    let by = principal(&state, &headers, Access::Write).await?;
    let (bytes, _reservation) = body::read(&state, body).await?;
    let asked: KeyBody = parse(&bytes)?;
    if asked.project.is_some() {
        return Err(ApiError::InvalidField {
            param: "project".to_owned(),
            message: "project: a key's project cannot change; make a new key".to_owned(),
        });
    }
    let (key, _) = with_spend(&state, id.clone()).await?;
    by.require_manager(&key.project)?;
    if key.revoked_us.is_some() {
        return Err(ApiError::KeyNotFound(id));
    }
    let before = Some(key_value(&key));
    let (name, limits) = apply(asked.changes(now_us())?, key.name, &key.limits)?;
    known_guards(&state, &limits)?;
    let changed = {
        let (id, limits) = (id.clone(), limits.clone());
        blocking(&state, move |store| {
            store.update_key(&id, name.as_deref(), &limits)
        })
        .await?
    };
    if !changed {
        return Err(ApiError::KeyNotFound(id));
    }
    let (key, spend) = with_spend(&state, id).await?;
    let after = Some(key_value(&key));
    record(&state, &by, AuditAction::KeyUpdate, &key.id, before, after).await?;
    Ok(Json(shown(&key, Some(spend), now_us())))
}

async fn revoke(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let by = principal(&state, &headers, Access::Write).await?;
    let (key, _) = with_spend(&state, id.clone()).await?;
    by.require_manager(&key.project)?;
    let id = checked_id(id)?;
    let asked = id.clone();
    let (before, after) = blocking(&state, move |store| {
        let before = store.key(&asked)?;
        if !store.revoke_key(&asked, now_us())? {
            return Ok(None);
        }
        Ok(Some((before, store.key(&asked)?)))
    })
    .await?
    .ok_or_else(|| ApiError::KeyNotFound(id.clone()))?;
    let value = |key: Option<ApiKey>| key.as_ref().map(key_value);
    record(
        &state,
        &by,
        AuditAction::KeyRevoke,
        &id,
        value(before),
        value(after),
    )
    .await?;
    Ok(Json(
        json!({"id": id, "object": "api_key", "revoked": true}),
    ))
}

/// An id as the path gives it, bounded (a 404 for one no key could have).
fn checked_id(id: String) -> Result<String, ApiError> {
    if id.is_empty() || id.len() > KEY_ID_MAX {
        return Err(ApiError::KeyNotFound(id));
    }
    Ok(id)
}

/// The key with this id and its spend so far; a 404 when there is none.
async fn with_spend(state: &AppState, id: String) -> Result<(ApiKey, Spend), ApiError> {
    let id = checked_id(id)?;
    let asked = id.clone();
    let now = now_us();
    let found = blocking(state, move |store| {
        let Some(key) = store.key(&asked)? else {
            return Ok(None);
        };
        Ok(Some((Spend::of(store, &key, now)?, key)))
    })
    .await?;
    match found {
        Some((spend, key)) => Ok((key, spend)),
        None => Err(ApiError::KeyNotFound(id)),
    }
}

/// A key as the API shows it: never its secret or hash. Money in dollars at this edge only.
fn shown(key: &ApiKey, spend: Option<Spend>, now: i64) -> Value {
    let usd = |micros: i64| micros as f64 / 1e6;
    let limits = &key.limits;
    let state = match key.revoked_us {
        Some(_) => "revoked",
        None if limits.expired(now) => "expired",
        None => "active",
    };
    let mut value = json!({
        "id": key.id,
        "object": "api_key",
        "project": key.project,
        "name": key.name,
        "prefix": key.prefix,
        "created_at": format_utc(key.created_us),
        "revoked_at": key.revoked_us.map(format_utc),
        "state": state,
        "models": limits.models,
        "tools": limits.tools,
        "expires_at": limits.expires_us.map(format_utc),
        "rpm": limits.requests_per_minute,
        "tpm": limits.tokens_per_minute,
        "budget": limits.budget.map(|b| json!({"usd": usd(b.micros), "period": b.period.name()})),
        "guards": limits.guards,
        "passthrough": limits.passthrough,
    });
    if let Some(spend) = spend {
        value["spend"] = json!({"usd": usd(spend.micros), "period": spend.period.name()});
    }
    value
}
