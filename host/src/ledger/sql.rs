//! The statements both stores run as they are, written once: the keys and admin keys
//! ([`KeyStore`]), the stored responses ([`ResponseStore`]), and the reading of a record's row.
//!
//! A store lends a connection as a [`Sql`] (run a statement, read its rows through [`Row`]) by
//! implementing [`SqlStore`]; it then has both traits. Only SQL that SQLite and PostgreSQL both
//! take goes here: `CAST(x AS T)`, not `x::T`; `INSERT ... ON CONFLICT ... DO UPDATE`, not
//! `INSERT OR REPLACE`. Placeholders are PostgreSQL's `$1`, `$2`, ..., which the SQLite store
//! reads as its own `?1`, `?2`, ... (SQLite would number `$N` by first appearance). What the two
//! databases do differently (a batch's arrays, the rollups' reads) stays in each store.

use super::keys::{
    AdminKey, ApiKey, KeyLimits, KeyStore, limits_from_columns, limits_to_columns, stored_list,
};
use std::collections::HashMap;

use super::record::{UsageRecord, UserFilter};
use super::responses::{ResponseStore, StoredResponse};
use super::rollup::{self, NO_USER, Rollup, RollupSpan, UserKeys, UserSeen};
use super::totals::Totals;

/// A value bound to a statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value<'a> {
    Text(Option<&'a str>),
    Int(Option<i64>),
    Bool(bool),
}

impl<'a> From<&'a str> for Value<'a> {
    fn from(text: &'a str) -> Self {
        Self::Text(Some(text))
    }
}

impl<'a> From<Option<&'a str>> for Value<'a> {
    fn from(text: Option<&'a str>) -> Self {
        Self::Text(text)
    }
}

impl From<i64> for Value<'_> {
    fn from(n: i64) -> Self {
        Self::Int(Some(n))
    }
}

impl From<Option<i64>> for Value<'_> {
    fn from(n: Option<i64>) -> Self {
        Self::Int(n)
    }
}

/// A row read, by column index: text, or an integer (a boolean reads as 0 or 1).
pub trait Row {
    fn text(&self, i: usize) -> anyhow::Result<Option<String>>;
    fn int(&self, i: usize) -> anyhow::Result<Option<i64>>;
}

/// A connection that runs statements of this module.
pub trait Sql {
    /// Runs `sql`; returns the rows it changed.
    fn execute(&mut self, sql: &str, params: &[Value<'_>]) -> anyhow::Result<u64>;
    /// Runs `sql`, handing each row to `each`.
    fn query(
        &mut self,
        sql: &str,
        params: &[Value<'_>],
        each: &mut dyn FnMut(&dyn Row) -> anyhow::Result<()>,
    ) -> anyhow::Result<()>;
}

/// A store whose connections run this module's statements.
pub trait SqlStore: Send + Sync + 'static {
    /// Runs `f` on a connection that may write.
    fn write_sql<T>(&self, f: impl FnOnce(&mut dyn Sql) -> anyhow::Result<T>) -> anyhow::Result<T>;
    /// Runs `f` on a connection for queries.
    fn read_sql<T>(&self, f: impl FnOnce(&mut dyn Sql) -> anyhow::Result<T>) -> anyhow::Result<T>;
}

/// Every row of `sql`, read by `read`.
fn rows<T>(
    db: &mut dyn Sql,
    sql: &str,
    params: &[Value<'_>],
    read: impl Fn(&dyn Row) -> anyhow::Result<T>,
) -> anyhow::Result<Vec<T>> {
    let mut all = Vec::new();
    db.query(sql, params, &mut |row| {
        all.push(read(row)?);
        Ok(())
    })?;
    Ok(all)
}

/// The first row of `sql`, if any.
fn first<T>(
    db: &mut dyn Sql,
    sql: &str,
    params: &[Value<'_>],
    read: impl Fn(&dyn Row) -> anyhow::Result<T>,
) -> anyhow::Result<Option<T>> {
    Ok(rows(db, sql, params, read)?.into_iter().next())
}

pub(super) fn text(row: &dyn Row, i: usize) -> anyhow::Result<String> {
    row.text(i)?
        .ok_or_else(|| anyhow::anyhow!("column {i} is NULL"))
}

pub(super) fn int(row: &dyn Row, i: usize) -> anyhow::Result<i64> {
    row.int(i)?
        .ok_or_else(|| anyhow::anyhow!("column {i} is NULL"))
}

const KEY_COLUMNS: &str = "id, project, name, key_hash, prefix, created_us, revoked_us, \
                           models, expires_us, rpm, tpm, budget_micros, budget_period, guards, \
                           tools, passthrough";

fn key_row(row: &dyn Row) -> anyhow::Result<ApiKey> {
    let mut key = ApiKey {
        id: text(row, 0)?,
        project: text(row, 1)?,
        name: row.text(2)?,
        hash: text(row, 3)?,
        prefix: text(row, 4)?,
        created_us: int(row, 5)?,
        revoked_us: row.int(6)?,
        limits: limits_from_columns(
            &text(row, 7)?,
            row.int(8)?,
            row.int(9)?,
            row.int(10)?,
            row.int(11)?,
            row.text(12)?.as_deref(),
            &text(row, 13)?,
        ),
    };
    key.limits.tools = stored_list(row.text(14)?.as_deref().unwrap_or_default());
    key.limits.passthrough = stored_list(row.text(15)?.as_deref().unwrap_or_default());
    Ok(key)
}

const ADMIN_KEY_COLUMNS: &str = "id, name, key_hash, prefix, created_us, revoked_us";

fn admin_key_row(row: &dyn Row) -> anyhow::Result<AdminKey> {
    Ok(AdminKey {
        id: text(row, 0)?,
        name: row.text(1)?,
        hash: text(row, 2)?,
        prefix: text(row, 3)?,
        created_us: int(row, 4)?,
        revoked_us: row.int(5)?,
    })
}

/// A key's limits as the values of `models` ... `guards`, in [`KEY_COLUMNS`]' order.
fn limit_values(limits: &KeyLimits) -> (String, [Value<'static>; 4], Option<&'static str>, String) {
    let (models, expires_us, rpm, tpm, budget_micros, budget_period, guards) =
        limits_to_columns(limits);
    (
        models,
        [
            expires_us.into(),
            rpm.into(),
            tpm.into(),
            budget_micros.into(),
        ],
        budget_period,
        guards,
    )
}

impl<S: SqlStore> KeyStore for S {
    fn insert_key(&self, key: &ApiKey) -> anyhow::Result<()> {
        let (models, [expires, rpm, tpm, budget], period, guards) = limit_values(&key.limits);
        self.write_sql(|db| {
            db.execute(
                &format!(
                    "INSERT INTO api_keys ({KEY_COLUMNS})
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)"
                ),
                &[
                    key.id.as_str().into(),
                    key.project.as_str().into(),
                    key.name.as_deref().into(),
                    key.hash.as_str().into(),
                    key.prefix.as_str().into(),
                    key.created_us.into(),
                    key.revoked_us.into(),
                    models.as_str().into(),
                    expires,
                    rpm,
                    tpm,
                    budget,
                    period.into(),
                    guards.as_str().into(),
                    key.limits.tools.join("\n").as_str().into(),
                    key.limits.passthrough.join("\n").as_str().into(),
                ],
            )
            .map(drop)
        })
    }

    fn keys(&self, project: Option<&str>) -> anyhow::Result<Vec<ApiKey>> {
        self.read_sql(|db| {
            rows(
                db,
                &format!(
                    "SELECT {KEY_COLUMNS} FROM api_keys
                     WHERE CAST($1 AS TEXT) IS NULL OR project = $1 ORDER BY created_us, id"
                ),
                &[project.into()],
                key_row,
            )
        })
    }

    fn revoke_key(&self, id: &str, at_us: i64) -> anyhow::Result<bool> {
        self.write_sql(|db| {
            Ok(db.execute(
                "UPDATE api_keys SET revoked_us = $2 WHERE id = $1 AND revoked_us IS NULL",
                &[id.into(), at_us.into()],
            )? > 0)
        })
    }

    fn key_by_hash(&self, hash: &str) -> anyhow::Result<Option<ApiKey>> {
        self.read_sql(|db| {
            first(
                db,
                &format!("SELECT {KEY_COLUMNS} FROM api_keys WHERE key_hash = $1"),
                &[hash.into()],
                key_row,
            )
        })
    }

    fn key(&self, id: &str) -> anyhow::Result<Option<ApiKey>> {
        self.read_sql(|db| {
            first(
                db,
                &format!("SELECT {KEY_COLUMNS} FROM api_keys WHERE id = $1"),
                &[id.into()],
                key_row,
            )
        })
    }

    fn update_key(&self, id: &str, name: Option<&str>, limits: &KeyLimits) -> anyhow::Result<bool> {
        let (models, [expires, rpm, tpm, budget], period, guards) = limit_values(limits);
        self.write_sql(|db| {
            Ok(db.execute(
                "UPDATE api_keys SET name = $2, models = $3, expires_us = $4, rpm = $5, tpm = $6,
                     budget_micros = $7, budget_period = $8, guards = $9, tools = $10,
                     passthrough = $11
                 WHERE id = $1 AND revoked_us IS NULL",
                &[
                    id.into(),
                    name.into(),
                    models.as_str().into(),
                    expires,
                    rpm,
                    tpm,
                    budget,
                    period.into(),
                    guards.as_str().into(),
                    limits.tools.join("\n").as_str().into(),
                    limits.passthrough.join("\n").as_str().into(),
                ],
            )? > 0)
        })
    }

    fn key_spend(&self, key_id: &str, since_us: i64) -> anyhow::Result<i64> {
        self.read_sql(|db| {
            // PostgreSQL sums BIGINTs as NUMERIC: the cast brings the sum back.
            first(
                db,
                "SELECT CAST(COALESCE(SUM(cost_micros), 0) AS BIGINT) FROM usage_records
                 WHERE api_key_id = $1 AND time_us >= $2",
                &[key_id.into(), since_us.into()],
                |row| int(row, 0),
            )
            .map(Option::unwrap_or_default)
        })
    }

    fn insert_admin_key(&self, key: &AdminKey) -> anyhow::Result<()> {
        self.write_sql(|db| {
            db.execute(
                &format!(
                    "INSERT INTO admin_keys ({ADMIN_KEY_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6)"
                ),
                &[
                    key.id.as_str().into(),
                    key.name.as_deref().into(),
                    key.hash.as_str().into(),
                    key.prefix.as_str().into(),
                    key.created_us.into(),
                    key.revoked_us.into(),
                ],
            )
            .map(drop)
        })
    }

    fn admin_key_by_hash(&self, hash: &str) -> anyhow::Result<Option<AdminKey>> {
        self.read_sql(|db| {
            first(
                db,
                &format!("SELECT {ADMIN_KEY_COLUMNS} FROM admin_keys WHERE key_hash = $1"),
                &[hash.into()],
                admin_key_row,
            )
        })
    }

    fn admin_keys(&self) -> anyhow::Result<Vec<AdminKey>> {
        self.read_sql(|db| {
            rows(
                db,
                &format!("SELECT {ADMIN_KEY_COLUMNS} FROM admin_keys ORDER BY created_us, id"),
                &[],
                admin_key_row,
            )
        })
    }

    fn revoke_admin_key(&self, id: &str, at_us: i64) -> anyhow::Result<bool> {
        self.write_sql(|db| {
            Ok(db.execute(
                "UPDATE admin_keys SET revoked_us = $2 WHERE id = $1 AND revoked_us IS NULL",
                &[id.into(), at_us.into()],
            )? > 0)
        })
    }
}

impl<S: SqlStore> ResponseStore for S {
    fn put_response(&self, r: &StoredResponse) -> anyhow::Result<()> {
        self.write_sql(|db| {
            db.execute(
                "INSERT INTO stored_responses
                     (project, id, created_us, previous_id, input_items, response)
                 VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT (project, id) DO UPDATE SET created_us = excluded.created_us,
                     previous_id = excluded.previous_id, input_items = excluded.input_items,
                     response = excluded.response",
                &[
                    r.project.as_str().into(),
                    r.id.as_str().into(),
                    r.created_us.into(),
                    r.previous_id.as_deref().into(),
                    r.input_items.as_str().into(),
                    r.response.as_str().into(),
                ],
            )
            .map(drop)
        })
    }

    fn response(&self, project: &str, id: &str) -> anyhow::Result<Option<StoredResponse>> {
        self.read_sql(|db| {
            first(
                db,
                "SELECT created_us, previous_id, input_items, response FROM stored_responses
                 WHERE project = $1 AND id = $2",
                &[project.into(), id.into()],
                |row| {
                    Ok(StoredResponse {
                        id: id.to_owned(),
                        project: project.to_owned(),
                        created_us: int(row, 0)?,
                        previous_id: row.text(1)?,
                        input_items: text(row, 2)?,
                        response: text(row, 3)?,
                    })
                },
            )
        })
    }

    fn delete_response(&self, project: &str, id: &str) -> anyhow::Result<bool> {
        self.write_sql(|db| {
            Ok(db.execute(
                "DELETE FROM stored_responses WHERE project = $1 AND id = $2",
                &[project.into(), id.into()],
            )? > 0)
        })
    }
}

/// A record from a row of [`super::requests::COLUMNS`].
pub fn record_row(row: &dyn Row) -> anyhow::Result<UsageRecord> {
    let count = |i: usize| -> anyhow::Result<u64> { Ok(u64::try_from(int(row, i)?)?) };
    Ok(UsageRecord {
        request_id: text(row, 0)?,
        time_us: int(row, 1)?,
        project: text(row, 2)?,
        api_key_id: row.text(3)?,
        user_id: row.text(4)?,
        user_name: row.text(5)?,
        user_tags: serde_json::from_str(&text(row, 6)?)?,
        provider: row.text(7)?,
        model: row.text(8)?,
        operation: text(row, 9)?,
        input_tokens: count(10)?,
        output_tokens: count(11)?,
        cached_input_tokens: count(12)?,
        cost_micros: row.int(13)?,
        latency_us: int(row, 14)?,
        status: u16::try_from(int(row, 15)?)?,
        error_type: row.text(16)?,
        estimated: int(row, 17)? != 0,
        ttft_us: row.int(18)?,
        reasoning_tokens: count(19)?,
        cache_write_tokens: count(20)?,
        guards: row.text(21)?,
        cache_hit: int(row, 22)? != 0,
        saved_cost_micros: row.int(23)?,
        bytes_in: row.int(24)?,
        bytes_out: row.int(25)?,
        batch_id: row.text(26)?,
        audio_ms: count(27)?,
        characters: count(28)?,
        search_units: count(29)?,
    })
}

/// A column's type in PostgreSQL (SQLite takes any value in any column).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Type {
    Text,
    BigInt,
    Integer,
    Boolean,
}

impl Type {
    /// The PostgreSQL name of an array of it (a batch's values of one column).
    pub fn array(self) -> &'static str {
        match self {
            Self::Text => "TEXT[]",
            Self::BigInt => "BIGINT[]",
            Self::Integer => "INTEGER[]",
            Self::Boolean => "BOOLEAN[]",
        }
    }
}

/// The columns of `usage_records` a batch writes, in the order of [`insert_values`]. A new
/// column is a line here and one there (and one in [`super::requests::COLUMNS`] and
/// [`record_row`] to read it back).
pub const INSERT_COLUMNS: [(&str, Type); 31] = [
    ("request_id", Type::Text),
    ("time_us", Type::BigInt),
    ("project", Type::Text),
    ("api_key_id", Type::Text),
    ("user_key", Type::BigInt),
    ("user_id", Type::Text),
    ("user_name", Type::Text),
    ("user_tags", Type::Text),
    ("provider", Type::Text),
    ("model", Type::Text),
    ("operation", Type::Text),
    ("input_tokens", Type::BigInt),
    ("output_tokens", Type::BigInt),
    ("cached_input_tokens", Type::BigInt),
    ("cost_micros", Type::BigInt),
    ("latency_us", Type::BigInt),
    ("status", Type::Integer),
    ("error_type", Type::Text),
    ("estimated", Type::Boolean),
    ("ttft_us", Type::BigInt),
    ("reasoning_tokens", Type::BigInt),
    ("cache_write_tokens", Type::BigInt),
    ("guards", Type::Text),
    ("cache_hit", Type::Boolean),
    ("saved_cost_micros", Type::BigInt),
    ("bytes_in", Type::BigInt),
    ("bytes_out", Type::BigInt),
    ("batch_id", Type::Text),
    ("audio_ms", Type::BigInt),
    ("characters", Type::BigInt),
    ("search_units", Type::BigInt),
];

/// One record's values for [`INSERT_COLUMNS`]: `user_key` names its user in `usage_users`,
/// `tags` is its tags as JSON.
pub fn insert_values<'a>(
    r: &'a UsageRecord,
    user_key: i64,
    tags: &'a str,
) -> anyhow::Result<[Value<'a>; 31]> {
    let count = |n: u64| -> anyhow::Result<Value<'a>> { Ok(i64::try_from(n)?.into()) };
    Ok([
        r.request_id.as_str().into(),
        r.time_us.into(),
        r.project.as_str().into(),
        r.api_key_id.as_deref().into(),
        user_key.into(),
        r.user_id.as_deref().into(),
        r.user_name.as_deref().into(),
        tags.into(),
        r.provider.as_deref().into(),
        r.model.as_deref().into(),
        r.operation.as_str().into(),
        count(r.input_tokens)?,
        count(r.output_tokens)?,
        count(r.cached_input_tokens)?,
        r.cost_micros.into(),
        r.latency_us.into(),
        i64::from(r.status).into(),
        r.error_type.as_deref().into(),
        Value::Bool(r.estimated),
        r.ttft_us.into(),
        count(r.reasoning_tokens)?,
        count(r.cache_write_tokens)?,
        r.guards.as_deref().into(),
        Value::Bool(r.cache_hit),
        r.saved_cost_micros.into(),
        r.bytes_in.into(),
        r.bytes_out.into(),
        r.batch_id.as_deref().into(),
        count(r.audio_ms)?,
        count(r.characters)?,
        count(r.search_units)?,
    ])
}

/// The names of [`INSERT_COLUMNS`], joined for a statement.
pub fn insert_column_names() -> String {
    INSERT_COLUMNS.map(|(name, _)| name).join(", ")
}

/// The key of every user in `records` (or [`NO_USER`]), inserting the users neither `known` nor
/// seen earlier in the batch; also returns the keys looked up here, to remember once the
/// batch's transaction has committed.
pub fn user_keys(
    db: &mut dyn Sql,
    known: &UserKeys,
    records: &[UsageRecord],
) -> anyhow::Result<(Vec<i64>, HashMap<UserSeen, i64>)> {
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
        let at = [
            user.project.as_str().into(),
            user.id.as_str().into(),
            user.name.as_str().into(),
            user.tags.as_str().into(),
        ];
        // Another replica may insert the same user concurrently (on PostgreSQL): the insert
        // then waits for its commit and does nothing, and the select sees its row.
        db.execute(
            "INSERT INTO usage_users (project, user_id, user_name, user_tags)
             VALUES ($1, $2, $3, $4) ON CONFLICT (project, user_id, user_name, user_tags) DO NOTHING",
            &at,
        )?;
        let key = first(
            db,
            "SELECT user_key FROM usage_users
             WHERE project = $1 AND user_id = $2 AND user_name = $3 AND user_tags = $4",
            &at,
            |row| int(row, 0),
        )?
        .ok_or_else(|| anyhow::anyhow!("usage_users lost the row just written"))?;
        fresh.insert(user, key);
        keys.push(key);
    }
    Ok((keys, fresh))
}

/// The keys of the project's users that `filter` matches (names and tags are compared here:
/// a project has few users, and tags are a JSON list).
pub fn matching_users(
    db: &mut dyn Sql,
    project: &str,
    filter: &UserFilter,
) -> anyhow::Result<Vec<i64>> {
    let mut keys = Vec::new();
    db.query(
        "SELECT user_key, user_id, user_name, user_tags FROM usage_users
         WHERE project = $1 AND (CAST($2 AS TEXT) IS NULL OR user_id = $2)",
        &[project.into(), filter.user_id.as_deref().into()],
        &mut |row| {
            let tags: Vec<String> = serde_json::from_str(&text(row, 3)?)?;
            if filter.matches(&text(row, 1)?, &text(row, 2)?, &tags) {
                keys.push(int(row, 0)?);
            }
            Ok(())
        },
    )?;
    Ok(keys)
}

/// The project's sums over `[start_us, end_us)`: whole hours and days from the per-model
/// rollups, the partial hours at the edges from the records (see [`rollup::plan`]).
pub fn total(
    db: &mut dyn Sql,
    project: &str,
    start_us: i64,
    end_us: i64,
) -> anyhow::Result<Totals> {
    let plan = rollup::plan(start_us, end_us, None);
    let sums = |row: &dyn Row| -> anyhow::Result<Totals> {
        Ok(Totals {
            cache_hits: u64::try_from(row.int(4)?.unwrap_or(0)).unwrap_or(0),
            saved_cost_micros: row.int(5)?.unwrap_or(0),
            batch_requests: u64::try_from(row.int(6)?.unwrap_or(0)).unwrap_or(0),
            batch_cost_micros: row.int(7)?.unwrap_or(0),
            ..rollup::totals(row.int(0)?, row.int(1)?, row.int(2)?, row.int(3)?)
        })
    };
    let mut totals = Totals::default();
    for RollupSpan {
        table,
        time,
        span: (a, b),
        ..
    } in plan.rollups(Rollup::Models)
    {
        // PostgreSQL sums BIGINTs as NUMERIC: the casts bring the sums back.
        let sql = format!(
            "SELECT CAST(SUM(input_tokens) AS BIGINT), CAST(SUM(output_tokens) AS BIGINT),
                CAST(SUM(cost_micros) AS BIGINT), CAST(SUM(requests) AS BIGINT),
                CAST(SUM(cache_hits) AS BIGINT), CAST(SUM(saved_cost_micros) AS BIGINT),
                CAST(SUM(batch_requests) AS BIGINT), CAST(SUM(batch_cost_micros) AS BIGINT)
             FROM {table} WHERE project = $1 AND {time} >= $2 AND {time} < $3"
        );
        if let Some(sum) = first(db, &sql, &[project.into(), a.into(), b.into()], sums)? {
            totals.add(sum);
        }
    }
    for (s, e) in plan.raw {
        let sum = first(
            db,
            "SELECT CAST(SUM(input_tokens) AS BIGINT), CAST(SUM(output_tokens) AS BIGINT),
                CAST(SUM(cost_micros) AS BIGINT), COUNT(*),
                CAST(SUM(CAST(cache_hit AS INTEGER)) AS BIGINT),
                CAST(SUM(saved_cost_micros) AS BIGINT),
                CAST(SUM(CASE WHEN batch_id IS NULL THEN 0 ELSE 1 END) AS BIGINT),
                CAST(SUM(CASE WHEN batch_id IS NULL THEN 0 ELSE cost_micros END) AS BIGINT)
             FROM usage_records WHERE project = $1 AND time_us >= $2 AND time_us < $3",
            &[project.into(), s.into(), e.into()],
            sums,
        )?;
        if let Some(sum) = sum {
            totals.add(sum);
        }
    }
    Ok(totals)
}

/// Records stored (for tests and diagnostics).
pub fn count(db: &mut dyn Sql) -> anyhow::Result<u64> {
    let n = first(db, "SELECT COUNT(*) FROM usage_records", &[], |row| {
        int(row, 0)
    })?;
    Ok(u64::try_from(n.unwrap_or(0))?)
}
