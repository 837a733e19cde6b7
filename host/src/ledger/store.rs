//! What a ledger store does: write batches, and answer the analytics questions.
//!
//! Only SQLite implements it today. A PostgreSQL store (for several replicas sharing one ledger)
//! implements the same trait on the same schema: `usage_records` plus the `usage_hourly` rollup
//! kept by UPSERTs in the batch's transaction (`INSERT ... ON CONFLICT ... DO UPDATE` is the
//! same statement in both).

use super::UsageRecord;

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

/// A ledger store. Calls block (they run on a blocking thread); ranges are `[start_us, end_us)`.
pub trait Store: Send + Sync + 'static {
    /// Writes `records` and their rollups in one transaction: all or nothing.
    fn write(&self, records: &[UsageRecord]) -> anyhow::Result<()>;

    /// The project's sums over the range.
    fn total(&self, project: &str, start_us: i64, end_us: i64) -> anyhow::Result<Totals>;

    /// The project's sums per `unit` bucket and model over the range, ordered by bucket,
    /// provider and model.
    fn models(
        &self,
        project: &str,
        start_us: i64,
        end_us: i64,
        unit: Unit,
    ) -> anyhow::Result<Vec<ModelBucket>>;

    /// Records stored (for tests and diagnostics).
    fn count(&self) -> anyhow::Result<u64>;
}
