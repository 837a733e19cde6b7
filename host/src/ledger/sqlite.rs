//! The embedded SQLite store: `usage_records` (one row per request) and `usage_hourly` (sums per
//! hour, project, user, provider and model, kept up to date in the same transaction).
//!
//! Queries read whole hours from the rollup and only the partial hours at the edges of the range
//! from the raw table, so their cost grows with the number of hours, not of requests. Minute
//! buckets cannot come from an hourly rollup: they read the raw table (indexed by project and
//! time), which is fine for the short ranges minute buckets are asked for.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;

use anyhow::Context;
use rusqlite::{Connection, params};

use super::UsageRecord;
use super::store::{ApiKey, ModelBucket, Store, Totals, Unit};
use super::time::{HOUR_US, MINUTE_US, bucket_start};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS usage_records (
    request_id TEXT NOT NULL,
    time_us INTEGER NOT NULL,
    project TEXT NOT NULL,
    api_key_id TEXT,
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
    estimated INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS usage_records_by_project_time ON usage_records (project, time_us);
CREATE TABLE IF NOT EXISTS usage_hourly (
    project TEXT NOT NULL,
    hour_us INTEGER NOT NULL,
    user_id TEXT NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cost_micros INTEGER NOT NULL,
    requests INTEGER NOT NULL,
    PRIMARY KEY (project, hour_us, user_id, provider, model)
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
";

const KEY_COLUMNS: &str = "id, project, name, key_hash, prefix, created_us, revoked_us";

fn key_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<ApiKey> {
    Ok(ApiKey {
        id: row.get(0)?,
        project: row.get(1)?,
        name: row.get(2)?,
        hash: row.get(3)?,
        prefix: row.get(4)?,
        created_us: row.get(5)?,
        revoked_us: row.get(6)?,
    })
}

pub struct SqliteStore {
    conn: Mutex<Connection>,
}

impl SqliteStore {
    /// Opens (creating if needed) the database file at `path`.
    pub fn open(path: &Path) -> anyhow::Result<Self> {
        let conn = Connection::open(path)
            .with_context(|| format!("cannot open the ledger database {}", path.display()))?;
        conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;")?;
        Self::init(conn)
    }

    /// A database in memory, gone when the store is dropped.
    pub fn in_memory() -> anyhow::Result<Self> {
        Self::init(Connection::open_in_memory()?)
    }

    fn init(conn: Connection) -> anyhow::Result<Self> {
        conn.execute_batch(SCHEMA)
            .context("cannot create the ledger tables")?;
        Ok(Self {
            conn: Mutex::new(conn),
        })
    }

    fn conn(&self) -> anyhow::Result<std::sync::MutexGuard<'_, Connection>> {
        self.conn
            .lock()
            .map_err(|_| anyhow::anyhow!("the ledger connection is poisoned"))
    }
}

/// `[start, end)` in µs.
type Span = (i64, i64);

/// The range split into whole hours `[a, b)` (read from the rollup) and the partial hours at its
/// edges (read from the raw table). `None` for the hours when the range holds no whole hour.
fn split(start: i64, end: i64) -> (Option<Span>, Vec<Span>) {
    let a = start.div_euclid(HOUR_US) * HOUR_US
        + if start.rem_euclid(HOUR_US) == 0 {
            0
        } else {
            HOUR_US
        };
    let b = end.div_euclid(HOUR_US) * HOUR_US;
    if a >= b {
        return (None, vec![(start, end)]);
    }
    let edges = [(start, a), (b, end)]
        .into_iter()
        .filter(|(s, e)| s < e)
        .collect();
    (Some((a, b)), edges)
}

fn sums(row: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<Totals> {
    Ok(Totals {
        input_tokens: row.get::<_, Option<i64>>(first)?.unwrap_or(0).max(0) as u64,
        output_tokens: row.get::<_, Option<i64>>(first + 1)?.unwrap_or(0).max(0) as u64,
        cost_micros: row.get::<_, Option<i64>>(first + 2)?.unwrap_or(0),
        requests: row.get::<_, Option<i64>>(first + 3)?.unwrap_or(0).max(0) as u64,
    })
}

impl Store for SqliteStore {
    fn write(&self, records: &[UsageRecord]) -> anyhow::Result<()> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        {
            let mut insert = tx.prepare_cached(
                "INSERT INTO usage_records (request_id, time_us, project, api_key_id, user_id,
                    user_name, user_tags, provider, model, operation, input_tokens, output_tokens,
                    cached_input_tokens, cost_micros, latency_us, status, error_type, estimated)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
            )?;
            let mut rollup = tx.prepare_cached(
                "INSERT INTO usage_hourly (project, hour_us, user_id, provider, model,
                    input_tokens, output_tokens, cost_micros, requests)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 1)
                 ON CONFLICT (project, hour_us, user_id, provider, model) DO UPDATE SET
                    input_tokens = input_tokens + excluded.input_tokens,
                    output_tokens = output_tokens + excluded.output_tokens,
                    cost_micros = cost_micros + excluded.cost_micros,
                    requests = requests + 1",
            )?;
            for r in records {
                let tags = serde_json::to_string(&r.user_tags)?;
                let input = i64::try_from(r.input_tokens)?;
                let output = i64::try_from(r.output_tokens)?;
                insert.execute(params![
                    r.request_id,
                    r.time_us,
                    r.project,
                    r.api_key_id,
                    r.user_id,
                    r.user_name,
                    tags,
                    r.provider,
                    r.model,
                    r.operation,
                    input,
                    output,
                    i64::try_from(r.cached_input_tokens)?,
                    r.cost_micros,
                    r.latency_us,
                    r.status,
                    r.error_type,
                    r.estimated,
                ])?;
                rollup.execute(params![
                    r.project,
                    bucket_start(r.time_us, Unit::Hour),
                    r.user_id.as_deref().unwrap_or(""),
                    r.provider.as_deref().unwrap_or(""),
                    r.model.as_deref().unwrap_or(""),
                    input,
                    output,
                    r.cost_micros.unwrap_or(0),
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    fn total(&self, project: &str, start_us: i64, end_us: i64) -> anyhow::Result<Totals> {
        let conn = self.conn()?;
        let (hours, edges) = split(start_us, end_us);
        let mut totals = Totals::default();
        if let Some((a, b)) = hours {
            let mut stmt = conn.prepare_cached(
                "SELECT SUM(input_tokens), SUM(output_tokens), SUM(cost_micros), SUM(requests)
                 FROM usage_hourly WHERE project = ?1 AND hour_us >= ?2 AND hour_us < ?3",
            )?;
            totals.add(stmt.query_row(params![project, a, b], |row| sums(row, 0))?);
        }
        let mut stmt = conn.prepare_cached(
            "SELECT SUM(input_tokens), SUM(output_tokens), SUM(cost_micros), COUNT(*)
             FROM usage_records WHERE project = ?1 AND time_us >= ?2 AND time_us < ?3",
        )?;
        for (s, e) in edges {
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
    ) -> anyhow::Result<Vec<ModelBucket>> {
        let conn = self.conn()?;
        let (hours, edges) = match unit {
            Unit::Minute => (None, vec![(start_us, end_us)]),
            _ => split(start_us, end_us),
        };
        // Raw rows are grouped by minute or hour here, then folded into `unit` buckets below.
        let grain = if unit == Unit::Minute {
            MINUTE_US
        } else {
            HOUR_US
        };
        let mut buckets: BTreeMap<(i64, String, String), Totals> = BTreeMap::new();
        let mut add = |at: i64, provider: String, model: String, totals: Totals| {
            buckets
                .entry((bucket_start(at, unit), provider, model))
                .or_default()
                .add(totals);
        };
        if let Some((a, b)) = hours {
            let mut stmt = conn.prepare_cached(
                "SELECT hour_us, provider, model,
                    SUM(input_tokens), SUM(output_tokens), SUM(cost_micros), SUM(requests)
                 FROM usage_hourly
                 WHERE project = ?1 AND hour_us >= ?2 AND hour_us < ?3 AND model <> ''
                 GROUP BY hour_us, provider, model",
            )?;
            let rows = stmt.query_map(params![project, a, b], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, sums(row, 3)?))
            })?;
            for row in rows {
                let (at, provider, model, totals) = row?;
                add(at, provider, model, totals);
            }
        }
        let mut stmt = conn.prepare_cached(
            "SELECT (time_us / ?4) * ?4 AS grain, provider, model,
                SUM(input_tokens), SUM(output_tokens), SUM(COALESCE(cost_micros, 0)), COUNT(*)
             FROM usage_records
             WHERE project = ?1 AND time_us >= ?2 AND time_us < ?3 AND model IS NOT NULL
             GROUP BY grain, provider, model",
        )?;
        for (s, e) in edges {
            let rows = stmt.query_map(params![project, s, e, grain], |row| {
                Ok((
                    row.get(0)?,
                    row.get::<_, Option<String>>(1)?.unwrap_or_default(),
                    row.get(2)?,
                    sums(row, 3)?,
                ))
            })?;
            for row in rows {
                let (at, provider, model, totals) = row?;
                add(at, provider, model, totals);
            }
        }
        Ok(buckets
            .into_iter()
            .map(|((bucket_us, provider, model), totals)| ModelBucket {
                bucket_us,
                provider,
                model,
                totals,
            })
            .collect())
    }

    fn count(&self) -> anyhow::Result<u64> {
        let conn = self.conn()?;
        let n: i64 = conn.query_row("SELECT COUNT(*) FROM usage_records", [], |row| row.get(0))?;
        Ok(n.max(0) as u64)
    }

    fn insert_key(&self, key: &ApiKey) -> anyhow::Result<()> {
        let conn = self.conn()?;
        conn.execute(
            &format!("INSERT INTO api_keys ({KEY_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"),
            params![
                key.id,
                key.project,
                key.name,
                key.hash,
                key.prefix,
                key.created_us,
                key.revoked_us
            ],
        )?;
        Ok(())
    }

    fn keys(&self, project: Option<&str>) -> anyhow::Result<Vec<ApiKey>> {
        let conn = self.conn()?;
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

    fn key_by_hash(&self, hash: &str) -> anyhow::Result<Option<ApiKey>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {KEY_COLUMNS} FROM api_keys WHERE key_hash = ?1"
        ))?;
        let mut rows = stmt.query_map(params![hash], key_row)?;
        Ok(rows.next().transpose()?)
    }

    fn record(&self, request_id: &str) -> anyhow::Result<Option<UsageRecord>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached(
            "SELECT request_id, time_us, project, api_key_id, user_id, user_name, user_tags,
                provider, model, operation, input_tokens, output_tokens, cached_input_tokens,
                cost_micros, latency_us, status, error_type, estimated
             FROM usage_records WHERE request_id = ?1 ORDER BY rowid DESC LIMIT 1",
        )?;
        let mut rows = stmt.query(params![request_id])?;
        let Some(row) = rows.next()? else {
            return Ok(None);
        };
        let count = |i: usize| -> anyhow::Result<u64> { Ok(u64::try_from(row.get::<_, i64>(i)?)?) };
        let tags: String = row.get(6)?;
        Ok(Some(UsageRecord {
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
        }))
    }
}
