//! The ledger's measurements at scale: ingest through the real write path (queue, writer,
//! batches), the usage queries, the request log and the console's figures, on SQLite (a file)
//! and PostgreSQL (a throwaway cluster with its default, durable settings); and how long a
//! database made before the rollups held the console's sums takes to open (its backfill).
//!
//! `cargo bench -p wasmgate --bench ledger` measures ingest and queries;
//! `cargo bench -p wasmgate --bench ledger -- backfill` the backfill. `LEDGER_MEASURE_RECORDS`
//! (default 1M; the figures in BENCHMARKS.md are for 10M) records over 30 days, 3 projects (70 %
//! of the traffic in the first), 20 models of 3 providers and 1,000 users, each with a name and
//! one of 10 team tags, latencies of 0.2 to 20 s, a third of them streams with a time to first
//! token. `LEDGER_MEASURE_STORE` picks `sqlite`, `postgres` or `both` (the default);
//! `LEDGER_MEASURE_EXPLAIN=1` logs PostgreSQL's plans of the slower queries. Results go to
//! standard error, one line each. Bounded by the record count; 127.0.0.1 only.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use wasmgate::ledger::postgres::PostgresStore;
use wasmgate::ledger::schema::{Dialect, HISTORY, columns_added_before_v1};
use wasmgate::ledger::sqlite::SqliteStore;
use wasmgate::ledger::{Ledger, Store, Unit, UsageRecord, UsageStore, UserFilter};
use wasmgate::ledger::{requests, stats};

#[path = "../src/ledger/tests/records.rs"]
mod records;
use records::{log_record, record};

#[path = "../../tests/common/postgres.rs"]
#[allow(dead_code)]
mod pg;

// 2024-02-29 13:00:00 UTC.
const H: i64 = 1_709_211_600_000_000;
const HOUR_US: i64 = 3_600_000_000;

fn main() {
    if std::env::args().skip(1).any(|arg| arg == "backfill") {
        measure_backfill();
    } else {
        measure();
    }
}

/// Makes a database look like one written before the rollups held the console's sums, and
/// before versioned migrations: their columns, the duration histograms and the history gone.
fn strip_stats_sums(execute: &mut dyn FnMut(&str), dialect: Dialect) {
    for (table, column, _) in columns_added_before_v1(dialect) {
        if table.starts_with("usage_") && table != "usage_records" {
            execute(&format!("ALTER TABLE {table} DROP COLUMN {column}"));
        }
    }
    for table in ["usage_hourly_latency", "usage_daily_latency", HISTORY] {
        execute(&format!("DROP TABLE {table}"));
    }
}

/// Ingest rate and query times, through the real write path (queue, writer, batches).
fn measure() {
    let n: i64 = std::env::var("LEDGER_MEASURE_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let which = std::env::var("LEDGER_MEASURE_STORE").unwrap_or_else(|_| "both".to_owned());
    if which == "sqlite" || which == "both" {
        let dir =
            std::env::temp_dir().join(format!("wasmgate-ledger-measure-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let store = Arc::new(SqliteStore::open(&dir.join("m.db")).unwrap());
        measure_store("sqlite", store, n);
        let bytes: u64 = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok()?.metadata().ok())
            .map(|m| m.len())
            .sum();
        eprintln!("sqlite: database files {:.0} MiB", bytes as f64 / 1048576.0);
        let _ = std::fs::remove_dir_all(&dir);
    }
    if which == "postgres" || which == "both" {
        let explain = std::env::var("LEDGER_MEASURE_EXPLAIN").is_ok();
        let settings: &[&str] = if explain {
            &[
                "shared_preload_libraries=auto_explain",
                "auto_explain.log_min_duration=3",
                "auto_explain.log_analyze=on",
                "auto_explain.log_buffers=on",
            ]
        } else {
            &[]
        };
        let cluster = pg::PgCluster::start(settings);
        let url = cluster.database();
        measure_store("postgres", Arc::new(PostgresStore::open(&url).unwrap()), n);
        if explain {
            eprintln!("{}", cluster.log());
        }
    }
}

fn measure_store(name: &str, store: Arc<dyn Store>, n: i64) {
    const MODELS: [&str; 20] = [
        "gpt-4o",
        "gpt-4o-mini",
        "gpt-4.1",
        "gpt-4.1-mini",
        "gpt-4.1-nano",
        "o3",
        "o4-mini",
        "text-embedding-3-small",
        "dall-e-3",
        "gpt-3.5-turbo",
        "claude-3-5-haiku",
        "claude-3-7-sonnet",
        "claude-sonnet-4",
        "claude-opus-4",
        "claude-3-opus",
        "gemini-2.0-flash",
        "gemini-2.5-pro",
        "gemini-2.5-flash",
        "gemini-1.5-pro",
        "text-embedding-004",
    ];
    let provider = |m: usize| match m {
        0..10 => "openai",
        10..15 => "anthropic",
        _ => "gemini",
    };
    let project = |user: i64| match user {
        0..700 => "p0",
        700..900 => "p1",
        _ => "p2",
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let span = 30 * 24 * HOUR_US;
    let started = std::time::Instant::now();
    let ledger = runtime.block_on(async {
        let ledger = Ledger::with_store(store.clone(), 100_000);
        // A cheap generator (a multiplicative hash), so that the figures are the store's.
        for i in 0..n {
            let h = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let user = ((h >> 20) % 1000) as i64;
            let m = ((h >> 40) % 20) as usize;
            let at = H + (i128::from(i) * i128::from(span) / i128::from(n)) as i64;
            let mut r = record(at, MODELS[m], 500 + h % 1000, 200 + h % 300, 40);
            r.request_id = format!("r{i}");
            r.project = project(user).to_owned();
            r.provider = Some(provider(m).to_owned());
            r.user_id = Some(format!("user-{user}"));
            r.user_name = Some(format!("User {user}"));
            r.user_tags = vec![format!("team-{}", user % 10)];
            // For the request log's filters: a key per 50 users, 1 % failures, and the two
            // embedding models under their own dialect.
            r.api_key_id = Some(format!("key_{}", user % 20));
            if h % 100 == 7 {
                r.status = 500;
            }
            if m == 7 || m == 19 {
                r.operation = "embeddings".to_owned();
            }
            // Durations spread over two decades (0.2 to 20 s), as a gateway's are: each hour's
            // histogram has a hundred buckets or so, which is what its writes cost.
            r.latency_us = 200_000 + ((h >> 8) % 1_000) as i64 * ((h >> 18) % 20_000) as i64;
            r.ttft_us = h
                .is_multiple_of(3)
                .then_some(50_000 + ((h >> 28) % 2_000_000) as i64);
            while ledger.queued() > 90_000 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            drop(ledger.record(r));
        }
        ledger.shutdown().await;
        ledger
    });
    let ingest = started.elapsed();
    assert_eq!(ledger.dropped(), 0);
    assert_eq!(store.count().unwrap(), n as u64);
    eprintln!(
        "{name}: ingest {n} records in {ingest:.1?} = {:.0} records/s",
        n as f64 / ingest.as_secs_f64()
    );
    let (start, end) = (H + 1_000_000, H + span - 1_000_000);
    let all = UserFilter::default();
    let one = UserFilter {
        user_id: Some("user-7".to_owned()),
        ..UserFilter::default()
    };
    let team = UserFilter {
        user_tags: vec!["team-3".to_owned()],
        ..UserFilter::default()
    };
    type Query<'a> = Box<dyn Fn() -> usize + 'a>;
    let queries: [(&str, Query<'_>); 7] = [
        (
            "/usage/total",
            Box::new(|| store.total("p0", start, end).unwrap().requests as usize),
        ),
        (
            "/usage/models hour",
            Box::new(|| {
                store
                    .models("p0", start, end, Unit::Hour, &all)
                    .unwrap()
                    .len()
            }),
        ),
        (
            "/usage/models day",
            Box::new(|| {
                store
                    .models("p0", start, end, Unit::Day, &all)
                    .unwrap()
                    .len()
            }),
        ),
        (
            "/usage/models day, user_id (1 user)",
            Box::new(|| {
                store
                    .models("p0", start, end, Unit::Day, &one)
                    .unwrap()
                    .len()
            }),
        ),
        (
            "/usage/models hour, user_id (1 user)",
            Box::new(|| {
                store
                    .models("p0", start, end, Unit::Hour, &one)
                    .unwrap()
                    .len()
            }),
        ),
        (
            "/usage/models day, user_tags (70 users)",
            Box::new(|| {
                store
                    .models("p0", start, end, Unit::Day, &team)
                    .unwrap()
                    .len()
            }),
        ),
        (
            "/usage/models hour, user_tags (70 users)",
            Box::new(|| {
                store
                    .models("p0", start, end, Unit::Hour, &team)
                    .unwrap()
                    .len()
            }),
        ),
    ];
    for (what, query) in queries {
        let mut times = Vec::new();
        let mut rows = 0;
        for _ in 0..5 {
            let t = std::time::Instant::now();
            rows = query();
            times.push(t.elapsed());
        }
        let first = times[0];
        times.sort();
        eprintln!(
            "{name}: {what} over 30 days of p0: median {:.1?} (first {first:.1?}), {rows} rows",
            times[2]
        );
    }
    measure_request_log(name, store.as_ref(), (start, end));
    measure_stats(name, store.as_ref(), end);
}

/// How long opening a database written before the rollups held the console's sums takes (it
/// fills them from the records once, on its way to schema V1).
fn measure_backfill() {
    let n: u64 = std::env::var("LEDGER_MEASURE_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let which = std::env::var("LEDGER_MEASURE_STORE").unwrap_or_else(|_| "both".to_owned());
    let span = 30 * 24 * HOUR_US;
    let fill = |store: &dyn Store| {
        let mut batch = Vec::with_capacity(1_000);
        for i in 0..n {
            let at = H + (i128::from(i) * i128::from(span) / i128::from(n)) as i64;
            let mut r = log_record(i, at);
            r.request_id = format!("r{i}");
            r.latency_us = ((i * 7_919) % 100_000) as i64 * 97 + 17;
            r.ttft_us = (i % 3 == 0).then_some(((i * 31) % 5_000) as i64 * 101);
            batch.push(r);
            if batch.len() == 1_000 {
                store.write(&std::mem::take(&mut batch)).unwrap();
            }
        }
        store.write(&batch).unwrap();
    };
    if which == "sqlite" || which == "both" {
        let dir =
            std::env::temp_dir().join(format!("wasmgate-ledger-backfill-m-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("m.db");
        fill(&SqliteStore::open(&path).unwrap());
        {
            let conn = rusqlite::Connection::open(&path).unwrap();
            strip_stats_sums(&mut |sql| conn.execute_batch(sql).unwrap(), Dialect::Sqlite);
        }
        let t = std::time::Instant::now();
        drop(SqliteStore::open(&path).unwrap());
        eprintln!("sqlite: backfill of {n} records: {:.1?}", t.elapsed());
        let _ = std::fs::remove_dir_all(&dir);
    }
    if which == "postgres" || which == "both" {
        let cluster = pg::PgCluster::start(&[]);
        let url = cluster.database();
        fill(&PostgresStore::open(&url).unwrap());
        {
            let mut client = ::postgres::Client::connect(&url, ::postgres::NoTls).unwrap();
            strip_stats_sums(
                &mut |sql| client.batch_execute(sql).unwrap(),
                Dialect::Postgres,
            );
        }
        let t = std::time::Instant::now();
        // Connecting creates what is missing and fills it.
        PostgresStore::open(&url).unwrap().count().unwrap();
        eprintln!("postgres: backfill of {n} records: {:.1?}", t.elapsed());
    }
}

/// The console's figures (`/usage/stats`) of `p0` over the ranges the console offers, ending at
/// `end_us`, each in the bucket the console asks for.
fn measure_stats(name: &str, store: &dyn Store, end_us: i64) {
    for (what, length, step) in [
        ("last hour by minute", HOUR_US, 60_000_000),
        ("last 24 hours by hour", 24 * HOUR_US, HOUR_US),
        ("last 7 days by hour", 7 * 24 * HOUR_US, HOUR_US),
        ("last 30 days by day", 30 * 24 * HOUR_US, 24 * HOUR_US),
    ] {
        let q = stats::StatsQuery {
            project: "p0".to_owned(),
            start_us: end_us - length,
            end_us,
            step_us: step,
        };
        let mut times = Vec::new();
        let mut requests = 0;
        for _ in 0..3 {
            let t = std::time::Instant::now();
            requests = stats::stats(store, &q).unwrap().total.requests;
            times.push(t.elapsed());
        }
        times.sort();
        eprintln!(
            "{name}: stats {what}: median {:.1?}, {requests} records",
            times[1]
        );
    }
}

/// The request log's first page (50 records) over 30 days of `p0`, unfiltered and under each
/// filter; a later page; one request by id.
fn measure_request_log(name: &str, store: &dyn Store, (start_us, end_us): (i64, i64)) {
    use requests::{RequestQuery, StatusClass};
    let base = RequestQuery {
        project: "p0".to_owned(),
        start_us,
        end_us,
        limit: 50,
        ..RequestQuery::default()
    };
    let user = |f: UserFilter| RequestQuery {
        users: f,
        ..base.clone()
    };
    let tenth_page = {
        let mut q = base.clone();
        q.limit = 500;
        let page = requests::page(store, &q).unwrap();
        q.after = page.last().map(requests::Position::of);
        q.limit = 50;
        q
    };
    let queries: Vec<(&str, RequestQuery)> = vec![
        ("no filter", base.clone()),
        ("page after 500 records", tenth_page),
        (
            "model (1 of 20)",
            RequestQuery {
                model: Some("o3".to_owned()),
                ..base.clone()
            },
        ),
        (
            "provider",
            RequestQuery {
                provider: Some("gemini".to_owned()),
                ..base.clone()
            },
        ),
        (
            "api_key_id (1 of 20)",
            RequestQuery {
                api_key_id: Some("key_7".to_owned()),
                ..base.clone()
            },
        ),
        (
            "status error (1 %)",
            RequestQuery {
                status: Some(StatusClass::Error),
                ..base.clone()
            },
        ),
        (
            "status 5xx (1 %)",
            RequestQuery {
                status: Some(StatusClass::ServerError),
                ..base.clone()
            },
        ),
        (
            "dialect openai.embeddings (10 %)",
            RequestQuery {
                operation: Some("embeddings".to_owned()),
                ..base.clone()
            },
        ),
        (
            "user_id (1 of 700)",
            user(UserFilter {
                user_id: Some("user-7".to_owned()),
                ..UserFilter::default()
            }),
        ),
        (
            "user_tags (70 users)",
            user(UserFilter {
                user_tags: vec!["team-3".to_owned()],
                ..UserFilter::default()
            }),
        ),
        (
            "model + status error + user tag",
            RequestQuery {
                model: Some("gpt-4o".to_owned()),
                status: Some(StatusClass::Error),
                users: UserFilter {
                    user_tags: vec!["team-3".to_owned()],
                    ..UserFilter::default()
                },
                ..base.clone()
            },
        ),
    ];
    for (what, query) in queries {
        let mut times = Vec::new();
        let mut rows = 0;
        for _ in 0..5 {
            let t = std::time::Instant::now();
            rows = requests::page(store, &query).unwrap().len();
            times.push(t.elapsed());
        }
        let first = times[0];
        times.sort();
        eprintln!(
            "{name}: /usage/requests {what}: median {:.2?} (first {first:.2?}), {rows} rows",
            times[2]
        );
    }
    let mut times = Vec::new();
    for i in 0..5 {
        let id = format!("r{}", 1_000 + i * 7_919);
        let t = std::time::Instant::now();
        let found = store.project_record("p0", &id).unwrap();
        times.push(t.elapsed());
        std::hint::black_box(found);
    }
    times.sort();
    eprintln!("{name}: /usage/requests/{{id}}: median {:.2?}", times[2]);
}
