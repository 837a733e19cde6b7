//! The usage ledger: one record per `/v1/*` request, written in batches off the request path.
//!
//! By default a request hands its [`UsageRecord`] to the [`journal`] (a local append-only file)
//! and its answer's last byte waits for the append ([`Written`]): whatever then happens to the
//! process, the record is on disk. One writer task reads the journal back in batches of up to
//! 1,000 records, or whatever arrived within 200 ms, writes each in one transaction and marks
//! it confirmed; a process that starts first writes what its predecessor left (replay). While
//! the database is down the records wait in the journal, bounded by `ledger.journal.max_bytes`:
//! at the bound new requests are refused with 503 rather than answered without a record.
//!
//! With `ledger.journal.enabled: false` (and for `sqlite::memory:`, which keeps nothing across
//! runs anyway) records go into a bounded channel (`ledger.queue_capacity`) instead: when it is
//! full the record is **dropped**, counted ([`Ledger::dropped`]) and logged, and a killed
//! process loses what the channel held. Either way a batch that fails to write is retried with
//! a backoff while the gateway runs, and [`Ledger::shutdown`] writes what is queued.
//!
//! The modules, lowest first (each imports only those above it in this list, never `mod.rs`):
//! - [`time`]: microsecond timestamps and UTC calendar buckets.
//! - `glob`: the `*` patterns that name models, MCP tools and pass-through routes.
//! - `passthrough_patterns`: which pass-through routes a caller may reach.
//! - [`histogram`]: durations counted in fixed buckets, for the console's percentiles.
//! - [`record`]: one request's usage record, and the filter on its user.
//! - `values`: what a statement binds and what a row reads, the same for both stores.
//! - [`columns`]: the columns of `usage_records`, declared once (insert, row read, the request
//!   log's columns, redaction).
//! - [`totals`]: what the usage questions answer (sums over a range, per bucket and model).
//! - [`keys`]: what a project key may do on its own, the admin keys, and [`KeyStore`].
//! - [`responses`]: responses kept for the Responses API, and [`ResponseStore`].
//! - [`batches`]: the gateway's files and batches (OpenAI's Files and Batch APIs), and
//!   [`BatchStore`].
//! - [`requests`]: the request log's query, pages and filters, and [`RequestLog`].
//! - `rollup`: what both stores share about rollups and ranges.
//! - [`stats`]: the console's figures (totals, series, breakdowns, percentiles), and
//!   [`StatsSource`].
//! - [`store`]: [`UsageStore`] (batches and sums), and [`Store`], every part in one database.
//! - [`sql`]: the statements both stores run as they are (keys, admin keys, stored responses,
//!   a batch's users, sums), and the small traits through which they run them.
//! - `batch_rows`: the statements of [`BatchStore`].
//! - [`audit`]: the hash-chained audit log of changes to keys and the config, [`AuditStore`]
//!   and `verify`; `audit_rows`: its statements.
//! - [`schema`]: the versioned migrations both stores run when they open a database.
//! - [`journal`]: the crash-safe local journal of records not yet in the database.
//! - [`sqlite`]: the embedded SQLite store (the default, `sqlite://./wasmgate.db`).
//! - [`postgres`]: the PostgreSQL store (`postgres://...`), for replicas sharing one ledger.

pub mod alerts;
pub mod audit;
mod audit_rows;
mod batch_rows;
pub mod batches;
pub mod columns;
mod glob;
pub mod histogram;
pub mod journal;
pub mod keys;
mod passthrough_patterns;
pub mod postgres;
pub mod record;
pub mod requests;
pub mod responses;
mod rollup;
pub mod schema;
pub mod sql;
pub mod sqlite;
pub mod stats;
pub mod store;
pub mod time;
pub mod totals;
mod values;

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use alerts::AlertStore;
pub use audit::{AuditAction, AuditChange, AuditEntry, AuditFilter, AuditStore};
pub use batches::{BatchStore, Order, StoredBatch, StoredFile};
pub use journal::{Journal, JournalSettings, Written};
pub use keys::{AdminKey, ApiKey, Budget, BudgetPeriod, KeyChanges, KeyLimits, KeyStore};
pub use passthrough_patterns::{check_passthrough_pattern, passthrough_allows};
pub use record::{UsageRecord, UserFilter};
pub use requests::RequestLog;
pub use responses::ResponseStore;
pub use stats::StatsSource;
pub use store::{BatchId, Store, UsageStore};
pub use time::Unit;
pub use totals::{ModelBucket, Totals};

/// Records written in one transaction at most.
const BATCH: usize = 1_000;
/// How long the writer waits for a batch to fill before writing what it has.
const FLUSH_EVERY: Duration = Duration::from_millis(200);

/// Where the ledger keeps its records (`ledger:` in the config).
#[derive(Clone, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LedgerConfig {
    /// `sqlite://path/to/file.db`, `sqlite::memory:` (lost on exit; for tests), or
    /// `postgres://user:password@host:port/db` (add `?sslmode=verify-full&sslrootcert=ca.pem`
    /// for TLS) for replicas sharing one ledger.
    #[serde(default = "default_url")]
    #[schemars(extend("examples" = ["postgres://wasmgate:${DB_PASSWORD}@db.internal:5432/wasmgate"]))]
    pub url: String,
    /// Records waiting to be written at most; past that, new records are dropped and counted.
    #[serde(default = "default_queue_capacity")]
    #[schemars(range(min = 1))]
    pub queue_capacity: usize,
    /// The local journal that keeps records across a crash until the database has them.
    #[serde(default)]
    pub journal: JournalConfig,
}

/// `ledger.journal`: where records wait, crash-safe, for the database.
#[derive(Clone, Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JournalConfig {
    /// Off: records wait in memory (`queue_capacity`), and a killed process loses them.
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// The directory (one per replica); by default `<sqlite file>.usage-journal` next to a
    /// SQLite ledger, `./wasmgate-journal` with PostgreSQL.
    #[serde(default)]
    #[schemars(extend("examples" = ["/var/lib/wasmgate/journal"]))]
    pub dir: Option<std::path::PathBuf>,
    /// `fsync` each group of appends: a machine's crash loses nothing either (at a latency cost).
    #[serde(default)]
    pub fsync: bool,
    /// Bytes on disk at most (reached when the database is down for long): past them new
    /// requests are refused with 503.
    #[serde(default = "default_journal_max_bytes")]
    #[schemars(range(min = 1_048_576))]
    pub max_bytes: u64,
}

impl Default for JournalConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            dir: None,
            fsync: false,
            max_bytes: default_journal_max_bytes(),
        }
    }
}

impl LedgerConfig {
    /// The journal this config asks for: `None` when disabled, or for `sqlite::memory:` (a
    /// ledger that starts empty has nothing to replay into).
    pub fn journal_settings(&self) -> Option<JournalSettings> {
        if !self.journal.enabled || self.url == "sqlite::memory:" {
            return None;
        }
        let dir = match (&self.journal.dir, self.url.strip_prefix("sqlite://")) {
            (Some(dir), _) => dir.clone(),
            (None, Some(path)) => format!("{path}.usage-journal").into(),
            (None, None) => "./wasmgate-journal".into(),
        };
        Some(JournalSettings {
            dir,
            fsync: self.journal.fsync,
            max_bytes: self.journal.max_bytes,
        })
    }
}

impl std::fmt::Debug for LedgerConfig {
    // By hand: the URL may hold the database's password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LedgerConfig")
            .field("url", &postgres::redact_url(&self.url))
            .field("queue_capacity", &self.queue_capacity)
            .field("journal", &self.journal)
            .finish()
    }
}

impl Default for LedgerConfig {
    fn default() -> Self {
        Self {
            url: default_url(),
            queue_capacity: default_queue_capacity(),
            journal: JournalConfig::default(),
        }
    }
}

fn default_url() -> String {
    "sqlite://./wasmgate.db".to_owned()
}
fn default_queue_capacity() -> usize {
    100_000
}
fn default_true() -> bool {
    true
}
fn default_journal_max_bytes() -> u64 {
    1 << 30
}

/// Opens the store `config.url` names, without a writer (for `wasmgate keys` and `usage`).
/// A PostgreSQL store connects on first use, so this never waits on the network.
pub fn open_store(config: &LedgerConfig) -> anyhow::Result<Arc<dyn Store>> {
    Ok(if let Some(path) = config.url.strip_prefix("sqlite://") {
        Arc::new(sqlite::SqliteStore::open(std::path::Path::new(path))?)
    } else if config.url == "sqlite::memory:" {
        Arc::new(sqlite::SqliteStore::in_memory()?)
    } else if config.url.starts_with("postgres://") || config.url.starts_with("postgresql://") {
        Arc::new(postgres::PostgresStore::open(&config.url)?)
    } else {
        anyhow::bail!(
            "ledger.url: unsupported `{}` (sqlite://, sqlite::memory: or postgres://)",
            postgres::redact_url(&config.url)
        )
    })
}

/// The ledger: a cheap handle (clone it freely) on the queue, the writer task and the store.
#[derive(Clone)]
pub struct Ledger {
    inner: Arc<Inner>,
}

struct Inner {
    queue: Queue,
    store: Arc<dyn Store>,
    dropped: AtomicU64,
    /// When a drop was last logged, in µs since the epoch: at most one warning a second.
    drop_logged_us: AtomicI64,
    stop: CancellationToken,
    writer: tokio::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// What [`Ledger::fill`] says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fill {
    /// `usage journal` or `ledger queue`.
    pub what: &'static str,
    pub held: u64,
    pub bound: u64,
    /// Of `held` and `bound`: `bytes` or `records`.
    pub unit: &'static str,
}

/// Where records wait for the writer.
enum Queue {
    /// A bounded channel: lost with the process.
    Memory(mpsc::Sender<UsageRecord>),
    /// The journal on disk.
    Journal(Arc<Journal>),
}

impl Ledger {
    /// Opens the store `config.url` names and the journal it asks for, and starts the writer.
    pub fn open(config: &LedgerConfig) -> anyhow::Result<Self> {
        let store = open_store(config)?;
        Ok(match config.journal_settings() {
            Some(settings) => Self::with_journal(store, &settings)?,
            None => Self::with_store(store, config.queue_capacity),
        })
    }

    /// A ledger writing to `store` from a queue in memory; must be called inside a Tokio runtime.
    pub fn with_store(store: Arc<dyn Store>, capacity: usize) -> Self {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        let stop = CancellationToken::new();
        let writer = tokio::spawn(write_loop(rx, Arc::clone(&store), stop.clone()));
        Self::assemble(Queue::Memory(tx), store, stop, writer)
    }

    /// A ledger writing to `store` what it reads from the journal in `settings.dir` (first what
    /// an earlier run left there); must be called inside a Tokio runtime.
    pub fn with_journal(
        store: Arc<dyn Store>,
        settings: &JournalSettings,
    ) -> Result<Self, journal::JournalError> {
        let journal = Journal::open(settings)?;
        let stop = CancellationToken::new();
        let writer = tokio::spawn(journal_loop(
            Arc::clone(&journal),
            Arc::clone(&store),
            stop.clone(),
        ));
        Ok(Self::assemble(Queue::Journal(journal), store, stop, writer))
    }

    fn assemble(
        queue: Queue,
        store: Arc<dyn Store>,
        stop: CancellationToken,
        writer: tokio::task::JoinHandle<()>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                queue,
                store,
                dropped: AtomicU64::new(0),
                drop_logged_us: AtomicI64::new(i64::MIN),
                stop,
                writer: tokio::sync::Mutex::new(Some(writer)),
            }),
        }
    }

    /// Queues `record` without waiting; what it returns says when the record is safe from a
    /// crash (in the journal), for the answer's last byte to wait on. Without a journal the
    /// record is dropped (counted, with a warning) when the queue is full; with one, only once
    /// the ledger has shut down.
    pub fn record(&self, record: UsageRecord) -> Written {
        let reason = match &self.inner.queue {
            Queue::Journal(journal) => match journal.append(record) {
                Some(written) => return written,
                None => "the ledger has shut down",
            },
            Queue::Memory(tx) => match tx.try_send(record) {
                Ok(()) => return Written::now(),
                Err(mpsc::error::TrySendError::Full(_)) => "the ledger queue is full",
                Err(mpsc::error::TrySendError::Closed(_)) => "the ledger has shut down",
            },
        };
        let dropped = self.inner.dropped.fetch_add(1, Ordering::Relaxed) + 1;
        // Under load a full queue drops thousands of records a second: one line a second
        // (with the running count) says as much without flooding the log.
        let now = time::now_us();
        let last = self.inner.drop_logged_us.load(Ordering::Relaxed);
        if now.saturating_sub(last) >= 1_000_000
            && self
                .inner
                .drop_logged_us
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            tracing::warn!(
                dropped,
                queued = self.queued(),
                "usage records dropped: {reason}"
            );
        }
        Written::now()
    }

    /// Whether a new request must be refused because its record would have nowhere to go: the
    /// journal is at its bound or its disk refuses writes (counted, logged when it changes).
    pub fn is_full(&self) -> bool {
        match &self.inner.queue {
            Queue::Journal(journal) => journal.is_full(),
            Queue::Memory(_) => false,
        }
    }

    /// The journal, if records go through one (for its metrics).
    pub fn journal(&self) -> Option<&Journal> {
        match &self.inner.queue {
            Queue::Journal(journal) => Some(journal),
            Queue::Memory(_) => None,
        }
    }

    /// Records dropped since start (queue full or ledger closed).
    pub fn dropped(&self) -> u64 {
        self.inner.dropped.load(Ordering::Relaxed)
    }

    /// How full the place records wait in is: the journal's bytes on disk or the queue's
    /// records, against the bound past which requests are refused or records dropped.
    pub fn fill(&self) -> Fill {
        match &self.inner.queue {
            Queue::Journal(journal) => Fill {
                what: "usage journal",
                held: journal.bytes(),
                bound: journal.max_bytes(),
                unit: "bytes",
            },
            Queue::Memory(tx) => Fill {
                what: "ledger queue",
                held: (tx.max_capacity() - tx.capacity()) as u64,
                bound: tx.max_capacity() as u64,
                unit: "records",
            },
        }
    }

    /// Records waiting to be written (of this run, with a journal).
    pub fn queued(&self) -> usize {
        match &self.inner.queue {
            Queue::Memory(tx) => tx.max_capacity() - tx.capacity(),
            Queue::Journal(journal) => usize::try_from(journal.pending()).unwrap_or(usize::MAX),
        }
    }

    /// The store, for the analytics endpoints.
    pub fn store(&self) -> Arc<dyn Store> {
        Arc::clone(&self.inner.store)
    }

    /// Stops taking records and writes every queued one. Idempotent. With a journal, records
    /// the database does not take in time stay there for the next start.
    pub async fn shutdown(&self) {
        if let Queue::Journal(journal) = &self.inner.queue {
            let journal = Arc::clone(journal);
            if let Err(e) = tokio::task::spawn_blocking(move || journal.close()).await {
                tracing::error!("the usage journal failed to close: {e}");
            }
        }
        self.inner.stop.cancel();
        if let Some(writer) = self.inner.writer.lock().await.take()
            && let Err(e) = writer.await
        {
            tracing::error!("the ledger writer failed: {e}");
        }
    }
}

/// The writer: batches of up to [`BATCH`] records, or what came within [`FLUSH_EVERY`]. On stop
/// it closes the queue and drains it.
async fn write_loop(
    mut rx: mpsc::Receiver<UsageRecord>,
    store: Arc<dyn Store>,
    stop: CancellationToken,
) {
    let mut stopping = false;
    loop {
        let mut batch = Vec::with_capacity(BATCH);
        if stopping {
            if rx.recv_many(&mut batch, BATCH).await == 0 {
                return;
            }
        } else {
            tokio::select! {
                () = stop.cancelled() => {
                    rx.close();
                    stopping = true;
                    continue;
                }
                n = rx.recv_many(&mut batch, BATCH) => if n == 0 { return },
            }
            let deadline = tokio::time::Instant::now() + FLUSH_EVERY;
            while batch.len() < BATCH && !stopping {
                let room = BATCH - batch.len();
                tokio::select! {
                    () = stop.cancelled() => {
                        rx.close();
                        stopping = true;
                    }
                    () = tokio::time::sleep_until(deadline) => break,
                    n = rx.recv_many(&mut batch, room) => if n == 0 { break },
                }
            }
        }
        let queued = || (rx.len(), rx.max_capacity());
        if !write_batch(&store, batch, &stop, &queued).await {
            tracing::error!("usage records lost: the ledger cannot write them");
        }
    }
}

/// The writer over a journal. It takes the groups the appender hands over, in batches of
/// [`BATCH`] records or what came within [`FLUSH_EVERY`], while each follows on from what it
/// has; when one does not (it fell behind and was handed no more, or at start, with what an
/// earlier run left) it reads the journal from where it is until it has caught up. A batch
/// written is confirmed. When the journal closes (shutdown) it writes what is left on disk and
/// returns; if the database will not take it, it stays there for the next start.
async fn journal_loop(journal: Arc<Journal>, store: Arc<dyn Store>, stop: CancellationToken) {
    let Some(mut groups) = journal.take_groups() else {
        tracing::error!("the usage journal has a writer already");
        return;
    };
    let mut reader = journal.reader();
    let mut behind = true;
    let mut closed = false;
    loop {
        let (batch, end, next) = if behind {
            let read = tokio::task::spawn_blocking(move || {
                let read = reader.next_batch(BATCH);
                (reader, read)
            })
            .await;
            let read = match read {
                Ok((taken, read)) => {
                    reader = taken;
                    read
                }
                Err(e) => {
                    tracing::error!("the usage journal's reader failed: {e}");
                    return;
                }
            };
            match read {
                Ok((batch, _)) if batch.is_empty() => {
                    if closed {
                        return;
                    }
                    behind = false;
                    continue;
                }
                Ok((batch, end)) => (batch, end, Next::Behind),
                Err(e) => {
                    tracing::error!("cannot read the usage journal, retrying: {e}");
                    if stop.is_cancelled() {
                        return;
                    }
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            }
        } else {
            gather(&mut groups, &journal, reader.at()).await
        };
        if !batch.is_empty() {
            let records = batch.len();
            let queued = || {
                let pending = usize::try_from(journal.pending()).unwrap_or(usize::MAX);
                (pending, usize::MAX)
            };
            if !write_batch(&store, batch, &stop, &queued).await {
                tracing::warn!(
                    "usage records left in the journal: the ledger database cannot take them \
                     now; the next start writes them"
                );
                return;
            }
            let journal = Arc::clone(&journal);
            let confirmed =
                tokio::task::spawn_blocking(move || journal.confirm(end, records)).await;
            match confirmed {
                Ok(Ok(())) => {}
                // Written but not marked: a later start reads them again; the stores skip them.
                Ok(Err(e)) => tracing::warn!("cannot mark journal records written: {e}"),
                Err(e) => tracing::warn!("cannot mark journal records written: {e}"),
            }
        }
        if !behind {
            // Taken in memory up to `end`: the reader, when next needed, starts there.
            reader = journal.reader_at(end);
        }
        match next {
            Next::Live => {}
            Next::Behind => behind = true,
            Next::Closed => (behind, closed) = (true, true),
        }
    }
}

/// What the writer does after a batch.
enum Next {
    /// Takes the next groups handed over.
    Live,
    /// Reads the journal: groups were not handed over.
    Behind,
    /// Reads what is left on disk, then ends: the journal has closed.
    Closed,
}

/// Groups handed over that follow on from `at`, up to [`BATCH`] records or [`FLUSH_EVERY`] after
/// the first; the records, where they end, and what comes next.
async fn gather(
    groups: &mut tokio::sync::mpsc::UnboundedReceiver<journal::Group>,
    journal: &Journal,
    mut at: journal::Position,
) -> (Vec<UsageRecord>, journal::Position, Next) {
    let mut batch = Vec::new();
    let mut deadline = None;
    loop {
        let group = match deadline {
            None => groups.recv().await,
            Some(deadline) => tokio::select! {
                group = groups.recv() => group,
                () = tokio::time::sleep_until(deadline) => return (batch, at, Next::Live),
            },
        };
        let Some(group) = group else {
            return (batch, at, Next::Closed);
        };
        journal.taken(&group);
        if group.end <= at {
            // Read from the journal already.
            continue;
        }
        let Some(records) = group.records.filter(|_| group.after == at) else {
            // Something between was not handed over: the journal has it, and this group.
            return (batch, at, Next::Behind);
        };
        at = group.end;
        batch.extend(records);
        if batch.len() >= BATCH {
            return (batch, at, Next::Live);
        }
        deadline.get_or_insert_with(|| tokio::time::Instant::now() + FLUSH_EVERY);
    }
}

/// Writes one batch, retrying with a backoff while the store fails; when stopping, gives up
/// after a few tries so that shutdown ends (then `false`). While it retries, the records
/// behind it wait in the queue: each warning says how full the queue is (`queued` gives its
/// length and capacity), and recovery is logged with the outage's length, so that an operator
/// sees the buffer fill and drain.
async fn write_batch(
    store: &Arc<dyn Store>,
    batch: Vec<UsageRecord>,
    stop: &CancellationToken,
    queued: &(dyn Fn() -> (usize, usize) + Sync),
) -> bool {
    let batch = Arc::new(batch);
    // Every try carries the same id: a try whose commit went through unacknowledged is not
    // written again by the next.
    let id = Arc::new(BatchId::new());
    let mut delay = Duration::from_millis(100);
    let started = tokio::time::Instant::now();
    for attempt in 1.. {
        let (store, records, id) = (Arc::clone(store), Arc::clone(&batch), Arc::clone(&id));
        let result = tokio::task::spawn_blocking(move || store.write_once(&id, &records)).await;
        let error = match result {
            Ok(Ok(_)) => {
                if attempt > 1 {
                    tracing::info!(
                        attempts = attempt,
                        outage_ms = started.elapsed().as_millis() as u64,
                        queued = queued().0,
                        "usage records written again after the ledger database failed"
                    );
                }
                return true;
            }
            Ok(Err(e)) => format!("{e:#}"),
            Err(e) => e.to_string(),
        };
        if stop.is_cancelled() && attempt >= 3 {
            tracing::error!(
                records = batch.len(),
                "the ledger cannot write usage records: {error}"
            );
            return false;
        }
        let (queued, capacity) = queued();
        tracing::warn!(
            records = batch.len(),
            attempt,
            queued,
            capacity,
            "cannot write usage records, retrying in {delay:?}: {error}"
        );
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(10));
    }
    false
}

#[cfg(test)]
mod tests;
