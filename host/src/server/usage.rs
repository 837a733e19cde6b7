//! The usage analytics endpoints: `POST /usage/total` and `POST /usage/models` (the request log,
//! `/usage/requests`, is in [`super::usage_requests`]).
//!
//! Both need `Authorization: Bearer <key>` and answer for the key's project only: 401 for a
//! missing, unknown or revoked key, 403 when `x-project-id` names another project (see
//! [`crate::pipeline::auth`]). No project ever sees another's usage.
//!
//! Times: `start_time_us` and `end_time_us` are µs since the epoch; a value below 10^14 is taken
//! as milliseconds (what most clients send). The range is `[start, end)`; `end` defaults to now
//! and `start` to 30 days before `end`. Answers are always in µs, money in USD.
//!
//! `/usage/models` also takes a user filter, `user_id`, `user_name` and `user_tags` (a list: a
//! record matches when it has any of them); every field given must match, and the range applies
//! too. A filtered answer is bucketed by `day` unless `min_unit` says otherwise.

use std::sync::Arc;

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use serde::Deserialize;
use serde_json::{Value, json};

use super::store_call::blocking;
use crate::clip::echo;
use crate::error::ApiError;
use crate::ledger::time::{DAY_US, format_utc, now_us};
use crate::ledger::{Totals, Unit, UserFilter};
use crate::pipeline::request::body;
use crate::pipeline::request::end_user::{TAG_MAX, TAGS_MAX, TEXT_MAX};
use crate::state::AppState;

/// Below this a time is in milliseconds (10^14 µs is 1973; 10^14 ms is the year 5138).
const MS_BELOW: i64 = 100_000_000_000_000;
const DEFAULT_RANGE_US: i64 = 30 * DAY_US;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TotalQuery {
    #[serde(default)]
    start_time_us: Option<i64>,
    #[serde(default)]
    end_time_us: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelsQuery {
    #[serde(default)]
    start_time_us: Option<i64>,
    #[serde(default)]
    end_time_us: Option<i64>,
    #[serde(default)]
    min_unit: Option<String>,
    #[serde(default)]
    user_id: Option<String>,
    #[serde(default)]
    user_name: Option<String>,
    #[serde(default, deserialize_with = "bounded_tags")]
    user_tags: Option<Vec<String>>,
}

/// A tag list read no further than [`TAGS_MAX`] tags: a body of a million tags is refused
/// before it becomes a million strings.
pub(super) fn bounded_tags<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Vec<String>>, D::Error> {
    struct Tags;
    impl<'de> serde::de::Visitor<'de> for Tags {
        type Value = Option<Vec<String>>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            write!(f, "a list of at most {TAGS_MAX} tags")
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let mut tags = Vec::new();
            while let Some(tag) = seq.next_element::<String>()? {
                if tags.len() == TAGS_MAX {
                    return Err(serde::de::Error::custom(format!("at most {TAGS_MAX} tags")));
                }
                tags.push(tag);
            }
            Ok(Some(tags))
        }
    }
    d.deserialize_any(Tags)
}

impl ModelsQuery {
    /// The user filter of the query; an empty string is refused rather than guessed at.
    fn filter(&mut self) -> Result<UserFilter, ApiError> {
        user_filter(
            self.user_id.take(),
            self.user_name.take(),
            self.user_tags.take(),
        )
    }
}

/// A filter value: absent, or 1 to `max` bytes (longer than any stored value, no record could
/// match: refused rather than searched for).
pub(super) fn given(
    param: &str,
    value: Option<String>,
    max: usize,
) -> Result<Option<String>, ApiError> {
    match value {
        Some(v) if v.trim().is_empty() => Err(ApiError::InvalidField {
            param: param.to_owned(),
            message: format!("'{param}' must not be empty."),
        }),
        Some(v) if v.len() > max => Err(ApiError::InvalidField {
            param: param.to_owned(),
            message: format!("'{param}' must have at most {max} bytes."),
        }),
        other => Ok(other),
    }
}

/// The user filter of `/usage/models` and `/usage/requests`.
pub(super) fn user_filter(
    user_id: Option<String>,
    user_name: Option<String>,
    user_tags: Option<Vec<String>>,
) -> Result<UserFilter, ApiError> {
    let user_tags = user_tags.unwrap_or_default();
    if user_tags
        .iter()
        .any(|t| t.trim().is_empty() || t.len() > TAG_MAX)
    {
        return Err(ApiError::InvalidField {
            param: "user_tags".to_owned(),
            message: format!("'user_tags' must hold tags of 1 to {TAG_MAX} bytes, not empty ones."),
        });
    }
    Ok(UserFilter {
        user_id: given("user_id", user_id, TEXT_MAX)?,
        user_name: given("user_name", user_name, TEXT_MAX)?,
        user_tags,
    })
}

pub async fn total(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Value>, ApiError> {
    let (project, query): (_, TotalQuery) = asked(&state, &headers, body).await?;
    let (start, end) = range(query.start_time_us, query.end_time_us)?;
    let totals = blocking(&state, move |store| store.total(&project, start, end)).await?;
    Ok(Json(json!({
        "total": sums(totals),
        "cache": cache(totals),
        // Output lines of batches (part of `total`), metered at the batch price.
        "batch": {
            "requests": totals.batch_requests,
            "cost": totals.batch_cost_micros as f64 / 1_000_000.0,
        },
        "period_start": start,
        "period_end": end,
    })))
}

pub async fn models(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Value>, ApiError> {
    let (project, mut query): (_, ModelsQuery) = asked(&state, &headers, body).await?;
    let (start, end) = range(query.start_time_us, query.end_time_us)?;
    let filter = query.filter()?;
    let unit = match query.min_unit.as_deref() {
        // The spec buckets answers about users by day; an explicit `min_unit` still wins.
        None if !filter.is_empty() => Unit::Day,
        None => Unit::Hour,
        Some(name) => Unit::parse(name).ok_or_else(|| ApiError::InvalidField {
            param: "min_unit".to_owned(),
            message: format!(
                "'min_unit' must be one of minute, hour, day, week, month; got '{}'.",
                echo(name)
            ),
        })?,
    };
    let buckets = blocking(&state, move |store| {
        store.models(&project, start, end, unit, &filter)
    })
    .await?;
    let models: Vec<Value> = buckets
        .into_iter()
        .map(|b| {
            let mut entry = serde_json::Map::new();
            entry.insert(unit.name().to_owned(), format_utc(b.bucket_us).into());
            entry.insert("provider".to_owned(), b.provider.into());
            entry.insert("model_name".to_owned(), b.model.into());
            if let Value::Object(sums) = sums(b.totals) {
                entry.extend(sums);
            }
            entry.insert("cache".to_owned(), cache(b.totals));
            Value::Object(entry)
        })
        .collect();
    Ok(Json(json!({
        "models": models,
        "period_start": start,
        "period_end": end,
    })))
}

/// What every `/usage/*` question starts with: the caller's project (a key is always required)
/// and the query its body holds. The body's share of the budget is given back once parsed.
pub(super) async fn asked<T: serde::de::DeserializeOwned>(
    state: &AppState,
    headers: &HeaderMap,
    body: Body,
) -> Result<(String, T), ApiError> {
    let project = super::admin_auth::usage_project(state, headers).await?;
    let (body, _reservation) = body::read(state, body).await?;
    Ok((project, parse(&body)?))
}

pub(super) fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    // An empty body asks for the defaults.
    let body = if body.iter().all(u8::is_ascii_whitespace) {
        b"{}".as_slice()
    } else {
        body
    };
    let mut de = serde_json::Deserializer::from_slice(body);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        // The path and the parser's message may both quote a field name of any length.
        let param = echo(&e.path().to_string()).into_owned();
        let syntax = !e.inner().is_data();
        let message = e.into_inner().to_string();
        if syntax || param == "." || param.is_empty() {
            ApiError::InvalidJson(message)
        } else {
            ApiError::InvalidField {
                message: format!("Invalid '{param}': {}.", echo(&message)),
                param,
            }
        }
    })
}

/// The range in µs, from values in µs or ms.
pub(super) fn range(start: Option<i64>, end: Option<i64>) -> Result<(i64, i64), ApiError> {
    let to_us = |param: &str, value: i64| {
        if value < 0 {
            return Err(ApiError::InvalidField {
                param: param.to_owned(),
                message: format!("'{param}' must not be negative."),
            });
        }
        Ok(if value < MS_BELOW {
            value * 1_000
        } else {
            value
        })
    };
    let end = match end {
        Some(v) => to_us("end_time_us", v)?,
        None => now_us(),
    };
    let start = match start {
        Some(v) => to_us("start_time_us", v)?,
        None => (end - DEFAULT_RANGE_US).max(0),
    };
    if start > end {
        return Err(ApiError::InvalidField {
            param: "start_time_us".to_owned(),
            message: "'start_time_us' must not be after 'end_time_us'.".to_owned(),
        });
    }
    Ok((start, end))
}

/// What the response cache answered: hits, their share of the requests, the cost they saved.
fn cache(totals: Totals) -> Value {
    let hit_rate = match totals.requests {
        0 => 0.0,
        n => totals.cache_hits as f64 / n as f64,
    };
    json!({
        "hits": totals.cache_hits,
        "hit_rate": hit_rate,
        "saved_cost": totals.saved_cost_micros as f64 / 1_000_000.0,
    })
}

fn sums(totals: Totals) -> Value {
    json!({
        "total_input_tokens": totals.input_tokens,
        "total_output_tokens": totals.output_tokens,
        "total_cost": totals.cost_micros as f64 / 1_000_000.0,
    })
}
