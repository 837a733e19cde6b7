//! The embedded SQLite store, on the schema [`super::store`] describes.
//!
//! Queries read whole hours from a rollup and only the partial hours at the edges of the range
//! from the raw table, so their cost grows with the number of hours, not of requests. Unfiltered
//! questions read `usage_hourly_models` (one row per hour and model, however many users);
//! questions about some users read `usage_daily_users` for whole days (the unit they are
//! answered in by default) and `usage_hourly_users` for whole hours, both through primary keys
//! that start with the user.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

use anyhow::Context;
use rusqlite::{Connection, params};

use super::UsageRecord;
use super::rollup::{self, Buckets, NO_USER, UserKeys, UserSeen};
use super::store::{ApiKey, ModelBucket, Store, Totals, Unit, UserFilter};

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
    estimated INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS usage_records_by_project_time ON usage_records (project, time_us);
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
    PRIMARY KEY (project, hour_us, provider, model)
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
    PRIMARY KEY (project, user_key, hour_us, provider, model)
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
    PRIMARY KEY (project, user_key, day_us, provider, model)
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

/// Key lists longer than this are queried in chunks (SQLite caps the parameters of a statement).
const KEYS_PER_QUERY: usize = 500;

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
    users: Mutex<UserKeys>,
}

impl SqliteStore {
    /// Opens (creating if needed) the database file at `path`.
    pub fn open(path: &Path) -> anyhow::Result<Self> {
        let conn = Connection::open(path)
            .with_context(|| format!("cannot open the ledger database {}", path.display()))?;
        // A batch touches one rollup row per user in each per-user rollup, spread over their
        // B-trees: with SQLite's 2 MiB default cache, a thousand active users thrash it.
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA cache_size = -65536;",
        )?;
        Self::init(conn)
    }

    /// A database in memory, gone when the store is dropped.
    pub fn in_memory() -> anyhow::Result<Self> {
        Self::init(Connection::open_in_memory()?)
    }

    fn init(conn: Connection) -> anyhow::Result<Self> {
        // The first development schema had no `user_key`: its records cannot be filtered by
        // user, nor its rollups read by the queries below. Say so rather than fail on a column.
        let has_records: bool = conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = 'usage_records')",
            [],
            |row| row.get(0),
        )?;
        if has_records {
            let columns: i64 = conn.query_row(
                "SELECT COUNT(*) FROM pragma_table_info('usage_records') WHERE name = 'user_key'",
                [],
                |row| row.get(0),
            )?;
            anyhow::ensure!(
                columns == 1,
                "this ledger database was written by an earlier development version of \
                 wasmgate (no usage_records.user_key): move it away to start a new one"
            );
        }
        conn.execute_batch(SCHEMA)
            .context("cannot create the ledger tables")?;
        Ok(Self {
            conn: Mutex::new(conn),
            users: Mutex::new(UserKeys::default()),
        })
    }

    fn conn(&self) -> anyhow::Result<std::sync::MutexGuard<'_, Connection>> {
        self.conn
            .lock()
            .map_err(|_| anyhow::anyhow!("the ledger connection is poisoned"))
    }
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
    fn write(&self, records: &[UsageRecord]) -> anyhow::Result<()> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        let (user_keys, fresh) = self.user_keys(&tx, records)?;
        {
            let mut insert = tx.prepare_cached(
                "INSERT INTO usage_records (request_id, time_us, project, api_key_id, user_key,
                    user_id, user_name, user_tags, provider, model, operation, input_tokens,
                    output_tokens, cached_input_tokens, cost_micros, latency_us, status,
                    error_type, estimated)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
                    ?17, ?18, ?19)",
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
                ])?;
            }
            let rollups = rollup::rollups(records, &user_keys)?;
            let mut models = tx.prepare_cached(
                "INSERT INTO usage_hourly_models (project, hour_us, provider, model,
                    input_tokens, output_tokens, cost_micros, requests)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                 ON CONFLICT (project, hour_us, provider, model) DO UPDATE SET
                    input_tokens = input_tokens + excluded.input_tokens,
                    output_tokens = output_tokens + excluded.output_tokens,
                    cost_micros = cost_micros + excluded.cost_micros,
                    requests = requests + excluded.requests",
            )?;
            for ((project, hour, provider, model), s) in &rollups.models {
                models.execute(params![
                    project,
                    hour,
                    provider,
                    model,
                    s.input_tokens,
                    s.output_tokens,
                    s.cost_micros,
                    s.requests
                ])?;
            }
            for (table, time, rows) in [
                ("usage_hourly_users", "hour_us", &rollups.users),
                ("usage_daily_users", "day_us", &rollups.user_days),
            ] {
                let mut users = tx.prepare_cached(&format!(
                    "INSERT INTO {table} (project, user_key, {time}, provider, model,
                        input_tokens, output_tokens, cost_micros, requests)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                     ON CONFLICT (project, user_key, {time}, provider, model) DO UPDATE SET
                        input_tokens = input_tokens + excluded.input_tokens,
                        output_tokens = output_tokens + excluded.output_tokens,
                        cost_micros = cost_micros + excluded.cost_micros,
                        requests = requests + excluded.requests"
                ))?;
                for ((project, user, at, provider, model), s) in rows {
                    users.execute(params![
                        project,
                        user,
                        at,
                        provider,
                        model,
                        s.input_tokens,
                        s.output_tokens,
                        s.cost_micros,
                        s.requests
                    ])?;
                }
            }
        }
        tx.commit()?;
        self.users
            .lock()
            .map_err(|_| anyhow::anyhow!("the ledger user cache is poisoned"))?
            .extend(fresh);
        Ok(())
    }

    fn total(&self, project: &str, start_us: i64, end_us: i64) -> anyhow::Result<Totals> {
        let conn = self.conn()?;
        let plan = rollup::plan(start_us, end_us, None, false);
        let mut totals = Totals::default();
        for (a, b) in plan.hours {
            let mut stmt = conn.prepare_cached(
                "SELECT SUM(input_tokens), SUM(output_tokens), SUM(cost_micros), SUM(requests)
                 FROM usage_hourly_models WHERE project = ?1 AND hour_us >= ?2 AND hour_us < ?3",
            )?;
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
        let conn = self.conn()?;
        let mut buckets = Buckets::new(unit);
        // Chunks of user keys to sum over (`None`: every record, from the per-model rollup).
        let chunks: Vec<Option<&[i64]>>;
        let users;
        if filter.is_empty() {
            chunks = vec![None];
        } else {
            users = Self::matching_users(&conn, project, filter)?;
            chunks = users.chunks(KEYS_PER_QUERY).map(Some).collect();
        }
        let plan = rollup::plan(start_us, end_us, Some(unit), !filter.is_empty());
        for keys in chunks {
            let user_clause = match keys {
                None => String::new(),
                Some(keys) => format!("AND user_key IN ({})", placeholders(keys.len())),
            };
            let mut values: Vec<rusqlite::types::Value> = vec![project.to_owned().into()];
            values.extend(keys.unwrap_or_default().iter().map(|&k| k.into()));
            let rollups = plan
                .days
                .iter()
                .map(|&span| ("usage_daily_users", "day_us", span))
                .chain(plan.hours.iter().map(|&span| match keys {
                    None => ("usage_hourly_models", "hour_us", span),
                    Some(_) => ("usage_hourly_users", "hour_us", span),
                }));
            for (table, time, (a, b)) in rollups {
                let mut stmt = conn.prepare_cached(&format!(
                    "SELECT {time}, provider, model,
                        SUM(input_tokens), SUM(output_tokens), SUM(cost_micros), SUM(requests)
                     FROM {table}
                     WHERE project = ? {user_clause} AND {time} >= ? AND {time} < ?
                        AND model <> ''
                     GROUP BY {time}, provider, model"
                ))?;
                let mut at = values.clone();
                at.extend([a.into(), b.into()]);
                let rows = stmt.query_map(rusqlite::params_from_iter(at), |row| {
                    Ok((row.get(0)?, row.get(1)?, row.get(2)?, sums(row, 3)?))
                })?;
                for row in rows {
                    let (start, provider, model, totals) = row?;
                    buckets.add(start, provider, model, totals);
                }
            }
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT (time_us / ?) * ? AS grain, provider, model,
                    SUM(input_tokens), SUM(output_tokens), SUM(COALESCE(cost_micros, 0)),
                    COUNT(*)
                 FROM usage_records
                 WHERE project = ? {user_clause} AND time_us >= ? AND time_us < ?
                    AND model IS NOT NULL
                 GROUP BY grain, provider, model"
            ))?;
            let grain = rollup::grain(unit);
            for &(s, e) in &plan.raw {
                let mut at: Vec<rusqlite::types::Value> = vec![grain.into(), grain.into()];
                at.extend(values.iter().cloned());
                at.extend([s.into(), e.into()]);
                let rows = stmt.query_map(rusqlite::params_from_iter(at), |row| {
                    Ok((
                        row.get(0)?,
                        row.get::<_, Option<String>>(1)?.unwrap_or_default(),
                        row.get(2)?,
                        sums(row, 3)?,
                    ))
                })?;
                for row in rows {
                    let (at, provider, model, totals) = row?;
                    buckets.add(at, provider, model, totals);
                }
            }
        }
        Ok(buckets.into_vec())
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
