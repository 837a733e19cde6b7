//! The console's figures over a range: totals with the error rate and latency percentiles, a
//! series per time bucket and model, and breakdowns by provider, model, user and tag.
//!
//! They are read like `/usage/total` and `/usage/models` (see [`super::rollup::plan`]): whole
//! days from the daily rollups, whole hours from the hourly ones, and only the partial hours at
//! the edges of the range from the raw records, so that the cost grows with the days and hours
//! of the range, not with its requests. The series comes from the per-model rollups (a minute
//! series, which no rollup holds, from the raw records of its range: at most a day and a half,
//! see `server::usage_stats`), and the totals and the provider and model breakdowns are folded
//! from it. The users and tags come from the per-user rollups joined with `usage_users` (a
//! user's tags are those it was recorded with; a record counts once for each distinct tag of its
//! list); records sent without any user fact are in no per-user rollup, so they are what the
//! totals hold beyond the users' rows, and count under the "no user" row.
//!
//! Percentiles are nearest rank over a histogram of the durations, per hour and per day
//! ([`super::histogram`]: fixed log-linear buckets, each reported as its midpoint), with the raw
//! records at the edges counted into the same buckets: within 3.125 % of the exact value.

use std::collections::BTreeMap;

use super::histogram::{Durations, Metric};
use super::requests::{FAILED, Flavor};
use super::rollup::{self, Plan};
use super::time::{DAY_US, HOUR_US, Unit};

/// Rows of a breakdown at most (the users and tags spending the most, then the busiest).
pub const BREAKDOWN_MAX: usize = 100;

/// The percentiles computed for latency and time to first token.
pub const PERCENTILES: [u32; 3] = [50, 90, 99];

/// One question: `[start_us, end_us)` of one project, the series in buckets of `step_us`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatsQuery {
    pub project: String,
    pub start_us: i64,
    pub end_us: i64,
    pub step_us: i64,
}

/// Sums over some records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Figures {
    pub requests: u64,
    /// Requests answered with anything but a 2xx.
    pub errors: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_input_tokens: u64,
    pub cost_micros: i64,
    pub latency_us_sum: i64,
    /// Over the records that have a time to first token (streams that sent something).
    pub ttft_us_sum: i64,
    pub ttft_count: u64,
    /// Requests answered from the response cache, and what they would have cost.
    pub cache_hits: u64,
    pub saved_cost_micros: i64,
}

/// How many sums [`Figures::from_sql`] reads.
pub const FIGURES: usize = 11;

impl Figures {
    pub fn add(&mut self, o: Figures) {
        self.requests += o.requests;
        self.errors += o.errors;
        self.input_tokens += o.input_tokens;
        self.output_tokens += o.output_tokens;
        self.cached_input_tokens += o.cached_input_tokens;
        self.cost_micros += o.cost_micros;
        self.latency_us_sum += o.latency_us_sum;
        self.ttft_us_sum += o.ttft_us_sum;
        self.ttft_count += o.ttft_count;
        self.cache_hits += o.cache_hits;
        self.saved_cost_micros += o.saved_cost_micros;
    }

    /// What `self` holds beyond `o` (which it includes); 0 rather than below (a batch written
    /// between two reads of the same range could make `o` the larger).
    pub fn minus(&self, o: Figures) -> Self {
        Self {
            requests: self.requests.saturating_sub(o.requests),
            errors: self.errors.saturating_sub(o.errors),
            input_tokens: self.input_tokens.saturating_sub(o.input_tokens),
            output_tokens: self.output_tokens.saturating_sub(o.output_tokens),
            cached_input_tokens: self
                .cached_input_tokens
                .saturating_sub(o.cached_input_tokens),
            cost_micros: self.cost_micros - o.cost_micros,
            latency_us_sum: self.latency_us_sum - o.latency_us_sum,
            ttft_us_sum: self.ttft_us_sum - o.ttft_us_sum,
            ttft_count: self.ttft_count.saturating_sub(o.ttft_count),
            cache_hits: self.cache_hits.saturating_sub(o.cache_hits),
            saved_cost_micros: self.saved_cost_micros - o.saved_cost_micros,
        }
    }

    /// From the sums as SQL gives them (`NULL` where no record had a value).
    pub fn from_sql(v: [Option<i64>; FIGURES]) -> Self {
        let count = |v: Option<i64>| u64::try_from(v.unwrap_or(0)).unwrap_or(0);
        Self {
            requests: count(v[0]),
            errors: count(v[1]),
            input_tokens: count(v[2]),
            output_tokens: count(v[3]),
            cached_input_tokens: count(v[4]),
            cost_micros: v[5].unwrap_or(0),
            latency_us_sum: v[6].unwrap_or(0),
            ttft_us_sum: v[7].unwrap_or(0),
            ttft_count: count(v[8]),
            cache_hits: count(v[9]),
            saved_cost_micros: v[10].unwrap_or(0),
        }
    }
}

/// Where one part of a range is read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// `usage_records`.
    Records,
    /// The hourly rollups (`usage_hourly_*`).
    Hours,
    /// The daily rollups (`usage_daily_*`).
    Days,
}

/// `[start_us, end_us)` of one source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part {
    pub source: Source,
    pub start_us: i64,
    pub end_us: i64,
}

/// The parts of a plan, in no particular order.
fn parts(plan: &Plan) -> Vec<Part> {
    let part = |source| {
        move |&(start_us, end_us): &(i64, i64)| Part {
            source,
            start_us,
            end_us,
        }
    };
    plan.days
        .iter()
        .map(part(Source::Days))
        .chain(plan.hours.iter().map(part(Source::Hours)))
        .chain(plan.raw.iter().map(part(Source::Records)))
        .collect()
}

/// What the records are grouped by; each row is (time, first, second, figures).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grouping {
    /// (time, provider, model): from the records, time is the start of the bucket of this
    /// length in µs; from a rollup, the row's hour or day.
    Series(i64),
    /// (0, user id, the user's tag list as stored (a JSON array)). From the records, those
    /// without a user are a row with no id and no tags; a rollup has none of them.
    Users,
}

/// One group's figures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupRow {
    pub bucket_us: i64,
    pub first: Option<String>,
    pub second: Option<String>,
    pub figures: Figures,
}

/// (table, time column) of `source` for rollups named `usage_{hourly,daily}_{kind}`; `None`
/// for the raw records.
fn rollup_table(source: Source, kind: &str) -> Option<(String, &'static str)> {
    match source {
        Source::Records => None,
        Source::Hours => Some((format!("usage_hourly_{kind}"), "hour_us")),
        Source::Days => Some((format!("usage_daily_{kind}"), "day_us")),
    }
}

/// PostgreSQL sums BIGINTs into NUMERIC; SQLite's are already integers.
fn cast(flavor: Flavor) -> &'static str {
    match flavor {
        Flavor::Sqlite => "",
        Flavor::Postgres => "::BIGINT",
    }
}

/// The sums every grouping of the raw records selects, in [`Figures::from_sql`]'s order.
fn figures_sql(flavor: Flavor) -> String {
    let cast = cast(flavor);
    format!(
        "COUNT(*), SUM(CASE WHEN {FAILED} THEN 1 ELSE 0 END){cast}, SUM(input_tokens){cast},
         SUM(output_tokens){cast}, SUM(cached_input_tokens){cast},
         SUM(COALESCE(cost_micros, 0)){cast}, SUM(latency_us){cast}, SUM(ttft_us){cast},
         COUNT(ttft_us), SUM(CAST(cache_hit AS INTEGER)){cast},
         SUM(COALESCE(saved_cost_micros, 0)){cast}"
    )
}

/// The same sums over rollup rows, named `f0` to `f10`.
fn rollup_figures_sql(flavor: Flavor) -> String {
    [
        "requests",
        "errors",
        "input_tokens",
        "output_tokens",
        "cached_input_tokens",
        "cost_micros",
        "latency_us",
        "ttft_us",
        "ttft_count",
        "cache_hits",
        "saved_cost_micros",
    ]
    .iter()
    .enumerate()
    .map(|(i, c)| format!("SUM({c}){} AS f{i}", cast(flavor)))
    .collect::<Vec<_>>()
    .join(", ")
}

fn param(flavor: Flavor, n: usize) -> String {
    match flavor {
        Flavor::Sqlite => format!("?{n}"),
        Flavor::Postgres => format!("${n}"),
    }
}

/// The statement of one grouping of one source: rows of (time, first, second, the sums).
/// Parameters: project, start, end.
pub fn group_sql(grouping: Grouping, source: Source, flavor: Flavor) -> String {
    let p = |n| param(flavor, n);
    let (project, start, end) = (p(1), p(2), p(3));
    let kind = match grouping {
        Grouping::Series(_) => "models",
        Grouping::Users => "users",
    };
    let Some((table, time)) = rollup_table(source, kind) else {
        let keys = match grouping {
            Grouping::Series(step) => format!("(time_us / {step}) * {step}, provider, model"),
            Grouping::Users => "CAST(0 AS BIGINT), user_id, user_tags".to_owned(),
        };
        return format!(
            "SELECT {keys}, {} FROM usage_records
             WHERE project = {project} AND time_us >= {start} AND time_us < {end}
             GROUP BY 1, 2, 3",
            figures_sql(flavor)
        );
    };
    let sums = rollup_figures_sql(flavor);
    let within = format!("project = {project} AND {time} >= {start} AND {time} < {end}");
    match grouping {
        // One row per (hour or day, provider, model) already.
        Grouping::Series(_) => format!(
            "SELECT {time}, provider, model, {sums} FROM {table} WHERE {within}
             GROUP BY {time}, provider, model"
        ),
        // Summed per user key first, so that each user is looked up once.
        Grouping::Users => format!(
            "SELECT CAST(0 AS BIGINT), u.user_id, u.user_tags,
                s.f0, s.f1, s.f2, s.f3, s.f4, s.f5, s.f6, s.f7, s.f8, s.f9, s.f10
             FROM (SELECT user_key, {sums} FROM {table} WHERE {within} GROUP BY user_key) AS s
             JOIN usage_users AS u ON u.user_key = s.user_key"
        ),
    }
}

/// What [`durations_sql`] selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DurationRows {
    /// (latency_us, ttft_us or NULL) per record.
    Values,
    /// (metric code, bucket, count) per bucket.
    Buckets,
}

/// The statement reading the durations of one source. Parameters: project, start, end.
pub fn durations_sql(source: Source, flavor: Flavor) -> (String, DurationRows) {
    let p = |n| param(flavor, n);
    let (project, start, end) = (p(1), p(2), p(3));
    match rollup_table(source, "latency") {
        None => (
            format!(
                "SELECT latency_us, ttft_us FROM usage_records
                 WHERE project = {project} AND time_us >= {start} AND time_us < {end}"
            ),
            DurationRows::Values,
        ),
        Some((table, time)) => (
            format!(
                "SELECT metric, bucket, SUM(records){} FROM {table}
                 WHERE project = {project} AND {time} >= {start} AND {time} < {end}
                 GROUP BY metric, bucket",
                cast(flavor)
            ),
            DurationRows::Buckets,
        ),
    }
}

/// Adds one row of [`durations_sql`] to `into`.
pub fn add_duration_row(into: &mut Durations, rows: DurationRows, row: [Option<i64>; 3]) {
    match rows {
        DurationRows::Values => {
            if let Some(latency) = row[0] {
                into.latency.record(latency);
            }
            if let Some(ttft) = row[1] {
                into.ttft.record(ttft);
            }
        }
        DurationRows::Buckets => {
            let (Some(code), Some(bucket), Some(count)) = (row[0], row[1], row[2]) else {
                return;
            };
            let histogram = match i32::try_from(code).ok().and_then(Metric::of_code) {
                Some(Metric::Latency) => &mut into.latency,
                Some(Metric::Ttft) => &mut into.ttft,
                None => return,
            };
            if let (Ok(bucket), Ok(count)) = (i32::try_from(bucket), u64::try_from(count)) {
                histogram.add(bucket, count);
            }
        }
    }
}

/// Nearest-rank percentiles of one metric: `(percentile, value)`, `None` with no values.
pub type Percentiles = Vec<(u32, Option<i64>)>;

/// A breakdown: rows by key, spending most first, at most [`BREAKDOWN_MAX`], and how many keys
/// there were in all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Breakdown<K> {
    pub rows: Vec<(K, Figures)>,
    pub count: usize,
}

impl<K: Ord> Breakdown<K> {
    pub(super) fn of(sums: BTreeMap<K, Figures>) -> Self {
        let count = sums.len();
        let mut rows: Vec<(K, Figures)> = sums.into_iter().collect();
        // Stable: keys equal in cost and requests stay in key order.
        rows.sort_by_key(|(_, f)| std::cmp::Reverse((f.cost_micros, f.requests)));
        rows.truncate(BREAKDOWN_MAX);
        Self { rows, count }
    }
}

/// Everything the console shows about a range.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub total: Figures,
    pub latency: Percentiles,
    pub ttft: Percentiles,
    /// By bucket, provider and model, in that order.
    pub series: Vec<GroupRow>,
    pub providers: Breakdown<String>,
    pub models: Breakdown<(String, String)>,
    pub users: Breakdown<Option<String>>,
    pub tags: Breakdown<String>,
}

/// The unit of the buckets a step is a whole number of: days and hours can be read from the
/// rollups, anything finer only from the records.
fn unit_of(step_us: i64) -> Unit {
    if step_us % DAY_US == 0 {
        Unit::Day
    } else if step_us % HOUR_US == 0 {
        Unit::Hour
    } else {
        Unit::Minute
    }
}

/// `""` (how the rollups and `usage_users` keep an absent provider, model or user id) as absent.
fn present(value: Option<String>) -> Option<String> {
    value.filter(|v| !v.is_empty())
}

/// Where the console's figures are read. Calls block (they run on a blocking thread).
pub trait StatsSource: Send + Sync + 'static {
    /// The rows of `part` of the project's range grouped as `grouping` says, in no particular
    /// order (see [`super::stats`]).
    fn stats_groups(
        &self,
        project: &str,
        part: Part,
        grouping: Grouping,
    ) -> anyhow::Result<Vec<GroupRow>>;

    /// The latency and time-to-first-token histograms of `part` of the project's range.
    fn stats_durations(&self, project: &str, part: Part) -> anyhow::Result<Durations>;
}

/// The figures of `q` from `store`.
pub fn stats(store: &dyn StatsSource, q: &StatsQuery) -> anyhow::Result<Stats> {
    let step = q.step_us.max(1);
    let mut by_bucket: BTreeMap<(i64, Option<String>, Option<String>), Figures> = BTreeMap::new();
    for part in parts(&rollup::plan(q.start_us, q.end_us, Some(unit_of(step)))) {
        for row in store.stats_groups(&q.project, part, Grouping::Series(step))? {
            let key = (
                row.bucket_us.div_euclid(step) * step,
                present(row.first),
                present(row.second),
            );
            by_bucket.entry(key).or_default().add(row.figures);
        }
    }
    let mut total = Figures::default();
    let mut providers: BTreeMap<String, Figures> = BTreeMap::new();
    let mut models: BTreeMap<(String, String), Figures> = BTreeMap::new();
    let series: Vec<GroupRow> = by_bucket
        .into_iter()
        .map(|((bucket_us, first, second), figures)| GroupRow {
            bucket_us,
            first,
            second,
            figures,
        })
        .collect();
    for row in &series {
        total.add(row.figures);
        let provider = row.first.clone().unwrap_or_default();
        providers
            .entry(provider.clone())
            .or_default()
            .add(row.figures);
        models
            .entry((provider, row.second.clone().unwrap_or_default()))
            .or_default()
            .add(row.figures);
    }

    let whole = parts(&rollup::plan(q.start_us, q.end_us, None));
    let mut users: BTreeMap<Option<String>, Figures> = BTreeMap::new();
    let mut tags: BTreeMap<String, Figures> = BTreeMap::new();
    let mut with_rows = Figures::default();
    let mut durations = Durations::default();
    for &part in &whole {
        for row in store.stats_groups(&q.project, part, Grouping::Users)? {
            with_rows.add(row.figures);
            users
                .entry(present(row.first))
                .or_default()
                .add(row.figures);
            let list: Vec<String> = serde_json::from_str(row.second.as_deref().unwrap_or("[]"))?;
            // A list naming a tag twice counts its records once for it.
            let distinct: std::collections::BTreeSet<String> = list.into_iter().collect();
            for tag in distinct {
                tags.entry(tag).or_default().add(row.figures);
            }
        }
        durations.merge(&store.stats_durations(&q.project, part)?);
    }
    // The records of the rollups' parts that named no user are in no per-user row.
    let no_user = total.minus(with_rows);
    if no_user.requests > 0 {
        users.entry(None).or_default().add(no_user);
    }
    let percentiles = |h: &super::histogram::Histogram| -> Percentiles {
        PERCENTILES.iter().map(|&p| (p, h.percentile(p))).collect()
    };
    Ok(Stats {
        total,
        latency: percentiles(&durations.latency),
        ttft: percentiles(&durations.ttft),
        series,
        providers: Breakdown::of(providers),
        models: Breakdown::of(models),
        users: Breakdown::of(users),
        tags: Breakdown::of(tags),
    })
}
