//! `POST /usage/stats`: what the console shows about a range of the caller's project, in one
//! answer: totals (requests, errors and their rate, tokens, cost, latency and time-to-first-token
//! averages and percentiles), a series per time bucket and model, and breakdowns by provider,
//! model, user and tag (see [`crate::ledger::stats`]: read from the rollups but for the range's
//! partial hours, percentiles from histograms, within 3.125 % of the exact value).
//!
//! Auth, project scoping and the range (`start_time_us`, `end_time_us`, in µs or ms) are those
//! of the other `/usage/*` endpoints. `bucket` is `minute`, `hour` (the default) or `day`, and a
//! range may hold at most [`BUCKETS_MAX`] of them. Times are µs, money USD.

use std::sync::Arc;

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use serde::Deserialize;
use serde_json::{Value, json};

use super::store_call::blocking;
use super::usage::{asked, range};
use crate::clip::echo;
use crate::error::ApiError;
use crate::ledger::stats::{self, Breakdown, Figures, Percentiles, StatsQuery};
use crate::ledger::time::{DAY_US, HOUR_US, MINUTE_US};
use crate::state::AppState;

/// Buckets of one series at most: 90 days by the hour, a day by the minute.
const BUCKETS_MAX: i64 = 2_200;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StatsBody {
    #[serde(default)]
    start_time_us: Option<i64>,
    #[serde(default)]
    end_time_us: Option<i64>,
    #[serde(default)]
    bucket: Option<String>,
}

pub async fn stats(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Value>, ApiError> {
    let (project, q): (_, StatsBody) = asked(&state, &headers, body).await?;
    let (start_us, end_us) = range(q.start_time_us, q.end_time_us)?;
    let bucket = q.bucket.as_deref().unwrap_or("hour");
    let step_us = match bucket {
        "minute" => MINUTE_US,
        "hour" => HOUR_US,
        "day" => DAY_US,
        other => {
            return Err(ApiError::InvalidField {
                param: "bucket".to_owned(),
                message: format!(
                    "'bucket' must be one of minute, hour, day; got '{}'.",
                    echo(other)
                ),
            });
        }
    };
    if (end_us - start_us) > BUCKETS_MAX * step_us {
        return Err(ApiError::InvalidField {
            param: "bucket".to_owned(),
            message: format!(
                "The range holds more than {BUCKETS_MAX} buckets of a {bucket}: ask for a \
                 longer bucket or a shorter range."
            ),
        });
    }
    let query = StatsQuery {
        project: project.clone(),
        start_us,
        end_us,
        step_us,
    };
    let s = blocking(&state, move |store| stats::stats(store, &query)).await?;
    let mut total = figures(&s.total);
    total.insert("latency_us".to_owned(), percentiles(&s.latency));
    total.insert("ttft_us".to_owned(), percentiles(&s.ttft));
    let series: Vec<Value> = s
        .series
        .iter()
        .map(|row| {
            let mut entry = figures(&row.figures);
            entry.insert("start_us".to_owned(), row.bucket_us.into());
            entry.insert("provider".to_owned(), row.first.clone().into());
            entry.insert("model".to_owned(), row.second.clone().into());
            Value::Object(entry)
        })
        .collect();
    // Every model's figures of a bucket summed: the requests, errors and latency charts.
    let mut per_bucket: std::collections::BTreeMap<i64, Figures> = Default::default();
    for row in &s.series {
        per_bucket
            .entry(row.bucket_us)
            .or_default()
            .add(row.figures);
    }
    let buckets: Vec<Value> = per_bucket
        .iter()
        .map(|(start, f)| {
            let mut entry = figures(f);
            entry.insert("start_us".to_owned(), (*start).into());
            Value::Object(entry)
        })
        .collect();
    Ok(Json(json!({
        "object": "usage.stats",
        "project": project,
        "period_start": start_us,
        "period_end": end_us,
        "bucket": bucket,
        "bucket_us": step_us,
        "total": total,
        "buckets": buckets,
        "series": series,
        "by_provider": breakdown(&s.providers, |p, e| {
            e.insert("provider".to_owned(), p.clone().into());
        }),
        "by_model": breakdown(&s.models, |(p, m), e| {
            e.insert("provider".to_owned(), p.clone().into());
            e.insert("model".to_owned(), m.clone().into());
        }),
        "by_user": breakdown(&s.users, |u, e| {
            e.insert("user_id".to_owned(), u.clone().into());
        }),
        "by_tag": breakdown(&s.tags, |t, e| {
            e.insert("tag".to_owned(), t.clone().into());
        }),
    })))
}

/// Sums as the API shows them: averages in whole µs (rounded down), money in USD.
fn figures(f: &Figures) -> serde_json::Map<String, Value> {
    let average = |sum: i64, n: u64| match i64::try_from(n) {
        Ok(n @ 1..) => Value::from(sum.div_euclid(n)),
        _ => Value::Null,
    };
    let error_rate = if f.requests == 0 {
        0.0
    } else {
        f.errors as f64 / f.requests as f64
    };
    let json = json!({
        "requests": f.requests,
        "errors": f.errors,
        "error_rate": error_rate,
        "input_tokens": f.input_tokens,
        "output_tokens": f.output_tokens,
        "cached_input_tokens": f.cached_input_tokens,
        "cost": f.cost_micros as f64 / 1_000_000.0,
        "cache_hits": f.cache_hits,
        "cache_hit_rate": if f.requests == 0 { 0.0 } else { f.cache_hits as f64 / f.requests as f64 },
        "saved_cost": f.saved_cost_micros as f64 / 1_000_000.0,
        "latency_us_avg": average(f.latency_us_sum, f.requests),
        "ttft_us_avg": average(f.ttft_us_sum, f.ttft_count),
    });
    match json {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    }
}

fn percentiles(values: &Percentiles) -> Value {
    Value::Object(
        values
            .iter()
            .map(|(p, v)| (format!("p{p}"), (*v).into()))
            .collect(),
    )
}

fn breakdown<K>(b: &Breakdown<K>, key: impl Fn(&K, &mut serde_json::Map<String, Value>)) -> Value {
    let rows: Vec<Value> = b
        .rows
        .iter()
        .map(|(k, f)| {
            let mut entry = figures(f);
            key(k, &mut entry);
            Value::Object(entry)
        })
        .collect();
    json!({ "rows": rows, "count": b.count })
}
