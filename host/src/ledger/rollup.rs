//! What both stores share about rollups: the users a batch names, the rollup rows a batch adds
//! (summed in memory first), how a range splits into whole hours and raw edges, and how rows
//! fold into calendar buckets.

use std::collections::{BTreeMap, HashMap};

use super::UsageRecord;
use super::store::{ModelBucket, Totals, Unit};
use super::time::{DAY_US, HOUR_US, MINUTE_US, bucket_start};

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
}

impl Sums {
    fn add(&mut self, r: &UsageRecord) -> anyhow::Result<()> {
        self.input_tokens += i64::try_from(r.input_tokens)?;
        self.output_tokens += i64::try_from(r.output_tokens)?;
        self.cost_micros += r.cost_micros.unwrap_or(0);
        self.requests += 1;
        Ok(())
    }
}

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
}

/// Sums `records` (whose user keys are `user_keys`, in the same order) into rollup rows.
pub fn rollups(records: &[UsageRecord], user_keys: &[i64]) -> anyhow::Result<Rollups> {
    let mut models: BTreeMap<ModelKey, Sums> = BTreeMap::new();
    let mut model_days: BTreeMap<ModelKey, Sums> = BTreeMap::new();
    let mut users: BTreeMap<UserKey, Sums> = BTreeMap::new();
    let mut user_days: BTreeMap<UserKey, Sums> = BTreeMap::new();
    for (r, &user) in records.iter().zip(user_keys) {
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

/// The `SELECT` that fills `usage_daily_models` from `usage_hourly_models`, for a database
/// written before the daily rollup existed (the same SQL in SQLite and PostgreSQL).
pub fn days_from_hours() -> String {
    format!(
        "SELECT project, (hour_us / {DAY_US}) * {DAY_US}, provider, model, SUM(input_tokens),
            SUM(output_tokens), SUM(cost_micros), SUM(requests)
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
    requests = h.requests + excluded.requests";

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
