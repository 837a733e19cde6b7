//! The gateway's files and batches (OpenAI's Files and Batch APIs), in the ledger's database:
//! each id is its project's, mapped to the provider entry and the upstream's id, so that
//! another project's id is "not found" and replicas sharing a PostgreSQL ledger see the same
//! ones.
//!
//! Metering a finished batch is claimed with a conditional `UPDATE` (a lease, so that a replica
//! that dies while metering leaves the batch to another); the records themselves are keyed by
//! the batch and line, so that a batch metered again after such a death adds nothing twice (see
//! [`super::store`]'s skipping of records it holds).

/// One file, as the gateway knows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoredFile {
    pub project: String,
    /// `file-…`, the gateway's.
    pub id: String,
    /// The provider entry that holds it.
    pub provider: String,
    pub upstream_id: String,
    pub purpose: String,
    pub filename: String,
    pub bytes: i64,
    pub created_us: i64,
    /// A batch input file's model (as the lines named it, all the same entry), its lines, and
    /// what they may cost at most (micro-USD) and the tokens they may use.
    pub model: Option<String>,
    pub lines: i64,
    pub estimate_micros: Option<i64>,
    pub estimate_tokens: i64,
}

/// One batch, as the gateway knows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoredBatch {
    pub project: String,
    /// `batch_…`, the gateway's.
    pub id: String,
    pub provider: String,
    pub upstream_id: String,
    /// The key that created it: its output lines are metered to it.
    pub api_key_id: Option<String>,
    /// The model of its lines as the client named it.
    pub model: String,
    pub input_file_id: String,
    pub created_us: i64,
    /// As OpenAI names it: `validating`, `in_progress`, `finalizing`, `completed`, ...
    pub status: String,
    /// The batch object as last seen, with the gateway's ids (JSON).
    pub object: String,
    pub metered_us: Option<i64>,
    pub metered_lines: i64,
}

/// The order a list is paged in, by creation time (then id); OpenAI's `order` of `GET /v1/files`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Order {
    /// Newest first: the API's default.
    #[default]
    Desc,
    /// Oldest first.
    Asc,
}

/// Where files and batches are kept. Calls block (they run on a blocking thread).
pub trait BatchStore: Send + Sync + 'static {
    fn put_file(&self, file: &StoredFile) -> anyhow::Result<()>;
    /// The project's file with this id; never another project's.
    fn file(&self, project: &str, id: &str) -> anyhow::Result<Option<StoredFile>>;
    /// The project's files in `order` of creation, after the one `after` names, at most `limit`.
    fn files(
        &self,
        project: &str,
        purpose: Option<&str>,
        after: Option<&str>,
        order: Order,
        limit: usize,
    ) -> anyhow::Result<Vec<StoredFile>>;
    fn delete_file(&self, project: &str, id: &str) -> anyhow::Result<bool>;

    fn put_batch(&self, batch: &StoredBatch) -> anyhow::Result<()>;
    fn batch(&self, project: &str, id: &str) -> anyhow::Result<Option<StoredBatch>>;
    /// The project's batches, newest first, after the one `after` names, at most `limit`.
    fn batches(
        &self,
        project: &str,
        after: Option<&str>,
        limit: usize,
    ) -> anyhow::Result<Vec<StoredBatch>>;
    /// Records the batch's latest status and object.
    fn update_batch(
        &self,
        project: &str,
        id: &str,
        status: &str,
        object: &str,
    ) -> anyhow::Result<()>;
    /// Batches not yet metered (any project), oldest first, at most `limit`: the poller's work.
    fn unmetered_batches(&self, limit: usize) -> anyhow::Result<Vec<StoredBatch>>;
    /// Takes the right to meter the batch until `until_us`, if no one holds it (or its lease
    /// ran out) and it is not metered yet: one conditional `UPDATE`, so that of two replicas
    /// asking at once one gets it.
    fn claim_metering(
        &self,
        project: &str,
        id: &str,
        now_us: i64,
        until_us: i64,
    ) -> anyhow::Result<bool>;
    /// Marks the batch metered, its `lines` recorded.
    fn metered(&self, project: &str, id: &str, at_us: i64, lines: i64) -> anyhow::Result<()>;
}
