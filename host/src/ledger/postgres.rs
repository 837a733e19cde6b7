//! The PostgreSQL store (`ledger: { url: postgres://user:password@host:port/db }`), for
//! several replicas sharing one ledger, on the schema [`super::store`] describes.
//!
//! It uses the synchronous `postgres` client: the [`Store`] trait is called on blocking threads,
//! where a client's own small runtime may block. Connections are opened lazily and again after
//! the server went away, so the gateway starts while the database is down and the ledger's
//! writer simply retries (records wait in its bounded queue). The batch writer has a connection
//! of its own, and queries take one from a small pool, so analytics never wait behind a batch.
//!
//! A batch is a handful of statements whatever its size: the records go in one `INSERT ...
//! SELECT FROM UNNEST(arrays)`, and each rollup gets one UPSERT of rows already summed over the
//! batch, in key order (see [`rollup::Rollups`]).
//!
//! The URL's password never appears in an error or a log line: messages show the URL with
//! `***` for it, and every error from the client is scrubbed of it.
//!
//! **TLS.** `sslmode=require` (or libpq's `verify-ca` / `verify-full`) in the URL makes every
//! connection TLS, and the server's certificate is always verified, host name included: against
//! the system's roots, and the PEM file `sslrootcert=` names (for a private CA). A server that
//! cannot be verified is refused: there is no "encrypted but unverified" mode. Without `sslmode`
//! (or with `disable`, `allow`, `prefer`) connections are plain TCP.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use postgres::{Client, NoTls, Row, Transaction};
use tokio_postgres_rustls::MakeRustlsConnect;

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
    time_us BIGINT NOT NULL,
    project TEXT NOT NULL,
    api_key_id TEXT,
    user_key BIGINT NOT NULL,
    user_id TEXT,
    user_name TEXT,
    user_tags TEXT NOT NULL,
    provider TEXT,
    model TEXT,
    operation TEXT NOT NULL,
    input_tokens BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    cached_input_tokens BIGINT NOT NULL,
    cost_micros BIGINT,
    latency_us BIGINT NOT NULL,
    status INTEGER NOT NULL,
    error_type TEXT,
    estimated BOOLEAN NOT NULL,
    ttft_us BIGINT,
    reasoning_tokens BIGINT NOT NULL DEFAULT 0,
    cache_write_tokens BIGINT NOT NULL DEFAULT 0
);
-- Added after the first release: older databases get the columns, empty (or 0) for their
-- records.
ALTER TABLE usage_records ADD COLUMN IF NOT EXISTS ttft_us BIGINT;
ALTER TABLE usage_records ADD COLUMN IF NOT EXISTS reasoning_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_records ADD COLUMN IF NOT EXISTS cache_write_tokens BIGINT NOT NULL DEFAULT 0;
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
    user_key BIGSERIAL PRIMARY KEY,
    project TEXT NOT NULL,
    user_id TEXT NOT NULL,
    user_name TEXT NOT NULL,
    user_tags TEXT NOT NULL,
    UNIQUE (project, user_id, user_name, user_tags)
);
CREATE TABLE IF NOT EXISTS usage_hourly_models (
    project TEXT NOT NULL,
    hour_us BIGINT NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    input_tokens BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    cost_micros BIGINT NOT NULL,
    requests BIGINT NOT NULL,
    errors BIGINT NOT NULL DEFAULT 0,
    cached_input_tokens BIGINT NOT NULL DEFAULT 0,
    latency_us BIGINT NOT NULL DEFAULT 0,
    ttft_us BIGINT NOT NULL DEFAULT 0,
    ttft_count BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (project, hour_us, provider, model)
);
CREATE TABLE IF NOT EXISTS usage_daily_models (
    project TEXT NOT NULL,
    day_us BIGINT NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    input_tokens BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    cost_micros BIGINT NOT NULL,
    requests BIGINT NOT NULL,
    errors BIGINT NOT NULL DEFAULT 0,
    cached_input_tokens BIGINT NOT NULL DEFAULT 0,
    latency_us BIGINT NOT NULL DEFAULT 0,
    ttft_us BIGINT NOT NULL DEFAULT 0,
    ttft_count BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (project, day_us, provider, model)
);
CREATE TABLE IF NOT EXISTS usage_hourly_users (
    project TEXT NOT NULL,
    user_key BIGINT NOT NULL,
    hour_us BIGINT NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    input_tokens BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    cost_micros BIGINT NOT NULL,
    requests BIGINT NOT NULL,
    errors BIGINT NOT NULL DEFAULT 0,
    cached_input_tokens BIGINT NOT NULL DEFAULT 0,
    latency_us BIGINT NOT NULL DEFAULT 0,
    ttft_us BIGINT NOT NULL DEFAULT 0,
    ttft_count BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (project, hour_us, user_key, provider, model)
);
CREATE TABLE IF NOT EXISTS usage_daily_users (
    project TEXT NOT NULL,
    user_key BIGINT NOT NULL,
    day_us BIGINT NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    input_tokens BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    cost_micros BIGINT NOT NULL,
    requests BIGINT NOT NULL,
    errors BIGINT NOT NULL DEFAULT 0,
    cached_input_tokens BIGINT NOT NULL DEFAULT 0,
    latency_us BIGINT NOT NULL DEFAULT 0,
    ttft_us BIGINT NOT NULL DEFAULT 0,
    ttft_count BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (project, day_us, user_key, provider, model)
);
-- Added after the first release: the console's sums (older databases get them, filled from the
-- records when first opened), and the duration histograms.
ALTER TABLE usage_hourly_models ADD COLUMN IF NOT EXISTS errors BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_hourly_models ADD COLUMN IF NOT EXISTS cached_input_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_hourly_models ADD COLUMN IF NOT EXISTS latency_us BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_hourly_models ADD COLUMN IF NOT EXISTS ttft_us BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_hourly_models ADD COLUMN IF NOT EXISTS ttft_count BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_daily_models ADD COLUMN IF NOT EXISTS errors BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_daily_models ADD COLUMN IF NOT EXISTS cached_input_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_daily_models ADD COLUMN IF NOT EXISTS latency_us BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_daily_models ADD COLUMN IF NOT EXISTS ttft_us BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_daily_models ADD COLUMN IF NOT EXISTS ttft_count BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_hourly_users ADD COLUMN IF NOT EXISTS errors BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_hourly_users ADD COLUMN IF NOT EXISTS cached_input_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_hourly_users ADD COLUMN IF NOT EXISTS latency_us BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_hourly_users ADD COLUMN IF NOT EXISTS ttft_us BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_hourly_users ADD COLUMN IF NOT EXISTS ttft_count BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_daily_users ADD COLUMN IF NOT EXISTS errors BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_daily_users ADD COLUMN IF NOT EXISTS cached_input_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_daily_users ADD COLUMN IF NOT EXISTS latency_us BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_daily_users ADD COLUMN IF NOT EXISTS ttft_us BIGINT NOT NULL DEFAULT 0;
ALTER TABLE usage_daily_users ADD COLUMN IF NOT EXISTS ttft_count BIGINT NOT NULL DEFAULT 0;
CREATE TABLE IF NOT EXISTS usage_hourly_latency (
    project TEXT NOT NULL,
    hour_us BIGINT NOT NULL,
    metric INTEGER NOT NULL,
    bucket INTEGER NOT NULL,
    records BIGINT NOT NULL,
    PRIMARY KEY (project, hour_us, metric, bucket)
);
CREATE TABLE IF NOT EXISTS usage_daily_latency (
    project TEXT NOT NULL,
    day_us BIGINT NOT NULL,
    metric INTEGER NOT NULL,
    bucket INTEGER NOT NULL,
    records BIGINT NOT NULL,
    PRIMARY KEY (project, day_us, metric, bucket)
);
CREATE TABLE IF NOT EXISTS ledger_batches (
    batch_id TEXT PRIMARY KEY,
    records INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS api_keys (
    id TEXT PRIMARY KEY,
    project TEXT NOT NULL,
    name TEXT,
    key_hash TEXT NOT NULL UNIQUE,
    prefix TEXT NOT NULL,
    created_us BIGINT NOT NULL,
    revoked_us BIGINT
);
-- Added after the first release: a key's own limits (older databases get them, empty), the
-- index that sums a key's spend, and the credentials of /admin/*.
ALTER TABLE api_keys ADD COLUMN IF NOT EXISTS models TEXT NOT NULL DEFAULT '';
ALTER TABLE api_keys ADD COLUMN IF NOT EXISTS expires_us BIGINT;
ALTER TABLE api_keys ADD COLUMN IF NOT EXISTS rpm BIGINT;
ALTER TABLE api_keys ADD COLUMN IF NOT EXISTS tpm BIGINT;
ALTER TABLE api_keys ADD COLUMN IF NOT EXISTS budget_micros BIGINT;
ALTER TABLE api_keys ADD COLUMN IF NOT EXISTS budget_period TEXT;
CREATE INDEX IF NOT EXISTS usage_records_by_key
    ON usage_records (api_key_id, time_us) WHERE api_key_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS admin_keys (
    id TEXT PRIMARY KEY,
    name TEXT,
    key_hash TEXT NOT NULL UNIQUE,
    prefix TEXT NOT NULL,
    created_us BIGINT NOT NULL,
    revoked_us BIGINT
);
CREATE TABLE IF NOT EXISTS stored_responses (
    project TEXT NOT NULL,
    id TEXT NOT NULL,
    created_us BIGINT NOT NULL,
    previous_id TEXT,
    input_items TEXT NOT NULL,
    response TEXT NOT NULL,
    PRIMARY KEY (project, id)
);
";

/// Serialises `CREATE TABLE IF NOT EXISTS` across replicas starting together (concurrent ones
/// can fail on the catalog's unique index). Any constant will do; this one reads "wasmgate".
const SCHEMA_LOCK: i64 = 0x7761_736d_6761_7465;

/// Query connections open at most; a query past that waits for one to come back.
const MAX_READERS: usize = 4;
/// How long a query waits for a connection before giving up.
const READER_WAIT: Duration = Duration::from_secs(10);

const KEY_COLUMNS: &str = "id, project, name, key_hash, prefix, created_us, revoked_us, \
                           models, expires_us, rpm, tpm, budget_micros, budget_period";

const ADMIN_KEY_COLUMNS: &str = "id, name, key_hash, prefix, created_us, revoked_us";

pub struct PostgresStore {
    config: postgres::Config,
    /// `None`: plain TCP.
    tls: Option<MakeRustlsConnect>,
    /// The URL with `***` for its password, for messages.
    shown: String,
    /// Scrubbed from every error message.
    password: Option<String>,
    writer: Mutex<Option<Client>>,
    readers: Mutex<Readers>,
    returned: Condvar,
    schema_ready: AtomicBool,
    users: Mutex<UserKeys>,
}

/// Idle query connections, and how many are open in all (idle or in use).
#[derive(Default)]
struct Readers {
    idle: Vec<Client>,
    open: usize,
}

impl PostgresStore {
    /// Reads `url` (`postgres://` or `postgresql://`); connects on first use, not here.
    pub fn open(url: &str) -> anyhow::Result<Self> {
        let shown = redact_url(url);
        let (url, tls) = tls_options(url);
        let mut config: postgres::Config = url
            .parse()
            .map_err(|e| anyhow::anyhow!("ledger.url `{shown}`: {e}"))?;
        let tls = match tls.mode.as_deref() {
            None | Some("disable" | "allow" | "prefer") => {
                anyhow::ensure!(
                    tls.root_cert.is_none(),
                    "ledger.url `{shown}`: sslrootcert needs sslmode=require, verify-ca or \
                     verify-full"
                );
                config.ssl_mode(postgres::config::SslMode::Disable);
                None
            }
            Some("require" | "verify-ca" | "verify-full") => {
                config.ssl_mode(postgres::config::SslMode::Require);
                Some(
                    tls_connector(tls.root_cert.as_deref())
                        .map_err(|e| anyhow::anyhow!("ledger.url `{shown}`: {e:#}"))?,
                )
            }
            Some(other) => anyhow::bail!(
                "ledger.url `{shown}`: sslmode `{other}` is not one of disable, allow, prefer, \
                 require, verify-ca, verify-full"
            ),
        };
        // Session settings, added to whatever `options=` the URL gives. The ledger's queries are
        // many small index lookups: JIT compiling one costs more than running it (157 ms of JIT
        // on a 1.2 s user-filtered query, at 10M records). A tag's month is tens of thousands of
        // rollup rows to sum: sorted within the default 4 MB of `work_mem`, they spilled to disk
        // and the sort took a third of the query.
        const SETTINGS: &str = "-c jit=off -c work_mem=64MB";
        let options = match config.get_options() {
            Some(given) => format!("{given} {SETTINGS}"),
            None => SETTINGS.to_owned(),
        };
        config
            .options(&options)
            .application_name("wasmgate")
            .connect_timeout(Duration::from_secs(5))
            // A server that vanished without closing its sockets is noticed in seconds, not
            // after the system's TCP timeout (minutes): the writer can then retry elsewhere.
            .tcp_user_timeout(Duration::from_secs(30))
            .keepalives(true)
            .keepalives_idle(Duration::from_secs(30));
        let password = config
            .get_password()
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .filter(|p| !p.is_empty());
        Ok(Self {
            config,
            tls,
            shown,
            password,
            writer: Mutex::new(None),
            readers: Mutex::new(Readers::default()),
            returned: Condvar::new(),
            schema_ready: AtomicBool::new(false),
            users: Mutex::new(UserKeys::default()),
        })
    }

    /// `error` as a message without the password, naming the database.
    fn scrub(&self, error: impl std::fmt::Display) -> anyhow::Error {
        let mut message = error.to_string();
        if let Some(password) = &self.password {
            message = message.replace(password.as_str(), "***");
        }
        anyhow::anyhow!("ledger database {}: {message}", self.shown)
    }

    fn connect(&self) -> anyhow::Result<Client> {
        let connected = match &self.tls {
            None => self.config.connect(NoTls),
            Some(tls) => self.config.connect(tls.clone()),
        };
        let mut client =
            connected.map_err(|e| self.scrub(format_args!("cannot connect: {}", chain(&e))))?;
        if !self.schema_ready.load(Ordering::Acquire) {
            let mut tx = client.transaction().map_err(|e| self.scrub(chain(&e)))?;
            let needs_backfill = create_schema(&mut tx)
                .map_err(|e| self.scrub(format_args!("cannot create the tables: {}", chain(&e))))?;
            if needs_backfill {
                backfill(&mut tx).map_err(|e| {
                    self.scrub(format_args!(
                        "cannot fill the rollups' new sums from the records: {e:#}"
                    ))
                })?;
            }
            tx.commit()
                .map_err(|e| self.scrub(format_args!("cannot create the tables: {}", chain(&e))))?;
            self.schema_ready.store(true, Ordering::Release);
        }
        Ok(client)
    }

    fn lock<'a, T>(&self, mutex: &'a Mutex<T>) -> anyhow::Result<MutexGuard<'a, T>> {
        mutex
            .lock()
            .map_err(|_| anyhow::anyhow!("a ledger lock is poisoned"))
    }

    /// Runs `query` on a pooled connection, opening one when none is idle and fewer than
    /// [`MAX_READERS`] are open. A connection that broke is dropped, not pooled again.
    fn read<T>(&self, query: impl FnOnce(&mut Client) -> anyhow::Result<T>) -> anyhow::Result<T> {
        let pooled = {
            let mut readers = self.lock(&self.readers)?;
            loop {
                if let Some(client) = readers.idle.pop() {
                    if client.is_closed() {
                        readers.open -= 1;
                        continue;
                    }
                    break Some(client);
                }
                if readers.open < MAX_READERS {
                    readers.open += 1;
                    break None;
                }
                let (guard, wait) = self
                    .returned
                    .wait_timeout(readers, READER_WAIT)
                    .map_err(|_| anyhow::anyhow!("a ledger lock is poisoned"))?;
                readers = guard;
                anyhow::ensure!(
                    !wait.timed_out() || !readers.idle.is_empty() || readers.open < MAX_READERS,
                    "every ledger query connection is busy"
                );
            }
        };
        let mut client = match pooled {
            Some(client) => client,
            None => match self.connect() {
                Ok(client) => client,
                Err(e) => {
                    self.lock(&self.readers)?.open -= 1;
                    self.returned.notify_one();
                    return Err(e);
                }
            },
        };
        let result = query(&mut client).map_err(|e| self.scrub(format_args!("{e:#}")));
        let mut readers = self.lock(&self.readers)?;
        // A client only learns that its server went away when it next talks to it: after any
        // error, a fresh connection is cheaper than finding out which errors left it broken.
        if result.is_err() || client.is_closed() {
            readers.open -= 1;
        } else {
            readers.idle.push(client);
        }
        drop(readers);
        self.returned.notify_one();
        result
    }

    /// The key of every user in `records` (or [`NO_USER`]), inserting the users not seen yet;
    /// also returns the keys looked up here, to remember once the transaction has committed.
    fn user_keys(
        &self,
        tx: &mut Transaction<'_>,
        records: &[UsageRecord],
    ) -> anyhow::Result<(Vec<i64>, HashMap<UserSeen, i64>)> {
        let known = self.lock(&self.users)?;
        let mut fresh = HashMap::new();
        let mut keys = Vec::with_capacity(records.len());
        for r in records {
            let Some(user) = UserSeen::of(r)? else {
                keys.push(NO_USER);
                continue;
            };
            if let Some(key) = known.get(&user).or_else(|| fresh.get(&user).copied()) {
                keys.push(key);
                continue;
            }
            let at: [&(dyn postgres::types::ToSql + Sync); 4] =
                [&user.project, &user.id, &user.name, &user.tags];
            // Another replica may insert the same user concurrently: the insert then waits for
            // its commit and does nothing, and the select sees its row.
            tx.execute(
                "INSERT INTO usage_users (project, user_id, user_name, user_tags)
                 VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                &at,
            )?;
            let key: i64 = tx
                .query_one(
                    "SELECT user_key FROM usage_users
                     WHERE project = $1 AND user_id = $2 AND user_name = $3 AND user_tags = $4",
                    &at,
                )?
                .get(0);
            fresh.insert(user, key);
            keys.push(key);
        }
        Ok((keys, fresh))
    }

    fn write_on(
        &self,
        client: &mut Client,
        batch: &BatchId,
        records: &[UsageRecord],
    ) -> anyhow::Result<bool> {
        let mut tx = client.transaction()?;
        let count = i32::try_from(records.len())?;
        // A replica retrying the same batch concurrently waits here for the first one's commit.
        if tx.execute(
            "INSERT INTO ledger_batches (batch_id, records) VALUES ($1, $2)
             ON CONFLICT (batch_id) DO NOTHING",
            &[&batch.0, &count],
        )? == 0
        {
            return Ok(false);
        }
        tx.execute(
            "DELETE FROM ledger_batches WHERE batch_id < $1",
            &[&BatchId::at(super::time::now_us() - BatchId::KEPT_US)],
        )?;
        let ids: Vec<&str> = records.iter().map(|r| r.request_id.as_str()).collect();
        let rows = tx.query(
            "SELECT request_id, time_us FROM usage_records WHERE request_id = ANY($1)",
            &[&ids],
        )?;
        let rows: Vec<(String, i64)> = rows.iter().map(|row| (row.get(0), row.get(1))).collect();
        let stored = rows.iter().map(|(id, time)| (id.as_str(), *time)).collect();
        let unwritten = super::store::unwritten(records, &stored);
        let records = &*unwritten;
        if records.is_empty() {
            tx.commit()?;
            return Ok(true);
        }
        let (user_keys, fresh) = self.user_keys(&mut tx, records)?;
        let text = |f: fn(&UsageRecord) -> &str| records.iter().map(f).collect::<Vec<_>>();
        let opt = |f: fn(&UsageRecord) -> Option<&str>| records.iter().map(f).collect::<Vec<_>>();
        let int = |f: fn(&UsageRecord) -> u64| {
            records
                .iter()
                .map(|r| i64::try_from(f(r)))
                .collect::<Result<Vec<_>, _>>()
        };
        let tags = records
            .iter()
            .map(|r| serde_json::to_string(&r.user_tags))
            .collect::<Result<Vec<_>, _>>()?;
        tx.execute(
            "INSERT INTO usage_records (request_id, time_us, project, api_key_id, user_key,
                user_id, user_name, user_tags, provider, model, operation, input_tokens,
                output_tokens, cached_input_tokens, cost_micros, latency_us, status, error_type,
                estimated, ttft_us, reasoning_tokens, cache_write_tokens)
             SELECT * FROM UNNEST($1::TEXT[], $2::BIGINT[], $3::TEXT[], $4::TEXT[], $5::BIGINT[],
                $6::TEXT[], $7::TEXT[], $8::TEXT[], $9::TEXT[], $10::TEXT[], $11::TEXT[],
                $12::BIGINT[], $13::BIGINT[], $14::BIGINT[], $15::BIGINT[], $16::BIGINT[],
                $17::INTEGER[], $18::TEXT[], $19::BOOLEAN[], $20::BIGINT[], $21::BIGINT[],
                $22::BIGINT[])",
            &[
                &text(|r| &r.request_id),
                &records.iter().map(|r| r.time_us).collect::<Vec<_>>(),
                &text(|r| &r.project),
                &opt(|r| r.api_key_id.as_deref()),
                &user_keys,
                &opt(|r| r.user_id.as_deref()),
                &opt(|r| r.user_name.as_deref()),
                &tags,
                &opt(|r| r.provider.as_deref()),
                &opt(|r| r.model.as_deref()),
                &text(|r| &r.operation),
                &int(|r| r.input_tokens)?,
                &int(|r| r.output_tokens)?,
                &int(|r| r.cached_input_tokens)?,
                &records.iter().map(|r| r.cost_micros).collect::<Vec<_>>(),
                &records.iter().map(|r| r.latency_us).collect::<Vec<_>>(),
                &records
                    .iter()
                    .map(|r| i32::from(r.status))
                    .collect::<Vec<_>>(),
                &opt(|r| r.error_type.as_deref()),
                &records.iter().map(|r| r.estimated).collect::<Vec<_>>(),
                &records.iter().map(|r| r.ttft_us).collect::<Vec<_>>(),
                &int(|r| r.reasoning_tokens)?,
                &int(|r| r.cache_write_tokens)?,
            ],
        )?;
        let rollups = rollup::rollups(records, &user_keys)?;
        // Rows go in the arrays' order, which is the maps' key order: see `Rollups`.
        let sums = |all: Vec<&rollup::Sums>| -> Vec<Vec<i64>> {
            (0..rollup::SUM_COLUMNS.len())
                .map(|i| all.iter().map(|s| s.columns()[i]).collect())
                .collect()
        };
        let columns = rollup::SUM_COLUMNS.join(", ");
        let arrays = |first: usize| {
            (first..first + rollup::SUM_COLUMNS.len())
                .map(|i| format!("${i}::BIGINT[]"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        for (table, time, rows) in [
            ("usage_hourly_models", "hour_us", &rollups.models),
            ("usage_daily_models", "day_us", &rollups.model_days),
        ] {
            let keys: Vec<_> = rows.keys().collect();
            let sums = sums(rows.values().collect());
            let projects = keys.iter().map(|k| k.0.as_str()).collect::<Vec<_>>();
            let times = keys.iter().map(|k| k.1).collect::<Vec<_>>();
            let providers = keys.iter().map(|k| k.2.as_str()).collect::<Vec<_>>();
            let models = keys.iter().map(|k| k.3.as_str()).collect::<Vec<_>>();
            let mut params: Vec<&(dyn postgres::types::ToSql + Sync)> =
                vec![&projects, &times, &providers, &models];
            params.extend(
                sums.iter()
                    .map(|v| v as &(dyn postgres::types::ToSql + Sync)),
            );
            tx.execute(
                &format!(
                    "INSERT INTO {table} AS h (project, {time}, provider, model, {columns})
                     SELECT * FROM UNNEST($1::TEXT[], $2::BIGINT[], $3::TEXT[], $4::TEXT[], {})
                     ON CONFLICT (project, {time}, provider, model) DO UPDATE SET {ADD_SUMS}",
                    arrays(5)
                ),
                &params,
            )?;
        }
        for (table, time, rows) in [
            ("usage_hourly_users", "hour_us", &rollups.users),
            ("usage_daily_users", "day_us", &rollups.user_days),
        ] {
            if rows.is_empty() {
                continue;
            }
            let keys: Vec<_> = rows.keys().collect();
            let sums = sums(rows.values().collect());
            let projects = keys.iter().map(|k| k.0.as_str()).collect::<Vec<_>>();
            let times = keys.iter().map(|k| k.1).collect::<Vec<_>>();
            let users = keys.iter().map(|k| k.2).collect::<Vec<_>>();
            let providers = keys.iter().map(|k| k.3.as_str()).collect::<Vec<_>>();
            let models = keys.iter().map(|k| k.4.as_str()).collect::<Vec<_>>();
            let mut params: Vec<&(dyn postgres::types::ToSql + Sync)> =
                vec![&projects, &times, &users, &providers, &models];
            params.extend(
                sums.iter()
                    .map(|v| v as &(dyn postgres::types::ToSql + Sync)),
            );
            tx.execute(
                &format!(
                    "INSERT INTO {table} AS h (project, {time}, user_key, provider, model, {columns})
                     SELECT * FROM UNNEST($1::TEXT[], $2::BIGINT[], $3::BIGINT[], $4::TEXT[],
                        $5::TEXT[], {})
                     ON CONFLICT (project, {time}, user_key, provider, model) DO UPDATE SET {ADD_SUMS}",
                    arrays(6)
                ),
                &params,
            )?;
        }
        write_durations(&mut tx, &rollups.durations)?;
        tx.commit()?;
        self.lock(&self.users)?.extend(fresh);
        Ok(true)
    }

    /// The keys of the project's users that `filter` matches.
    fn matching_users(
        client: &mut Client,
        project: &str,
        filter: &UserFilter,
    ) -> anyhow::Result<Vec<i64>> {
        let rows = client.query(
            "SELECT user_key, user_id, user_name, user_tags FROM usage_users
             WHERE project = $1 AND ($2::TEXT IS NULL OR user_id = $2)",
            &[&project, &filter.user_id],
        )?;
        let mut keys = Vec::new();
        for row in rows {
            let tags: Vec<String> = serde_json::from_str(row.get::<_, &str>(3))?;
            if filter.matches(row.get(1), row.get(2), &tags) {
                keys.push(row.get(0));
            }
        }
        Ok(keys)
    }
}

/// Creates what is missing of the schema, under a lock that replicas starting together share;
/// returns whether the rollups predate the console's sums (and must be filled from the records).
fn create_schema(tx: &mut Transaction<'_>) -> Result<bool, postgres::Error> {
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])?;
    let older = tx.query_one(
        "SELECT to_regclass('usage_records') IS NOT NULL
            AND to_regclass('usage_daily_models') IS NULL,
            to_regclass('usage_records') IS NOT NULL AND NOT EXISTS (
                SELECT 1 FROM information_schema.columns
                WHERE table_schema = current_schema() AND table_name = 'usage_hourly_models'
                    AND column_name = 'errors')",
        &[],
    )?;
    tx.batch_execute(SCHEMA)?;
    if older.get::<_, bool>(0) {
        // Added after the first release: sum what the hourly rollup holds.
        tx.batch_execute(&rollup::days_from_hours())?;
    }
    Ok(older.get(1))
}

/// Fills the rollups' [`rollup::STATS_COLUMNS`] and the duration histograms from the records,
/// in the transaction that added them, for a database written before they existed.
fn backfill(tx: &mut Transaction<'_>) -> anyhow::Result<()> {
    for (table, time, step, by_user) in rollup::ROLLUP_TABLES {
        tx.execute(&rollup::backfill_sql(table, time, step, by_user), &[])?;
    }
    // Read through a portal, a chunk at a time, so that memory holds one chunk's counts (the
    // histograms' UPSERTs add), not the whole history's.
    let portal = tx.bind(
        "SELECT project, time_us, latency_us, ttft_us FROM usage_records",
        &[],
    )?;
    let chunk = i32::try_from(rollup::BACKFILL_CHUNK)?;
    loop {
        let rows = tx.query_portal(&portal, chunk)?;
        let mut counts = rollup::DurationCounts::default();
        for row in &rows {
            counts.add(
                row.try_get(0)?,
                row.try_get(1)?,
                row.try_get(2)?,
                row.try_get(3)?,
            );
        }
        write_durations(tx, &counts)?;
        if rows.len() < rollup::BACKFILL_CHUNK {
            return Ok(());
        }
    }
}

/// Adds `counts` to the duration histograms, one UPSERT per table, rows in key order.
fn write_durations(
    tx: &mut Transaction<'_>,
    counts: &rollup::DurationCounts,
) -> anyhow::Result<()> {
    let [hourly, daily] = rollup::DURATION_TABLES;
    for (table, time, rows) in [
        (hourly, "hour_us", &counts.hours),
        (daily, "day_us", &counts.days),
    ] {
        if rows.is_empty() {
            continue;
        }
        let projects: Vec<&str> = rows.keys().map(|k| k.0.as_str()).collect();
        let times: Vec<i64> = rows.keys().map(|k| k.1).collect();
        let metrics: Vec<i32> = rows.keys().map(|k| k.2).collect();
        let buckets: Vec<i32> = rows.keys().map(|k| k.3).collect();
        let counts: Vec<i64> = rows.values().copied().collect();
        tx.execute(
            &format!(
                "INSERT INTO {table} AS h (project, {time}, metric, bucket, records)
                 SELECT * FROM UNNEST($1::TEXT[], $2::BIGINT[], $3::INTEGER[], $4::INTEGER[],
                    $5::BIGINT[])
                 ON CONFLICT (project, {time}, metric, bucket)
                 DO UPDATE SET records = h.records + excluded.records"
            ),
            &[&projects, &times, &metrics, &buckets, &counts],
        )?;
    }
    Ok(())
}

impl Drop for PostgresStore {
    fn drop(&mut self) {
        let writer = self.writer.get_mut().ok().and_then(Option::take);
        let idle = self
            .readers
            .get_mut()
            .map(|r| std::mem::take(&mut r.idle))
            .unwrap_or_default();
        if writer.is_none() && idle.is_empty() {
            return;
        }
        // A client says goodbye to the server with a blocking call on its own runtime, which
        // panics when the store is dropped inside an async context (a test, the end of
        // `serve`): close the connections on a thread of their own.
        if let Ok(closer) = std::thread::Builder::new()
            .name("ledger-close".to_owned())
            .spawn(move || drop((writer, idle)))
        {
            let _ = closer.join();
        }
    }
}

/// The TLS settings of a URL, which the client's own parser does not take (it knows neither
/// `sslrootcert` nor libpq's `verify-*` modes).
#[derive(Debug, Default, PartialEq, Eq)]
struct TlsOptions {
    mode: Option<String>,
    root_cert: Option<String>,
}

/// `url` without its `sslmode` and `sslrootcert` parameters, and their values.
fn tls_options(url: &str) -> (String, TlsOptions) {
    let Some((head, query)) = url.split_once('?') else {
        return (url.to_owned(), TlsOptions::default());
    };
    let mut options = TlsOptions::default();
    let mut kept = Vec::new();
    for pair in query.split('&') {
        match pair.split_once('=') {
            Some(("sslmode", mode)) => options.mode = Some(mode.to_owned()),
            Some(("sslrootcert", path)) => options.root_cert = Some(percent_decode(path)),
            _ => kept.push(pair),
        }
    }
    let url = if kept.is_empty() {
        head.to_owned()
    } else {
        format!("{head}?{}", kept.join("&"))
    };
    (url, options)
}

/// `%XX` escapes decoded (a path in a URL may have them); anything malformed is kept as is.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A TLS connector trusting the system's roots and those in the PEM file `root_cert`.
fn tls_connector(root_cert: Option<&str>) -> anyhow::Result<MakeRustlsConnect> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;

    let mut roots = rustls::RootCertStore::empty();
    // Unreadable system certificates are skipped: a private CA may be all that is needed.
    let native = rustls_native_certs::load_native_certs();
    roots.add_parsable_certificates(native.certs);
    if let Some(path) = root_cert {
        let mut added = 0;
        for cert in CertificateDer::pem_file_iter(path)
            .map_err(|e| anyhow::anyhow!("sslrootcert {path}: {e}"))?
        {
            let cert = cert.map_err(|e| anyhow::anyhow!("sslrootcert {path}: {e}"))?;
            roots
                .add(cert)
                .map_err(|e| anyhow::anyhow!("sslrootcert {path}: {e}"))?;
            added += 1;
        }
        anyhow::ensure!(added > 0, "sslrootcert {path}: no certificate in it");
    }
    anyhow::ensure!(
        !roots.is_empty(),
        "no trusted certificates: the system has none, and no sslrootcert= was given"
    );
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

/// The message of a client error with its causes (its `Display` alone says only "db error").
fn chain(error: &postgres::Error) -> String {
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

/// `url` with `***` for its password, whether in the user-info or a `password=` parameter.
pub fn redact_url(url: &str) -> String {
    let mut shown = url.to_owned();
    if let Some(scheme_end) = shown.find("://") {
        let rest_start = scheme_end + 3;
        let authority_end = shown[rest_start..]
            .find(['/', '?'])
            .map_or(shown.len(), |i| rest_start + i);
        if let Some(at) = shown[rest_start..authority_end].rfind('@') {
            let userinfo = rest_start..rest_start + at;
            if let Some(colon) = shown[userinfo.clone()].find(':') {
                shown.replace_range(userinfo.start + colon + 1..userinfo.end, "***");
            }
        }
    }
    if let Some(query_start) = shown.find('?') {
        let (head, query) = shown.split_at(query_start + 1);
        let query: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some(("password", _)) => "password=***".to_owned(),
                _ => pair.to_owned(),
            })
            .collect();
        shown = format!("{head}{}", query.join("&"));
    }
    shown
}

fn sums(row: &Row, first: usize) -> Totals {
    rollup::totals(
        row.get(first),
        row.get(first + 1),
        row.get(first + 2),
        row.get(first + 3),
    )
}

/// A record from a row of [`requests::COLUMNS`].
fn record_row(row: &Row) -> anyhow::Result<UsageRecord> {
    let count = |i: usize| u64::try_from(row.get::<_, i64>(i));
    let tags: String = row.get(6);
    let status: i32 = row.get(15);
    Ok(UsageRecord {
        request_id: row.get(0),
        time_us: row.get(1),
        project: row.get(2),
        api_key_id: row.get(3),
        user_id: row.get(4),
        user_name: row.get(5),
        user_tags: serde_json::from_str(&tags)?,
        provider: row.get(7),
        model: row.get(8),
        operation: row.get(9),
        input_tokens: count(10)?,
        output_tokens: count(11)?,
        cached_input_tokens: count(12)?,
        cost_micros: row.get(13),
        latency_us: row.get(14),
        status: u16::try_from(status)?,
        error_type: row.get(16),
        estimated: row.get(17),
        ttft_us: row.get(18),
        reasoning_tokens: count(19)?,
        cache_write_tokens: count(20)?,
    })
}

fn key_row(row: &Row) -> ApiKey {
    let models: String = row.get(7);
    let period: Option<String> = row.get(12);
    ApiKey {
        id: row.get(0),
        project: row.get(1),
        name: row.get(2),
        hash: row.get(3),
        prefix: row.get(4),
        created_us: row.get(5),
        revoked_us: row.get(6),
        limits: limits_from_columns(
            &models,
            row.get(8),
            row.get(9),
            row.get(10),
            row.get(11),
            period.as_deref(),
        ),
    }
}

fn admin_key_row(row: &Row) -> AdminKey {
    AdminKey {
        id: row.get(0),
        name: row.get(1),
        hash: row.get(2),
        prefix: row.get(3),
        created_us: row.get(4),
        revoked_us: row.get(5),
    }
}

impl Store for PostgresStore {
    fn write_once(&self, batch: &BatchId, records: &[UsageRecord]) -> anyhow::Result<bool> {
        if records.is_empty() {
            return Ok(false);
        }
        let mut writer = self.lock(&self.writer)?;
        let client = match writer.take() {
            Some(client) if !client.is_closed() => writer.insert(client),
            _ => writer.insert(self.connect()?),
        };
        let result = self
            .write_on(client, batch, records)
            .map_err(|e| self.scrub(format_args!("{e:#}")));
        if result.is_err() {
            // The server may have gone away (see `read`): the next try opens a new connection.
            *writer = None;
        }
        result
    }

    fn total(&self, project: &str, start_us: i64, end_us: i64) -> anyhow::Result<Totals> {
        self.read(|client| {
            let plan = rollup::plan(start_us, end_us, None);
            let mut totals = Totals::default();
            for RollupSpan {
                table,
                time,
                span: (a, b),
                ..
            } in plan.rollups(Rollup::Models)
            {
                let row = client.query_one(
                    &format!(
                        "SELECT SUM(input_tokens)::BIGINT, SUM(output_tokens)::BIGINT,
                            SUM(cost_micros)::BIGINT, SUM(requests)::BIGINT
                         FROM {table} WHERE project = $1 AND {time} >= $2 AND {time} < $3"
                    ),
                    &[&project, &a, &b],
                )?;
                totals.add(sums(&row, 0));
            }
            for (s, e) in plan.raw {
                let row = client.query_one(
                    "SELECT SUM(input_tokens)::BIGINT, SUM(output_tokens)::BIGINT,
                        SUM(cost_micros)::BIGINT, COUNT(*)
                     FROM usage_records WHERE project = $1 AND time_us >= $2 AND time_us < $3",
                    &[&project, &s, &e],
                )?;
                totals.add(sums(&row, 0));
            }
            Ok(totals)
        })
    }

    fn models(
        &self,
        project: &str,
        start_us: i64,
        end_us: i64,
        unit: Unit,
        filter: &UserFilter,
    ) -> anyhow::Result<Vec<ModelBucket>> {
        self.read(|client| {
            let users = if filter.is_empty() {
                None
            } else {
                let keys = Self::matching_users(client, project, filter)?;
                if keys.is_empty() {
                    return Ok(Vec::new());
                }
                Some(keys)
            };
            let plan = rollup::plan(start_us, end_us, Some(unit));
            let mut buckets = Buckets::new(unit);
            let mut add = |rows: Vec<Row>| {
                for row in rows {
                    buckets.add(row.get(0), row.get(1), row.get(2), sums(&row, 3));
                }
            };
            match &users {
                None => {
                    // One row per (bucket, provider, model) already: nothing to group (and
                    // PostgreSQL's grouping, summing in `numeric`, cost more than the read).
                    for RollupSpan {
                        table,
                        time,
                        span: (a, b),
                        ..
                    } in plan.rollups(Rollup::Models)
                    {
                        add(client.query(
                            &format!(
                                "SELECT {time}, provider, model, input_tokens, output_tokens,
                                    cost_micros, requests
                                 FROM {table}
                                 WHERE project = $1 AND {time} >= $2 AND {time} < $3
                                    AND model <> ''"
                            ),
                            &[&project, &a, &b],
                        )?);
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
                        // One primary-key lookup per (bucket, user), over the buckets between
                        // the first and the last that hold data: see the SQLite store.
                        // Each end is one index entry. (`MIN`/`MAX` may be planned as a scan
                        // of the whole range when statistics lag: 50 ms at 10M records.)
                        let edge = |order: &str| {
                            format!(
                                "SELECT {time} FROM {table}
                                 WHERE project = $1 AND {time} >= $2 AND {time} < $3
                                 ORDER BY {time} {order} LIMIT 1"
                            )
                        };
                        let row = client.query_one(
                            &format!("SELECT ({}), ({})", edge("ASC"), edge("DESC")),
                            &[&project, &a, &b],
                        )?;
                        let (Some(first), Some(last)) =
                            (row.get::<_, Option<i64>>(0), row.get::<_, Option<i64>>(1))
                        else {
                            continue;
                        };
                        // Every (bucket, user) pair is one primary-key lookup: the subquery
                        // (kept apart from the join by `OFFSET 0`) can only be run per pair.
                        // Left to choose, the planner, misled by statistics that lag a table
                        // growing fast, read every row of the project instead: 0.2 to 0.7 s
                        // rather than a few ms at 2M records.
                        let times = rollup::steps(first, last + step, step);
                        let (at, k): (Vec<i64>, Vec<i64>) = times
                            .iter()
                            .flat_map(|&t| keys.iter().map(move |&k| (t, k)))
                            .unzip();
                        add(client.query(
                            &format!(
                                "SELECT r.{time}, r.provider, r.model, SUM(r.input_tokens)::BIGINT,
                                    SUM(r.output_tokens)::BIGINT, SUM(r.cost_micros)::BIGINT,
                                    SUM(r.requests)::BIGINT
                                 FROM UNNEST($2::BIGINT[], $3::BIGINT[]) AS p(at, k)
                                 CROSS JOIN LATERAL (
                                    SELECT {time}, provider, model, input_tokens, output_tokens,
                                        cost_micros, requests
                                    FROM {table}
                                    WHERE project = $1 AND {time} = p.at AND user_key = p.k
                                        AND model <> ''
                                    OFFSET 0
                                 ) AS r
                                 GROUP BY r.{time}, r.provider, r.model"
                            ),
                            &[&project, &at, &k],
                        )?);
                    }
                }
            }
            let user_clause = match users {
                None => "$4::BIGINT[] IS NULL",
                Some(_) => "user_key = ANY($4)",
            };
            let grain = rollup::grain(unit);
            for (s, e) in plan.raw {
                let rows = client.query(
                    &format!(
                        "SELECT (time_us / $5) * $5 AS grain, COALESCE(provider, ''), model,
                            SUM(input_tokens)::BIGINT, SUM(output_tokens)::BIGINT,
                            COALESCE(SUM(cost_micros), 0)::BIGINT, COUNT(*)
                         FROM usage_records
                         WHERE project = $1 AND time_us >= $2 AND time_us < $3 AND {user_clause}
                            AND model IS NOT NULL
                         GROUP BY grain, provider, model"
                    ),
                    &[&project, &s, &e, &users, &grain],
                )?;
                add(rows);
            }
            Ok(buckets.into_vec())
        })
    }

    fn count(&self) -> anyhow::Result<u64> {
        self.read(|client| {
            let n: i64 = client
                .query_one("SELECT COUNT(*) FROM usage_records", &[])?
                .get(0);
            Ok(u64::try_from(n).unwrap_or(0))
        })
    }

    fn insert_key(&self, key: &ApiKey) -> anyhow::Result<()> {
        let (models, expires_us, rpm, tpm, budget_micros, budget_period) =
            limits_to_columns(&key.limits);
        self.read(|client| {
            client.execute(
                &format!(
                    "INSERT INTO api_keys ({KEY_COLUMNS})
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"
                ),
                &[
                    &key.id,
                    &key.project,
                    &key.name,
                    &key.hash,
                    &key.prefix,
                    &key.created_us,
                    &key.revoked_us,
                    &models,
                    &expires_us,
                    &rpm,
                    &tpm,
                    &budget_micros,
                    &budget_period,
                ],
            )?;
            Ok(())
        })
    }

    fn key(&self, id: &str) -> anyhow::Result<Option<ApiKey>> {
        self.read(|client| {
            let row = client.query_opt(
                &format!("SELECT {KEY_COLUMNS} FROM api_keys WHERE id = $1"),
                &[&id],
            )?;
            Ok(row.as_ref().map(key_row))
        })
    }

    fn update_key(&self, id: &str, name: Option<&str>, limits: &KeyLimits) -> anyhow::Result<bool> {
        let (models, expires_us, rpm, tpm, budget_micros, budget_period) =
            limits_to_columns(limits);
        self.read(|client| {
            let changed = client.execute(
                "UPDATE api_keys SET name = $2, models = $3, expires_us = $4, rpm = $5, tpm = $6,
                     budget_micros = $7, budget_period = $8
                 WHERE id = $1 AND revoked_us IS NULL",
                &[
                    &id,
                    &name,
                    &models,
                    &expires_us,
                    &rpm,
                    &tpm,
                    &budget_micros,
                    &budget_period,
                ],
            )?;
            Ok(changed > 0)
        })
    }

    fn key_spend(&self, key_id: &str, since_us: i64) -> anyhow::Result<i64> {
        self.read(|client| {
            let row = client.query_one(
                "SELECT COALESCE(SUM(cost_micros), 0)::BIGINT FROM usage_records
                 WHERE api_key_id = $1 AND time_us >= $2",
                &[&key_id, &since_us],
            )?;
            Ok(row.try_get(0)?)
        })
    }

    fn insert_admin_key(&self, key: &AdminKey) -> anyhow::Result<()> {
        self.read(|client| {
            client.execute(
                &format!(
                    "INSERT INTO admin_keys ({ADMIN_KEY_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6)"
                ),
                &[
                    &key.id,
                    &key.name,
                    &key.hash,
                    &key.prefix,
                    &key.created_us,
                    &key.revoked_us,
                ],
            )?;
            Ok(())
        })
    }

    fn admin_key_by_hash(&self, hash: &str) -> anyhow::Result<Option<AdminKey>> {
        self.read(|client| {
            let row = client.query_opt(
                &format!("SELECT {ADMIN_KEY_COLUMNS} FROM admin_keys WHERE key_hash = $1"),
                &[&hash],
            )?;
            Ok(row.as_ref().map(admin_key_row))
        })
    }

    fn admin_keys(&self) -> anyhow::Result<Vec<AdminKey>> {
        self.read(|client| {
            let rows = client.query(
                &format!("SELECT {ADMIN_KEY_COLUMNS} FROM admin_keys ORDER BY created_us, id"),
                &[],
            )?;
            Ok(rows.iter().map(admin_key_row).collect())
        })
    }

    fn revoke_admin_key(&self, id: &str, at_us: i64) -> anyhow::Result<bool> {
        self.read(|client| {
            let changed = client.execute(
                "UPDATE admin_keys SET revoked_us = $2 WHERE id = $1 AND revoked_us IS NULL",
                &[&id, &at_us],
            )?;
            Ok(changed > 0)
        })
    }

    fn keys(&self, project: Option<&str>) -> anyhow::Result<Vec<ApiKey>> {
        self.read(|client| {
            let rows = client.query(
                &format!(
                    "SELECT {KEY_COLUMNS} FROM api_keys WHERE $1::TEXT IS NULL OR project = $1
                     ORDER BY created_us, id"
                ),
                &[&project],
            )?;
            Ok(rows.iter().map(key_row).collect())
        })
    }

    fn revoke_key(&self, id: &str, at_us: i64) -> anyhow::Result<bool> {
        self.read(|client| {
            let changed = client.execute(
                "UPDATE api_keys SET revoked_us = $2 WHERE id = $1 AND revoked_us IS NULL",
                &[&id, &at_us],
            )?;
            Ok(changed > 0)
        })
    }

    fn record(&self, request_id: &str) -> anyhow::Result<Option<UsageRecord>> {
        self.read(|client| {
            let row = client.query_opt(
                &format!(
                    "SELECT {} FROM usage_records WHERE request_id = $1
                     ORDER BY time_us DESC LIMIT 1",
                    requests::COLUMNS
                ),
                &[&request_id],
            )?;
            row.as_ref().map(record_row).transpose()
        })
    }

    fn project_record(
        &self,
        project: &str,
        request_id: &str,
    ) -> anyhow::Result<Option<UsageRecord>> {
        self.read(|client| {
            let row = client.query_opt(
                &format!(
                    // Fenced, so that the id's own index is used whatever the statistics
                    // say: with the project in the same WHERE, a planner that believes the
                    // project small (right after a bulk load) walks the project's time index
                    // backwards instead (21 ms at 1M records; a probe is well under 1 ms).
                    "WITH by_id AS MATERIALIZED (
                         SELECT {} FROM usage_records WHERE request_id = $1
                     )
                     SELECT * FROM by_id WHERE project = $2 ORDER BY time_us DESC LIMIT 1",
                    requests::COLUMNS
                ),
                &[&request_id, &project],
            )?;
            row.as_ref().map(record_row).transpose()
        })
    }

    fn requests(&self, query: &RequestQuery) -> anyhow::Result<Vec<UsageRecord>> {
        self.read(|client| {
            let user_keys = if query.users.is_empty() {
                None
            } else {
                let keys = Self::matching_users(client, &query.project, &query.users)?;
                if keys.is_empty() {
                    return Ok(Vec::new());
                }
                Some(keys)
            };
            let (sql, bound) = requests::select(query, user_keys, Flavor::Postgres);
            let values: Vec<Box<dyn postgres::types::ToSql + Sync>> = bound
                .into_iter()
                .map(|p| -> Box<dyn postgres::types::ToSql + Sync> {
                    match p {
                        Param::Text(t) => Box::new(t),
                        Param::Int(i) => Box::new(i),
                        Param::Keys(keys) => Box::new(keys),
                    }
                })
                .collect();
            let refs: Vec<&(dyn postgres::types::ToSql + Sync)> =
                values.iter().map(|v| &**v).collect();
            let rows = client.query(&sql, &refs)?;
            rows.iter().map(record_row).collect()
        })
    }

    fn put_response(&self, r: &StoredResponse) -> anyhow::Result<()> {
        self.read(|client| {
            client.execute(
                "INSERT INTO stored_responses
                 (project, id, created_us, previous_id, input_items, response)
                 VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT (project, id) DO UPDATE SET created_us = EXCLUDED.created_us,
                   previous_id = EXCLUDED.previous_id, input_items = EXCLUDED.input_items,
                   response = EXCLUDED.response",
                &[
                    &r.project,
                    &r.id,
                    &r.created_us,
                    &r.previous_id,
                    &r.input_items,
                    &r.response,
                ],
            )?;
            Ok(())
        })
    }

    fn response(&self, project: &str, id: &str) -> anyhow::Result<Option<StoredResponse>> {
        self.read(|client| {
            let row = client.query_opt(
                "SELECT created_us, previous_id, input_items, response FROM stored_responses
                 WHERE project = $1 AND id = $2",
                &[&project, &id],
            )?;
            Ok(row.map(|row| StoredResponse {
                id: id.to_owned(),
                project: project.to_owned(),
                created_us: row.get(0),
                previous_id: row.get(1),
                input_items: row.get(2),
                response: row.get(3),
            }))
        })
    }

    fn delete_response(&self, project: &str, id: &str) -> anyhow::Result<bool> {
        self.read(|client| {
            let deleted = client.execute(
                "DELETE FROM stored_responses WHERE project = $1 AND id = $2",
                &[&project, &id],
            )?;
            Ok(deleted > 0)
        })
    }

    fn key_by_hash(&self, hash: &str) -> anyhow::Result<Option<ApiKey>> {
        self.read(|client| {
            let row = client.query_opt(
                &format!("SELECT {KEY_COLUMNS} FROM api_keys WHERE key_hash = $1"),
                &[&hash],
            )?;
            Ok(row.as_ref().map(key_row))
        })
    }

    fn stats_groups(
        &self,
        project: &str,
        part: Part,
        grouping: Grouping,
    ) -> anyhow::Result<Vec<GroupRow>> {
        self.read(|client| {
            let sql = stats::group_sql(grouping, part.source, Flavor::Postgres);
            let rows = client.query(&sql, &[&project, &part.start_us, &part.end_us])?;
            rows.iter()
                .map(|row| {
                    let mut sums = [None; 9];
                    for (i, sum) in sums.iter_mut().enumerate() {
                        *sum = row.try_get(3 + i)?;
                    }
                    Ok(GroupRow {
                        bucket_us: row.try_get(0)?,
                        first: row.try_get(1)?,
                        second: row.try_get(2)?,
                        figures: Figures::from_sql(sums),
                    })
                })
                .collect()
        })
    }

    fn stats_durations(&self, project: &str, part: Part) -> anyhow::Result<Durations> {
        self.read(|client| {
            let (sql, shape) = stats::durations_sql(part.source, Flavor::Postgres);
            let rows = client.query(&sql, &[&project, &part.start_us, &part.end_us])?;
            let mut durations = Durations::default();
            for row in &rows {
                let values = match shape {
                    stats::DurationRows::Values => [row.try_get(0)?, row.try_get(1)?, None],
                    stats::DurationRows::Buckets => [
                        row.try_get::<_, Option<i32>>(0)?.map(i64::from),
                        row.try_get::<_, Option<i32>>(1)?.map(i64::from),
                        row.try_get(2)?,
                    ],
                };
                stats::add_duration_row(&mut durations, shape, values);
            }
            Ok(durations)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{TlsOptions, redact_url, tls_options};

    #[test]
    fn tls_settings_are_taken_out_of_the_url() {
        assert_eq!(
            tls_options("postgres://a@db/x?sslmode=verify-full&sslrootcert=/etc/my%20ca.pem"),
            (
                "postgres://a@db/x".to_owned(),
                TlsOptions {
                    mode: Some("verify-full".to_owned()),
                    root_cert: Some("/etc/my ca.pem".to_owned()),
                }
            )
        );
        assert_eq!(
            tls_options("postgres://a@db/x?connect_timeout=3&sslmode=require").0,
            "postgres://a@db/x?connect_timeout=3"
        );
        assert_eq!(
            tls_options("postgres://a@db/x"),
            ("postgres://a@db/x".to_owned(), TlsOptions::default())
        );
    }

    #[test]
    fn urls_are_shown_without_their_password() {
        assert_eq!(
            redact_url("postgres://ada:s3cret@db.example:5432/ledger"),
            "postgres://ada:***@db.example:5432/ledger"
        );
        assert_eq!(
            redact_url("postgres://ada:p@ss@db/ledger?sslmode=disable"),
            "postgres://ada:***@db/ledger?sslmode=disable"
        );
        assert_eq!(
            redact_url("postgresql://db/ledger?user=ada&password=s3cret"),
            "postgresql://db/ledger?user=ada&password=***"
        );
        assert_eq!(redact_url("postgres://ada@db/x"), "postgres://ada@db/x");
    }
}
