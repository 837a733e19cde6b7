//! The versioned schema on both stores: a fresh database gets V1; the fixtures made by the code
//! of the day before migrations (`ledger/fixtures/`) and older databases are baselined to it,
//! with the same schema as a fresh one; a database migrated by a newer binary is refused.

use std::path::{Path, PathBuf};

use super::*;
use crate::ledger::UsageStore;
use crate::ledger::keys::{AdminKey, Budget, BudgetPeriod, KeyLimits};
use crate::ledger::postgres::PostgresStore;
use crate::ledger::sqlite::SqliteStore;
use crate::ledger::tests::pg;
use crate::ledger::{Store, UsageRecord};

/// 2024-02-29 13:00:00 UTC, the hour of the fixtures' first record.
const H: i64 = 1_709_211_600_000_000;
const HOUR_US: i64 = 3_600_000_000;

/// What the fixtures hold: three records (one with every field, one failed, one of another
/// project), written by the store of 2026-11-25 before versioned migrations.
fn fixture_records() -> Vec<UsageRecord> {
    let base = |time_us: i64, project: &str, provider: &str, model: &str| UsageRecord {
        request_id: format!("req-{time_us}"),
        time_us,
        project: project.to_owned(),
        provider: Some(provider.to_owned()),
        model: Some(model.to_owned()),
        operation: "chat.completions".to_owned(),
        status: 200,
        ..UsageRecord::default()
    };
    let full = UsageRecord {
        api_key_id: Some("key_fixture".to_owned()),
        user_id: Some("u-1".to_owned()),
        user_name: Some("Ada".to_owned()),
        user_tags: vec!["beta".to_owned(), "eu".to_owned()],
        input_tokens: 120,
        output_tokens: 30,
        cached_input_tokens: 20,
        reasoning_tokens: 10,
        cache_write_tokens: 5,
        cost_micros: Some(450),
        latency_us: 250_000,
        ttft_us: Some(80_000),
        ..base(H, "p", "openai", "gpt-4o")
    };
    let failed = UsageRecord {
        input_tokens: 9,
        latency_us: 1_000,
        status: 502,
        error_type: Some("upstream_error".to_owned()),
        estimated: true,
        ..base(H + HOUR_US + 7, "p", "openai", "gpt-4o-mini")
    };
    let other = UsageRecord {
        input_tokens: 7,
        output_tokens: 8,
        cost_micros: Some(9),
        latency_us: 3_000,
        ..base(H + 2 * HOUR_US + 3, "q", "anthropic", "claude")
    };
    vec![full, failed, other]
}

/// What a store opened on a fixture must read back: its records, key, admin key and response,
/// and sums over them; then it takes new records.
fn check_fixture(store: &dyn Store) {
    for record in fixture_records() {
        assert_eq!(
            store.record(&record.request_id).unwrap().as_ref(),
            Some(&record)
        );
    }
    let key = store.key("key_fixture").unwrap().unwrap();
    assert_eq!(
        key.limits,
        KeyLimits {
            models: vec!["gpt-4o*".to_owned()],
            requests_per_minute: Some(60),
            budget: Some(Budget {
                micros: 5_000_000,
                period: BudgetPeriod::Month,
            }),
            ..KeyLimits::default()
        }
    );
    assert_eq!(store.key_spend("key_fixture", 0).unwrap(), 450);
    assert_eq!(
        store.admin_key_by_hash("hash-of-adm_fixture").unwrap(),
        Some(AdminKey {
            id: "adm_fixture".to_owned(),
            name: Some("ops".to_owned()),
            hash: "hash-of-adm_fixture".to_owned(),
            prefix: "wga-abc".to_owned(),
            created_us: H - 20,
            revoked_us: None,
        })
    );
    assert!(store.response("p", "resp_fixture").unwrap().is_some());
    let totals = store.total("p", H, H + 3 * HOUR_US).unwrap();
    assert_eq!((totals.requests, totals.input_tokens), (2, 129));
    let mut new = fixture_records().remove(0);
    new.request_id = "req-after-upgrade".to_owned();
    store.write(std::slice::from_ref(&new)).unwrap();
    assert_eq!(store.record("req-after-upgrade").unwrap(), Some(new));
    assert_eq!(store.count().unwrap(), 4);
}

/// Every version of `dialect`: what a database's history holds once migrated (a database made
/// before the history is recorded at V1, then migrated like any other).
fn versions(dialect: Dialect) -> Vec<i32> {
    migrations(dialect)
        .unwrap()
        .iter()
        .map(Migration::version)
        .collect()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wasmgate-schema-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/ledger/fixtures")
        .join(name)
}

/// The lists of migrations name every file of `migrations/`, and no version is both shared and
/// one database's own.
#[test]
fn the_lists_name_every_migration_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/ledger/migrations");
    let files = |folder: &str| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(root.join(folder))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .filter(|name| name.ends_with(".sql"))
            .collect();
        names.sort();
        names
    };
    let listed = |list: &[(&str, &str)]| -> Vec<String> {
        let mut names: Vec<String> = list.iter().map(|(name, _)| (*name).to_owned()).collect();
        names.sort();
        names
    };
    assert_eq!(files("shared"), listed(SHARED));
    assert_eq!(files("sqlite"), listed(SQLITE));
    assert_eq!(files("postgres"), listed(POSTGRES));
    for dialect in [Dialect::Sqlite, Dialect::Postgres] {
        assert_eq!(files(dialect.folder()), listed(dialect.own()));
        let all = migrations(dialect).unwrap();
        let mut versions: Vec<i32> = all.iter().map(Migration::version).collect();
        versions.dedup();
        assert_eq!(
            versions.len(),
            all.len(),
            "{dialect:?}: a version is listed twice"
        );
        assert_eq!(versions.first(), Some(&1));
    }
}

/// The schema of a SQLite database as rows to compare: every table's columns in order (name,
/// type, not null, default, primary key), whether it has row ids, and every index.
fn sqlite_schema(path: &Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(path).unwrap();
    let mut rows = Vec::new();
    let mut tables = conn
        .prepare(
            "SELECT m.name, instr(m.sql, 'WITHOUT ROWID') > 0, p.cid, p.name, p.type,
                 p.\"notnull\", p.dflt_value, p.pk
             FROM sqlite_master m JOIN pragma_table_info(m.name) p
             WHERE m.type = 'table' ORDER BY m.name, p.cid",
        )
        .unwrap();
    let columns = tables
        .query_map([], |row| {
            Ok(format!(
                "{} rowless={} {} {} {} notnull={} default={:?} pk={}",
                row.get::<_, String>(0)?,
                row.get::<_, bool>(1)?,
                row.get::<_, i64>(2)?,
                row.get::<_, String>(3)?,
                row.get::<_, String>(4)?,
                row.get::<_, i64>(5)?,
                row.get::<_, Option<String>>(6)?,
                row.get::<_, i64>(7)?,
            ))
        })
        .unwrap();
    rows.extend(columns.map(Result::unwrap));
    let mut indexes = conn
        .prepare("SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'index' ORDER BY name")
        .unwrap();
    let indexes = indexes
        .query_map([], |row| {
            let sql: Option<String> = row.get(2)?;
            let sql = sql.map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "));
            Ok(format!(
                "index {} on {}: {sql:?}",
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?
            ))
        })
        .unwrap();
    rows.extend(indexes.map(Result::unwrap));
    rows
}

fn history_versions_sqlite(path: &Path) -> Vec<i32> {
    let conn = rusqlite::Connection::open(path).unwrap();
    let mut stmt = conn
        .prepare(&format!("SELECT version FROM {HISTORY} ORDER BY version"))
        .unwrap();
    stmt.query_map([], |row| row.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// A fresh SQLite file: its schema is V1's, recorded in the history.
fn fresh_sqlite(dir: &Path) -> PathBuf {
    let path = dir.join("fresh.db");
    drop(SqliteStore::open(&path).unwrap());
    assert_eq!(history_versions_sqlite(&path), versions(Dialect::Sqlite));
    path
}

/// The file made by the store of the day before migrations is baselined at V1: its data reads
/// back, and its schema is a fresh file's.
#[test]
fn the_v1_sqlite_fixture_is_upgraded() {
    let dir = temp_dir("sqlite-fixture");
    let path = dir.join("v1.sqlite");
    std::fs::copy(fixture("v1.sqlite"), &path).unwrap();
    let store = SqliteStore::open(&path).unwrap();
    check_fixture(&store);
    drop(store);
    assert_eq!(history_versions_sqlite(&path), versions(Dialect::Sqlite));
    assert_eq!(sqlite_schema(&path), sqlite_schema(&fresh_sqlite(&dir)));
    // Opened again: nothing more to do.
    drop(SqliteStore::open(&path).unwrap());
    assert_eq!(history_versions_sqlite(&path), versions(Dialect::Sqlite));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A file from before every column added since the first release (and before the daily
/// rollup and the histograms) reaches the same schema as a fresh one.
#[test]
fn an_older_sqlite_file_reaches_the_fresh_schema() {
    let dir = temp_dir("sqlite-older");
    let path = dir.join("old.db");
    std::fs::copy(fixture("v1.sqlite"), &path).unwrap();
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        for (table, column, _) in columns_added_before_v1(Dialect::Sqlite) {
            conn.execute_batch(&format!("ALTER TABLE {table} DROP COLUMN {column}"))
                .unwrap();
        }
        conn.execute_batch(
            "DROP TABLE usage_daily_models; DROP TABLE usage_hourly_latency;
             DROP TABLE usage_daily_latency; DROP TABLE admin_keys; DROP TABLE stored_responses;
             DROP INDEX usage_records_by_key;",
        )
        .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    let totals = store.total("p", H, H + 3 * HOUR_US).unwrap();
    assert_eq!((totals.requests, totals.input_tokens), (2, 129));
    drop(store);
    assert_eq!(history_versions_sqlite(&path), versions(Dialect::Sqlite));
    assert_eq!(sqlite_schema(&path), sqlite_schema(&fresh_sqlite(&dir)));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A file whose history holds a version this binary does not know is refused, naming both.
#[test]
fn a_newer_sqlite_file_is_refused() {
    let dir = temp_dir("sqlite-newer");
    let path = fresh_sqlite(&dir);
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(&format!(
            "INSERT INTO {HISTORY} (version, name, applied_on, checksum)
             VALUES (99, 'from_the_future', '2030-01-01T00:00:00Z', '1')"
        ))
        .unwrap();
    let error = SqliteStore::open(&path).err().unwrap();
    let binary = latest(Dialect::Sqlite).unwrap();
    match error.downcast_ref::<SchemaError>() {
        Some(SchemaError::Newer {
            database: 99,
            binary: b,
        }) if *b == binary => {}
        _ => panic!("not refused as newer: {error:#}"),
    }
    let message = format!("{error:#}");
    assert!(message.contains("version 99") && message.contains(&format!("version {binary}")));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A PostgreSQL database's schema as rows to compare: every table's columns in order, and
/// every index.
fn postgres_schema(url: &str) -> Vec<String> {
    let mut client = ::postgres::Client::connect(url, ::postgres::NoTls).unwrap();
    let mut rows: Vec<String> = client
        .query(
            "SELECT table_name::TEXT, column_name::TEXT, data_type::TEXT, is_nullable::TEXT,
                 column_default::TEXT
             FROM information_schema.columns WHERE table_schema = current_schema()
             ORDER BY table_name, ordinal_position",
            &[],
        )
        .unwrap()
        .iter()
        .map(|row| {
            format!(
                "{} {} {} nullable={} default={:?}",
                row.get::<_, String>(0),
                row.get::<_, String>(1),
                row.get::<_, String>(2),
                row.get::<_, String>(3),
                row.get::<_, Option<String>>(4)
            )
        })
        .collect();
    rows.extend(
        client
            .query(
                "SELECT indexname::TEXT, indexdef FROM pg_indexes
                 WHERE schemaname = current_schema() ORDER BY indexname",
                &[],
            )
            .unwrap()
            .iter()
            .map(|row| {
                format!(
                    "index {}: {}",
                    row.get::<_, String>(0),
                    row.get::<_, String>(1)
                )
            }),
    );
    rows
}

fn history_versions_postgres(url: &str) -> Vec<i32> {
    let mut client = ::postgres::Client::connect(url, ::postgres::NoTls).unwrap();
    client
        .query(
            &format!("SELECT version FROM {HISTORY} ORDER BY version"),
            &[],
        )
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect()
}

/// A fresh PostgreSQL database, its schema made by the store (V1, recorded in the history).
fn fresh_postgres(cluster: &pg::PgCluster) -> String {
    let url = cluster.database();
    PostgresStore::open(&url).unwrap().count().unwrap();
    assert_eq!(history_versions_postgres(&url), versions(Dialect::Postgres));
    url
}

/// A database restored from the dump of one made by the store of the day before migrations.
fn postgres_fixture(cluster: &pg::PgCluster) -> String {
    let url = cluster.database();
    let dump = std::fs::read_to_string(fixture("v1.postgres.sql")).unwrap();
    // On a connection of its own: the dump empties the session's search_path.
    ::postgres::Client::connect(&url, ::postgres::NoTls)
        .unwrap()
        .batch_execute(&dump)
        .unwrap();
    url
}

#[test]
fn the_v1_postgres_fixture_is_upgraded() {
    let cluster = pg::shared();
    let url = postgres_fixture(&cluster);
    let store = PostgresStore::open(&url).unwrap();
    check_fixture(&store);
    drop(store);
    assert_eq!(history_versions_postgres(&url), versions(Dialect::Postgres));
    assert_eq!(
        postgres_schema(&url),
        postgres_schema(&fresh_postgres(&cluster))
    );
    PostgresStore::open(&url).unwrap().count().unwrap();
    assert_eq!(history_versions_postgres(&url), versions(Dialect::Postgres));
}

#[test]
fn an_older_postgres_database_reaches_the_fresh_schema() {
    let cluster = pg::shared();
    let url = postgres_fixture(&cluster);
    {
        let mut client = ::postgres::Client::connect(&url, ::postgres::NoTls).unwrap();
        for (table, column, _) in columns_added_before_v1(Dialect::Postgres) {
            client
                .batch_execute(&format!("ALTER TABLE {table} DROP COLUMN {column}"))
                .unwrap();
        }
        client
            .batch_execute(
                "DROP TABLE usage_daily_models; DROP TABLE usage_hourly_latency;
                 DROP TABLE usage_daily_latency; DROP TABLE admin_keys;
                 DROP TABLE stored_responses; DROP INDEX usage_records_by_key;",
            )
            .unwrap();
    }
    let store = PostgresStore::open(&url).unwrap();
    let totals = store.total("p", H, H + 3 * HOUR_US).unwrap();
    assert_eq!((totals.requests, totals.input_tokens), (2, 129));
    drop(store);
    assert_eq!(history_versions_postgres(&url), versions(Dialect::Postgres));
    assert_eq!(
        postgres_schema(&url),
        postgres_schema(&fresh_postgres(&cluster))
    );
}

#[test]
fn a_newer_postgres_database_is_refused() {
    let cluster = pg::shared();
    let url = fresh_postgres(&cluster);
    ::postgres::Client::connect(&url, ::postgres::NoTls)
        .unwrap()
        .batch_execute(&format!(
            "INSERT INTO {HISTORY} (version, name, applied_on, checksum)
             VALUES (99, 'from_the_future', '2030-01-01T00:00:00Z', '1')"
        ))
        .unwrap();
    let store = PostgresStore::open(&url).unwrap();
    let message = format!("{:#}", store.count().unwrap_err());
    let binary = latest(Dialect::Postgres).unwrap();
    assert!(
        message.contains("schema version 99") && message.contains(&format!("version {binary})")),
        "{message}"
    );
    // Nothing was written.
    let mut known = versions(Dialect::Postgres);
    known.push(99);
    assert_eq!(history_versions_postgres(&url), known);
}
