//! SQLite's side of the versioned schema (see [`crate::ledger::schema`]): refinery's traits on a
//! connection inside the migrating transaction, and the column checks that bring a file made
//! before the history table to V1.

use anyhow::Context;
use refinery_core::Migration;
use refinery_core::traits::sync::{Migrate, Query, Transaction};
use rusqlite::{Connection, params};

use super::durations::write_durations;
use crate::ledger::rollup;
use crate::ledger::schema::{self, Database, DbError, Dialect, HISTORY, SchemaError};

/// Runs the migrations `conn` lacks, in one transaction. `IMMEDIATE`: it takes the write lock
/// first (waiting out another migration), where a deferred one read the history table, then
/// could not upgrade to writing while another connection had written, and SQLite refuses that
/// at once ("database is locked") rather than waiting.
pub(super) fn migrate(conn: &Connection) -> anyhow::Result<()> {
    let tx = rusqlite::Transaction::new_unchecked(conn, rusqlite::TransactionBehavior::Immediate)?;
    schema::migrate(&mut Migrating(&tx), Dialect::Sqlite)?;
    tx.commit().context("cannot commit the ledger's schema")?;
    Ok(())
}

/// A connection inside the migrating transaction: refinery's statements run in it as they come.
struct Migrating<'a>(&'a Connection);

impl Transaction for Migrating<'_> {
    type Error = DbError;

    fn execute<'a, T: Iterator<Item = &'a str>>(&mut self, queries: T) -> Result<usize, DbError> {
        let mut count = 0;
        for query in queries {
            self.0.execute_batch(query)?;
            count += 1;
        }
        Ok(count)
    }
}

impl Query<Vec<Migration>> for Migrating<'_> {
    fn query(&mut self, query: &str) -> Result<Vec<Migration>, DbError> {
        let mut stmt = self.0.prepare(query)?;
        let rows = stmt.query_map([], |row| {
            Ok((
                row.get::<_, i32>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, String>(3)?,
            ))
        })?;
        rows.map(|row| {
            let (version, name, applied_on, checksum) = row?;
            schema::applied(version, name, &applied_on, &checksum)
        })
        .collect()
    }
}

impl Migrate for Migrating<'_> {}

impl Database for Migrating<'_> {
    fn has_history(&mut self) -> Result<bool, DbError> {
        Ok(table_exists(self.0, HISTORY)?)
    }

    fn has_ledger_tables(&mut self) -> Result<bool, DbError> {
        // The first releases had these two; every later table came with the records.
        Ok(table_exists(self.0, "usage_records")? || table_exists(self.0, "api_keys")?)
    }

    fn bring_to_v1(&mut self) -> Result<(), SchemaError> {
        bring_to_v1(self.0).map_err(|e| match e.downcast::<SchemaError>() {
            Ok(e) => e,
            Err(e) => SchemaError::Baseline(format!("{e:#}")),
        })
    }
}

/// What kept the schema before versioned migrations: V1's `CREATE ... IF NOT EXISTS` for what
/// is missing, then a column for each one added since the first release, filled from the
/// records where it sums them. The result is V1's schema (a test compares the two).
fn bring_to_v1(conn: &Connection) -> anyhow::Result<()> {
    // The first development schema had no `user_key`: its records cannot be filtered by user,
    // nor its rollups read by the queries. Say so rather than fail on a column.
    let has_records = table_exists(conn, "usage_records")?;
    if has_records && !column_exists(conn, "usage_records", "user_key")? {
        return Err(SchemaError::FirstDevelopmentSchema.into());
    }
    let has_daily_models = table_exists(conn, "usage_daily_models")?;
    // Rollups written before they held the console's sums: filled from the records below.
    let needs_backfill = has_records && !column_exists(conn, "usage_hourly_models", "errors")?;
    // Columns first: the backfill below reads some of them.
    for (table, column, definition) in schema::columns_added_before_v1(Dialect::Sqlite) {
        if table_exists(conn, table)? && !column_exists(conn, table, column)? {
            conn.execute_batch(&format!(
                "ALTER TABLE {table} ADD COLUMN {column} {definition}"
            ))
            .with_context(|| format!("cannot add {table}.{column}"))?;
        }
    }
    // The request log's first index, which V1's (project, time_us, request_id) extends.
    conn.execute_batch("DROP INDEX IF EXISTS usage_records_by_project_time")?;
    conn.execute_batch(schema::v1(Dialect::Sqlite))
        .context("cannot create the ledger tables")?;
    if has_records && !has_daily_models {
        // Added after the first release: sum what the hourly rollup already holds.
        conn.execute(&rollup::days_from_hours(), [])
            .context("cannot fill usage_daily_models")?;
    }
    if needs_backfill {
        backfill(conn).context("cannot fill the rollups' new sums from the records")?;
    }
    Ok(())
}

/// Fills the rollups' [`rollup::STATS_COLUMNS`] and the duration histograms from the records,
/// for a database written before they existed.
fn backfill(conn: &Connection) -> anyhow::Result<()> {
    for (table, time, step, by_user) in rollup::ROLLUP_TABLES {
        conn.execute(&rollup::backfill_sql(table, time, step, by_user), [])?;
    }
    let mut stmt =
        conn.prepare("SELECT project, time_us, latency_us, ttft_us FROM usage_records")?;
    let mut rows = stmt.query([])?;
    // Written every so many records (the histograms' UPSERTs add), so that memory holds that
    // many records' counts, not the whole history's.
    let mut counts = rollup::DurationCounts::default();
    let mut held = 0;
    while let Some(row) = rows.next()? {
        let project: String = row.get(0)?;
        counts.add(&project, row.get(1)?, row.get(2)?, row.get(3)?);
        held += 1;
        if held == rollup::BACKFILL_CHUNK {
            write_durations(conn, &std::mem::take(&mut counts))?;
            held = 0;
        }
    }
    write_durations(conn, &counts)
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
