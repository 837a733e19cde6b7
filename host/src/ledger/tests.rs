use super::time::{HOUR_US, format_utc};
use super::*;

// 2024-02-29 13:00:00 UTC.
const H: i64 = 1_709_211_600_000_000;

fn record(time_us: i64, model: &str, input: u64, output: u64, cost: i64) -> UsageRecord {
    UsageRecord {
        request_id: format!("req-{time_us}"),
        time_us,
        project: "p".to_owned(),
        provider: Some("openai".to_owned()),
        model: Some(model.to_owned()),
        operation: "chat.completions".to_owned(),
        input_tokens: input,
        output_tokens: output,
        cost_micros: Some(cost),
        status: 200,
        ..UsageRecord::default()
    }
}

fn store_with(records: &[UsageRecord]) -> sqlite::SqliteStore {
    let store = sqlite::SqliteStore::in_memory().unwrap();
    store.write(records).unwrap();
    store
}

#[test]
fn a_record_reads_back_whole_by_its_request_id() {
    let mut full = record(H, "a", 5, 6, 7);
    full.api_key_id = Some("key-1".to_owned());
    full.user_id = Some("u".to_owned());
    full.user_name = Some("Ada".to_owned());
    full.user_tags = vec!["beta".to_owned(), "eu".to_owned()];
    full.cached_input_tokens = 3;
    full.latency_us = 1234;
    full.status = 429;
    full.error_type = Some("rate_limit_exceeded".to_owned());
    full.estimated = true;
    let mut unpriced = record(H + 1, "b", 1, 1, 0);
    unpriced.cost_micros = None;
    let store = store_with(&[full.clone(), unpriced.clone()]);
    assert_eq!(store.record(&full.request_id).unwrap(), Some(full));
    assert_eq!(store.record(&unpriced.request_id).unwrap(), Some(unpriced));
    assert_eq!(store.record("nope").unwrap(), None);
}

#[test]
fn totals_mix_whole_hours_from_the_rollup_with_raw_edges() {
    let records = [
        record(H - 1, "a", 1, 1, 1),                    // before the range
        record(H + 10, "a", 10, 20, 30),                // edge (partial first hour)
        record(H + HOUR_US, "a", 100, 200, 300),        // whole hour
        record(H + HOUR_US + 5, "b", 1000, 2000, 3000), // whole hour
        record(H + 3 * HOUR_US + 7, "b", 7, 7, 7),      // edge (partial last hour)
        record(H + 3 * HOUR_US + 9, "b", 9, 9, 9),      // at the end: excluded
    ];
    let store = store_with(&records);
    let t = store.total("p", H + 1, H + 3 * HOUR_US + 9).unwrap();
    assert_eq!(
        (t.input_tokens, t.output_tokens, t.cost_micros, t.requests),
        (1117, 2227, 3337, 4)
    );
    assert_eq!(
        store.total("other", 0, i64::MAX / 2).unwrap(),
        Totals::default()
    );
    // Inside one hour: raw rows only.
    let t = store.total("p", H + 5, H + 20).unwrap();
    assert_eq!(t.input_tokens, 10);
}

fn key(id: &str, project: &str, created_us: i64) -> ApiKey {
    ApiKey {
        id: id.to_owned(),
        project: project.to_owned(),
        name: Some(format!("{id} name")),
        hash: format!("hash-of-{id}"),
        prefix: "wg-abc".to_owned(),
        created_us,
        revoked_us: None,
    }
}

/// Shared by every store: keys are found by hash, listed per project, revoked once.
pub(super) fn check_keys(store: &dyn Store) {
    let (a, b, c) = (
        key("key_a", "p", 1),
        key("key_b", "q", 2),
        key("key_c", "p", 3),
    );
    for k in [&a, &b, &c] {
        store.insert_key(k).unwrap();
    }
    assert!(store.insert_key(&a).is_err(), "ids are unique");
    assert_eq!(store.key_by_hash("hash-of-key_b").unwrap(), Some(b.clone()));
    assert_eq!(store.key_by_hash("nope").unwrap(), None);
    assert_eq!(store.keys(Some("p")).unwrap(), vec![a.clone(), c.clone()]);
    assert_eq!(store.keys(None).unwrap().len(), 3);
    assert!(store.revoke_key("key_a", 42).unwrap());
    assert!(!store.revoke_key("key_a", 43).unwrap(), "already revoked");
    assert!(!store.revoke_key("key_zzz", 43).unwrap());
    let revoked = store.key_by_hash("hash-of-key_a").unwrap().unwrap();
    assert_eq!(revoked.revoked_us, Some(42));
}

#[test]
fn sqlite_keeps_api_keys() {
    check_keys(&sqlite::SqliteStore::in_memory().unwrap());
}

#[test]
fn model_buckets_are_the_same_from_rollups_and_raw_rows() {
    let records = [
        record(H + 10, "a", 10, 20, 30),
        record(H + HOUR_US + 60_000_000, "a", 100, 200, 300),
        record(H + HOUR_US + 5, "b", 1000, 2000, 3000),
    ];
    let store = store_with(&records);
    let hours = store.models("p", H, H + 2 * HOUR_US, Unit::Hour).unwrap();
    let shape: Vec<_> = hours
        .iter()
        .map(|b| {
            (
                format_utc(b.bucket_us),
                b.model.as_str(),
                b.totals.input_tokens,
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            ("2024-02-29 13:00:00".to_owned(), "a", 10),
            ("2024-02-29 14:00:00".to_owned(), "a", 100),
            ("2024-02-29 14:00:00".to_owned(), "b", 1000),
        ]
    );
    let days = store.models("p", H, H + 2 * HOUR_US, Unit::Day).unwrap();
    assert_eq!(days.len(), 2);
    assert_eq!(days[0].totals.input_tokens, 110);
    let minutes = store.models("p", H, H + 2 * HOUR_US, Unit::Minute).unwrap();
    assert_eq!(minutes.len(), 3);
    assert_eq!(format_utc(minutes[1].bucket_us), "2024-02-29 14:00:00");
    assert_eq!(format_utc(minutes[2].bucket_us), "2024-02-29 14:01:00");
}

#[tokio::test]
async fn shutdown_writes_every_queued_record() {
    let store = Arc::new(sqlite::SqliteStore::in_memory().unwrap());
    let ledger = Ledger::with_store(store.clone(), 10_000);
    for i in 0..2_500 {
        ledger.record(record(H + i, "a", 1, 1, 1));
    }
    ledger.shutdown().await;
    assert_eq!(store.count().unwrap(), 2_500);
    assert_eq!(ledger.dropped(), 0);
    // After shutdown, records are refused and counted.
    ledger.record(record(H, "a", 1, 1, 1));
    assert_eq!(ledger.dropped(), 1);
}

/// A store that blocks writes until told, to fill the queue.
struct Stuck(std::sync::Mutex<()>);

impl Store for Stuck {
    fn write(&self, _: &[UsageRecord]) -> anyhow::Result<()> {
        drop(self.0.lock());
        Ok(())
    }
    fn total(&self, _: &str, _: i64, _: i64) -> anyhow::Result<Totals> {
        Ok(Totals::default())
    }
    fn models(&self, _: &str, _: i64, _: i64, _: Unit) -> anyhow::Result<Vec<ModelBucket>> {
        Ok(Vec::new())
    }
    fn count(&self) -> anyhow::Result<u64> {
        Ok(0)
    }
    fn insert_key(&self, _: &ApiKey) -> anyhow::Result<()> {
        Ok(())
    }
    fn keys(&self, _: Option<&str>) -> anyhow::Result<Vec<ApiKey>> {
        Ok(Vec::new())
    }
    fn revoke_key(&self, _: &str, _: i64) -> anyhow::Result<bool> {
        Ok(false)
    }
    fn key_by_hash(&self, _: &str) -> anyhow::Result<Option<ApiKey>> {
        Ok(None)
    }
    fn record(&self, _: &str) -> anyhow::Result<Option<UsageRecord>> {
        Ok(None)
    }
}

#[tokio::test]
async fn a_full_queue_drops_and_counts() {
    let stuck = Arc::new(Stuck(std::sync::Mutex::new(())));
    let guard = stuck.0.lock().unwrap();
    let ledger = Ledger::with_store(stuck.clone(), 4);
    for i in 0..20 {
        ledger.record(record(H + i, "a", 1, 1, 1));
    }
    // The writer may hold one batch; the queue holds 4; the rest is dropped.
    assert!(ledger.dropped() >= 12, "{}", ledger.dropped());
    assert!(ledger.queued() <= 4);
    drop(guard);
    ledger.shutdown().await;
    assert_eq!(ledger.queued(), 0);
}

/// Ingest rate and query times on a file database: `cargo test --release --lib
/// ledger::tests::measure -- --ignored --nocapture` (LEDGER_MEASURE_RECORDS, default 1M).
#[tokio::test(flavor = "multi_thread")]
#[ignore = "a measurement, not a check"]
async fn measure() {
    let n: i64 = std::env::var("LEDGER_MEASURE_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let dir = std::env::temp_dir().join(format!("wasmgate-ledger-measure-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = Arc::new(sqlite::SqliteStore::open(&dir.join("m.db")).unwrap());
    let ledger = Ledger::with_store(store.clone(), 100_000);
    let span = 30 * 24 * HOUR_US;
    let started = std::time::Instant::now();
    for i in 0..n {
        let mut r = record(
            H + i * span / n,
            ["a", "b", "c", "d"][(i % 4) as usize],
            100,
            50,
            7,
        );
        r.user_id = Some(format!("u{}", i % 100));
        while ledger.queued() > 90_000 {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        ledger.record(r);
    }
    ledger.shutdown().await;
    let ingest = started.elapsed();
    assert_eq!(ledger.dropped(), 0);
    eprintln!(
        "ingest: {n} records in {ingest:?} = {:.0} records/s",
        n as f64 / ingest.as_secs_f64()
    );
    for (what, unit) in [
        ("total", None),
        ("models/hour", Some(Unit::Hour)),
        ("models/day", Some(Unit::Day)),
    ] {
        let t = std::time::Instant::now();
        match unit {
            None => assert_eq!(
                store.total("p", H + 1, H + span - 1).unwrap().requests as i64 + 1,
                n
            ),
            Some(unit) => assert!(
                !store
                    .models("p", H + 1, H + span - 1, unit)
                    .unwrap()
                    .is_empty()
            ),
        }
        eprintln!("{what} over 30 days: {:?}", t.elapsed());
    }
    let _ = std::fs::remove_dir_all(&dir);
}
