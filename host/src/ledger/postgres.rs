//! The PostgreSQL store (`ledger: { url: postgres://user:password@host:port/db }`), for
//! several replicas sharing one ledger, on the schema [`super::store`] describes.
//!
//! It uses the synchronous `postgres` client: the [`Store`] trait is called on blocking threads,
//! where a client's own small runtime may block. Connections (see `connect.rs`) are opened lazily
//! and again after the server went away, so the gateway starts while the database is down and
//! the ledger's writer simply retries (records wait in its bounded queue). The batch writer has a
//! connection of its own, and queries take one from a small pool, so analytics never wait behind
//! a batch.
//!
//! A batch is a handful of statements whatever its size: the records go in one `INSERT ...
//! SELECT FROM UNNEST(arrays)`, and each rollup gets one UPSERT of rows already summed over the
//! batch, in key order (see [`rollup::Rollups`]).
//!
//! The URL's password never appears in an error or a log line: messages show the URL with
//! `***` for it, and every error from the client is scrubbed of it.
//! `sslmode` in the URL makes every connection TLS, the server always verified (see `connect.rs`).

use std::sync::{LazyLock, Mutex, MutexGuard};

use postgres::{Client, Row, Transaction};

mod connect;
mod durations;
mod error_chain;
mod schema;

use durations::write_durations;

use connect::Connections;
pub use connect::redact_url;

use super::columns::{self, Derived, record_row};
use super::histogram::Durations;
use super::record::{UsageRecord, UserFilter};
use super::requests::{self, Flavor, Param, RequestLog, RequestQuery};
use super::rollup::{self, ADD_SUMS, Buckets, Rollup, RollupSpan, UserKeys};
use super::sql::{self, Sql, SqlStore};
use super::stats::{self, Figures, GroupRow, Grouping, Part, StatsSource};
use super::store::{BatchId, UsageStore};
use super::time::Unit;
use super::totals::{ModelBucket, Totals};
use super::values::{self, Value};

pub struct PostgresStore {
    conn: Connections,
    users: Mutex<UserKeys>,
}

impl PostgresStore {
    /// Reads `url` (`postgres://` or `postgresql://`); connects on first use, not here.
    pub fn open(url: &str) -> anyhow::Result<Self> {
        Ok(Self {
            conn: Connections::open(url)?,
            users: Mutex::new(UserKeys::default()),
        })
    }

    fn lock<'a, T>(&self, mutex: &'a Mutex<T>) -> anyhow::Result<MutexGuard<'a, T>> {
        mutex
            .lock()
            .map_err(|_| anyhow::anyhow!("a ledger lock is poisoned"))
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
        let (user_keys, fresh) = {
            let known = self.lock(&self.users)?;
            sql::user_keys(&mut Pg(&mut tx), &known, records)?
        };
        insert_records(&mut tx, records, &user_keys)?;
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
}

/// Input and output tokens, cost, requests, cache hits and savings, from column `first` on.
fn sums(row: &Row, first: usize) -> Totals {
    Totals {
        cache_hits: u64::try_from(row.get::<_, Option<i64>>(first + 4).unwrap_or(0)).unwrap_or(0),
        saved_cost_micros: row.get::<_, Option<i64>>(first + 5).unwrap_or(0),
        ..rollup::totals(
            row.get(first),
            row.get(first + 1),
            row.get(first + 2),
            row.get(first + 3),
        )
    }
}

impl UsageStore for PostgresStore {
    fn write_once(&self, batch: &BatchId, records: &[UsageRecord]) -> anyhow::Result<bool> {
        if records.is_empty() {
            return Ok(false);
        }
        self.conn
            .write(|client| self.write_on(client, batch, records))
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
        self.conn.read(|client| {
            let users = if filter.is_empty() {
                None
            } else {
                let keys = sql::matching_users(&mut Pg(client), project, filter)?;
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
                                    cost_micros, requests, cache_hits, saved_cost_micros
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
                                    SUM(r.requests)::BIGINT, SUM(r.cache_hits)::BIGINT,
                                    SUM(r.saved_cost_micros)::BIGINT
                                 FROM UNNEST($2::BIGINT[], $3::BIGINT[]) AS p(at, k)
                                 CROSS JOIN LATERAL (
                                    SELECT {time}, provider, model, input_tokens, output_tokens,
                                        cost_micros, requests, cache_hits, saved_cost_micros
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
                            COALESCE(SUM(cost_micros), 0)::BIGINT, COUNT(*),
                            SUM(CAST(cache_hit AS INTEGER))::BIGINT,
                            COALESCE(SUM(saved_cost_micros), 0)::BIGINT
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
        self.read_sql(sql::count)
    }
}

impl RequestLog for PostgresStore {
    fn record(&self, request_id: &str) -> anyhow::Result<Option<UsageRecord>> {
        self.conn.read(|client| {
            let row = client.query_opt(
                &format!(
                    "SELECT {} FROM usage_records WHERE request_id = $1
                     ORDER BY time_us DESC LIMIT 1",
                    columns::read_list()
                ),
                &[&request_id],
            )?;
            row.as_ref().map(|row| record_row(row)).transpose()
        })
    }

    fn requests(&self, query: &RequestQuery) -> anyhow::Result<Vec<UsageRecord>> {
        self.conn.read(|client| {
            let user_keys = if query.users.is_empty() {
                None
            } else {
                let keys = sql::matching_users(&mut Pg(client), &query.project, &query.users)?;
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
            rows.iter().map(|row| record_row(row)).collect()
        })
    }

    fn project_record(
        &self,
        project: &str,
        request_id: &str,
    ) -> anyhow::Result<Option<UsageRecord>> {
        self.conn.read(|client| {
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
                    columns::read_list()
                ),
                &[&request_id, &project],
            )?;
            row.as_ref().map(|row| record_row(row)).transpose()
        })
    }
}

impl StatsSource for PostgresStore {
    fn stats_groups(
        &self,
        project: &str,
        part: Part,
        grouping: Grouping,
    ) -> anyhow::Result<Vec<GroupRow>> {
        self.conn.read(|client| {
            let sql = stats::group_sql(grouping, part.source, Flavor::Postgres);
            let rows = client.query(&sql, &[&project, &part.start_us, &part.end_us])?;
            rows.iter()
                .map(|row| {
                    let mut sums = [None; stats::FIGURES];
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
        self.conn.read(|client| {
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

/// Inserts `records` in one statement: each column's values of the batch as one array,
/// `UNNEST`ed into rows.
fn insert_records(
    tx: &mut Transaction<'_>,
    records: &[UsageRecord],
    user_keys: &[i64],
) -> anyhow::Result<()> {
    let tags = records
        .iter()
        .map(|r| serde_json::to_string(&r.user_tags))
        .collect::<Result<Vec<_>, _>>()?;
    let rows = records
        .iter()
        .zip(user_keys)
        .zip(&tags)
        .map(|((r, &user_key), tags)| columns::insert_values(r, Derived { user_key, tags }))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut arrays: Vec<Box<dyn postgres::types::ToSql + Sync + '_>> = Vec::new();
    for (i, declared) in columns::COLUMNS.iter().enumerate() {
        let name = declared.name;
        let column = rows.iter().map(|row| row[i]);
        let wrong = || anyhow::anyhow!("usage_records.{name}: a value of another type");
        arrays.push(match declared.kind {
            columns::Type::Text => Box::new(
                column
                    .map(|v| match v {
                        Value::Text(t) => Ok(t),
                        _ => Err(wrong()),
                    })
                    .collect::<anyhow::Result<Vec<_>>>()?,
            ),
            columns::Type::BigInt => Box::new(
                column
                    .map(|v| match v {
                        Value::Int(n) => Ok(n),
                        _ => Err(wrong()),
                    })
                    .collect::<anyhow::Result<Vec<_>>>()?,
            ),
            columns::Type::Integer => Box::new(
                column
                    .map(|v| match v {
                        Value::Int(n) => Ok(n.map(i32::try_from).transpose()?),
                        _ => Err(wrong()),
                    })
                    .collect::<anyhow::Result<Vec<_>>>()?,
            ),
            columns::Type::Boolean => Box::new(
                column
                    .map(|v| match v {
                        Value::Bool(b) => Ok(b),
                        _ => Err(wrong()),
                    })
                    .collect::<anyhow::Result<Vec<_>>>()?,
            ),
        });
    }
    let params: Vec<&(dyn postgres::types::ToSql + Sync)> =
        arrays.iter().map(|a| &**a as _).collect();
    tx.execute(insert_sql(), &params)?;
    Ok(())
}

/// The insert of [`insert_records`], built once per process: one array per column, each cast
/// to its type's array.
fn insert_sql() -> &'static str {
    static SQL: LazyLock<String> = LazyLock::new(|| {
        let casts = columns::COLUMNS
            .iter()
            .enumerate()
            .map(|(i, column)| format!("${}::{}", i + 1, column.kind.array()))
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "INSERT INTO usage_records ({}) SELECT * FROM UNNEST({casts})",
            columns::insert_list()
        )
    });
    &SQL
}

impl SqlStore for PostgresStore {
    fn write_sql<T>(&self, f: impl FnOnce(&mut dyn Sql) -> anyhow::Result<T>) -> anyhow::Result<T> {
        // Keys and responses are written on the pool: a batch's connection is the writer's.
        self.read_sql(f)
    }

    fn read_sql<T>(&self, f: impl FnOnce(&mut dyn Sql) -> anyhow::Result<T>) -> anyhow::Result<T> {
        self.conn.read(|client| f(&mut Pg(client)))
    }
}

/// A client, or a transaction, running [`sql`]'s statements.
struct Pg<'a, C>(&'a mut C);

impl<C: postgres::GenericClient> Sql for Pg<'_, C> {
    fn execute(&mut self, sql: &str, params: &[Value<'_>]) -> anyhow::Result<u64> {
        let params: Vec<&(dyn postgres::types::ToSql + Sync)> =
            params.iter().map(|p| p as _).collect();
        Ok(self.0.execute(sql, &params)?)
    }

    fn query(
        &mut self,
        sql: &str,
        params: &[Value<'_>],
        each: &mut dyn FnMut(&dyn values::Row) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let params: Vec<&(dyn postgres::types::ToSql + Sync)> =
            params.iter().map(|p| p as _).collect();
        for row in self.0.query(sql, &params)? {
            each(&row)?;
        }
        Ok(())
    }
}

impl values::Row for Row {
    fn text(&self, i: usize) -> anyhow::Result<Option<String>> {
        Ok(self.try_get(i)?)
    }

    fn int(&self, i: usize) -> anyhow::Result<Option<i64>> {
        use postgres::types::Type;
        let kind = self.columns().get(i).map(|c| c.type_().clone());
        Ok(match kind {
            Some(Type::INT4) => self.try_get::<_, Option<i32>>(i)?.map(i64::from),
            Some(Type::INT2) => self.try_get::<_, Option<i16>>(i)?.map(i64::from),
            Some(Type::BOOL) => self.try_get::<_, Option<bool>>(i)?.map(i64::from),
            _ => self.try_get(i)?,
        })
    }
}

impl postgres::types::ToSql for Value<'_> {
    fn to_sql(
        &self,
        ty: &postgres::types::Type,
        out: &mut bytes::BytesMut,
    ) -> Result<postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match *self {
            Value::Text(text) => text.to_sql(ty, out),
            // The ledger's integer columns are BIGINT, but for a status or a count of records.
            Value::Int(n) if *ty == postgres::types::Type::INT4 => {
                n.map(i32::try_from).transpose()?.to_sql(ty, out)
            }
            Value::Int(n) => n.to_sql(ty, out),
            Value::Bool(b) => b.to_sql(ty, out),
        }
    }

    fn accepts(ty: &postgres::types::Type) -> bool {
        <&str as postgres::types::ToSql>::accepts(ty)
            || <i64 as postgres::types::ToSql>::accepts(ty)
            || <i32 as postgres::types::ToSql>::accepts(ty)
            || <bool as postgres::types::ToSql>::accepts(ty)
    }

    postgres::types::to_sql_checked!();
}
