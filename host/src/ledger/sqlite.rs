//! The embedded SQLite store, on the schema [`super::store`] describes.
//!
//! Queries read whole hours from a rollup and only the partial hours at the edges of the range
//! from the raw table, so their cost grows with the number of hours, not of requests. Unfiltered
//! questions read `usage_hourly_models` (one row per hour and model, however many users);
//! questions about some users read `usage_daily_users` for whole days (the unit they are
//! answered in by default) and `usage_hourly_users` for whole hours, one primary-key lookup per
//! (day or hour, user), so that the rows of other users are never read.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

use anyhow::Context;
use rusqlite::{Connection, params};

use super::UsageRecord;
use super::histogram::Durations;
use super::keys::{AdminKey, KeyLimits};
use super::requests::{self, Flavor, Param, RequestQuery};
use super::responses::StoredResponse;
use super::rollup::{self, ADD_SUMS, Buckets, NO_USER, Rollup, RollupSpan, UserKeys, UserSeen};
use super::stats::{self, Figures, GroupRow, Grouping, Part};
use super::store::{
    ApiKey, BatchId, ModelBucket, Store, Totals, Unit, UserFilter, limits_from_columns,
    limits_to_columns,
};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS usage_records (
    request_id TEXT NOT NULL,
    time_us INTEGER NOT NULL,
    project TEXT NOT NULL,
    api_key_id TEXT,
    user_key INTEGER NOT NULL,
    user_id TEXT,
    user_name TEXT,
    user_tags TEXT NOT NULL,
    provider TEXT,
    model TEXT,
    operation TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cached_input_tokens INTEGER NOT NULL,
    cost_micros INTEGER,
    latency_us INTEGER NOT NULL,
    status INTEGER NOT NULL,
    error_type TEXT,
    estimated INTEGER NOT NULL,
    ttft_us INTEGER,
    reasoning_tokens INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0
);
-- The request log's indexes (see ledger::requests). The first replaces the earlier
-- (project, time_us), of which it is an extension: a page's keyset is (time_us, request_id).
CREATE INDEX IF NOT EXISTS usage_records_by_project_time_id
    ON usage_records (project, time_us, request_id);
DROP INDEX IF EXISTS usage_records_by_project_time;
CREATE INDEX IF NOT EXISTS usage_records_by_project_user
    ON usage_records (project, user_key, time_us, request_id);
CREATE INDEX IF NOT EXISTS usage_records_failed
    ON usage_records (project, time_us, request_id) WHERE (status < 200 OR status >= 300);
CREATE INDEX IF NOT EXISTS usage_records_by_request ON usage_records (request_id);
CREATE TABLE IF NOT EXISTS usage_users (
    user_key INTEGER PRIMARY KEY,
    project TEXT NOT NULL,
    user_id TEXT NOT NULL,
    user_name TEXT NOT NULL,
    user_tags TEXT NOT NULL,
    UNIQUE (project, user_id, user_name, user_tags)
);
CREATE TABLE IF NOT EXISTS usage_hourly_models (
    project TEXT NOT NULL,
    hour_us INTEGER NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cost_micros INTEGER NOT NULL,
    requests INTEGER NOT NULL,
    errors INTEGER NOT NULL DEFAULT 0,
    cached_input_tokens INTEGER NOT NULL DEFAULT 0,
    latency_us INTEGER NOT NULL DEFAULT 0,
    ttft_us INTEGER NOT NULL DEFAULT 0,
    ttft_count INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (project, hour_us, provider, model)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS usage_daily_models (
    project TEXT NOT NULL,
    day_us INTEGER NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cost_micros INTEGER NOT NULL,
    requests INTEGER NOT NULL,
    errors INTEGER NOT NULL DEFAULT 0,
    cached_input_tokens INTEGER NOT NULL DEFAULT 0,
    latency_us INTEGER NOT NULL DEFAULT 0,
    ttft_us INTEGER NOT NULL DEFAULT 0,
    ttft_count INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (project, day_us, provider, model)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS usage_hourly_users (
    project TEXT NOT NULL,
    user_key INTEGER NOT NULL,
    hour_us INTEGER NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cost_micros INTEGER NOT NULL,
    requests INTEGER NOT NULL,
    errors INTEGER NOT NULL DEFAULT 0,
    cached_input_tokens INTEGER NOT NULL DEFAULT 0,
    latency_us INTEGER NOT NULL DEFAULT 0,
    ttft_us INTEGER NOT NULL DEFAULT 0,
    ttft_count INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (project, hour_us, user_key, provider, model)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS usage_daily_users (
    project TEXT NOT NULL,
    user_key INTEGER NOT NULL,
    day_us INTEGER NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cost_micros INTEGER NOT NULL,
    requests INTEGER NOT NULL,
    errors INTEGER NOT NULL DEFAULT 0,
    cached_input_tokens INTEGER NOT NULL DEFAULT 0,
    latency_us INTEGER NOT NULL DEFAULT 0,
    ttft_us INTEGER NOT NULL DEFAULT 0,
    ttft_count INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (project, day_us, user_key, provider, model)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS usage_hourly_latency (
    project TEXT NOT NULL,
    hour_us INTEGER NOT NULL,
    metric INTEGER NOT NULL,
    bucket INTEGER NOT NULL,
    records INTEGER NOT NULL,
    PRIMARY KEY (project, hour_us, metric, bucket)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS usage_daily_latency (
    project TEXT NOT NULL,
    day_us INTEGER NOT NULL,
    metric INTEGER NOT NULL,
    bucket INTEGER NOT NULL,
    records INTEGER NOT NULL,
    PRIMARY KEY (project, day_us, metric, bucket)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS ledger_batches (
    batch_id TEXT PRIMARY KEY,
    records INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS api_keys (
    id TEXT PRIMARY KEY,
    project TEXT NOT NULL,
    name TEXT,
    key_hash TEXT NOT NULL UNIQUE,
    prefix TEXT NOT NULL,
    created_us INTEGER NOT NULL,
    revoked_us INTEGER
);
CREATE TABLE IF NOT EXISTS admin_keys (
    id TEXT PRIMARY KEY,
    name TEXT,
    key_hash TEXT NOT NULL UNIQUE,
    prefix TEXT NOT NULL,
    created_us INTEGER NOT NULL,
    revoked_us INTEGER
);
CREATE TABLE IF NOT EXISTS stored_responses (
    project TEXT NOT NULL,
    id TEXT NOT NULL,
    created_us INTEGER NOT NULL,
    previous_id TEXT,
    input_items TEXT NOT NULL,
    response TEXT NOT NULL,
    PRIMARY KEY (project, id)
);
";

/// User keys and bucket starts past these are queried in chunks (SQLite caps the parameters of
/// a statement at 32,766).
const KEYS_PER_QUERY: usize = 500;
const TIMES_PER_QUERY: usize = 1_000;

const KEY_COLUMNS: &str = "id, project, name, key_hash, prefix, created_us, revoked_us, \
                           models, expires_us, rpm, tpm, budget_micros, budget_period";

/// Added after the first release: a key's own limits (older files get them, empty), and the
/// index that sums a key's spend.
const KEY_LIMITS_SCHEMA: [(&str, &str); 6] = [
    ("models", "TEXT NOT NULL DEFAULT ''"),
    ("expires_us", "INTEGER"),
    ("rpm", "INTEGER"),
    ("tpm", "INTEGER"),
    ("budget_micros", "INTEGER"),
    ("budget_period", "TEXT"),
];

fn key_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<ApiKey> {
    let models: String = row.get(7)?;
    let period: Option<String> = row.get(12)?;
    Ok(ApiKey {
        id: row.get(0)?,
        project: row.get(1)?,
        name: row.get(2)?,
        hash: row.get(3)?,
        prefix: row.get(4)?,
        created_us: row.get(5)?,
        revoked_us: row.get(6)?,
        limits: limits_from_columns(
            &models,
            row.get(8)?,
            row.get(9)?,
            row.get(10)?,
            row.get(11)?,
            period.as_deref(),
        ),
    })
}

const ADMIN_KEY_COLUMNS: &str = "id, name, key_hash, prefix, created_us, revoked_us";

fn admin_key_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<AdminKey> {
    Ok(AdminKey {
        id: row.get(0)?,
        name: row.get(1)?,
        hash: row.get(2)?,
        prefix: row.get(3)?,
        created_us: row.get(4)?,
        revoked_us: row.get(5)?,
    })
}

pub struct SqliteStore {
    /// Writes batches and keys.
    conn: Mutex<Connection>,
    /// Answers queries, so that they never wait behind a batch (WAL lets one writer and readers
    /// work at once). `None` in memory, where a second connection would see another database.
    reader: Option<Mutex<Connection>>,
    users: Mutex<UserKeys>,
}

impl SqliteStore {
    /// Opens (creating if needed) the database file at `path`.
    pub fn open(path: &Path) -> anyhow::Result<Self> {
        let conn = Connection::open(path)
            .with_context(|| format!("cannot open the ledger database {}", path.display()))?;
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
        reader.busy_timeout(std::time::Duration::from_secs(10))?;
        store.reader = Some(Mutex::new(reader));
        Ok(store)
    }

    /// A database in memory, gone when the store is dropped.
    pub fn in_memory() -> anyhow::Result<Self> {
        Self::init(Connection::open_in_memory()?)
    }

    fn init(conn: Connection) -> anyhow::Result<Self> {
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        // The first development schema had no `user_key`: its records cannot be filtered by
        // user, nor its rollups read by the queries below. Say so rather than fail on a column.
        let has_records = table_exists(&conn, "usage_records")?;
        anyhow::ensure!(
            !has_records || column_exists(&conn, "usage_records", "user_key")?,
            "this ledger database was written by an earlier development version of \
             wasmgate (no usage_records.user_key): move it away to start a new one"
        );
        let has_daily_models = table_exists(&conn, "usage_daily_models")?;
        // Rollups written before they held the console's sums: filled from the records below.
        let needs_backfill = has_records && !column_exists(&conn, "usage_hourly_models", "errors")?;
        conn.execute_batch(SCHEMA)
            .context("cannot create the ledger tables")?;
        for (table, ..) in rollup::ROLLUP_TABLES {
            for column in rollup::STATS_COLUMNS {
                if !column_exists(&conn, table, column)? {
                    conn.execute_batch(&format!(
                        "ALTER TABLE {table} ADD COLUMN {column} INTEGER NOT NULL DEFAULT 0"
                    ))
                    .with_context(|| format!("cannot add {table}.{column}"))?;
                }
            }
        }
        if has_records && !has_daily_models {
            // Added after the first release: sum what the hourly rollup already holds.
            conn.execute(&rollup::days_from_hours(), [])
                .context("cannot fill usage_daily_models")?;
        }
        if needs_backfill {
            backfill(&conn).context("cannot fill the rollups' new sums from the records")?;
        }
        // Added after the first release: older files get the column, empty for their records.
        if !column_exists(&conn, "usage_records", "ttft_us")? {
            conn.execute_batch("ALTER TABLE usage_records ADD COLUMN ttft_us INTEGER")
                .context("cannot add usage_records.ttft_us")?;
        }
        if !column_exists(&conn, "usage_records", "reasoning_tokens")? {
            conn.execute_batch(
                "ALTER TABLE usage_records ADD COLUMN reasoning_tokens INTEGER NOT NULL DEFAULT 0",
            )
            .context("cannot add usage_records.reasoning_tokens")?;
        }
        if !column_exists(&conn, "usage_records", "cache_write_tokens")? {
            conn.execute_batch(
                "ALTER TABLE usage_records ADD COLUMN cache_write_tokens INTEGER NOT NULL DEFAULT 0",
            )
            .context("cannot add usage_records.cache_write_tokens")?;
        }
        for (column, kind) in KEY_LIMITS_SCHEMA {
            if !column_exists(&conn, "api_keys", column)? {
                conn.execute_batch(&format!("ALTER TABLE api_keys ADD COLUMN {column} {kind}"))
                    .with_context(|| format!("cannot add api_keys.{column}"))?;
            }
        }
        conn.execute_batch(
            "CREATE INDEX IF NOT EXISTS usage_records_by_key
                 ON usage_records (api_key_id, time_us) WHERE api_key_id IS NOT NULL",
        )
        .context("cannot index usage_records by key")?;
        Ok(Self {
            conn: Mutex::new(conn),
            reader: None,
            users: Mutex::new(UserKeys::default()),
        })
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

/// Fills the rollups' [`rollup::STATS_COLUMNS`] and the duration histograms from the records,
/// in one transaction, for a database written before they existed.
fn backfill(conn: &Connection) -> anyhow::Result<()> {
    let tx = conn.unchecked_transaction()?;
    for (table, time, step, by_user) in rollup::ROLLUP_TABLES {
        tx.execute(&rollup::backfill_sql(table, time, step, by_user), [])?;
    }
    {
        let mut stmt =
            tx.prepare("SELECT project, time_us, latency_us, ttft_us FROM usage_records")?;
        let mut rows = stmt.query([])?;
        // Written every so many records (the histograms' UPSERTs add), so that memory holds
        // that many records' counts, not the whole history's.
        let mut counts = rollup::DurationCounts::default();
        let mut held = 0;
        while let Some(row) = rows.next()? {
            let project: String = row.get(0)?;
            counts.add(&project, row.get(1)?, row.get(2)?, row.get(3)?);
            held += 1;
            if held == rollup::BACKFILL_CHUNK {
                write_durations(&tx, &std::mem::take(&mut counts))?;
                held = 0;
            }
        }
        write_durations(&tx, &counts)?;
    }
    tx.commit()?;
    Ok(())
}

/// Adds `counts` to the duration histograms.
fn write_durations(conn: &Connection, counts: &rollup::DurationCounts) -> anyhow::Result<()> {
    let [hourly, daily] = rollup::DURATION_TABLES;
    for (table, time, rows) in [
        (hourly, "hour_us", &counts.hours),
        (daily, "day_us", &counts.days),
    ] {
        let mut stmt = conn.prepare_cached(&format!(
            "INSERT INTO {table} AS h (project, {time}, metric, bucket, records)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (project, {time}, metric, bucket)
             DO UPDATE SET records = h.records + excluded.records"
        ))?;
        for ((project, at, metric, bucket), n) in rows {
            stmt.execute(params![project, at, metric, bucket, n])?;
        }
    }
    Ok(())
}

fn table_exists(conn: &Connection, table: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = ?1)",
        params![table],
        |row| row.get(0),
    )
}

fn column_exists(conn: &Connection, table: &str, column: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2)",
        params![table, column],
        |row| row.get(0),
    )
}

fn sums(row: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<Totals> {
    Ok(rollup::totals(
        row.get(first)?,
        row.get(first + 1)?,
        row.get(first + 2)?,
        row.get(first + 3)?,
    ))
}

/// `?, ?, ...` for `n` parameters.
fn placeholders(n: usize) -> String {
    vec!["?"; n].join(", ")
}

impl SqliteStore {
    /// The key of every user in `records` (or [`NO_USER`]), inserting the users not seen yet.
    /// Returns the keys first looked up here, to remember once the transaction has committed.
    fn user_keys(
        &self,
        tx: &rusqlite::Transaction<'_>,
        records: &[UsageRecord],
    ) -> anyhow::Result<(Vec<i64>, HashMap<UserSeen, i64>)> {
        let known = self
            .users
            .lock()
            .map_err(|_| anyhow::anyhow!("the ledger user cache is poisoned"))?;
        let mut fresh = HashMap::new();
        let mut keys = Vec::with_capacity(records.len());
        let mut insert = tx.prepare_cached(
            "INSERT INTO usage_users (project, user_id, user_name, user_tags) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (project, user_id, user_name, user_tags) DO NOTHING",
        )?;
        let mut select = tx.prepare_cached(
            "SELECT user_key FROM usage_users
             WHERE project = ?1 AND user_id = ?2 AND user_name = ?3 AND user_tags = ?4",
        )?;
        for r in records {
            let Some(user) = UserSeen::of(r)? else {
                keys.push(NO_USER);
                continue;
            };
            let key = match known.get(&user).or_else(|| fresh.get(&user).copied()) {
                Some(key) => key,
                None => {
                    let at = params![user.project, user.id, user.name, user.tags];
                    insert.execute(at)?;
                    let key: i64 = select.query_row(at, |row| row.get(0))?;
                    fresh.insert(user, key);
                    key
                }
            };
            keys.push(key);
        }
        Ok((keys, fresh))
    }

    /// The keys of the project's users that `filter` matches.
    fn matching_users(
        conn: &Connection,
        project: &str,
        filter: &UserFilter,
    ) -> anyhow::Result<Vec<i64>> {
        let mut stmt = conn.prepare_cached(
            "SELECT user_key, user_id, user_name, user_tags FROM usage_users
             WHERE project = ?1 AND (?2 IS NULL OR user_id = ?2)",
        )?;
        let rows = stmt.query_map(params![project, filter.user_id], |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, String>(3)?,
            ))
        })?;
        let mut keys = Vec::new();
        for row in rows {
            let (key, id, name, tags) = row?;
            let tags: Vec<String> = serde_json::from_str(&tags)?;
            if filter.matches(&id, &name, &tags) {
                keys.push(key);
            }
        }
        Ok(keys)
    }
}

impl Store for SqliteStore {
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
        let (user_keys, fresh) = self.user_keys(&tx, records)?;
        {
            let mut insert = tx.prepare_cached(
                "INSERT INTO usage_records (request_id, time_us, project, api_key_id, user_key,
                    user_id, user_name, user_tags, provider, model, operation, input_tokens,
                    output_tokens, cached_input_tokens, cost_micros, latency_us, status,
                    error_type, estimated, ttft_us, reasoning_tokens, cache_write_tokens)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
                    ?17, ?18, ?19, ?20, ?21, ?22)",
            )?;
            for (r, user_key) in records.iter().zip(&user_keys) {
                insert.execute(params![
                    r.request_id,
                    r.time_us,
                    r.project,
                    r.api_key_id,
                    user_key,
                    r.user_id,
                    r.user_name,
                    serde_json::to_string(&r.user_tags)?,
                    r.provider,
                    r.model,
                    r.operation,
                    i64::try_from(r.input_tokens)?,
                    i64::try_from(r.output_tokens)?,
                    i64::try_from(r.cached_input_tokens)?,
                    r.cost_micros,
                    r.latency_us,
                    r.status,
                    r.error_type,
                    r.estimated,
                    r.ttft_us,
                    i64::try_from(r.reasoning_tokens)?,
                    i64::try_from(r.cache_write_tokens)?,
                ])?;
            }
            let rollups = rollup::rollups(records, &user_keys)?;
            let columns = rollup::SUM_COLUMNS.join(", ");
            let values = |first: usize| {
                (first..first + rollup::SUM_COLUMNS.len())
                    .map(|i| format!("?{i}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            for (table, time, rows) in [
                ("usage_hourly_models", "hour_us", &rollups.models),
                ("usage_daily_models", "day_us", &rollups.model_days),
            ] {
                let mut models = tx.prepare_cached(&format!(
                    "INSERT INTO {table} AS h (project, {time}, provider, model, {columns})
                     VALUES (?1, ?2, ?3, ?4, {})
                     ON CONFLICT (project, {time}, provider, model) DO UPDATE SET {ADD_SUMS}",
                    values(5)
                ))?;
                for ((project, at, provider, model), s) in rows {
                    let head: [&dyn rusqlite::ToSql; 4] = [project, at, provider, model];
                    let sums = s.columns();
                    let tail = sums.iter().map(|v| v as &dyn rusqlite::ToSql);
                    models.execute(rusqlite::params_from_iter(head.into_iter().chain(tail)))?;
                }
            }
            for (table, time, rows) in [
                ("usage_hourly_users", "hour_us", &rollups.users),
                ("usage_daily_users", "day_us", &rollups.user_days),
            ] {
                let mut users = tx.prepare_cached(&format!(
                    "INSERT INTO {table} AS h (project, {time}, user_key, provider, model, {columns})
                     VALUES (?1, ?2, ?3, ?4, ?5, {})
                     ON CONFLICT (project, {time}, user_key, provider, model) DO UPDATE SET {ADD_SUMS}",
                    values(6)
                ))?;
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
        self.users
            .lock()
            .map_err(|_| anyhow::anyhow!("the ledger user cache is poisoned"))?
            .extend(fresh);
        Ok(true)
    }

    fn total(&self, project: &str, start_us: i64, end_us: i64) -> anyhow::Result<Totals> {
        let conn = self.reader()?;
        let plan = rollup::plan(start_us, end_us, None);
        let mut totals = Totals::default();
        for RollupSpan {
            table,
            time,
            span: (a, b),
            ..
        } in plan.rollups(Rollup::Models)
        {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT SUM(input_tokens), SUM(output_tokens), SUM(cost_micros), SUM(requests)
                 FROM {table} WHERE project = ?1 AND {time} >= ?2 AND {time} < ?3"
            ))?;
            totals.add(stmt.query_row(params![project, a, b], |row| sums(row, 0))?);
        }
        let mut stmt = conn.prepare_cached(
            "SELECT SUM(input_tokens), SUM(output_tokens), SUM(cost_micros), COUNT(*)
             FROM usage_records WHERE project = ?1 AND time_us >= ?2 AND time_us < ?3",
        )?;
        for (s, e) in plan.raw {
            totals.add(stmt.query_row(params![project, s, e], |row| sums(row, 0))?);
        }
        Ok(totals)
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
            let keys = Self::matching_users(&conn, project, filter)?;
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
                            input_tokens, output_tokens, cost_micros, requests
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
                                    SUM(output_tokens), SUM(cost_micros), SUM(requests)
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
                    COUNT(*)
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
        let conn = self.reader()?;
        let n: i64 = conn.query_row("SELECT COUNT(*) FROM usage_records", [], |row| row.get(0))?;
        Ok(n.max(0) as u64)
    }

    fn insert_key(&self, key: &ApiKey) -> anyhow::Result<()> {
        let (models, expires_us, rpm, tpm, budget_micros, budget_period) =
            limits_to_columns(&key.limits);
        let conn = self.conn()?;
        conn.execute(
            &format!(
                "INSERT INTO api_keys ({KEY_COLUMNS})
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"
            ),
            params![
                key.id,
                key.project,
                key.name,
                key.hash,
                key.prefix,
                key.created_us,
                key.revoked_us,
                models,
                expires_us,
                rpm,
                tpm,
                budget_micros,
                budget_period
            ],
        )?;
        Ok(())
    }

    fn key(&self, id: &str) -> anyhow::Result<Option<ApiKey>> {
        let conn = self.reader()?;
        let mut stmt =
            conn.prepare_cached(&format!("SELECT {KEY_COLUMNS} FROM api_keys WHERE id = ?1"))?;
        let mut rows = stmt.query_map(params![id], key_row)?;
        Ok(rows.next().transpose()?)
    }

    fn update_key(&self, id: &str, name: Option<&str>, limits: &KeyLimits) -> anyhow::Result<bool> {
        let (models, expires_us, rpm, tpm, budget_micros, budget_period) =
            limits_to_columns(limits);
        let conn = self.conn()?;
        let changed = conn.execute(
            "UPDATE api_keys SET name = ?2, models = ?3, expires_us = ?4, rpm = ?5, tpm = ?6,
                 budget_micros = ?7, budget_period = ?8
             WHERE id = ?1 AND revoked_us IS NULL",
            params![
                id,
                name,
                models,
                expires_us,
                rpm,
                tpm,
                budget_micros,
                budget_period
            ],
        )?;
        Ok(changed > 0)
    }

    fn key_spend(&self, key_id: &str, since_us: i64) -> anyhow::Result<i64> {
        let conn = self.reader()?;
        let mut stmt = conn.prepare_cached(
            "SELECT COALESCE(SUM(cost_micros), 0) FROM usage_records
             WHERE api_key_id = ?1 AND time_us >= ?2",
        )?;
        Ok(stmt.query_row(params![key_id, since_us], |row| row.get(0))?)
    }

    fn insert_admin_key(&self, key: &AdminKey) -> anyhow::Result<()> {
        let conn = self.conn()?;
        conn.execute(
            &format!(
                "INSERT INTO admin_keys ({ADMIN_KEY_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
            ),
            params![
                key.id,
                key.name,
                key.hash,
                key.prefix,
                key.created_us,
                key.revoked_us
            ],
        )?;
        Ok(())
    }

    fn admin_key_by_hash(&self, hash: &str) -> anyhow::Result<Option<AdminKey>> {
        let conn = self.reader()?;
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {ADMIN_KEY_COLUMNS} FROM admin_keys WHERE key_hash = ?1"
        ))?;
        let mut rows = stmt.query_map(params![hash], admin_key_row)?;
        Ok(rows.next().transpose()?)
    }

    fn admin_keys(&self) -> anyhow::Result<Vec<AdminKey>> {
        let conn = self.reader()?;
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {ADMIN_KEY_COLUMNS} FROM admin_keys ORDER BY created_us, id"
        ))?;
        let keys = stmt.query_map([], admin_key_row)?;
        Ok(keys.collect::<Result<_, _>>()?)
    }

    fn revoke_admin_key(&self, id: &str, at_us: i64) -> anyhow::Result<bool> {
        let conn = self.conn()?;
        let changed = conn.execute(
            "UPDATE admin_keys SET revoked_us = ?2 WHERE id = ?1 AND revoked_us IS NULL",
            params![id, at_us],
        )?;
        Ok(changed > 0)
    }

    fn keys(&self, project: Option<&str>) -> anyhow::Result<Vec<ApiKey>> {
        let conn = self.reader()?;
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {KEY_COLUMNS} FROM api_keys WHERE ?1 IS NULL OR project = ?1
             ORDER BY created_us, id"
        ))?;
        let keys = stmt.query_map(params![project], key_row)?;
        Ok(keys.collect::<Result<_, _>>()?)
    }

    fn revoke_key(&self, id: &str, at_us: i64) -> anyhow::Result<bool> {
        let conn = self.conn()?;
        let changed = conn.execute(
            "UPDATE api_keys SET revoked_us = ?2 WHERE id = ?1 AND revoked_us IS NULL",
            params![id, at_us],
        )?;
        Ok(changed > 0)
    }

    fn put_response(&self, r: &StoredResponse) -> anyhow::Result<()> {
        let conn = self.conn()?;
        conn.execute(
            "INSERT OR REPLACE INTO stored_responses
             (project, id, created_us, previous_id, input_items, response)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                r.project,
                r.id,
                r.created_us,
                r.previous_id,
                r.input_items,
                r.response
            ],
        )?;
        Ok(())
    }

    fn response(&self, project: &str, id: &str) -> anyhow::Result<Option<StoredResponse>> {
        let conn = self.reader()?;
        let mut stmt = conn.prepare_cached(
            "SELECT created_us, previous_id, input_items, response FROM stored_responses
             WHERE project = ?1 AND id = ?2",
        )?;
        let mut rows = stmt.query_map(params![project, id], |row| {
            Ok(StoredResponse {
                id: id.to_owned(),
                project: project.to_owned(),
                created_us: row.get(0)?,
                previous_id: row.get(1)?,
                input_items: row.get(2)?,
                response: row.get(3)?,
            })
        })?;
        Ok(rows.next().transpose()?)
    }

    fn delete_response(&self, project: &str, id: &str) -> anyhow::Result<bool> {
        let conn = self.conn()?;
        let deleted = conn.execute(
            "DELETE FROM stored_responses WHERE project = ?1 AND id = ?2",
            params![project, id],
        )?;
        Ok(deleted > 0)
    }

    fn key_by_hash(&self, hash: &str) -> anyhow::Result<Option<ApiKey>> {
        let conn = self.reader()?;
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {KEY_COLUMNS} FROM api_keys WHERE key_hash = ?1"
        ))?;
        let mut rows = stmt.query_map(params![hash], key_row)?;
        Ok(rows.next().transpose()?)
    }

    fn record(&self, request_id: &str) -> anyhow::Result<Option<UsageRecord>> {
        let conn = self.reader()?;
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {} FROM usage_records WHERE request_id = ?1
             ORDER BY time_us DESC, rowid DESC LIMIT 1",
            requests::COLUMNS
        ))?;
        let mut rows = stmt.query(params![request_id])?;
        rows.next()?.map(record_row).transpose()
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
            requests::COLUMNS
        ))?;
        let mut rows = stmt.query(params![request_id, project])?;
        rows.next()?.map(record_row).transpose()
    }

    fn requests(&self, query: &RequestQuery) -> anyhow::Result<Vec<UsageRecord>> {
        let conn = self.reader()?;
        let user_keys = if query.users.is_empty() {
            None
        } else {
            let keys = Self::matching_users(&conn, &query.project, &query.users)?;
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
            let mut sums = [None; 9];
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

/// A record from a row of [`requests::COLUMNS`].
fn record_row(row: &rusqlite::Row<'_>) -> anyhow::Result<UsageRecord> {
    let count = |i: usize| -> anyhow::Result<u64> { Ok(u64::try_from(row.get::<_, i64>(i)?)?) };
    let tags: String = row.get(6)?;
    Ok(UsageRecord {
        request_id: row.get(0)?,
        time_us: row.get(1)?,
        project: row.get(2)?,
        api_key_id: row.get(3)?,
        user_id: row.get(4)?,
        user_name: row.get(5)?,
        user_tags: serde_json::from_str(&tags)?,
        provider: row.get(7)?,
        model: row.get(8)?,
        operation: row.get(9)?,
        input_tokens: count(10)?,
        output_tokens: count(11)?,
        cached_input_tokens: count(12)?,
        cost_micros: row.get(13)?,
        latency_us: row.get(14)?,
        status: row.get(15)?,
        error_type: row.get(16)?,
        estimated: row.get(17)?,
        ttft_us: row.get(18)?,
        reasoning_tokens: count(19)?,
        cache_write_tokens: count(20)?,
    })
}
