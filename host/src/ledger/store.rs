//! What a ledger store does: write batches, answer the analytics questions, and keep the API keys
//! (hashed) in the same database.
//!
//! SQLite and PostgreSQL (for several replicas sharing one ledger) implement the same trait on
//! the same schema, kept by UPSERTs in the batch's transaction (`INSERT ... ON CONFLICT ... DO
//! UPDATE` is the same statement in both):
//! - `usage_records`: one row per request, with `user_key` naming its user in `usage_users`;
//! - `usage_users`: one row per distinct (project, user id, name, tags) seen, so that a filter on
//!   a name or a tag becomes a short list of user keys;
//! - `usage_hourly_models` and `usage_daily_models`: sums per (project, hour or day, provider,
//!   model), what unfiltered questions read (days for totals and day, week or month buckets):
//!   their size does not grow with the number of users or requests;
//! - every rollup also sums what the console shows (errors, cached input tokens, latency and
//!   time to first token), and `usage_hourly_latency` and `usage_daily_latency` count the
//!   durations of each (project, hour or day) in histogram buckets (see [`super::histogram`]);
//! - `usage_hourly_users` and `usage_daily_users`: sums per (project, hour or day, user key,
//!   provider, model), what questions about some users read, one primary-key lookup per bucket
//!   and user. Time comes before the user in the key so that a batch, whose records are minutes
//!   apart, updates rows that sit together: keyed user first, each batch rewrote a page per
//!   user and ingest fell twentyfold. Days keep a filtered month to a few hundred rows per user;
//! - `ledger_batches`: the id of every batch written in the last day, written in the batch's
//!   transaction, so that a batch retried after its commit's acknowledgement was lost (the
//!   connection broke at that moment) is recognised and not counted twice;
//! - `api_keys`, with each key's own limits (see [`super::keys`]), and `admin_keys`, the
//!   credentials of `/admin/*`.
//!
//! A record the store already holds (the same request id and start time) is skipped, rollups
//! included: the journal hands the writer again, after a crash, records whose batch was
//! committed but not yet marked confirmed. Both parts of the key, because a client may send the
//! same `x-request-id` with two requests, each of which counts. The lookup uses the request id
//! index below; no schema change was needed.
//!
//! `usage_records` is indexed for the request log (see [`super::requests`]): by project and
//! time (with the request id, the pages' keyset), by project and user, failed requests alone
//! (a partial index), and by request id.

use super::UsageRecord;
use super::histogram::Durations;
use super::keys::{AdminKey, Budget, BudgetPeriod, KeyLimits};
use super::requests::RequestQuery;
use super::responses::StoredResponse;
use super::stats::{GroupRow, Grouping, Part};

/// `records` without those whose (request id, start time) `stored` holds, nor a second copy of
/// one in the batch; borrowed when nothing is left out (the usual case).
pub fn unwritten<'a>(
    records: &'a [UsageRecord],
    stored: &std::collections::HashSet<(&str, i64)>,
) -> std::borrow::Cow<'a, [UsageRecord]> {
    let mut seen = std::collections::HashSet::with_capacity(records.len());
    let keep: Vec<bool> = records
        .iter()
        .map(|r| {
            let key = (r.request_id.as_str(), r.time_us);
            !stored.contains(&key) && seen.insert(key)
        })
        .collect();
    if keep.iter().all(|k| *k) {
        return std::borrow::Cow::Borrowed(records);
    }
    std::borrow::Cow::Owned(
        records
            .iter()
            .zip(keep)
            .filter(|(_, keep)| *keep)
            .map(|(r, _)| r.clone())
            .collect(),
    )
}

/// A calendar bucket of `/usage/models`, in UTC. Weeks start on Monday.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Minute,
    Hour,
    Day,
    Week,
    Month,
}

impl Unit {
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "minute" => Self::Minute,
            "hour" => Self::Hour,
            "day" => Self::Day,
            "week" => Self::Week,
            "month" => Self::Month,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Minute => "minute",
            Self::Hour => "hour",
            Self::Day => "day",
            Self::Week => "week",
            Self::Month => "month",
        }
    }
}

/// Sums over a range.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_micros: i64,
    pub requests: u64,
}

impl Totals {
    pub fn add(&mut self, other: Totals) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cost_micros += other.cost_micros;
        self.requests += other.requests;
    }
}

/// One bucket of one model: the bucket's start in µs since the epoch, and its sums.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelBucket {
    pub bucket_us: i64,
    pub provider: String,
    pub model: String,
    pub totals: Totals,
}

/// Which users' usage `/usage/models` sums: every field given must match (an empty filter
/// matches every record, including those without a user).
///
/// `user_tags` matches a record that has **any** of the tags. Names and tags are those the
/// record was sent with, so a user renamed or retagged is matched by each name for the requests
/// sent under it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserFilter {
    pub user_id: Option<String>,
    pub user_name: Option<String>,
    pub user_tags: Vec<String>,
}

impl UserFilter {
    pub fn is_empty(&self) -> bool {
        self.user_id.is_none() && self.user_name.is_none() && self.user_tags.is_empty()
    }

    /// Whether a user seen as (`id`, `name`, `tags`) passes; `None` and `""` are both "absent".
    pub fn matches(&self, id: &str, name: &str, tags: &[String]) -> bool {
        self.user_id.as_deref().is_none_or(|want| want == id)
            && self.user_name.as_deref().is_none_or(|want| want == name)
            && (self.user_tags.is_empty() || tags.iter().any(|t| self.user_tags.contains(t)))
    }
}

/// A batch's id: its creation time in µs as 16 hex digits, then 16 random ones. Ids sort by
/// time, so that those older than [`BatchId::KEPT_US`] are pruned with a range on the key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchId(pub String);

impl BatchId {
    /// How long a batch id is remembered: far longer than any retry of the same batch.
    pub const KEPT_US: i64 = 24 * 3_600 * 1_000_000;

    pub fn new() -> Self {
        let time = u64::try_from(super::time::now_us()).unwrap_or(0);
        let random = uuid::Uuid::new_v4().as_u64_pair().0;
        Self(format!("{time:016x}{random:016x}"))
    }

    /// The smallest id of a batch created at `time_us` or later.
    pub fn at(time_us: i64) -> String {
        format!("{:016x}", u64::try_from(time_us).unwrap_or(0))
    }
}

impl Default for BatchId {
    fn default() -> Self {
        Self::new()
    }
}

/// An API key as stored: the SHA-256 of the key, never the key itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiKey {
    /// Public and stable (`key_…`): what records, logs and `keys revoke` name.
    pub id: String,
    pub project: String,
    pub name: Option<String>,
    /// Lower-case hex SHA-256 of the whole key.
    pub hash: String,
    /// The key's first characters, so that `keys list` can show which key is which.
    pub prefix: String,
    pub created_us: i64,
    pub revoked_us: Option<i64>,
    /// What the key may do on its own.
    pub limits: KeyLimits,
}

/// The `api_keys` columns of a key's limits as stored: (models, expires, rpm, tpm, budget
/// micros, budget period). `models` is the patterns joined by newlines (a pattern holds no
/// control character).
pub type LimitColumns = (
    String,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<&'static str>,
);

/// A key's limits as columns, in [`LIMIT_COLUMNS`]' order.
pub fn limits_to_columns(limits: &KeyLimits) -> LimitColumns {
    (
        limits.models.join("\n"),
        limits.expires_us,
        limits.requests_per_minute,
        limits.tokens_per_minute,
        limits.budget.map(|b| b.micros),
        limits.budget.map(|b| b.period.name()),
    )
}

/// A key's limits from its columns. Only this code writes them; should a period ever be unknown
/// the budget is taken as a total one, which never resets (the strictest reading).
pub fn limits_from_columns(
    models: &str,
    expires_us: Option<i64>,
    rpm: Option<i64>,
    tpm: Option<i64>,
    budget_micros: Option<i64>,
    budget_period: Option<&str>,
) -> KeyLimits {
    KeyLimits {
        models: models
            .split('\n')
            .filter(|m| !m.is_empty())
            .map(str::to_owned)
            .collect(),
        expires_us,
        requests_per_minute: rpm,
        tokens_per_minute: tpm,
        budget: budget_micros.map(|micros| Budget {
            micros,
            period: budget_period
                .and_then(BudgetPeriod::parse)
                .unwrap_or(BudgetPeriod::Total),
        }),
    }
}

/// A ledger store. Calls block (they run on a blocking thread); ranges are `[start_us, end_us)`.
pub trait Store: Send + Sync + 'static {
    /// Writes `records` and their rollups in one transaction, all or nothing, unless a batch of
    /// the same id was written (then nothing: it is the same batch, retried). Returns whether
    /// this call wrote it.
    fn write_once(&self, batch: &BatchId, records: &[UsageRecord]) -> anyhow::Result<bool>;

    /// Writes `records` as a new batch.
    fn write(&self, records: &[UsageRecord]) -> anyhow::Result<()> {
        self.write_once(&BatchId::new(), records).map(drop)
    }

    /// The project's sums over the range.
    fn total(&self, project: &str, start_us: i64, end_us: i64) -> anyhow::Result<Totals>;

    /// The project's sums per `unit` bucket and model over the range, of the users `filter`
    /// matches, ordered by bucket, provider and model.
    fn models(
        &self,
        project: &str,
        start_us: i64,
        end_us: i64,
        unit: Unit,
        filter: &UserFilter,
    ) -> anyhow::Result<Vec<ModelBucket>>;

    /// Records stored (for tests and diagnostics).
    fn count(&self) -> anyhow::Result<u64>;

    /// Stores a new key; its id and hash are unique.
    fn insert_key(&self, key: &ApiKey) -> anyhow::Result<()>;

    /// Every key (revoked ones too), of one project or of all, oldest first.
    fn keys(&self, project: Option<&str>) -> anyhow::Result<Vec<ApiKey>>;

    /// Marks the key revoked at `at_us`; `false` when no unrevoked key has that id.
    fn revoke_key(&self, id: &str, at_us: i64) -> anyhow::Result<bool>;

    /// The key whose hash is `hash`, revoked or not.
    fn key_by_hash(&self, hash: &str) -> anyhow::Result<Option<ApiKey>>;

    /// The key with this id, revoked or not.
    fn key(&self, id: &str) -> anyhow::Result<Option<ApiKey>>;

    /// Replaces the name and limits of the unrevoked key with this id; `false` when there is none.
    fn update_key(&self, id: &str, name: Option<&str>, limits: &KeyLimits) -> anyhow::Result<bool>;

    /// What the key's requests since `since_us` cost, in micro-USD (records written so far).
    fn key_spend(&self, key_id: &str, since_us: i64) -> anyhow::Result<i64>;

    /// Stores a new admin key; its id and hash are unique.
    fn insert_admin_key(&self, key: &AdminKey) -> anyhow::Result<()>;

    /// The admin key whose hash is `hash`, revoked or not.
    fn admin_key_by_hash(&self, hash: &str) -> anyhow::Result<Option<AdminKey>>;

    /// Every admin key, revoked ones too, oldest first.
    fn admin_keys(&self) -> anyhow::Result<Vec<AdminKey>>;

    /// Marks the admin key revoked at `at_us`; `false` when no unrevoked one has that id.
    fn revoke_admin_key(&self, id: &str, at_us: i64) -> anyhow::Result<bool>;

    /// The stored record of one request, by its request id, whatever its project (for tests
    /// and diagnostics). The last one if several share it.
    fn record(&self, request_id: &str) -> anyhow::Result<Option<UsageRecord>>;

    /// One page of the request log: up to `query.limit + 1` records (the extra one says that
    /// more follow), newest first, by (`time_us`, `request_id`) descending.
    fn requests(&self, query: &RequestQuery) -> anyhow::Result<Vec<UsageRecord>>;

    /// The newest record of `project` with this request id; never another project's.
    fn project_record(
        &self,
        project: &str,
        request_id: &str,
    ) -> anyhow::Result<Option<UsageRecord>>;

    /// Keeps a response for the Responses API (replacing one of the same project and id).
    fn put_response(&self, response: &StoredResponse) -> anyhow::Result<()>;

    /// The project's stored response with this id; never another project's.
    fn response(&self, project: &str, id: &str) -> anyhow::Result<Option<StoredResponse>>;

    /// Forgets the project's stored response; `false` when it had none of that id.
    fn delete_response(&self, project: &str, id: &str) -> anyhow::Result<bool>;

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
