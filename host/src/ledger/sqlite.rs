//! The embedded SQLite store, on the schema [`super::store`] describes.
//!
//! Queries read whole hours from a rollup and only the partial hours at the edges of the range
//! from the raw table, so their cost grows with the number of hours, not of requests. Unfiltered
//! questions read `usage_hourly_models` (one row per hour and model, however many users);
//! questions about some users read `usage_daily_users` for whole days (the unit they are
//! answered in by default) and `usage_hourly_users` for whole hours, one primary-key lookup per
//! (day or hour, user), so that the rows of other users are never read.

use std::path::Path;
use std::sync::Mutex;

use anyhow::Context;
use rusqlite::{Connection, params};

mod durations;
mod schema;
mod write_sql;

use durations::write_durations;

use super::columns::{self, Derived, record_row};
use super::histogram::Durations;
use super::record::{UsageRecord, UserFilter};
use super::requests::{self, Flavor, Param, RequestLog, RequestQuery};
use super::rollup::{self, Buckets, Rollup, RollupSpan, UserKeys};
use super::sql::{self, Sql, SqlStore};
use super::stats::{self, Figures, GroupRow, Grouping, Part, StatsSource};
use super::store::{BatchId, UsageStore};
use super::time::Unit;
use super::totals::{ModelBucket, Totals};
use super::values::{self, Value};

/// User keys and bucket starts past these are queried in chunks (SQLite caps the parameters of
/// a statement at 32,766).
const KEYS_PER_QUERY: usize = 500;
const TIMES_PER_QUERY: usize = 1_000;

pub struct SqliteStore {
    /// Writes batches and keys.
    conn: Mutex<Connection>,
    /// Answers queries, so that they never wait behind a batch (WAL lets one writer and readers
    /// work at once). `None` in memory, where a second connection would see another database.
    reader: Option<Mutex<Connection>>,
    users: Mutex<UserKeys>,
    /// When the writer last handed its page cache back (see `release_cache`).
    pub(super) released: Mutex<std::time::Instant>,
}

/// How long a connection to the ledger file waits for another's lock.
const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// How long [`SqliteStore::open`] goes on trying a file another process holds locked, and how
/// long it waits between tries.
const OPEN_RETRY_FOR: std::time::Duration = std::time::Duration::from_secs(10);
const OPEN_RETRY_DELAY: std::time::Duration = std::time::Duration::from_millis(100);

/// How often the writer's page cache may be handed back (see `SqliteStore::release_cache`).
const RELEASE_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Whether `error` is SQLite's "database is busy or locked".
fn busy(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        matches!(
            cause.downcast_ref::<rusqlite::Error>(),
            Some(rusqlite::Error::SqliteFailure(e, _))
                if matches!(e.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
        )
    })
}

impl SqliteStore {
    /// Opens (creating if needed) the database file at `path`. Another process opening the same
    /// new file at the same moment can hold a lock SQLite does not wait for (its switch to WAL):
    /// the open is tried again then, for [`OPEN_RETRY_FOR`] at most (a lock SQLite does wait
    /// for already waits up to its busy timeout within one try).
    pub fn open(path: &Path) -> anyhow::Result<Self> {
        let deadline = std::time::Instant::now() + OPEN_RETRY_FOR;
        loop {
            match Self::open_once(path) {
                Err(e) if busy(&e) && std::time::Instant::now() < deadline => {
                    std::thread::sleep(OPEN_RETRY_DELAY);
                }
                opened => return opened,
            }
        }
    }

    fn open_once(path: &Path) -> anyhow::Result<Self> {
        let conn = Connection::open(path)
            .with_context(|| format!("cannot open the ledger database {}", path.display()))?;
        // First: switching to WAL and migrating wait for another process doing the same (two
        // gateways, or a `wasmgate keys` command, starting on one new file) instead of failing.
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // A batch touches one rollup row per user in each per-user rollup, spread over their
        // B-trees: with SQLite's 2 MiB default cache, a thousand active users thrash it. 16 MiB
        // holds four pages per user of a thousand; more only grew the gateway's RSS (the cache
        // fills with the records' own pages, which are written once and never read again).
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA cache_size = -16384;",
        )?;
        let mut store = Self::init(conn)?;
        let reader = Connection::open(path)
            .with_context(|| format!("cannot open the ledger database {}", path.display()))?;
        reader.execute_batch("PRAGMA cache_size = -65536;")?;
        reader.busy_timeout(BUSY_TIMEOUT)?;
        store.reader = Some(Mutex::new(reader));
        Ok(store)
    }

    /// A database in memory, gone when the store is dropped.
    pub fn in_memory() -> anyhow::Result<Self> {
        Self::init(Connection::open_in_memory()?)
    }

    /// Migrates `conn` (a file's has its busy timeout already, see `open_once`; an in-memory
    /// database is this connection's alone) and wraps it.
    fn init(conn: Connection) -> anyhow::Result<Self> {
        schema::migrate(&conn)?;
        Ok(Self {
            conn: Mutex::new(conn),
            reader: None,
            users: Mutex::new(UserKeys::default()),
            released: Mutex::new(std::time::Instant::now()),
        })
    }

    /// At most once every [`RELEASE_EVERY`], after a batch: the writer's page cache handed
    /// back. Its `cache_size` is sized for the hot pages of a thousand users' rollups, but
    /// under load it fills with the pages of the records themselves, written once and never
    /// read again, and stays full (16 MiB of RSS) whether one user or a thousand wrote them.
    /// Released each second, it holds one second's pages, and the hot ones are read back from
    /// the OS's page cache (for a thousand users' rollups some 4,000 reads a second, by
    /// `open_once`'s estimate of four pages per user). SQLite's pages come from glibc's malloc,
    /// not mimalloc: `malloc_trim` hands back the free pages between live chunks, which glibc's
    /// `free` keeps.
    fn release_cache(&self, conn: &Connection) {
        if self.reader.is_none() {
            // In memory the cache is the database.
            return;
        }
        let Ok(mut released) = self.released.try_lock() else {
            return;
        };
        if released.elapsed() < RELEASE_EVERY {
            return;
        }
        *released = std::time::Instant::now();
        if let Err(e) = conn.execute_batch("PRAGMA shrink_memory;") {
            tracing::debug!("the ledger's page cache was not released: {e}");
            return;
        }
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        #[expect(
            unsafe_code,
            reason = "malloc_trim takes a size and frees only memory glibc holds unused"
        )]
        unsafe {
            libc::malloc_trim(0);
        }
    }

    /// The bytes the writer's page cache holds now.
    #[cfg(test)]
    pub(super) fn cache_used(&self) -> anyhow::Result<i64> {
        let conn = self.conn()?;
        let (mut current, mut highest) = (0, 0);
        #[expect(
            unsafe_code,
            reason = "sqlite3_db_status reads a counter of a connection this guard holds open"
        )]
        let status = unsafe {
            rusqlite::ffi::sqlite3_db_status(
                conn.handle(),
                rusqlite::ffi::SQLITE_DBSTATUS_CACHE_USED,
                &raw mut current,
                &raw mut highest,
                0,
            )
        };
        anyhow::ensure!(
            status == rusqlite::ffi::SQLITE_OK,
            "sqlite3_db_status: {status}"
        );
        Ok(i64::from(current))
    }

    fn conn(&self) -> anyhow::Result<std::sync::MutexGuard<'_, Connection>> {
        self.conn
            .lock()
            .map_err(|_| anyhow::anyhow!("the ledger connection is poisoned"))
    }

    fn reader(&self) -> anyhow::Result<std::sync::MutexGuard<'_, Connection>> {
        self.reader
            .as_ref()
            .unwrap_or(&self.conn)
            .lock()
            .map_err(|_| anyhow::anyhow!("the ledger connection is poisoned"))
    }
}

/// Input and output tokens, cost, requests, cache hits and savings, from column `first` on.
fn sums(row: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<Totals> {
    Ok(Totals {
        cache_hits: u64::try_from(row.get::<_, Option<i64>>(first + 4)?.unwrap_or(0)).unwrap_or(0),
        saved_cost_micros: row.get::<_, Option<i64>>(first + 5)?.unwrap_or(0),
        ..rollup::totals(
            row.get(first)?,
            row.get(first + 1)?,
            row.get(first + 2)?,
            row.get(first + 3)?,
        )
    })
}

/// `?, ?, ...` for `n` parameters.
fn placeholders(n: usize) -> String {
    vec!["?"; n].join(", ")
}

impl UsageStore for SqliteStore {
    fn write_once(&self, batch: &BatchId, records: &[UsageRecord]) -> anyhow::Result<bool> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        let fresh_batch = tx.execute(
            "INSERT INTO ledger_batches (batch_id, records) VALUES (?1, ?2)
             ON CONFLICT (batch_id) DO NOTHING",
            params![batch.0, records.len()],
        )? == 1;
        if !fresh_batch {
            return Ok(false);
        }
        tx.execute(
            "DELETE FROM ledger_batches WHERE batch_id < ?1",
            params![BatchId::at(super::time::now_us() - BatchId::KEPT_US)],
        )?;
        let stored = {
            let mut exists = tx.prepare_cached(
                "SELECT 1 FROM usage_records WHERE request_id = ?1 AND time_us = ?2 LIMIT 1",
            )?;
            let mut stored = std::collections::HashSet::new();
            for r in records {
                if exists.exists(params![r.request_id, r.time_us])? {
                    stored.insert((r.request_id.as_str(), r.time_us));
                }
            }
            stored
        };
        let unwritten = super::store::unwritten(records, &stored);
        let records = &*unwritten;
        let (user_keys, fresh) = {
            let known = self
                .users
                .lock()
                .map_err(|_| anyhow::anyhow!("the ledger user cache is poisoned"))?;
            sql::user_keys(&mut Lite(&tx), &known, records)?
        };
        {
            let statements = write_sql::write_sql();
            let mut insert = tx.prepare_cached(&statements.insert)?;
            for (r, &user_key) in records.iter().zip(&user_keys) {
                let tags = serde_json::to_string(&r.user_tags)?;
                let derived = Derived {
                    user_key,
                    tags: &tags,
                };
                insert.execute(rusqlite::params_from_iter(columns::insert_values(
                    r, derived,
                )?))?;
            }
            let rollups = rollup::rollups(records, &user_keys)?;
            let [hourly, daily] = &statements.models;
            for (sql, rows) in [(hourly, &rollups.models), (daily, &rollups.model_days)] {
                let mut models = tx.prepare_cached(sql)?;
                for ((project, at, provider, model), s) in rows {
                    let head: [&dyn rusqlite::ToSql; 4] = [project, at, provider, model];
                    let sums = s.columns();
                    let tail = sums.iter().map(|v| v as &dyn rusqlite::ToSql);
                    models.execute(rusqlite::params_from_iter(head.into_iter().chain(tail)))?;
                }
            }
            let [hourly, daily] = &statements.users;
            for (sql, rows) in [(hourly, &rollups.users), (daily, &rollups.user_days)] {
                let mut users = tx.prepare_cached(sql)?;
                for ((project, at, user, provider, model), s) in rows {
                    let head: [&dyn rusqlite::ToSql; 5] = [project, at, user, provider, model];
                    let sums = s.columns();
                    let tail = sums.iter().map(|v| v as &dyn rusqlite::ToSql);
                    users.execute(rusqlite::params_from_iter(head.into_iter().chain(tail)))?;
                }
            }
            write_durations(&tx, &rollups.durations)?;
        }
        tx.commit()?;
        self.release_cache(&conn);
        self.users
            .lock()
            .map_err(|_| anyhow::anyhow!("the ledger user cache is poisoned"))?
            .extend(fresh);
        Ok(true)
    }

    fn total(&self, project: &str, start_us: i64, end_us: i64) -> anyhow::Result<Totals> {
        self.read_sql(|db| sql::total(db, project, start_us, end_us))
    }

    fn models(
        &self,
        project: &str,
        start_us: i64,
        end_us: i64,
        unit: Unit,
        filter: &UserFilter,
    ) -> anyhow::Result<Vec<ModelBucket>> {
        let conn = self.reader()?;
        let mut buckets = Buckets::new(unit);
        let users = if filter.is_empty() {
            None
        } else {
            let keys = sql::matching_users(&mut Lite(&conn), project, filter)?;
            if keys.is_empty() {
                return Ok(Vec::new());
            }
            Some(keys)
        };
        let plan = rollup::plan(start_us, end_us, Some(unit));
        let mut add = |rows: &mut rusqlite::Rows<'_>| -> anyhow::Result<()> {
            while let Some(row) = rows.next()? {
                buckets.add(
                    row.get(0)?,
                    row.get::<_, Option<String>>(1)?.unwrap_or_default(),
                    row.get(2)?,
                    sums(row, 3)?,
                );
            }
            Ok(())
        };
        match &users {
            None => {
                // One row per (bucket, provider, model) already: nothing to group.
                for RollupSpan {
                    table,
                    time,
                    span: (a, b),
                    ..
                } in plan.rollups(Rollup::Models)
                {
                    let mut stmt = conn.prepare_cached(&format!(
                        "SELECT {time}, provider, model,
                            input_tokens, output_tokens, cost_micros, requests, cache_hits,
                            saved_cost_micros
                         FROM {table}
                         WHERE project = ?1 AND {time} >= ?2 AND {time} < ?3 AND model <> ''"
                    ))?;
                    add(&mut stmt.query(params![project, a, b])?)?;
                }
            }
            Some(keys) => {
                for RollupSpan {
                    table,
                    time,
                    step,
                    span: (a, b),
                } in plan.rollups(Rollup::Users)
                {
                    // Each (bucket, user) is one primary-key lookup: the rows of users not asked
                    // about are never read. Only the buckets between the first and last that
                    // hold data are looked up, so an open-ended range costs nothing extra.
                    let edge = |order: &str| -> anyhow::Result<Option<i64>> {
                        let mut stmt = conn.prepare_cached(&format!(
                            "SELECT {time} FROM {table}
                             WHERE project = ?1 AND {time} >= ?2 AND {time} < ?3
                             ORDER BY {time} {order} LIMIT 1"
                        ))?;
                        let mut rows = stmt.query(params![project, a, b])?;
                        Ok(rows.next()?.map(|row| row.get(0)).transpose()?)
                    };
                    let (Some(first), Some(last)) = (edge("ASC")?, edge("DESC")?) else {
                        continue;
                    };
                    let times = rollup::steps(first, last + step, step);
                    for times in times.chunks(TIMES_PER_QUERY) {
                        for keys in keys.chunks(KEYS_PER_QUERY) {
                            let mut stmt = conn.prepare_cached(&format!(
                                "SELECT {time}, provider, model, SUM(input_tokens),
                                    SUM(output_tokens), SUM(cost_micros), SUM(requests),
                                    SUM(cache_hits), SUM(saved_cost_micros)
                                 FROM {table}
                                 WHERE project = ? AND {time} IN ({}) AND user_key IN ({})
                                    AND model <> ''
                                 GROUP BY {time}, provider, model",
                                placeholders(times.len()),
                                placeholders(keys.len())
                            ))?;
                            let at =
                                std::iter::once(rusqlite::types::Value::from(project.to_owned()))
                                    .chain(times.iter().chain(keys).map(|&v| v.into()));
                            add(&mut stmt.query(rusqlite::params_from_iter(at))?)?;
                        }
                    }
                }
            }
        }
        let grain = rollup::grain(unit);
        let key_chunks: Vec<&[i64]> = match &users {
            None => vec![&[]],
            Some(keys) => keys.chunks(KEYS_PER_QUERY).collect(),
        };
        for keys in key_chunks {
            let user_clause = if users.is_some() {
                format!("AND user_key IN ({})", placeholders(keys.len()))
            } else {
                String::new()
            };
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT (time_us / ?) * ? AS grain, provider, model,
                    SUM(input_tokens), SUM(output_tokens), SUM(COALESCE(cost_micros, 0)),
                    COUNT(*), SUM(CAST(cache_hit AS INTEGER)),
                    SUM(COALESCE(saved_cost_micros, 0))
                 FROM usage_records
                 WHERE project = ? AND time_us >= ? AND time_us < ? {user_clause}
                    AND model IS NOT NULL
                 GROUP BY grain, provider, model"
            ))?;
            for &(s, e) in &plan.raw {
                let head: [rusqlite::types::Value; 5] = [
                    grain.into(),
                    grain.into(),
                    project.to_owned().into(),
                    s.into(),
                    e.into(),
                ];
                let at = head.into_iter().chain(keys.iter().map(|&k| k.into()));
                add(&mut stmt.query(rusqlite::params_from_iter(at))?)?;
            }
        }
        Ok(buckets.into_vec())
    }

    fn count(&self) -> anyhow::Result<u64> {
        self.read_sql(sql::count)
    }
}

impl RequestLog for SqliteStore {
    fn record(&self, request_id: &str) -> anyhow::Result<Option<UsageRecord>> {
        let conn = self.reader()?;
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {} FROM usage_records WHERE request_id = ?1
             ORDER BY time_us DESC, rowid DESC LIMIT 1",
            columns::read_list()
        ))?;
        let mut rows = stmt.query(params![request_id])?;
        rows.next()?.map(|row| record_row(row)).transpose()
    }

    fn requests(&self, query: &RequestQuery) -> anyhow::Result<Vec<UsageRecord>> {
        let conn = self.reader()?;
        let user_keys = if query.users.is_empty() {
            None
        } else {
            let keys = sql::matching_users(&mut Lite(&conn), &query.project, &query.users)?;
            if keys.is_empty() {
                return Ok(Vec::new());
            }
            Some(keys)
        };
        let (sql, bound) = requests::select(query, user_keys, Flavor::Sqlite);
        let values = bound
            .into_iter()
            .map(|p| {
                Ok(match p {
                    Param::Text(t) => rusqlite::types::Value::Text(t),
                    Param::Int(i) => rusqlite::types::Value::Integer(i),
                    Param::Keys(keys) => {
                        rusqlite::types::Value::Text(serde_json::to_string(&keys)?)
                    }
                })
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let mut stmt = conn.prepare_cached(&sql)?;
        let mut rows = stmt.query(rusqlite::params_from_iter(values))?;
        let mut page = Vec::new();
        while let Some(row) = rows.next()? {
            page.push(record_row(row)?);
        }
        Ok(page)
    }

    fn project_record(
        &self,
        project: &str,
        request_id: &str,
    ) -> anyhow::Result<Option<UsageRecord>> {
        let conn = self.reader()?;
        let mut stmt = conn.prepare_cached(&format!(
            // `+project`: the index on the id, not the project's (which SQLite, without
            // statistics, prefers, and which reads every record of the project).
            "SELECT {} FROM usage_records WHERE request_id = ?1 AND +project = ?2
             ORDER BY time_us DESC, rowid DESC LIMIT 1",
            columns::read_list()
        ))?;
        let mut rows = stmt.query(params![request_id, project])?;
        rows.next()?.map(|row| record_row(row)).transpose()
    }
}

impl StatsSource for SqliteStore {
    fn stats_groups(
        &self,
        project: &str,
        part: Part,
        grouping: Grouping,
    ) -> anyhow::Result<Vec<GroupRow>> {
        let conn = self.reader()?;
        let mut stmt =
            conn.prepare_cached(&stats::group_sql(grouping, part.source, Flavor::Sqlite))?;
        let mut rows = stmt.query(params![project, part.start_us, part.end_us])?;
        let mut groups = Vec::new();
        while let Some(row) = rows.next()? {
            let mut sums = [None; stats::FIGURES];
            for (i, sum) in sums.iter_mut().enumerate() {
                *sum = row.get(3 + i)?;
            }
            groups.push(GroupRow {
                bucket_us: row.get(0)?,
                first: row.get(1)?,
                second: row.get(2)?,
                figures: Figures::from_sql(sums),
            });
        }
        Ok(groups)
    }

    fn stats_durations(&self, project: &str, part: Part) -> anyhow::Result<Durations> {
        let conn = self.reader()?;
        let (sql, shape) = stats::durations_sql(part.source, Flavor::Sqlite);
        let mut stmt = conn.prepare_cached(&sql)?;
        let mut rows = stmt.query(params![project, part.start_us, part.end_us])?;
        let mut durations = Durations::default();
        while let Some(row) = rows.next()? {
            let width = if shape == stats::DurationRows::Values {
                2
            } else {
                3
            };
            let mut values = [None; 3];
            for (i, v) in values.iter_mut().enumerate().take(width) {
                *v = row.get(i)?;
            }
            stats::add_duration_row(&mut durations, shape, values);
        }
        Ok(durations)
    }
}

impl SqlStore for SqliteStore {
    fn write_sql<T>(&self, f: impl FnOnce(&mut dyn Sql) -> anyhow::Result<T>) -> anyhow::Result<T> {
        f(&mut Lite(&*self.conn()?))
    }

    fn read_sql<T>(&self, f: impl FnOnce(&mut dyn Sql) -> anyhow::Result<T>) -> anyhow::Result<T> {
        f(&mut Lite(&*self.reader()?))
    }
}

/// A connection running [`sql`]'s statements, their `$N` read as SQLite's `?N` (the statements
/// hold no other `$`).
struct Lite<'a>(&'a Connection);

impl Sql for Lite<'_> {
    fn execute(&mut self, sql: &str, params: &[Value<'_>]) -> anyhow::Result<u64> {
        let mut stmt = self.0.prepare_cached(&sql.replace('$', "?"))?;
        Ok(u64::try_from(
            stmt.execute(rusqlite::params_from_iter(params))?,
        )?)
    }

    fn query(
        &mut self,
        sql: &str,
        params: &[Value<'_>],
        each: &mut dyn FnMut(&dyn values::Row) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let mut stmt = self.0.prepare_cached(&sql.replace('$', "?"))?;
        let mut rows = stmt.query(rusqlite::params_from_iter(params))?;
        while let Some(row) = rows.next()? {
            each(row)?;
        }
        Ok(())
    }
}

impl values::Row for rusqlite::Row<'_> {
    fn text(&self, i: usize) -> anyhow::Result<Option<String>> {
        Ok(self.get(i)?)
    }

    fn int(&self, i: usize) -> anyhow::Result<Option<i64>> {
        Ok(self.get(i)?)
    }
}

impl rusqlite::ToSql for Value<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, Value as Owned, ValueRef};
        Ok(match *self {
            Value::Text(Some(text)) => ToSqlOutput::Borrowed(ValueRef::Text(text.as_bytes())),
            Value::Int(Some(n)) => ToSqlOutput::Owned(Owned::Integer(n)),
            Value::Bool(b) => ToSqlOutput::Owned(Owned::Integer(i64::from(b))),
            Value::Text(None) | Value::Int(None) => ToSqlOutput::Owned(Owned::Null),
        })
    }
}
