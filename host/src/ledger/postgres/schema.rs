//! PostgreSQL's side of the versioned schema (see [`crate::ledger::schema`]): refinery's traits
//! on a transaction of our own client, and the column checks that bring a database made before
//! the history table to V1.

use postgres::{Client, Transaction};
use refinery_core::Migration;
use refinery_core::traits::sync::{Migrate, Query, Transaction as RunSql};

use super::durations::write_durations;
use super::error_chain::chain;
use crate::ledger::rollup;
use crate::ledger::schema::{self, Database, DbError, Dialect, HISTORY, SchemaError};

/// Serialises migrations across replicas starting together: the second waits for the first's
/// commit, then finds nothing left to do. Any constant will do; this one reads "wasmgate".
const SCHEMA_LOCK: i64 = 0x7761_736d_6761_7465;

/// Runs the migrations the database lacks, in one transaction.
pub(super) fn migrate(client: &mut Client) -> anyhow::Result<()> {
    let mut tx = client.transaction().map_err(db)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
        .map_err(db)?;
    schema::migrate(&mut Migrating(&mut tx), Dialect::Postgres)?;
    tx.commit().map_err(db)?;
    Ok(())
}

fn db(e: postgres::Error) -> DbError {
    DbError::Postgres(chain(&e))
}

/// A transaction under migration: refinery's statements run in it as they come.
struct Migrating<'a, 'b>(&'a mut Transaction<'b>);

impl RunSql for Migrating<'_, '_> {
    type Error = DbError;

    fn execute<'a, T: Iterator<Item = &'a str>>(&mut self, queries: T) -> Result<usize, DbError> {
        let mut count = 0;
        for query in queries {
            self.0.batch_execute(query).map_err(db)?;
            count += 1;
        }
        Ok(count)
    }
}

impl Query<Vec<Migration>> for Migrating<'_, '_> {
    fn query(&mut self, query: &str) -> Result<Vec<Migration>, DbError> {
        self.0
            .query(query, &[])
            .map_err(db)?
            .into_iter()
            .map(|row| {
                let field = |e: postgres::Error| DbError::History(chain(&e));
                schema::applied(
                    row.try_get(0).map_err(field)?,
                    row.try_get(1).map_err(field)?,
                    row.try_get(2).map_err(field)?,
                    row.try_get(3).map_err(field)?,
                )
            })
            .collect()
    }
}

impl Migrate for Migrating<'_, '_> {}

impl Database for Migrating<'_, '_> {
    fn has_history(&mut self) -> Result<bool, DbError> {
        exists(self.0, HISTORY)
    }

    fn has_ledger_tables(&mut self) -> Result<bool, DbError> {
        // The first releases had these two; every later table came with the records.
        Ok(exists(self.0, "usage_records")? || exists(self.0, "api_keys")?)
    }

    fn bring_to_v1(&mut self) -> Result<(), SchemaError> {
        bring_to_v1(self.0).map_err(|e| match e.downcast::<SchemaError>() {
            Ok(e) => e,
            Err(e) => SchemaError::Baseline(format!("{e:#}")),
        })
    }
}

fn exists(tx: &mut Transaction<'_>, table: &str) -> Result<bool, DbError> {
    Ok(tx
        .query_one("SELECT to_regclass($1::TEXT) IS NOT NULL", &[&table])
        .map_err(db)?
        .get(0))
}

fn column_exists(tx: &mut Transaction<'_>, table: &str, column: &str) -> Result<bool, DbError> {
    Ok(tx
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM information_schema.columns
                 WHERE table_schema = current_schema() AND table_name = $1 AND column_name = $2)",
            &[&table, &column],
        )
        .map_err(db)?
        .get(0))
}

/// What kept the schema before versioned migrations: a column for each one added since the
/// first release, V1's `CREATE ... IF NOT EXISTS` for what is missing, and the new sums filled
/// from the records. The result is V1's schema (a test compares the two).
fn bring_to_v1(tx: &mut Transaction<'_>) -> anyhow::Result<()> {
    let has_records = exists(tx, "usage_records")?;
    if has_records && !column_exists(tx, "usage_records", "user_key")? {
        return Err(SchemaError::FirstDevelopmentSchema.into());
    }
    let needs_days = has_records && !exists(tx, "usage_daily_models")?;
    // Rollups written before they held the console's sums: filled from the records below.
    let needs_backfill = has_records && !column_exists(tx, "usage_hourly_models", "errors")?;
    // Columns first: the backfill below reads some of them.
    for (table, column, definition) in schema::columns_added_before_v1(Dialect::Postgres) {
        tx.batch_execute(&format!(
            "ALTER TABLE IF EXISTS {table} ADD COLUMN IF NOT EXISTS {column} {definition}"
        ))
        .map_err(db)?;
    }
    // The request log's first index, which V1's (project, time_us, request_id) extends.
    tx.batch_execute("DROP INDEX IF EXISTS usage_records_by_project_time")
        .map_err(db)?;
    tx.batch_execute(schema::v1(Dialect::Postgres))
        .map_err(db)?;
    if needs_days {
        // Added after the first release: sum what the hourly rollup holds.
        tx.batch_execute(&rollup::days_from_hours()).map_err(db)?;
    }
    if needs_backfill {
        backfill(tx)?;
    }
    Ok(())
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
