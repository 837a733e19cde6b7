//! The statements both stores run as they are, written once: the keys and admin keys
//! ([`KeyStore`]), the stored responses ([`ResponseStore`]), a batch's users, and the sums.
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
use super::values::{Row, Value, int, text};

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
