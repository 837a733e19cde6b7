//! The ledger's schema: numbered migrations, run at start-up on both databases and recorded in a
//! history table (refinery's runner, on the stores' own connections).
//!
//! The files live in `migrations/`: `shared/` holds those whose SQL both databases take as it is
//! (SQLite reads `BIGINT` as an integer), `sqlite/` and `postgres/` only those that must differ.
//! A version lives in one place only. Adding a column to the records is one file in `shared/`
//! (`V2__what.sql`), listed in [`SHARED`]; a test checks that the lists name every file.
//!
//! A database made before the history table existed (by wasmgate up to 2026-11, whose schema
//! grew by column checks and `ALTER`s) is first brought to V1 by those checks, run one last
//! time, and recorded as V1 without running V1's file ("baselined"); later versions then run on
//! it as on any other. A database whose history holds a version this binary does not know was
//! migrated by a newer wasmgate: it is refused, not written to.
//!
//! Each store runs all of this in one transaction (both databases have transactional DDL), so a
//! migration that fails leaves the database as it was.

use refinery_core::traits::sync::Migrate;
use refinery_core::{Migration, Runner, Target};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::rollup;

/// The history table: one row per version applied (refinery's own columns).
pub const HISTORY: &str = "ledger_schema_history";

/// Migrations whose SQL both databases take, as (file name, SQL).
const SHARED: &[(&str, &str)] = &[
    ("V2__guards.sql", SHARED_V2),
    ("V5__key_guards.sql", SHARED_V5),
    ("V6__mcp.sql", include_str!("migrations/shared/V6__mcp.sql")),
    (
        "V7__passthrough.sql",
        include_str!("migrations/shared/V7__passthrough.sql"),
    ),
    (
        "V8__batches.sql",
        include_str!("migrations/shared/V8__batches.sql"),
    ),
    (
        "V9__audit.sql",
        include_str!("migrations/shared/V9__audit.sql"),
    ),
    (
        "V10__alerts.sql",
        include_str!("migrations/shared/V10__alerts.sql"),
    ),
    (
        "V11__records_by_time.sql",
        include_str!("migrations/shared/V11__records_by_time.sql"),
    ),
    (
        "V12__realtime.sql",
        include_str!("migrations/shared/V12__realtime.sql"),
    ),
];
const SHARED_V2: &str = include_str!("migrations/shared/V2__guards.sql");
const SHARED_V5: &str = include_str!("migrations/shared/V5__key_guards.sql");

/// Migrations written for SQLite alone.
const SQLITE: &[(&str, &str)] = &[
    ("V1__schema.sql", SQLITE_V1),
    (
        "V3__cache.sql",
        include_str!("migrations/sqlite/V3__cache.sql"),
    ),
];
const SQLITE_V1: &str = include_str!("migrations/sqlite/V1__schema.sql");

/// Migrations written for PostgreSQL alone.
const POSTGRES: &[(&str, &str)] = &[
    ("V1__schema.sql", POSTGRES_V1),
    (
        "V3__cache.sql",
        include_str!("migrations/postgres/V3__cache.sql"),
    ),
];
const POSTGRES_V1: &str = include_str!("migrations/postgres/V1__schema.sql");

/// Which database a migration is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    /// The folder under `migrations/` of this database's own migrations.
    pub fn folder(self) -> &'static str {
        match self {
            Self::Sqlite => "sqlite",
            Self::Postgres => "postgres",
        }
    }

    fn own(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Self::Sqlite => SQLITE,
            Self::Postgres => POSTGRES,
        }
    }
}

/// Why the schema could not be brought to this binary's version.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    #[error(
        "the ledger database is at schema version {database}, newer than this wasmgate knows \
         (version {binary}): it was migrated by a newer wasmgate; run that version, or restore \
         the backup taken before it"
    )]
    Newer { database: i32, binary: i32 },
    #[error(
        "this ledger database was written by an earlier development version of wasmgate (no \
         usage_records.user_key): move it away to start a new one"
    )]
    FirstDevelopmentSchema,
    #[error("cannot bring the ledger database made before versioned migrations to version 1: {0}")]
    Baseline(String),
    #[error("cannot read the ledger database's schema: {0}")]
    Database(#[from] DbError),
    #[error("cannot migrate the ledger database: {0}")]
    Migration(#[from] refinery_core::Error),
}

/// An error of the database under migration, or a history row that does not read.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    /// The client's error with its causes (its own `Display` says only "db error").
    #[error("{0}")]
    Postgres(String),
    #[error("{HISTORY} holds a row that does not read: {0}")]
    History(String),
}

/// A database connection, inside the transaction that migrates it: refinery's traits (run SQL,
/// read the history), and what is asked of a database made before the history table.
pub trait Database: Migrate {
    /// Whether [`HISTORY`] exists.
    fn has_history(&mut self) -> Result<bool, DbError>;
    /// Whether the ledger's tables exist (a database made before the history table); `false`
    /// for a new, empty database.
    fn has_ledger_tables(&mut self) -> Result<bool, DbError>;
    /// Brings a database made before the history table to V1's schema (the column checks and
    /// `ALTER`s that kept it before, run one last time).
    fn bring_to_v1(&mut self) -> Result<(), SchemaError>;
}

/// The columns added by `ALTER` after the first release, before versioned migrations, as (table,
/// column, definition): what [`Database::bring_to_v1`] adds to a table that lacks them.
pub fn columns_added_before_v1(dialect: Dialect) -> Vec<(&'static str, &'static str, String)> {
    let int = match dialect {
        Dialect::Sqlite => "INTEGER",
        Dialect::Postgres => "BIGINT",
    };
    let mut columns = vec![
        ("usage_records", "ttft_us", int.to_owned()),
        (
            "usage_records",
            "reasoning_tokens",
            format!("{int} NOT NULL DEFAULT 0"),
        ),
        (
            "usage_records",
            "cache_write_tokens",
            format!("{int} NOT NULL DEFAULT 0"),
        ),
    ];
    for (table, ..) in rollup::ROLLUP_TABLES {
        for column in rollup::STATS_COLUMNS {
            columns.push((table, column, format!("{int} NOT NULL DEFAULT 0")));
        }
    }
    // A key's own limits: older keys get them empty.
    columns.push(("api_keys", "models", "TEXT NOT NULL DEFAULT ''".to_owned()));
    for column in ["expires_us", "rpm", "tpm", "budget_micros"] {
        columns.push(("api_keys", column, int.to_owned()));
    }
    columns.push(("api_keys", "budget_period", "TEXT".to_owned()));
    columns
}

/// V1's SQL for `dialect`, which [`Database::bring_to_v1`] runs too (its `CREATE ... IF NOT
/// EXISTS` adds only what an older database lacks).
pub fn v1(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Sqlite => SQLITE_V1,
        Dialect::Postgres => POSTGRES_V1,
    }
}

/// Every migration of `dialect`, shared and own, by version.
pub fn migrations(dialect: Dialect) -> Result<Vec<Migration>, SchemaError> {
    let mut all = SHARED
        .iter()
        .chain(dialect.own())
        .map(|(file, sql)| {
            Migration::unapplied(file.trim_end_matches(".sql"), sql).map_err(SchemaError::from)
        })
        .collect::<Result<Vec<_>, _>>()?;
    all.sort_by_key(Migration::version);
    Ok(all)
}

/// The newest version this binary knows for `dialect`.
pub fn latest(dialect: Dialect) -> Result<i32, SchemaError> {
    Ok(migrations(dialect)?.last().map_or(0, Migration::version))
}

#[cfg(test)]
thread_local! {
    /// The version migrations stop at on this thread, for tests that make a database as an
    /// older wasmgate did (see [`stopping_at`]).
    static STOP_AT: std::cell::Cell<Option<i32>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with the stores it opens on this thread migrated up to `version` only.
#[cfg(test)]
pub fn stopping_at<T>(version: i32, f: impl FnOnce() -> T) -> T {
    STOP_AT.set(Some(version));
    let result = f();
    STOP_AT.set(None);
    result
}

/// How far [`migrate`] goes: the newest version (a test may stop it earlier).
fn target() -> Target {
    #[cfg(test)]
    if let Some(version) = STOP_AT.get() {
        return Target::Version(version);
    }
    Target::Latest
}

/// Brings `db` to the newest version: baselines a database made before the history table,
/// refuses one migrated by a newer binary, then runs what its history lacks. Returns the
/// versions applied now (a baseline counts as none).
pub fn migrate(db: &mut impl Database, dialect: Dialect) -> Result<Vec<i32>, SchemaError> {
    let migrations = migrations(dialect)?;
    let runner = |target| {
        let mut runner = Runner::new(&migrations)
            .set_grouped(true)
            .set_target(target);
        runner.set_migration_table_name(HISTORY);
        runner
    };
    if !db.has_history()? && db.has_ledger_tables()? {
        db.bring_to_v1()?;
        runner(Target::FakeVersion(1)).run(db)?;
    }
    if db.has_history()? {
        let binary = migrations.last().map_or(0, Migration::version);
        if let Some(last) = runner(Target::Latest).get_last_applied_migration(db)?
            && last.version() > binary
        {
            return Err(SchemaError::Newer {
                database: last.version(),
                binary,
            });
        }
    }
    let report = runner(target()).run(db)?;
    Ok(report
        .applied_migrations()
        .iter()
        .map(Migration::version)
        .collect())
}

/// A history row as refinery wrote it: the time as RFC 3339, the checksum as decimal text.
pub fn applied(
    version: i32,
    name: String,
    applied_on: &str,
    checksum: &str,
) -> Result<Migration, DbError> {
    let applied_on = OffsetDateTime::parse(applied_on, &Rfc3339)
        .map_err(|e| DbError::History(format!("version {version}: applied_on: {e}")))?;
    let checksum = checksum
        .parse()
        .map_err(|e| DbError::History(format!("version {version}: checksum: {e}")))?;
    Ok(Migration::applied(version, name, applied_on, checksum))
}

#[cfg(test)]
mod tests;
