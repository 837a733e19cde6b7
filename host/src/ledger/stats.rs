//! The console's figures over a range: totals with the error rate and latency percentiles, a
//! series per time bucket and model, and breakdowns by provider, model, user and tag.
//!
//! They are read from the raw records (the rollups hold neither errors, cached tokens nor
//! latencies), with the same SQL on both stores, one `GROUP BY` per shape: the series by
//! (bucket, provider, model), from which the totals and the provider and model breakdowns are
//! folded; the users by user id; the tags by the record's tag list, folded here so that a record
//! counts once for each of its tags. Percentiles are exact (nearest rank): one ordered probe per
//! percentile, `OFFSET` the rank. The cost grows with the records in the range; the request log's
//! `(project, time_us, ...)` index bounds what is read to them.

use std::collections::BTreeMap;

use super::requests::{FAILED, Flavor};
use super::store::Store;

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
}

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
    }

    /// From the sums as SQL gives them (`NULL` where no record had a value).
    pub fn from_sql(v: [Option<i64>; 9]) -> Self {
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
        }
    }
}

/// What the records are grouped by; each row is (bucket, first, second, figures).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grouping {
    /// (bucket start, provider, model).
    Series,
    /// (0, user id, -).
    Users,
    /// (0, tag list as stored (a JSON array), -).
    TagLists,
}

/// One group's figures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupRow {
    pub bucket_us: i64,
    pub first: Option<String>,
    pub second: Option<String>,
    pub figures: Figures,
}

/// A duration whose percentiles are asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    Latency,
    Ttft,
}

impl Metric {
    fn column(self) -> &'static str {
        match self {
            Self::Latency => "latency_us",
            Self::Ttft => "ttft_us",
        }
    }
}

/// The sums every grouping selects, in [`Figures::from_sql`]'s order, from the 4th column on.
fn figures_sql(flavor: Flavor) -> String {
    // PostgreSQL sums BIGINTs into NUMERIC; SQLite's are already integers.
    let cast = match flavor {
        Flavor::Sqlite => "",
        Flavor::Postgres => "::BIGINT",
    };
    format!(
        "COUNT(*), SUM(CASE WHEN {FAILED} THEN 1 ELSE 0 END){cast}, SUM(input_tokens){cast},
         SUM(output_tokens){cast}, SUM(cached_input_tokens){cast},
         SUM(COALESCE(cost_micros, 0)){cast}, SUM(latency_us){cast}, SUM(ttft_us){cast},
         COUNT(ttft_us)"
    )
}

fn param(flavor: Flavor, n: usize) -> String {
    match flavor {
        Flavor::Sqlite => format!("?{n}"),
        Flavor::Postgres => format!("${n}"),
    }
}

/// The statement of one grouping. Parameters: project, start, end, and for the series the
/// bucket's length.
pub fn group_sql(grouping: Grouping, flavor: Flavor) -> String {
    let p = |n| param(flavor, n);
    let keys = match grouping {
        Grouping::Series => format!(
            "({t} / {s}) * {s}, provider, model",
            t = "time_us",
            s = p(4)
        ),
        Grouping::Users => "CAST(0 AS BIGINT), user_id, CAST(NULL AS TEXT)".to_owned(),
        Grouping::TagLists => "CAST(0 AS BIGINT), user_tags, CAST(NULL AS TEXT)".to_owned(),
    };
    format!(
        "SELECT {keys}, {} FROM usage_records
         WHERE project = {} AND time_us >= {} AND time_us < {} GROUP BY 1, 2, 3",
        figures_sql(flavor),
        p(1),
        p(2),
        p(3)
    )
}

/// The statement of one percentile probe: the value at 0-based rank `$4` in ascending order.
pub fn rank_sql(metric: Metric, flavor: Flavor) -> String {
    let p = |n| param(flavor, n);
    let column = metric.column();
    format!(
        "SELECT {column} FROM usage_records
         WHERE project = {} AND time_us >= {} AND time_us < {} AND {column} IS NOT NULL
         ORDER BY {column} LIMIT 1 OFFSET {}",
        p(1),
        p(2),
        p(3),
        p(4)
    )
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
    fn of(sums: BTreeMap<K, Figures>) -> Self {
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

/// The figures of `q` from `store`.
pub fn stats(store: &dyn Store, q: &StatsQuery) -> anyhow::Result<Stats> {
    let mut series = store.stats_groups(q, Grouping::Series)?;
    series.sort_by(|a, b| {
        (a.bucket_us, &a.first, &a.second).cmp(&(b.bucket_us, &b.first, &b.second))
    });
    let mut total = Figures::default();
    let mut providers: BTreeMap<String, Figures> = BTreeMap::new();
    let mut models: BTreeMap<(String, String), Figures> = BTreeMap::new();
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
    let users: BTreeMap<Option<String>, Figures> = store
        .stats_groups(q, Grouping::Users)?
        .into_iter()
        .fold(BTreeMap::new(), |mut users, row| {
            users.entry(row.first).or_default().add(row.figures);
            users
        });
    let mut tags: BTreeMap<String, Figures> = BTreeMap::new();
    for row in store.stats_groups(q, Grouping::TagLists)? {
        let list: Vec<String> = serde_json::from_str(row.first.as_deref().unwrap_or("[]"))?;
        // A list naming a tag twice counts its records once for it.
        let distinct: std::collections::BTreeSet<String> = list.into_iter().collect();
        for tag in distinct {
            tags.entry(tag).or_default().add(row.figures);
        }
    }
    let latency = percentiles(store, q, Metric::Latency, total.requests)?;
    let ttft = percentiles(store, q, Metric::Ttft, total.ttft_count)?;
    Ok(Stats {
        total,
        latency,
        ttft,
        series,
        providers: Breakdown::of(providers),
        models: Breakdown::of(models),
        users: Breakdown::of(users),
        tags: Breakdown::of(tags),
    })
}

/// The 0-based nearest rank of percentile `p` among `n` values (`n > 0`): the smallest value
/// with at least `p`% of the values at or below it.
pub fn rank(p: u32, n: u64) -> u64 {
    (u64::from(p) * n).div_ceil(100).max(1) - 1
}

fn percentiles(
    store: &dyn Store,
    q: &StatsQuery,
    metric: Metric,
    n: u64,
) -> anyhow::Result<Percentiles> {
    PERCENTILES
        .iter()
        .map(|&p| {
            let value = if n == 0 {
                None
            } else {
                store.stats_rank(q, metric, rank(p, n))?
            };
            Ok((p, value))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::rank;

    #[test]
    fn nearest_ranks() {
        assert_eq!(rank(50, 1), 0);
        assert_eq!(rank(99, 1), 0);
        assert_eq!(rank(50, 4), 1);
        assert_eq!(rank(90, 10), 8);
        assert_eq!(rank(99, 10), 9);
        assert_eq!(rank(50, 5), 2);
        assert_eq!(rank(99, 1000), 989);
    }
}
