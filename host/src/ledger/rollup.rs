//! What both stores share about rollups: the users a batch names, the rollup rows a batch adds
//! (summed in memory first), how a range splits into whole hours and raw edges, and how rows
//! fold into calendar buckets.

use std::collections::{BTreeMap, HashMap};

use super::histogram::{self, Metric};
use super::record::UsageRecord;
use super::time::{DAY_US, HOUR_US, MINUTE_US, Unit, bucket_start};
use super::totals::{ModelBucket, Totals};

/// `user_key` of a record sent without any user fact: no `usage_users` row has it, so no user
/// filter matches it.
pub const NO_USER: i64 = 0;

/// A user as one record names it; `usage_users` holds one row per distinct one. Absent facts are
/// empty strings, tags a JSON array, so that the unique key has no NULLs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct UserSeen {
    pub project: String,
    pub id: String,
    pub name: String,
    pub tags: String,
}

impl UserSeen {
    /// `None` for a record with no user id, name nor tags.
    pub fn of(record: &UsageRecord) -> anyhow::Result<Option<Self>> {
        if record.user_id.is_none() && record.user_name.is_none() && record.user_tags.is_empty() {
            return Ok(None);
        }
        Ok(Some(Self {
            project: record.project.clone(),
            id: record.user_id.clone().unwrap_or_default(),
            name: record.user_name.clone().unwrap_or_default(),
            tags: serde_json::to_string(&record.user_tags)?,
        }))
    }
}

/// The user keys a store has resolved, so that a batch looks up only users it has not seen.
/// Bounded: past `MAX_CACHED` users it starts again (a miss costs one lookup, not correctness).
#[derive(Default)]
pub struct UserKeys(HashMap<UserSeen, i64>);

const MAX_CACHED: usize = 100_000;

impl UserKeys {
    pub fn get(&self, user: &UserSeen) -> Option<i64> {
        self.0.get(user).copied()
    }

    /// Adds keys resolved in a transaction that has committed (a rolled-back insert must not be
    /// remembered).
    pub fn extend(&mut self, resolved: HashMap<UserSeen, i64>) {
        if self.0.len() + resolved.len() > MAX_CACHED {
            self.0.clear();
        }
        self.0.extend(resolved);
    }
}

/// Sums that a batch adds to one rollup row.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sums {
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cost_micros: i64,
    pub requests: i64,
    /// Requests answered with anything but a 2xx (`requests::FAILED`).
    pub errors: i64,
    pub cached_input_tokens: i64,
    pub latency_us: i64,
    pub ttft_us: i64,
    pub ttft_count: i64,
    /// Requests answered from the response cache, and what they would have cost.
    pub cache_hits: i64,
    pub saved_cost_micros: i64,
    /// Output lines of batches, and what they cost (at the batch price).
    pub batch_requests: i64,
    pub batch_cost_micros: i64,
}

impl Sums {
    fn add(&mut self, r: &UsageRecord) -> anyhow::Result<()> {
        self.input_tokens += i64::try_from(r.input_tokens)?;
        self.output_tokens += i64::try_from(r.output_tokens)?;
        self.cost_micros += r.cost_micros.unwrap_or(0);
        self.requests += 1;
        self.errors += i64::from(!(200..300).contains(&r.status));
        self.cached_input_tokens += i64::try_from(r.cached_input_tokens)?;
        self.latency_us += r.latency_us;
        self.ttft_us += r.ttft_us.unwrap_or(0);
        self.ttft_count += i64::from(r.ttft_us.is_some());
        self.cache_hits += i64::from(r.cache_hit);
        self.saved_cost_micros += r.saved_cost_micros.unwrap_or(0);
        if r.batch_id.is_some() {
            self.batch_requests += 1;
            self.batch_cost_micros += r.cost_micros.unwrap_or(0);
        }
        Ok(())
    }

    /// The sums in the order of [`SUM_COLUMNS`].
    pub fn columns(&self) -> [i64; 13] {
        [
            self.input_tokens,
            self.output_tokens,
            self.cost_micros,
            self.requests,
            self.errors,
            self.cached_input_tokens,
            self.latency_us,
            self.ttft_us,
            self.ttft_count,
            self.cache_hits,
            self.saved_cost_micros,
            self.batch_requests,
            self.batch_cost_micros,
        ]
    }
}

/// The summed columns of every rollup table, in [`Sums::columns`]' order.
pub const SUM_COLUMNS: [&str; 13] = [
    "input_tokens",
    "output_tokens",
    "cost_micros",
    "requests",
    "errors",
    "cached_input_tokens",
    "latency_us",
    "ttft_us",
    "ttft_count",
    "cache_hits",
    "saved_cost_micros",
    "batch_requests",
    "batch_cost_micros",
];

/// How many of [`SUM_COLUMNS`] V1 has (V3 added the cache's).
const SUM_COLUMNS_V1: usize = 9;

/// The columns added to the four rollup tables after the first release (the console's
/// figures), each `NOT NULL DEFAULT 0`: older databases get them and [`backfill_sql`] fills them.
pub const STATS_COLUMNS: [&str; 5] = [
    "errors",
    "cached_input_tokens",
    "latency_us",
    "ttft_us",
    "ttft_count",
];

/// The rollup tables: (name, time column, bucket length, keyed by user).
pub const ROLLUP_TABLES: [(&str, &str, i64, bool); 4] = [
    ("usage_hourly_models", "hour_us", HOUR_US, false),
    ("usage_daily_models", "day_us", DAY_US, false),
    ("usage_hourly_users", "hour_us", HOUR_US, true),
    ("usage_daily_users", "day_us", DAY_US, true),
];

/// The `UPDATE` that sets [`STATS_COLUMNS`] of every row of one rollup table from the raw
/// records (the same SQL in SQLite and PostgreSQL): one `GROUP BY` over the records, joined to
/// the rows by their key.
pub fn backfill_sql(table: &str, time: &str, step: i64, by_user: bool) -> String {
    let (user_select, user_match) = if by_user {
        ("user_key, ", " AND h.user_key = s.user_key")
    } else {
        ("", "")
    };
    let failed = super::requests::FAILED;
    format!(
        "UPDATE {table} AS h SET errors = s.errors, cached_input_tokens = s.cached,
            latency_us = s.latency, ttft_us = s.ttft, ttft_count = s.ttft_count
         FROM (SELECT project, (time_us / {step}) * {step} AS at, {user_select}
                COALESCE(provider, '') AS provider, COALESCE(model, '') AS model,
                SUM(CASE WHEN {failed} THEN 1 ELSE 0 END) AS errors,
                SUM(cached_input_tokens) AS cached, SUM(latency_us) AS latency,
                SUM(COALESCE(ttft_us, 0)) AS ttft, COUNT(ttft_us) AS ttft_count
             FROM usage_records GROUP BY project, at, {user_select}provider, model) AS s
         WHERE h.project = s.project AND h.{time} = s.at AND h.provider = s.provider
            AND h.model = s.model{user_match}"
    )
}

/// (project, hour or day, metric code, bucket) of `usage_hourly_latency` and
/// `usage_daily_latency`.
pub type DurationKey = (String, i64, i32, i32);

/// Counts per duration bucket, by hour and by day: what a batch (or a backfill) adds.
#[derive(Default)]
pub struct DurationCounts {
    pub hours: BTreeMap<DurationKey, i64>,
    pub days: BTreeMap<DurationKey, i64>,
}

impl DurationCounts {
    pub fn add(&mut self, project: &str, time_us: i64, latency_us: i64, ttft_us: Option<i64>) {
        let hour = bucket_start(time_us, Unit::Hour);
        let day = bucket_start(time_us, Unit::Day);
        let values = std::iter::once((Metric::Latency, latency_us))
            .chain(ttft_us.map(|t| (Metric::Ttft, t)));
        for (metric, v) in values {
            let b = histogram::bucket(v);
            for (rows, at) in [(&mut self.hours, hour), (&mut self.days, day)] {
                *rows
                    .entry((project.to_owned(), at, metric.code(), b))
                    .or_default() += 1;
            }
        }
    }
}

/// Records whose duration counts a backfill holds in memory at most before writing them.
pub const BACKFILL_CHUNK: usize = 100_000;

/// The duration histograms' tables, hourly then daily.
pub const DURATION_TABLES: [&str; 2] = ["usage_hourly_latency", "usage_daily_latency"];

/// (project, hour or day, provider, model) of `usage_hourly_models` and `usage_daily_models`.
pub type ModelKey = (String, i64, String, String);
/// (project, hour or day, user key, provider, model) of `usage_hourly_users` and
/// `usage_daily_users`: time first, so that a batch (whose records are minutes apart) updates
/// rows that sit together at the end of the table, not one row per user spread over all of it.
pub type UserKey = (String, i64, i64, String, String);

/// The rows a batch adds to both rollups, each summed over the batch. The maps are ordered like
/// the tables' primary keys, so rows are upserted in key order: two replicas writing the same
/// rows lock them in the same order and cannot deadlock (a known failure of spend tables updated
/// row by row).
pub struct Rollups {
    pub models: BTreeMap<ModelKey, Sums>,
    pub model_days: BTreeMap<ModelKey, Sums>,
    pub users: BTreeMap<UserKey, Sums>,
    pub user_days: BTreeMap<UserKey, Sums>,
    pub durations: DurationCounts,
}

/// Sums `records` (whose user keys are `user_keys`, in the same order) into rollup rows.
pub fn rollups(records: &[UsageRecord], user_keys: &[i64]) -> anyhow::Result<Rollups> {
    let mut models: BTreeMap<ModelKey, Sums> = BTreeMap::new();
    let mut model_days: BTreeMap<ModelKey, Sums> = BTreeMap::new();
    let mut users: BTreeMap<UserKey, Sums> = BTreeMap::new();
    let mut user_days: BTreeMap<UserKey, Sums> = BTreeMap::new();
    let mut durations = DurationCounts::default();
    for (r, &user) in records.iter().zip(user_keys) {
        durations.add(&r.project, r.time_us, r.latency_us, r.ttft_us);
        let hour = bucket_start(r.time_us, Unit::Hour);
        let provider = r.provider.clone().unwrap_or_default();
        let model = r.model.clone().unwrap_or_default();
        let day = bucket_start(r.time_us, Unit::Day);
        if user != NO_USER {
            for (rows, at) in [(&mut user_days, day), (&mut users, hour)] {
                rows.entry((r.project.clone(), at, user, provider.clone(), model.clone()))
                    .or_default()
                    .add(r)?;
            }
        }
        model_days
            .entry((r.project.clone(), day, provider.clone(), model.clone()))
            .or_default()
            .add(r)?;
        models
            .entry((r.project.clone(), hour, provider, model))
            .or_default()
            .add(r)?;
    }
    Ok(Rollups {
        models,
        model_days,
        users,
        user_days,
        durations,
    })
}

/// The starts of the `step`-long buckets in `[a, b)` (both multiples of `step`), for a query
/// that looks up each bucket of a time-first rollup for a few users, instead of scanning every
/// user's rows in the range.
pub fn steps(a: i64, b: i64, step: i64) -> Vec<i64> {
    (0..(b - a).div_euclid(step).max(0))
        .map(|i| a + i * step)
        .collect()
}

/// The statement that fills `usage_daily_models` from `usage_hourly_models`, for a database
/// written before the daily rollup existed (the same SQL in SQLite and PostgreSQL).
pub fn days_from_hours() -> String {
    // It runs on the way to V1: the columns later versions add are not there yet.
    let v1 = &SUM_COLUMNS[..SUM_COLUMNS_V1];
    let columns = v1.join(", ");
    let sums = v1
        .iter()
        .map(|c| format!("SUM({c})"))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "INSERT INTO usage_daily_models (project, day_us, provider, model, {columns})
         SELECT project, (hour_us / {DAY_US}) * {DAY_US}, provider, model, {sums}
         FROM usage_hourly_models GROUP BY 1, 2, 3, 4"
    )
}

/// `[start, end)` in µs.
pub type Span = (i64, i64);

/// Where each part of a range is read from: whole days from a daily rollup, whole hours from an
/// hourly one, and the partial hours at the edges from the raw table.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Plan {
    pub days: Option<Span>,
    pub hours: Vec<Span>,
    pub raw: Vec<Span>,
}

/// Which pair of rollup tables a question reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rollup {
    /// `usage_daily_models` and `usage_hourly_models`: every record.
    Models,
    /// `usage_daily_users` and `usage_hourly_users`: by user.
    Users,
}

/// Whole buckets of one rollup table: its name, its time column, the bucket's length in µs,
/// and the span.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RollupSpan {
    pub table: &'static str,
    pub time: &'static str,
    pub step: i64,
    pub span: Span,
}

impl Plan {
    /// The plan's whole days, from the daily table of `rollup`, then its whole hours, from the
    /// hourly one.
    pub fn rollups(&self, rollup: Rollup) -> impl Iterator<Item = RollupSpan> + '_ {
        let (daily, hourly) = match rollup {
            Rollup::Models => ("usage_daily_models", "usage_hourly_models"),
            Rollup::Users => ("usage_daily_users", "usage_hourly_users"),
        };
        let days = self.days.iter().map(move |&span| RollupSpan {
            table: daily,
            time: "day_us",
            step: DAY_US,
            span,
        });
        let hours = self.hours.iter().map(move |&span| RollupSpan {
            table: hourly,
            time: "hour_us",
            step: HOUR_US,
            span,
        });
        days.chain(hours)
    }
}

/// The `DO UPDATE SET` of every rollup UPSERT (the same in SQLite and PostgreSQL), for
/// `INSERT INTO <table> AS h`: a batch's sums are added to the row's.
pub const ADD_SUMS: &str = "input_tokens = h.input_tokens + excluded.input_tokens,
    output_tokens = h.output_tokens + excluded.output_tokens,
    cost_micros = h.cost_micros + excluded.cost_micros,
    requests = h.requests + excluded.requests,
    errors = h.errors + excluded.errors,
    cached_input_tokens = h.cached_input_tokens + excluded.cached_input_tokens,
    latency_us = h.latency_us + excluded.latency_us,
    ttft_us = h.ttft_us + excluded.ttft_us,
    ttft_count = h.ttft_count + excluded.ttft_count,
    cache_hits = h.cache_hits + excluded.cache_hits,
    saved_cost_micros = h.saved_cost_micros + excluded.saved_cost_micros,
    batch_requests = h.batch_requests + excluded.batch_requests,
    batch_cost_micros = h.batch_cost_micros + excluded.batch_cost_micros";

/// Splits `[start, end)` for a question in `unit` buckets (`None` for a total). Minute buckets
/// cannot come from a rollup: the whole range is then raw. For a total, or buckets of a day or
/// coarser (each a union of whole UTC days), whole days come from a daily rollup.
pub fn plan(start: i64, end: i64, unit: Option<Unit>) -> Plan {
    let all_raw = Plan {
        raw: vec![(start, end)],
        ..Plan::default()
    };
    if unit == Some(Unit::Minute) {
        return all_raw;
    }
    let ceil = |t: i64, step: i64| {
        t.div_euclid(step) * step + if t.rem_euclid(step) == 0 { 0 } else { step }
    };
    let floor = |t: i64, step: i64| t.div_euclid(step) * step;
    let (a, b) = (ceil(start, HOUR_US), floor(end, HOUR_US));
    if a >= b {
        return all_raw;
    }
    let raw = [(start, a), (b, end)]
        .into_iter()
        .filter(|(s, e)| s < e)
        .collect();
    let by_day = matches!(unit, None | Some(Unit::Day | Unit::Week | Unit::Month));
    let (da, db) = (ceil(a, DAY_US), floor(b, DAY_US));
    if !by_day || da >= db {
        return Plan {
            days: None,
            hours: vec![(a, b)],
            raw,
        };
    }
    Plan {
        days: Some((da, db)),
        hours: [(a, da), (db, b)]
            .into_iter()
            .filter(|(s, e)| s < e)
            .collect(),
        raw,
    }
}

/// What raw rows are grouped by before folding into `unit` buckets: minutes for minute buckets,
/// hours for the rest (every coarser unit is a union of whole hours).
pub fn grain(unit: Unit) -> i64 {
    if unit == Unit::Minute {
        MINUTE_US
    } else {
        HOUR_US
    }
}

/// Rows (at the start of a minute or hour) folded into `unit` buckets.
pub struct Buckets {
    unit: Unit,
    sums: BTreeMap<(i64, String, String), Totals>,
}

impl Buckets {
    pub fn new(unit: Unit) -> Self {
        Self {
            unit,
            sums: BTreeMap::new(),
        }
    }

    pub fn add(&mut self, at_us: i64, provider: String, model: String, totals: Totals) {
        self.sums
            .entry((bucket_start(at_us, self.unit), provider, model))
            .or_default()
            .add(totals);
    }

    /// Ordered by bucket, provider and model.
    pub fn into_vec(self) -> Vec<ModelBucket> {
        self.sums
            .into_iter()
            .map(|((bucket_us, provider, model), totals)| ModelBucket {
                bucket_us,
                provider,
                model,
                totals,
            })
            .collect()
    }
}

/// Sums as read from SQL (`NULL` for an empty range), as [`Totals`].
pub fn totals(
    input: Option<i64>,
    output: Option<i64>,
    cost: Option<i64>,
    n: Option<i64>,
) -> Totals {
    let count = |v: Option<i64>| u64::try_from(v.unwrap_or(0)).unwrap_or(0);
    Totals {
        input_tokens: count(input),
        output_tokens: count(output),
        cost_micros: cost.unwrap_or(0),
        requests: count(n),
        ..Totals::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: i64 = 19_782 * DAY_US; // 2024-02-29 00:00 UTC

    #[test]
    fn ranges_split_into_days_hours_and_raw_edges() {
        let (start, end) = (D - HOUR_US - 5, D + 2 * DAY_US + 2 * HOUR_US + 7);
        assert_eq!(
            plan(start, end, Some(Unit::Day)),
            Plan {
                days: Some((D, D + 2 * DAY_US)),
                hours: vec![
                    (D - HOUR_US, D),
                    (D + 2 * DAY_US, D + 2 * DAY_US + 2 * HOUR_US)
                ],
                raw: vec![(start, D - HOUR_US), (D + 2 * DAY_US + 2 * HOUR_US, end)],
            }
        );
        // A total reads days too; hour buckets cannot.
        assert_eq!(plan(start, end, None).days, Some((D, D + 2 * DAY_US)));
        let p = plan(start, end, Some(Unit::Hour));
        assert_eq!(p.days, None);
        assert_eq!(p.hours, vec![(D - HOUR_US, D + 2 * DAY_US + 2 * HOUR_US)]);
        assert_eq!(plan(start, end, Some(Unit::Minute)).raw, vec![(start, end)]);
        // Within one hour: raw only.
        assert_eq!(plan(D + 1, D + 9, None).raw, vec![(D + 1, D + 9)]);
        // Aligned: no raw edges.
        assert_eq!(
            plan(D, D + DAY_US, Some(Unit::Month)).raw,
            Vec::<Span>::new()
        );
    }
}
