//! What a ledger store does, by what it keeps: [`UsageStore`] writes batches of records and sums
//! them ([`RequestLog`] reads the records back, [`StatsSource`] the console's figures),
//! [`KeyStore`] keeps the API keys (hashed) and admin keys, [`ResponseStore`] the stored
//! responses. [`Store`] is all of them in one database, as `ledger.url` opens it.
//!
//! SQLite and PostgreSQL (for several replicas sharing one ledger) implement the same traits on
//! the same schema (see [`super::schema`]), kept by UPSERTs in the batch's transaction (`INSERT ... ON CONFLICT ... DO
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

use super::alerts::AlertStore;
use super::audit::AuditStore;
use super::batches::BatchStore;
use super::keys::KeyStore;
use super::record::{UsageRecord, UserFilter};
use super::requests::RequestLog;
use super::responses::ResponseStore;
use super::stats::StatsSource;
use super::time::Unit;
use super::totals::{ModelBucket, Totals};

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

/// Where usage records are written and summed; their log and figures are read through the
/// supertraits. Calls block (they run on a blocking thread); ranges are `[start_us, end_us)`.
pub trait UsageStore: RequestLog + StatsSource {
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
}

/// A whole ledger store: usage, keys and stored responses in one database, as the gateway opens
/// it (`ledger.url`). Each part is its own trait, so that code that needs one asks for that one.
pub trait Store:
    UsageStore + KeyStore + ResponseStore + BatchStore + AuditStore + AlertStore
{
}

impl<T: UsageStore + KeyStore + ResponseStore + BatchStore + AuditStore + AlertStore> Store for T {}
