//! The usage ledger: one record per `/v1/*` request, written in batches off the request path.
//!
//! A request hands its [`UsageRecord`] to [`Ledger::record`], which never waits: the record goes
//! into a bounded channel (`ledger.queue_capacity`, 100,000 by default) drained by one writer task
//! that stores up to 1,000 records at a time, or whatever arrived within 200 ms, in one
//! transaction. When the channel is full (the database is far behind or unreachable) the record
//! is **dropped**: it is counted ([`Ledger::dropped`]) and a warning is logged, so that a slow
//! database never slows requests down nor grows memory without bound. A batch that fails to
//! write is retried with a backoff while the gateway runs; [`Ledger::shutdown`] flushes whatever
//! is queued before the process exits.
//!
//! The modules, lowest first (each imports only those above it in this list, never `mod.rs`):
//! - [`time`]: microsecond timestamps and UTC calendar buckets.
//! - [`histogram`]: durations counted in fixed buckets, for the console's percentiles.
//! - [`record`]: one request's usage record, and the filter on its user.
//! - [`totals`]: what the usage questions answer (sums over a range, per bucket and model).
//! - [`keys`]: what a project key may do on its own, the admin keys, and [`KeyStore`].
//! - [`responses`]: responses kept for the Responses API, and [`ResponseStore`].
//! - [`requests`]: the request log's query, pages and filters, and [`RequestLog`].
//! - `rollup`: what both stores share about rollups and ranges.
//! - [`stats`]: the console's figures (totals, series, breakdowns, percentiles), and
//!   [`StatsSource`].
//! - [`store`]: [`UsageStore`] (batches and sums), and [`Store`], every part in one database.
//! - [`sql`]: the statements both stores run as they are (keys, admin keys, stored responses,
//!   a record's row), and the small traits through which they run them.
//! - [`schema`]: the versioned migrations both stores run when they open a database.
//! - [`sqlite`]: the embedded SQLite store (the default, `sqlite://./wasmgate.db`).
//! - [`postgres`]: the PostgreSQL store (`postgres://...`), for replicas sharing one ledger.

pub mod histogram;
pub mod keys;
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

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use keys::{AdminKey, ApiKey, Budget, BudgetPeriod, KeyChanges, KeyLimits, KeyStore};
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
}

impl std::fmt::Debug for LedgerConfig {
    // By hand: the URL may hold the database's password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LedgerConfig")
            .field("url", &postgres::redact_url(&self.url))
            .field("queue_capacity", &self.queue_capacity)
            .finish()
    }
}

impl Default for LedgerConfig {
    fn default() -> Self {
        Self {
            url: default_url(),
            queue_capacity: default_queue_capacity(),
        }
    }
}

fn default_url() -> String {
    "sqlite://./wasmgate.db".to_owned()
}
fn default_queue_capacity() -> usize {
    100_000
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
    tx: mpsc::Sender<UsageRecord>,
    store: Arc<dyn Store>,
    dropped: AtomicU64,
    /// When a drop was last logged, in µs since the epoch: at most one warning a second.
    drop_logged_us: AtomicI64,
    stop: CancellationToken,
    writer: tokio::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Ledger {
    /// Opens the store `config.url` names and starts the writer task.
    pub fn open(config: &LedgerConfig) -> anyhow::Result<Self> {
        Ok(Self::with_store(open_store(config)?, config.queue_capacity))
    }

    /// A ledger writing to `store`; must be called inside a Tokio runtime.
    pub fn with_store(store: Arc<dyn Store>, capacity: usize) -> Self {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        let stop = CancellationToken::new();
        let writer = tokio::spawn(write_loop(rx, Arc::clone(&store), stop.clone()));
        Self {
            inner: Arc::new(Inner {
                tx,
                store,
                dropped: AtomicU64::new(0),
                drop_logged_us: AtomicI64::new(i64::MIN),
                stop,
                writer: tokio::sync::Mutex::new(Some(writer)),
            }),
        }
    }

    /// Queues `record` without waiting; drops it (counted, with a warning) when the queue is
    /// full or the ledger has shut down.
    pub fn record(&self, record: UsageRecord) {
        if let Err(error) = self.inner.tx.try_send(record) {
            let dropped = self.inner.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            let reason = match error {
                mpsc::error::TrySendError::Full(_) => "the ledger queue is full",
                mpsc::error::TrySendError::Closed(_) => "the ledger has shut down",
            };
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
        }
    }

    /// Records dropped since start (queue full or ledger closed).
    pub fn dropped(&self) -> u64 {
        self.inner.dropped.load(Ordering::Relaxed)
    }

    /// Records waiting to be written.
    pub fn queued(&self) -> usize {
        self.inner.tx.max_capacity() - self.inner.tx.capacity()
    }

    /// The store, for the analytics endpoints.
    pub fn store(&self) -> Arc<dyn Store> {
        Arc::clone(&self.inner.store)
    }

    /// Stops taking records and writes every queued one. Idempotent.
    pub async fn shutdown(&self) {
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
        write_batch(&store, batch, &stop, &rx).await;
    }
}

/// Writes one batch, retrying with a backoff while the store fails; when stopping, gives up
/// after a few tries so that shutdown ends. While it retries, the records behind it wait in the
/// queue: each warning says how full the queue is, and recovery is logged with the outage's
/// length, so that an operator sees the buffer fill and drain.
async fn write_batch(
    store: &Arc<dyn Store>,
    batch: Vec<UsageRecord>,
    stop: &CancellationToken,
    queue: &mpsc::Receiver<UsageRecord>,
) {
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
                        queued = queue.len(),
                        "usage records written again after the ledger database failed"
                    );
                }
                return;
            }
            Ok(Err(e)) => format!("{e:#}"),
            Err(e) => e.to_string(),
        };
        if stop.is_cancelled() && attempt >= 3 {
            tracing::error!(
                records = batch.len(),
                "usage records lost: the ledger cannot write them: {error}"
            );
            return;
        }
        tracing::warn!(
            records = batch.len(),
            attempt,
            queued = queue.len(),
            capacity = queue.max_capacity(),
            "cannot write usage records, retrying in {delay:?}: {error}"
        );
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(10));
    }
}

#[cfg(test)]
mod tests;
