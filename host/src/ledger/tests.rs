//! The ledger's tests. Store-level checks take a `&dyn Store` and run against SQLite and a real
//! PostgreSQL server (a throwaway cluster, see tests/common/postgres.rs).

use std::time::Duration;

use super::responses::StoredResponse;
use super::time::{HOUR_US, format_utc};
use super::*;

mod alerts;
mod audit;
mod batches;
mod columns;
mod records;
use alerts::{check_alert_queries, check_spend_by_scope};
use batches::{check_batch_records, check_files_and_batches};
use columns::check_every_field_round_trips;
use records::{by, log_record, record};

#[path = "../../../tests/common/postgres.rs"]
#[allow(dead_code)]
pub(super) mod pg;

/// A `#[test]` per store for a check taking `&dyn Store` (on an empty store).
macro_rules! on_every_store {
    ($($check:ident),* $(,)?) => {$(
        mod $check {
            #[test]
            fn sqlite() {
                let store = crate::ledger::sqlite::SqliteStore::in_memory().unwrap();
                super::$check(&store);
            }

            #[test]
            fn postgres() {
                let (url, _cluster) = super::pg::database();
                let store = crate::ledger::postgres::PostgresStore::open(&url).unwrap();
                super::$check(&store);
            }
        }
    )*};
}

on_every_store!(
    check_record,
    check_every_field_round_trips,
    check_totals,
    check_cache_hits,
    check_model_buckets,
    check_keys,
    check_key_limits_and_spend,
    check_admin_keys,
    check_user_filter,
    check_many_users_one_bucket,
    check_rollups_agree_with_records,
    check_batches_are_written_once,
    check_request_pages,
    check_one_request_per_project,
    check_stored_responses,
    check_files_and_batches,
    check_batch_records,
    check_stats,
    check_stats_from_rollups_equal_the_records,
    check_alert_queries,
    check_spend_by_scope,
);

// 2024-02-29 13:00:00 UTC.
const H: i64 = 1_709_211_600_000_000;

/// A record reads back whole by its request id.
fn check_record(store: &dyn Store) {
    let mut full = record(H, "a", 5, 6, 7);
    full.api_key_id = Some("key-1".to_owned());
    full.user_id = Some("u".to_owned());
    full.user_name = Some("Ada".to_owned());
    full.user_tags = vec!["beta".to_owned(), "eu".to_owned()];
    full.cached_input_tokens = 3;
    full.reasoning_tokens = 4;
    full.cache_write_tokens = 2;
    full.latency_us = 1234;
    full.ttft_us = Some(321);
    full.status = 429;
    full.error_type = Some("rate_limit_exceeded".to_owned());
    full.estimated = true;
    let mut unpriced = record(H + 1, "b", 1, 1, 0);
    unpriced.cost_micros = None;
    store.write(&[full.clone(), unpriced.clone()]).unwrap();
    assert_eq!(store.record(&full.request_id).unwrap(), Some(full));
    assert_eq!(store.record(&unpriced.request_id).unwrap(), Some(unpriced));
    assert_eq!(store.record("nope").unwrap(), None);
}

/// Totals mix whole hours from the rollup with raw edges.
fn check_totals(store: &dyn Store) {
    let records = [
        record(H - 1, "a", 1, 1, 1),                    // before the range
        record(H + 10, "a", 10, 20, 30),                // edge (partial first hour)
        record(H + HOUR_US, "a", 100, 200, 300),        // whole hour
        record(H + HOUR_US + 5, "b", 1000, 2000, 3000), // whole hour
        record(H + 3 * HOUR_US + 7, "b", 7, 7, 7),      // edge (partial last hour)
        record(H + 3 * HOUR_US + 9, "b", 9, 9, 9),      // at the end: excluded
    ];
    store.write(&records).unwrap();
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

/// Cache hits and their savings read back on a record, and sum in totals from the rollups (a
/// whole hour) and from the raw edges alike.
fn check_cache_hits(store: &dyn Store) {
    let hit = |time_us: i64, saved: i64| {
        let mut r = record(time_us, "a", 0, 0, 0);
        r.cache_hit = true;
        r.saved_cost_micros = Some(saved);
        r
    };
    let records = [
        record(H + 10, "a", 10, 20, 30),
        hit(H + 11, 30),
        hit(H + HOUR_US + 1, 300),
        record(H + HOUR_US + 2, "a", 100, 200, 300),
    ];
    store.write(&records).unwrap();
    assert_eq!(
        store.record(&records[1].request_id).unwrap().as_ref(),
        Some(&records[1])
    );
    let t = store.total("p", H + 1, H + 2 * HOUR_US).unwrap();
    assert_eq!((t.requests, t.cache_hits, t.saved_cost_micros), (4, 2, 330));
    assert_eq!(t.cost_micros, 330, "hits cost nothing");
    // `/usage/models` sums them per model, from the rollups and from the raw edges.
    for start in [H, H + 1] {
        let buckets = store
            .models(
                "p",
                start,
                H + 2 * HOUR_US,
                Unit::Hour,
                &UserFilter::default(),
            )
            .unwrap();
        let hits: u64 = buckets.iter().map(|b| b.totals.cache_hits).sum();
        let saved: i64 = buckets.iter().map(|b| b.totals.saved_cost_micros).sum();
        assert_eq!((hits, saved), (2, 330), "from {start}");
    }
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
        limits: crate::ledger::KeyLimits::default(),
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

/// A key's limits read back as written, are replaced by an update (not of a revoked key), and
/// its spend sums its own records from the given time on.
pub(super) fn check_key_limits_and_spend(store: &dyn Store) {
    let mut a = key("key_a", "p", 1);
    a.limits = KeyLimits {
        models: vec!["openai/*".to_owned(), "gpt-4o".to_owned()],
        expires_us: Some(H),
        requests_per_minute: Some(3),
        tokens_per_minute: None,
        budget: Some(Budget {
            micros: 5_000_000,
            period: BudgetPeriod::Day,
        }),
        guards: vec!["redact".to_owned(), "no-cards".to_owned()],
        tools: vec!["search/*".to_owned(), "files/read_*".to_owned()],
        passthrough: vec!["openai/files*".to_owned(), "anthropic/*".to_owned()],
    };
    store.insert_key(&a).unwrap();
    assert_eq!(store.key("key_a").unwrap(), Some(a.clone()));
    assert_eq!(store.key_by_hash("hash-of-key_a").unwrap(), Some(a.clone()));
    assert_eq!(store.key("key_zzz").unwrap(), None);

    let limits = KeyLimits {
        tokens_per_minute: Some(1000),
        budget: Some(Budget {
            micros: 7,
            period: BudgetPeriod::Total,
        }),
        passthrough: vec!["gemini/cachedContents*".to_owned()],
        ..KeyLimits::default()
    };
    assert!(store.update_key("key_a", Some("renamed"), &limits).unwrap());
    let updated = store.key("key_a").unwrap().unwrap();
    assert_eq!(
        (updated.name.as_deref(), &updated.limits),
        (Some("renamed"), &limits)
    );
    assert!(!store.update_key("key_zzz", None, &limits).unwrap());
    store.revoke_key("key_a", 5).unwrap();
    assert!(
        !store
            .update_key("key_a", None, &KeyLimits::default())
            .unwrap()
    );

    let mut records = [
        record(H, "a", 1, 1, 100),
        record(H + 10, "a", 1, 1, 20),
        record(H + 20, "a", 1, 1, 3),
    ];
    records[0].api_key_id = Some("key_a".to_owned());
    records[1].api_key_id = Some("key_a".to_owned());
    records[2].api_key_id = Some("key_b".to_owned());
    store.write(&records).unwrap();
    assert_eq!(store.key_spend("key_a", 0).unwrap(), 120);
    assert_eq!(store.key_spend("key_a", H + 1).unwrap(), 20);
    assert_eq!(store.key_spend("key_c", 0).unwrap(), 0);
}

/// Admin keys: found by hash, listed, revoked once; apart from project keys.
pub(super) fn check_admin_keys(store: &dyn Store) {
    let admin = |id: &str, at: i64| AdminKey {
        id: id.to_owned(),
        name: Some("ops".to_owned()),
        hash: format!("hash-of-{id}"),
        prefix: "wgadm_ab".to_owned(),
        created_us: at,
        revoked_us: None,
    };
    let (a, b) = (admin("adm_a", 1), admin("adm_b", 2));
    store.insert_admin_key(&a).unwrap();
    store.insert_admin_key(&b).unwrap();
    assert!(store.insert_admin_key(&a).is_err(), "ids are unique");
    assert_eq!(
        store.admin_key_by_hash("hash-of-adm_b").unwrap(),
        Some(b.clone())
    );
    assert_eq!(store.key_by_hash("hash-of-adm_b").unwrap(), None);
    assert_eq!(store.admin_keys().unwrap(), vec![a.clone(), b]);
    assert!(store.revoke_admin_key("adm_a", 9).unwrap());
    assert!(!store.revoke_admin_key("adm_a", 10).unwrap());
    let revoked = store.admin_key_by_hash("hash-of-adm_a").unwrap().unwrap();
    assert_eq!(revoked.revoked_us, Some(9));
}

/// Model buckets are the same from rollups and raw rows.
fn check_model_buckets(store: &dyn Store) {
    let records = [
        record(H + 10, "a", 10, 20, 30),
        record(H + HOUR_US + 60_000_000, "a", 100, 200, 300),
        record(H + HOUR_US + 5, "b", 1000, 2000, 3000),
    ];
    store.write(&records).unwrap();
    let all = UserFilter::default();
    let hours = store
        .models("p", H, H + 2 * HOUR_US, Unit::Hour, &all)
        .unwrap();
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
    let days = store
        .models("p", H, H + 2 * HOUR_US, Unit::Day, &all)
        .unwrap();
    assert_eq!(days.len(), 2);
    assert_eq!(days[0].totals.input_tokens, 110);
    let minutes = store
        .models("p", H, H + 2 * HOUR_US, Unit::Minute, &all)
        .unwrap();
    assert_eq!(minutes.len(), 3);
    assert_eq!(format_utc(minutes[1].bucket_us), "2024-02-29 14:00:00");
    assert_eq!(format_utc(minutes[2].bucket_us), "2024-02-29 14:01:00");
}

/// Per-model input tokens of an answer, as `(bucket, model, input)`.
fn inputs(buckets: &[ModelBucket]) -> Vec<(String, String, u64)> {
    buckets
        .iter()
        .map(|b| {
            (
                format_utc(b.bucket_us),
                b.model.clone(),
                b.totals.input_tokens,
            )
        })
        .collect()
}

/// User filters: by id, name, any of the tags, combined with each other and with the range,
/// the same from whole hours (rollup) and edges (raw rows).
fn check_user_filter(store: &dyn Store) {
    let mut q = by(
        record(H + HOUR_US + 13, "a", 1_000_000, 0, 0),
        "u1",
        "Ada",
        &["beta"],
    );
    q.project = "q".to_owned();
    let records = [
        by(record(H + 10, "a", 1, 0, 0), "u1", "Ada", &["beta"]), // edge
        by(
            record(H + HOUR_US + 5, "a", 10, 0, 0),
            "u1",
            "Ada",
            &["beta"],
        ),
        by(
            record(H + HOUR_US + 7, "b", 100, 0, 0),
            "u2",
            "Bob",
            &["beta", "vip"],
        ),
        by(
            record(H + 2 * HOUR_US + 3, "a", 1000, 0, 0),
            "u3",
            "Ada",
            &[],
        ), // edge
        // u1 renamed and retagged: matched by what each record was sent with.
        by(
            record(H + HOUR_US + 9, "a", 10_000, 0, 0),
            "u1",
            "Ada L.",
            &["vip"],
        ),
        record(H + HOUR_US + 11, "a", 100_000, 0, 0), // no user
        q,
    ];
    store.write(&records).unwrap();
    let (start, end) = (H + 1, H + 2 * HOUR_US + 100);
    let day = "2024-02-29 00:00:00".to_owned();
    let ask =
        |filter: UserFilter| inputs(&store.models("p", start, end, Unit::Day, &filter).unwrap());
    let id = |id: &str| UserFilter {
        user_id: Some(id.to_owned()),
        ..UserFilter::default()
    };
    let name = |name: &str| UserFilter {
        user_name: Some(name.to_owned()),
        ..UserFilter::default()
    };
    let tags = |tags: &[&str]| UserFilter {
        user_tags: tags.iter().map(|t| (*t).to_owned()).collect(),
        ..UserFilter::default()
    };
    let a = |n: u64| (day.clone(), "a".to_owned(), n);
    let b = |n: u64| (day.clone(), "b".to_owned(), n);

    assert_eq!(ask(UserFilter::default()), [a(111_011), b(100)]);
    assert_eq!(ask(id("u1")), [a(10_011)]);
    assert_eq!(ask(name("Ada")), [a(1_011)]);
    assert_eq!(ask(tags(&["vip"])), [a(10_000), b(100)]);
    assert_eq!(ask(tags(&["vip", "beta"])), [a(10_011), b(100)], "any tag");
    assert_eq!(
        ask(UserFilter {
            user_name: Some("Ada L.".to_owned()),
            ..id("u1")
        }),
        [a(10_000)]
    );
    assert_eq!(
        ask(UserFilter {
            user_tags: vec!["beta".to_owned()],
            ..id("u1")
        }),
        [a(11)]
    );
    assert_eq!(ask(id("nobody")), []);
    assert_eq!(ask(tags(&["nope"])), []);

    // The range narrows a user filter: the whole hour 14:00 only, by hour.
    let hour = store
        .models("p", H + HOUR_US, H + 2 * HOUR_US, Unit::Hour, &id("u1"))
        .unwrap();
    assert_eq!(
        inputs(&hour),
        [("2024-02-29 14:00:00".to_owned(), "a".to_owned(), 10_010)]
    );
    assert_eq!(hour[0].totals.requests, 2);
    // Minutes come from raw rows only.
    let minutes = store
        .models("p", start, end, Unit::Minute, &id("u1"))
        .unwrap();
    assert_eq!(
        inputs(&minutes),
        [
            ("2024-02-29 13:00:00".to_owned(), "a".to_owned(), 1),
            ("2024-02-29 14:00:00".to_owned(), "a".to_owned(), 10_010),
        ]
    );
    // Another project's user of the same id is not this one's.
    let other = store.models("q", start, end, Unit::Day, &id("u1")).unwrap();
    assert_eq!(inputs(&other), [a(1_000_000)]);
}

/// Every answer, whichever rollups and raw edges it is read from, equals the sums of the raw
/// records it covers: over several days, with ranges aligned or not, every unit, and filters
/// matching one user, a few, or more users than one query takes.
fn check_rollups_agree_with_records(store: &dyn Store) {
    use super::time::{DAY_US, bucket_start};
    const USERS: u64 = 620;
    let day0 = H - 13 * HOUR_US;
    let records: Vec<UsageRecord> = (0..3_000u64)
        .map(|i| {
            let h = i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            // Four days and a bit, in time order as a gateway writes them.
            let at = day0 + (i as i64) * (4 * DAY_US + 5 * HOUR_US) / 3_000 + (h % 1_000) as i64;
            let model = ["m1", "m2", "m3"][(h >> 8) as usize % 3];
            let mut r = record(
                at,
                model,
                1 + (h >> 16) % 97,
                (h >> 24) % 89,
                (h % 1013) as i64,
            );
            r.request_id = format!("agree-{i}");
            r.project = if i % 7 == 0 { "other" } else { "p" }.to_owned();
            let user = (h >> 32) % USERS;
            match i % 11 {
                0 => {}              // no user
                1 => r.model = None, // failed before a target: not in /usage/models
                _ => {
                    r = by(
                        r,
                        &format!("u{user}"),
                        &format!("name {}", user % 40),
                        &["all", &format!("team-{}", user % 5)],
                    );
                }
            }
            r
        })
        .collect();
    for batch in records.chunks(700) {
        store.write(batch).unwrap();
    }
    let expected = |start: i64, end: i64, unit: Unit, filter: &UserFilter| {
        let mut sums: std::collections::BTreeMap<(i64, String, String), Totals> =
            std::collections::BTreeMap::new();
        for r in &records {
            let user_ok = filter.is_empty()
                || (r.user_id.is_some()
                    && filter.matches(
                        r.user_id.as_deref().unwrap_or(""),
                        r.user_name.as_deref().unwrap_or(""),
                        &r.user_tags,
                    ));
            if r.project != "p" || r.time_us < start || r.time_us >= end || !user_ok {
                continue;
            }
            let Some(model) = &r.model else { continue };
            let key = (
                bucket_start(r.time_us, unit),
                r.provider.clone().unwrap_or_default(),
                model.clone(),
            );
            sums.entry(key).or_default().add(Totals {
                input_tokens: r.input_tokens,
                output_tokens: r.output_tokens,
                cost_micros: r.cost_micros.unwrap_or(0),
                requests: 1,
                ..Totals::default()
            });
        }
        sums.into_iter()
            .map(|((bucket_us, provider, model), totals)| ModelBucket {
                bucket_us,
                provider,
                model,
                totals,
            })
            .collect::<Vec<_>>()
    };
    let filters = [
        UserFilter::default(),
        UserFilter {
            user_id: Some("u17".to_owned()),
            ..UserFilter::default()
        },
        UserFilter {
            user_name: Some("name 3".to_owned()),
            ..UserFilter::default()
        },
        UserFilter {
            user_tags: vec!["team-2".to_owned(), "team-4".to_owned()],
            ..UserFilter::default()
        },
        // More users than one query's key list.
        UserFilter {
            user_tags: vec!["all".to_owned()],
            ..UserFilter::default()
        },
    ];
    let ranges = [
        (day0, day0 + 4 * DAY_US), // whole days
        (
            day0 + 7 * HOUR_US + 123,
            day0 + 3 * DAY_US + 5 * HOUR_US + 77,
        ), // ragged
        (0, i64::MAX / 4),         // everything
        (day0 + DAY_US + 60, day0 + DAY_US + 2_000_000_000), // within one hour
    ];
    for (start, end) in ranges {
        let all = expected(start, end, Unit::Hour, &UserFilter::default());
        let mut total = Totals::default();
        all.iter().for_each(|b| total.add(b.totals));
        let stored = store.total("p", start, end).unwrap();
        // The total also counts records without a model.
        assert!(stored.requests >= total.requests, "{start}..{end}");
        assert_eq!(stored.input_tokens - total.input_tokens, {
            let no_model: u64 = records
                .iter()
                .filter(|r| r.project == "p" && r.model.is_none())
                .filter(|r| r.time_us >= start && r.time_us < end)
                .map(|r| r.input_tokens)
                .sum();
            no_model
        });
        for unit in [Unit::Minute, Unit::Hour, Unit::Day, Unit::Week, Unit::Month] {
            for filter in &filters {
                let want = expected(start, end, unit, filter);
                // The broad filters see records in every range (the check checks something).
                if filter.is_empty() || filter.user_tags == ["all"] {
                    assert!(!want.is_empty(), "{start}..{end} {unit:?} {filter:?}");
                }
                assert_eq!(
                    store.models("p", start, end, unit, filter).unwrap(),
                    want,
                    "{start}..{end} {unit:?} {filter:?}"
                );
            }
        }
    }
}

/// A batch written again under its id (a retry after a lost acknowledgement) changes nothing.
fn check_batches_are_written_once(store: &dyn Store) {
    let batch: Vec<_> = (0..10)
        .map(|i| {
            let mut r = by(record(H + i, "a", 5, 6, 7), "u", "Ada", &[]);
            r.request_id = format!("once-{i}");
            r
        })
        .collect();
    let id = BatchId::new();
    assert!(store.write_once(&id, &batch).unwrap());
    assert!(!store.write_once(&id, &batch).unwrap());
    // A new id is a new batch, but a record the store holds (the same request id and start
    // time: the journal read again after a crash) is skipped, rollups included, as is a second
    // copy in one batch; the same request id at another time (a client reusing its
    // `x-request-id`) is another request.
    let mut again = batch[0].clone();
    again.time_us += 1;
    assert!(
        store
            .write_once(&BatchId::new(), &[batch[0].clone(), again.clone(), again])
            .unwrap()
    );
    assert_eq!(store.count().unwrap(), 11);
    let total = store.total("p", H, H + HOUR_US).unwrap();
    assert_eq!((total.input_tokens, total.requests), (55, 11));
    let user = UserFilter {
        user_id: Some("u".to_owned()),
        ..UserFilter::default()
    };
    let buckets = store
        .models("p", H, H + HOUR_US, Unit::Hour, &user)
        .unwrap();
    assert_eq!(
        inputs(&buckets),
        [("2024-02-29 13:00:00".to_owned(), "a".to_owned(), 55)]
    );
}

/// Many users in one hour make one unfiltered bucket per model (from the per-model rollup).
fn check_many_users_one_bucket(store: &dyn Store) {
    let records: Vec<_> = (0..60)
        .map(|i| {
            let mut r = by(record(H + i, "a", 2, 3, 5), &format!("u{i}"), "", &[]);
            r.request_id = format!("many-{i}");
            r
        })
        .collect();
    // Two batches: the second adds to the rows the first made.
    store.write(&records[..25]).unwrap();
    store.write(&records[25..]).unwrap();
    let all = store
        .models("p", H, H + HOUR_US, Unit::Hour, &UserFilter::default())
        .unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(
        all[0].totals,
        Totals {
            input_tokens: 120,
            output_tokens: 180,
            cost_micros: 300,
            requests: 60,
            ..Totals::default()
        }
    );
    let one = UserFilter {
        user_id: Some("u7".to_owned()),
        ..UserFilter::default()
    };
    let mine = store.models("p", H, H + HOUR_US, Unit::Hour, &one).unwrap();
    assert_eq!(mine[0].totals.requests, 1);
    assert_eq!(store.total("p", H, H + HOUR_US).unwrap().requests, 60);
    assert_eq!(store.count().unwrap(), 60);
}

/// The request log's pages equal a filter over the raw records, newest first by (time, id),
/// for every filter alone and combined; paging while records keep arriving (newer ones, and
/// late ones older than the cursor, as a long stream is recorded when it ends) repeats none and
/// skips none of those present when the first page was read.
fn check_request_pages(store: &dyn Store) {
    use requests::{Position, RequestQuery, StatusClass};
    // Times collide in fours: the request id breaks the ties.
    let mut all: Vec<UsageRecord> = (0..1_200u64)
        .map(|i| log_record(i, H + (i as i64 / 4) * 1_000_000))
        .collect();
    for batch in all.chunks(300) {
        store.write(batch).unwrap();
    }
    let base = RequestQuery {
        project: "p".to_owned(),
        start_us: 0,
        end_us: i64::MAX,
        limit: 23,
        ..RequestQuery::default()
    };
    let users = |f: UserFilter| RequestQuery {
        users: f,
        ..base.clone()
    };
    let queries = [
        base.clone(),
        RequestQuery {
            model: Some("m2".to_owned()),
            ..base.clone()
        },
        RequestQuery {
            provider: Some("anthropic".to_owned()),
            ..base.clone()
        },
        RequestQuery {
            api_key_id: Some("key_b".to_owned()),
            ..base.clone()
        },
        RequestQuery {
            status: Some(StatusClass::Success),
            ..base.clone()
        },
        RequestQuery {
            status: Some(StatusClass::ClientError),
            ..base.clone()
        },
        RequestQuery {
            status: Some(StatusClass::ServerError),
            ..base.clone()
        },
        RequestQuery {
            status: Some(StatusClass::Error),
            limit: 1,
            ..base.clone()
        },
        RequestQuery {
            operation: Some("embeddings".to_owned()),
            ..base.clone()
        },
        RequestQuery {
            guard: Some(requests::GuardFilter::default()),
            ..base.clone()
        },
        RequestQuery {
            guard: Some(requests::GuardFilter {
                action: Some("refuse".to_owned()),
                guard: None,
            }),
            ..base.clone()
        },
        // Exact and case-sensitive: `redact` is not `Redact`, `rewrite` with `redact` matches.
        RequestQuery {
            guard: Some(requests::GuardFilter {
                guard: Some("redact".to_owned()),
                action: Some("rewrite".to_owned()),
            }),
            status: Some(StatusClass::Success),
            ..base.clone()
        },
        users(UserFilter {
            user_id: Some("u7".to_owned()),
            ..UserFilter::default()
        }),
        users(UserFilter {
            user_name: Some("name 1".to_owned()),
            ..UserFilter::default()
        }),
        users(UserFilter {
            user_tags: vec!["team-0".to_owned(), "team-2".to_owned()],
            ..UserFilter::default()
        }),
        RequestQuery {
            start_us: H + 50_000_000,
            end_us: H + 250_000_000,
            model: Some("m1".to_owned()),
            status: Some(StatusClass::Error),
            api_key_id: Some("key_a".to_owned()),
            limit: 4,
            ..base.clone()
        },
        RequestQuery {
            users: UserFilter {
                user_id: Some("nobody".to_owned()),
                ..UserFilter::default()
            },
            ..base.clone()
        },
        RequestQuery {
            project: "none".to_owned(),
            ..base.clone()
        },
    ];
    let mut next = 1_200u64;
    for query in queries {
        let at_start: Vec<UsageRecord> = reference(&all, &query, usize::MAX);
        let mut seen: Vec<UsageRecord> = Vec::new();
        let mut page_query = query.clone();
        for page_no in 0.. {
            assert!(page_no < 2_000, "pages never end: {query:?}");
            let page = store.requests(&page_query).unwrap();
            assert_eq!(
                page,
                reference(&all, &page_query, query.limit + 1),
                "{page_query:?}"
            );
            // Looked for in time windows, the page is the same: windows of 1 h (all the data
            // in one), and windows from 7 s, whose boundaries cut through it.
            for first_window_us in [3_600_000_000, 7_000_000] {
                let windowed =
                    requests::page_in_windows(store, &page_query, first_window_us).unwrap();
                assert_eq!(
                    windowed, page,
                    "windows from {first_window_us}: {page_query:?}"
                );
            }
            let more = page.len() > query.limit;
            let page = &page[..page.len().min(query.limit)];
            seen.extend_from_slice(page);
            if !more {
                break;
            }
            page_query.after = page.last().map(Position::of);
            // Between pages: two newer records, and one late record older than the cursor.
            let newest = all.iter().map(|r| r.time_us).max().unwrap_or(H);
            let cursor = page_query.after.as_ref().map_or(H, |a| a.time_us);
            let arriving: Vec<UsageRecord> = [newest + 1, newest + 2, cursor - 1]
                .into_iter()
                .map(|t| {
                    next += 1;
                    log_record(next, t)
                })
                .collect();
            store.write(&arriving).unwrap();
            all.extend(arriving);
        }
        // Strictly descending: no repeats.
        assert!(
            seen.windows(2)
                .all(|w| (w[0].time_us, &w[0].request_id) > (w[1].time_us, &w[1].request_id)),
            "{query:?}"
        );
        // No skips: every record present at the first page is on some page.
        for r in &at_start {
            assert!(seen.contains(r), "{} skipped: {query:?}", r.request_id);
        }
        if query.project == "p" && query.users.user_id.as_deref() != Some("nobody") {
            assert!(
                !at_start.is_empty(),
                "the check checks something: {query:?}"
            );
        }
    }
}

/// What a page of `query` holds over `records`: the first `take` that match, newest first.
fn reference(
    records: &[UsageRecord],
    query: &requests::RequestQuery,
    take: usize,
) -> Vec<UsageRecord> {
    let mut want: Vec<UsageRecord> = records
        .iter()
        .filter(|r| query.matches(r))
        .cloned()
        .collect();
    want.sort_by(|a, b| (b.time_us, &b.request_id).cmp(&(a.time_us, &a.request_id)));
    want.truncate(take);
    want
}

/// One request by id: only in its own project; the newest of a project's records sharing an id.
fn check_one_request_per_project(store: &dyn Store) {
    let mut mine = record(H, "a", 1, 2, 3);
    mine.request_id = "shared-id".to_owned();
    let mut theirs = mine.clone();
    theirs.project = "q".to_owned();
    theirs.time_us = H + 5;
    let mut again = mine.clone();
    again.time_us = H + 2;
    again.status = 500;
    store.write(&[mine, theirs.clone(), again.clone()]).unwrap();
    assert_eq!(store.project_record("p", "shared-id").unwrap(), Some(again));
    assert_eq!(
        store.project_record("q", "shared-id").unwrap(),
        Some(theirs)
    );
    assert_eq!(store.project_record("r", "shared-id").unwrap(), None);
    assert_eq!(store.project_record("p", "nope").unwrap(), None);
}

/// The console's figures equal sums, groups and nearest-rank percentiles computed here from
/// the raw records of the range (another project's and those outside the range left out).
fn check_stats(store: &dyn Store) {
    use stats::{Figures, StatsQuery};
    let mut all: Vec<UsageRecord> = (0..600u64)
        .map(|i| {
            let mut r = log_record(i, H - HOUR_US + (i as i64) * 20_000_000);
            r.cached_input_tokens = i % 7;
            r.latency_us = ((i * 7_919) % 1_000) as i64 * 1_000 + 17;
            r.ttft_us = (i % 3 == 0).then_some(((i * 31) % 500) as i64 * 100);
            if i % 11 == 0 {
                r.cost_micros = None;
            }
            if i % 13 == 0 {
                r.user_tags = vec!["dup".to_owned(), "dup".to_owned(), "x".to_owned()];
            }
            r
        })
        .collect();
    all.push(log_record(10_000, H - 3 * HOUR_US));
    for batch in all.chunks(200) {
        store.write(batch).unwrap();
    }
    let q = StatsQuery {
        project: "p".to_owned(),
        start_us: H - HOUR_US / 2,
        end_us: H + 2 * HOUR_US,
        step_us: HOUR_US,
    };
    let inside: Vec<&UsageRecord> = all
        .iter()
        .filter(|r| r.project == "p" && r.time_us >= q.start_us && r.time_us < q.end_us)
        .collect();
    assert!(inside.len() > 300, "{}", inside.len());
    let figures = |rs: &[&UsageRecord]| {
        let mut f = Figures::default();
        for r in rs {
            f.requests += 1;
            f.errors += u64::from(!(200..300).contains(&r.status));
            f.input_tokens += r.input_tokens;
            f.output_tokens += r.output_tokens;
            f.cached_input_tokens += r.cached_input_tokens;
            f.cost_micros += r.cost_micros.unwrap_or(0);
            f.latency_us_sum += r.latency_us;
            f.ttft_us_sum += r.ttft_us.unwrap_or(0);
            f.ttft_count += u64::from(r.ttft_us.is_some());
        }
        f
    };
    let got = stats::stats(store, &q).unwrap();
    assert_eq!(got.total, figures(&inside));
    assert!(got.total.errors > 0 && got.total.ttft_count > 0);

    let percentile = |mut values: Vec<i64>, p: u32| {
        values.sort();
        values
            .get(histogram::rank(p, values.len() as u64) as usize)
            .copied()
    };
    let latencies: Vec<i64> = inside.iter().map(|r| r.latency_us).collect();
    let ttfts: Vec<i64> = inside.iter().filter_map(|r| r.ttft_us).collect();
    for (i, p) in stats::PERCENTILES.into_iter().enumerate() {
        assert_close(got.latency[i], (p, percentile(latencies.clone(), p)));
        assert_close(got.ttft[i], (p, percentile(ttfts.clone(), p)));
    }

    // The series: one row per (hour, provider, model) present, in that order.
    let mut series: std::collections::BTreeMap<(i64, String, String), Vec<&UsageRecord>> =
        Default::default();
    for r in &inside {
        series
            .entry((
                r.time_us.div_euclid(HOUR_US) * HOUR_US,
                r.provider.clone().unwrap_or_default(),
                r.model.clone().unwrap_or_default(),
            ))
            .or_default()
            .push(r);
    }
    let got_series: Vec<_> = got
        .series
        .iter()
        .map(|row| {
            (
                (
                    row.bucket_us,
                    row.first.clone().unwrap_or_default(),
                    row.second.clone().unwrap_or_default(),
                ),
                row.figures,
            )
        })
        .collect();
    let want_series: Vec<_> = series
        .iter()
        .map(|(k, rs)| (k.clone(), figures(rs)))
        .collect();
    assert_eq!(got_series, want_series);
    assert!(
        got_series
            .iter()
            .any(|((hour, ..), _)| *hour == H + HOUR_US)
    );

    // Breakdowns, each against its own grouping of the raw records.
    let users: std::collections::BTreeSet<Option<String>> =
        inside.iter().map(|r| r.user_id.clone()).collect();
    assert_eq!(got.users.count, users.len());
    for (user, f) in &got.users.rows {
        let rs: Vec<&UsageRecord> = inside
            .iter()
            .copied()
            .filter(|r| &r.user_id == user)
            .collect();
        assert_eq!(*f, figures(&rs), "user {user:?}");
    }
    let costs: Vec<i64> = got.users.rows.iter().map(|(_, f)| f.cost_micros).collect();
    assert!(costs.windows(2).all(|w| w[0] >= w[1]), "{costs:?}");
    let tags: std::collections::BTreeSet<&String> =
        inside.iter().flat_map(|r| &r.user_tags).collect();
    assert_eq!(got.tags.count, tags.len());
    assert!(tags.contains(&"dup".to_owned()));
    for (tag, f) in &got.tags.rows {
        let rs: Vec<&UsageRecord> = inside
            .iter()
            .copied()
            .filter(|r| r.user_tags.contains(tag))
            .collect();
        assert_eq!(*f, figures(&rs), "tag {tag}");
    }
    for (model, f) in &got.models.rows {
        let rs: Vec<&UsageRecord> = inside
            .iter()
            .copied()
            .filter(|r| {
                (
                    r.provider.clone().unwrap_or_default(),
                    r.model.clone().unwrap_or_default(),
                ) == *model
            })
            .collect();
        assert_eq!(*f, figures(&rs), "model {model:?}");
    }
    let providers: u64 = got.providers.rows.iter().map(|(_, f)| f.requests).sum();
    assert_eq!(providers, got.total.requests);

    // An empty range: zeros and no percentile.
    let empty = stats::stats(
        store,
        &StatsQuery {
            project: "nobody".to_owned(),
            ..q
        },
    )
    .unwrap();
    assert_eq!(empty.total, Figures::default());
    assert!(empty.latency.iter().all(|(_, v)| v.is_none()));
    assert!(empty.series.is_empty() && empty.users.rows.is_empty());
}

/// A percentile within [`histogram::ERROR_BOUND`] of the exact one (both absent or both there).
fn assert_close(got: (u32, Option<i64>), exact: (u32, Option<i64>)) {
    assert_eq!(got.0, exact.0);
    match (got.1, exact.1) {
        (Some(g), Some(e)) => assert!(
            (g - e).abs() as f64 <= e as f64 * histogram::ERROR_BOUND,
            "p{}: {g} is not within the bound of {e}",
            got.0
        ),
        (g, e) => assert_eq!(g, e, "p{}", got.0),
    }
}

/// The console's figures of `q` computed here from `records` (exact percentiles).
fn stats_of(records: &[UsageRecord], q: &stats::StatsQuery) -> stats::Stats {
    use stats::{Breakdown, Figures, GroupRow};
    use std::collections::{BTreeMap, BTreeSet};
    let inside: Vec<&UsageRecord> = records
        .iter()
        .filter(|r| r.project == q.project && r.time_us >= q.start_us && r.time_us < q.end_us)
        .collect();
    let of = |r: &UsageRecord| Figures {
        requests: 1,
        errors: u64::from(!(200..300).contains(&r.status)),
        input_tokens: r.input_tokens,
        output_tokens: r.output_tokens,
        cached_input_tokens: r.cached_input_tokens,
        cost_micros: r.cost_micros.unwrap_or(0),
        latency_us_sum: r.latency_us,
        ttft_us_sum: r.ttft_us.unwrap_or(0),
        ttft_count: u64::from(r.ttft_us.is_some()),
        cache_hits: u64::from(r.cache_hit),
        saved_cost_micros: r.saved_cost_micros.unwrap_or(0),
    };
    let mut total = Figures::default();
    let mut series: BTreeMap<(i64, Option<String>, Option<String>), Figures> = BTreeMap::new();
    let mut providers: BTreeMap<String, Figures> = BTreeMap::new();
    let mut models: BTreeMap<(String, String), Figures> = BTreeMap::new();
    let mut users: BTreeMap<Option<String>, Figures> = BTreeMap::new();
    let mut tags: BTreeMap<String, Figures> = BTreeMap::new();
    for r in &inside {
        let f = of(r);
        total.add(f);
        let bucket = r.time_us.div_euclid(q.step_us) * q.step_us;
        series
            .entry((bucket, r.provider.clone(), r.model.clone()))
            .or_default()
            .add(f);
        let provider = r.provider.clone().unwrap_or_default();
        providers.entry(provider.clone()).or_default().add(f);
        models
            .entry((provider, r.model.clone().unwrap_or_default()))
            .or_default()
            .add(f);
        users.entry(r.user_id.clone()).or_default().add(f);
        for tag in r.user_tags.iter().collect::<BTreeSet<_>>() {
            tags.entry(tag.clone()).or_default().add(f);
        }
    }
    let exact = |mut values: Vec<i64>| -> stats::Percentiles {
        values.sort();
        stats::PERCENTILES
            .iter()
            .map(|&p| {
                let at = histogram::rank(p, values.len() as u64) as usize;
                (p, values.get(at).copied())
            })
            .collect()
    };
    stats::Stats {
        total,
        latency: exact(inside.iter().map(|r| r.latency_us).collect()),
        ttft: exact(inside.iter().filter_map(|r| r.ttft_us).collect()),
        series: series
            .into_iter()
            .map(|((bucket_us, first, second), figures)| GroupRow {
                bucket_us,
                first,
                second,
                figures,
            })
            .collect(),
        providers: Breakdown::of(providers),
        models: Breakdown::of(models),
        users: Breakdown::of(users),
        tags: Breakdown::of(tags),
    }
}

/// `got` equals `want` (computed from the records), percentiles within the histogram's bound.
fn assert_same_stats(got: &stats::Stats, want: &stats::Stats, what: &str) {
    assert_eq!(got.total, want.total, "{what}: total");
    assert_eq!(got.series, want.series, "{what}: series");
    assert_eq!(got.providers, want.providers, "{what}: providers");
    assert_eq!(got.models, want.models, "{what}: models");
    assert_eq!(got.users, want.users, "{what}: users");
    assert_eq!(got.tags, want.tags, "{what}: tags");
    for (g, w) in got.latency.iter().zip(&want.latency) {
        assert_close(*g, *w);
    }
    for (g, w) in got.ttft.iter().zip(&want.ttft) {
        assert_close(*g, *w);
    }
}

/// Three days of records (users, users without an id, records without any user, tags listed
/// twice, failures, streams and whole answers, a model-less failure), for the stats tests.
fn stats_records() -> Vec<UsageRecord> {
    (0..3_000u64)
        .map(|i| {
            let mut r = log_record(i, H - 30 * HOUR_US + (i as i64) * 86_000_000 + 12_345);
            r.cached_input_tokens = i % 7;
            r.input_tokens = 10 + i % 90;
            r.latency_us = ((i * 7_919) % 5_000) as i64 * 997 + 17;
            r.ttft_us = (i % 3 == 0).then_some(((i * 31) % 500) as i64 * 1_013 + 5);
            if i % 11 == 0 {
                r.cost_micros = None;
            }
            if i % 13 == 0 {
                r.user_tags = vec!["dup".to_owned(), "dup".to_owned(), "x".to_owned()];
                r.user_name = Some("tagged".to_owned());
            }
            if i % 17 == 0 {
                r.user_id = None;
                r.user_name = Some("nameless id".to_owned());
            }
            r
        })
        .collect()
}

/// Ranges of the stats tests: partial hours at both edges, whole days inside, by day, hour and
/// minute; one within an hour; one aligned on days.
fn stats_queries() -> Vec<(&'static str, stats::StatsQuery)> {
    use super::time::{DAY_US, MINUTE_US};
    let q = |project: &str, start_us, end_us, step_us| stats::StatsQuery {
        project: project.to_owned(),
        start_us,
        end_us,
        step_us,
    };
    let d = H.div_euclid(DAY_US) * DAY_US;
    vec![
        (
            "days",
            q(
                "p",
                H - 25 * HOUR_US - 1_234_567_891,
                H + 40 * HOUR_US + 1_500_000_007,
                DAY_US,
            ),
        ),
        (
            "hours",
            q(
                "p",
                H - 25 * HOUR_US - 1_234_567_891,
                H + 40 * HOUR_US + 1_500_000_007,
                HOUR_US,
            ),
        ),
        (
            "minutes",
            q("p", H - 2 * HOUR_US - 5, H + 3 * HOUR_US / 2, MINUTE_US),
        ),
        ("within an hour", q("p", H + 10, H + HOUR_US / 2, MINUTE_US)),
        ("whole days", q("q", d - DAY_US, d + DAY_US, DAY_US)),
    ]
}

/// The console's figures, read from the rollups and the raw edges, equal those computed from
/// the raw records, over ranges with partial hours at their edges, whole hours and whole days.
fn check_stats_from_rollups_equal_the_records(store: &dyn Store) {
    let records = stats_records();
    for batch in records.chunks(250) {
        store.write(batch).unwrap();
    }
    for (what, q) in stats_queries() {
        let want = stats_of(&records, &q);
        assert!(want.total.requests > 0, "{what}");
        assert_same_stats(&stats::stats(store, &q).unwrap(), &want, what);
    }
    let days = &stats_queries()[0].1;
    let in_edge = |a: i64, b: i64| {
        records
            .iter()
            .filter(|r| r.project == "p" && r.time_us >= a && r.time_us < b)
            .count()
    };
    assert!(in_edge(days.start_us, H - 25 * HOUR_US) > 5);
    assert!(in_edge(H + 40 * HOUR_US, days.end_us) > 5);
    let want = stats_of(&records, days);
    assert!(want.total.errors > 0 && want.total.ttft_count > 0);
    assert!(want.users.rows.iter().any(|(u, _)| u.is_none()));
    assert!(want.tags.rows.iter().any(|(t, _)| t == "dup"));
}

/// Stats of whole hours come from the rollups: deleting the raw records under them changes
/// nothing, while the partial hours at the edges are read from the records.
#[test]
fn stats_of_whole_hours_read_the_rollups() {
    let dir = std::env::temp_dir().join(format!("wasmgate-ledger-flat-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("flat.db");
    let store = sqlite::SqliteStore::open(&path).unwrap();
    let records = stats_records();
    store.write(&records).unwrap();
    let q = stats_queries()[0].1.clone();
    let before = stats::stats(&store, &q).unwrap();
    let (whole_start, whole_end) = (H - 25 * HOUR_US, H + 40 * HOUR_US);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let deleted = conn
        .execute(
            "DELETE FROM usage_records WHERE time_us >= ?1 AND time_us < ?2",
            rusqlite::params![whole_start, whole_end],
        )
        .unwrap();
    assert!(deleted > 1_000, "{deleted}");
    assert_eq!(stats::stats(&store, &q).unwrap(), before);
    // An edge's records are read raw: deleting them shows.
    let edge = conn
        .execute(
            "DELETE FROM usage_records WHERE project = 'p' AND time_us >= ?1 AND time_us < ?2",
            rusqlite::params![q.start_us, whole_start],
        )
        .unwrap();
    assert!(edge > 10, "{edge}");
    assert!(stats::stats(&store, &q).unwrap().total.requests < before.total.requests);
    drop((conn, store));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The writer's page cache, full of the pages of records it wrote, is handed back once a
/// second has passed since it last was: after the next batch it holds only that batch's pages.
#[test]
fn the_writers_page_cache_is_handed_back() {
    let dir = std::env::temp_dir().join(format!("wasmgate-ledger-cache-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = sqlite::SqliteStore::open(&dir.join("cache.db")).unwrap();
    let batch = |n: i64| -> Vec<UsageRecord> {
        (0..500)
            .map(|i| {
                let mut r = by(
                    record(H + n * 500 + i, "a", 2, 3, 5),
                    &format!("u{i}"),
                    "",
                    &[],
                );
                r.request_id = format!("cache-{n}-{i}");
                r
            })
            .collect()
    };
    // Not handed back while it fills, however slow the machine.
    *store.released.lock().unwrap() = std::time::Instant::now() + Duration::from_secs(3600);
    for n in 0..8 {
        store.write(&batch(n)).unwrap();
    }
    let full = store.cache_used().unwrap();
    assert!(full > 1 << 20, "{full} bytes cached after 4,000 records");
    // Due: the next batch hands the cache back.
    *store.released.lock().unwrap() = std::time::Instant::now()
        .checked_sub(Duration::from_secs(5))
        .unwrap();
    store.write(&batch(8)).unwrap();
    let after = store.cache_used().unwrap();
    assert!(
        after < full / 4,
        "{after} bytes cached after the release, {full} before"
    );
    // And not again within the second: the next batch's pages stay.
    store.write(&batch(9)).unwrap();
    assert!(
        store.cache_used().unwrap() > after,
        "kept until the next second"
    );
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs `make`, whose stores write the records of the database the test then makes older: the
/// records are written with today's columns (a store stopped at V1 could not write them), and
/// [`before_history`] drops what the versions after V1 added, as such a database never had it.
fn at_v1<T>(make: impl FnOnce() -> T) -> T {
    make()
}

/// Drops what the migrations after V1 added (V3: the response cache's columns; V5: the guards
/// keys name; V6: the MCP columns; V7: the keys' pass-through patterns; V8: batches and units;
/// V9: the audit log; V10: alerts; V11: the records' index by time; V12: realtime sessions).
const AFTER_V1: &str = "ALTER TABLE api_keys DROP COLUMN guards;
    ALTER TABLE api_keys DROP COLUMN passthrough;
    ALTER TABLE usage_records DROP COLUMN cache_hit;
    ALTER TABLE usage_records DROP COLUMN saved_cost_micros;
    ALTER TABLE usage_hourly_models DROP COLUMN cache_hits;
    ALTER TABLE usage_hourly_models DROP COLUMN saved_cost_micros;
    ALTER TABLE usage_daily_models DROP COLUMN cache_hits;
    ALTER TABLE usage_daily_models DROP COLUMN saved_cost_micros;
    ALTER TABLE usage_hourly_users DROP COLUMN cache_hits;
    ALTER TABLE usage_hourly_users DROP COLUMN saved_cost_micros;
    ALTER TABLE usage_daily_users DROP COLUMN cache_hits;
    ALTER TABLE usage_daily_users DROP COLUMN saved_cost_micros;
    ALTER TABLE usage_records DROP COLUMN bytes_in;
    ALTER TABLE usage_records DROP COLUMN bytes_out;
    ALTER TABLE api_keys DROP COLUMN tools;
    ALTER TABLE usage_records DROP COLUMN batch_id;
    ALTER TABLE usage_records DROP COLUMN audio_ms;
    ALTER TABLE usage_records DROP COLUMN characters;
    ALTER TABLE usage_records DROP COLUMN search_units;
    ALTER TABLE usage_records DROP COLUMN session_id;
    ALTER TABLE usage_hourly_models DROP COLUMN batch_requests;
    ALTER TABLE usage_hourly_models DROP COLUMN batch_cost_micros;
    ALTER TABLE usage_daily_models DROP COLUMN batch_requests;
    ALTER TABLE usage_daily_models DROP COLUMN batch_cost_micros;
    ALTER TABLE usage_hourly_users DROP COLUMN batch_requests;
    ALTER TABLE usage_hourly_users DROP COLUMN batch_cost_micros;
    ALTER TABLE usage_daily_users DROP COLUMN batch_requests;
    ALTER TABLE usage_daily_users DROP COLUMN batch_cost_micros;
    DROP TABLE gateway_files;
    DROP TABLE gateway_batches;
    DROP TABLE audit_log;
    DROP TABLE alerts_fired;
    DROP TABLE alert_deliveries;
    DROP INDEX usage_records_by_time;";

/// Makes a database look like one made before versioned migrations (with the statements before
/// it, like one made before some column): an older wasmgate kept no history, nor what later
/// versions added (V2's `guards`, V3's cache columns, V5's key guards, V6's MCP columns, V7's
/// pass-through patterns, V8's batches, V9's audit log).
fn before_history() -> String {
    format!(
        "ALTER TABLE usage_records DROP COLUMN guards; {AFTER_V1}
         DROP TABLE ledger_schema_history;"
    )
}

/// Makes a database look like one written before the rollups held the console's sums: their
/// columns and the duration histograms gone.
fn strip_stats_sums(execute: &mut dyn FnMut(&str)) {
    execute(AFTER_V1);
    for (table, ..) in rollup::ROLLUP_TABLES {
        for column in rollup::STATS_COLUMNS {
            execute(&format!("ALTER TABLE {table} DROP COLUMN {column}"));
        }
    }
    for table in rollup::DURATION_TABLES {
        execute(&format!("DROP TABLE {table}"));
    }
    execute("ALTER TABLE usage_records DROP COLUMN guards");
    execute(&format!("DROP TABLE {}", schema::HISTORY));
}

/// An older SQLite file gets the rollups' new sums and histograms, filled from its records:
/// its figures equal those computed from the records.
#[test]
fn an_older_sqlite_file_is_backfilled_for_stats() {
    let dir = std::env::temp_dir().join(format!("wasmgate-ledger-backfill-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("old.db");
    let records = stats_records();
    at_v1(|| {
        let store = sqlite::SqliteStore::open(&path).unwrap();
        store.write(&records).unwrap();
    });
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        strip_stats_sums(&mut |sql| conn.execute_batch(sql).unwrap());
    }
    let store = sqlite::SqliteStore::open(&path).unwrap();
    for (what, q) in stats_queries() {
        assert_same_stats(
            &stats::stats(&store, &q).unwrap(),
            &stats_of(&records, &q),
            what,
        );
    }
    // Opened again: nothing is added twice.
    drop(store);
    let store = sqlite::SqliteStore::open(&path).unwrap();
    let q = &stats_queries()[0].1;
    assert_same_stats(
        &stats::stats(&store, q).unwrap(),
        &stats_of(&records, q),
        "again",
    );
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_older_postgres_database_is_backfilled_for_stats() {
    let (url, _cluster) = pg::database();
    let records = stats_records();
    at_v1(|| {
        let store = postgres::PostgresStore::open(&url).unwrap();
        store.write(&records).unwrap();
    });
    {
        let mut client = ::postgres::Client::connect(&url, ::postgres::NoTls).unwrap();
        strip_stats_sums(&mut |sql| client.batch_execute(sql).unwrap());
    }
    let store = postgres::PostgresStore::open(&url).unwrap();
    for (what, q) in stats_queries() {
        assert_same_stats(
            &stats::stats(&store, &q).unwrap(),
            &stats_of(&records, &q),
            what,
        );
    }
}

/// `store.count()` off the async thread (the PostgreSQL client blocks on a runtime of its own).
async fn count(store: &Arc<dyn Store>) -> u64 {
    let store = Arc::clone(store);
    tokio::task::spawn_blocking(move || store.count())
        .await
        .unwrap()
        .unwrap()
}

/// `store`'s count once it reaches `n`, or what it holds after 5 s of waiting for that.
async fn count_reaching(store: &Arc<dyn Store>, n: u64) -> u64 {
    for _ in 0..100 {
        if count(store).await == n {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    count(store).await
}

async fn shutdown_writes_every_queued_record(store: Arc<dyn Store>) {
    let ledger = Ledger::with_store(store.clone(), 10_000);
    for i in 0..2_500 {
        drop(ledger.record(record(H + i, "a", 1, 1, 1)));
    }
    ledger.shutdown().await;
    assert_eq!(count(&store).await, 2_500);
    assert_eq!(ledger.dropped(), 0);
    // After shutdown, records are refused and counted.
    drop(ledger.record(record(H, "a", 1, 1, 1)));
    assert_eq!(ledger.dropped(), 1);
}

#[tokio::test]
async fn shutdown_writes_every_queued_record_sqlite() {
    shutdown_writes_every_queued_record(Arc::new(sqlite::SqliteStore::in_memory().unwrap())).await;
}

#[tokio::test]
async fn shutdown_writes_every_queued_record_postgres() {
    let (url, _cluster) = pg::database();
    shutdown_writes_every_queued_record(Arc::new(postgres::PostgresStore::open(&url).unwrap()))
        .await;
}

/// The server stops with records on their way and comes back: the writer retries, nothing is
/// lost or written twice, and errors meanwhile never show the password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_records_wait_while_the_server_is_down() {
    let started = tokio::task::spawn_blocking(|| pg::PgCluster::start(&["fsync=off"]));
    let cluster = Arc::new(started.await.unwrap());
    let url = cluster.database();
    assert!(url.contains("pg-test-secret"));
    let store: Arc<dyn Store> = Arc::new(postgres::PostgresStore::open(&url).unwrap());
    let ledger = Ledger::with_store(store.clone(), 10_000);
    let send = |from: i64, to: i64| {
        for i in from..to {
            drop(ledger.record(record(H + i, "a", 1, 1, 1)));
        }
    };
    send(0, 300);
    assert_eq!(count_reaching(&store, 300).await, 300);

    let c = Arc::clone(&cluster);
    tokio::task::spawn_blocking(move || c.stop()).await.unwrap();
    send(300, 600);
    // Long enough for several failed writes (100, 200, 400 ms backoff).
    tokio::time::sleep(Duration::from_millis(800)).await;
    let s = Arc::clone(&store);
    let error = tokio::task::spawn_blocking(move || s.total("p", 0, H * 2))
        .await
        .unwrap()
        .unwrap_err();
    let message = format!("{error:#}");
    assert!(!message.contains("pg-test-secret"), "{message}");
    assert!(message.contains("postgres:***@127.0.0.1"), "{message}");
    assert_eq!(ledger.dropped(), 0);

    let c = Arc::clone(&cluster);
    tokio::task::spawn_blocking(move || c.restart())
        .await
        .unwrap();
    send(600, 700);
    ledger.shutdown().await;
    assert_eq!(count(&store).await, 700, "none lost, none written twice");
    let s = Arc::clone(&store);
    let totals = tokio::task::spawn_blocking(move || s.total("p", 0, H * 2))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((totals.requests, totals.input_tokens), (700, 700));
}

/// The outage test with the journal in place of memory: records wait on disk while the server is
/// down, new requests are refused once the journal reaches its bound, and all of them are
/// written once it is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_records_wait_in_the_journal_while_the_server_is_down() {
    let started = tokio::task::spawn_blocking(|| pg::PgCluster::start(&["fsync=off"]));
    let cluster = Arc::new(started.await.unwrap());
    let url = cluster.database();
    let store: Arc<dyn Store> = Arc::new(postgres::PostgresStore::open(&url).unwrap());
    let dir = std::env::temp_dir().join(format!("wasmgate-outage-journal-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let settings = JournalSettings {
        dir: dir.clone(),
        fsync: false,
        // Room for more records than the writer is ever handed in memory (8,000): past
        // those, it reads them back from disk.
        max_bytes: 8 << 20,
    };
    let ledger = Ledger::with_journal(store.clone(), &settings).unwrap();
    let journal = |ledger: &Ledger| ledger.journal().map(|j| (j.bytes(), j.refused())).unwrap();
    let send = |from: i64, to: i64| {
        let ledger = ledger.clone();
        async move {
            for i in from..to {
                ledger.record(record(H + i, "a", 1, 1, 1)).wait().await;
            }
        }
    };
    send(0, 300).await;
    assert_eq!(count_reaching(&store, 300).await, 300);

    let c = Arc::clone(&cluster);
    tokio::task::spawn_blocking(move || c.stop()).await.unwrap();
    let (bytes_up, _) = journal(&ledger);
    send(300, 600).await;
    // Long enough for several failed writes (100, 200, 400 ms backoff).
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(ledger.queued() >= 300, "{} waiting", ledger.queued());
    let (bytes_down, _) = journal(&ledger);
    assert!(
        bytes_down > bytes_up + 300 * 200,
        "{bytes_up} then {bytes_down} bytes"
    );
    assert!(!ledger.is_full());
    // Filled to its bound, the journal refuses new requests (they get 503 ledger_full).
    let mut sent = 600;
    while !ledger.is_full() {
        send(sent, sent + 1_000).await;
        sent += 1_000;
        assert!(sent < 1_000_000, "the journal never filled");
    }
    assert!(ledger.is_full());
    let (full_bytes, refused) = journal(&ledger);
    assert!(full_bytes >= 8 << 20);
    assert!(sent > 10_000, "{sent} records filled the journal");
    assert_eq!(refused, 2);
    assert_eq!(ledger.dropped(), 0);

    let c = Arc::clone(&cluster);
    tokio::task::spawn_blocking(move || c.restart())
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let written = |store: Arc<dyn Store>| async move {
        // A query on a connection from before the restart fails once: counted as nothing yet.
        let counted = tokio::task::spawn_blocking(move || store.count()).await;
        counted.unwrap().unwrap_or(0)
    };
    // The last batch's records are counted before the journal hears they were confirmed and
    // deletes their segments: both are waited for.
    while written(store.clone()).await < sent as u64
        || ledger.is_full()
        || journal(&ledger).0 > 1 << 20
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the journal never drained: {} bytes left",
            journal(&ledger).0
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    send(sent, sent + 100).await;
    ledger.shutdown().await;
    let all = sent as u64 + 100;
    assert_eq!(count(&store).await, all, "none lost, none written twice");
    let s = Arc::clone(&store);
    let totals = tokio::task::spawn_blocking(move || s.total("p", 0, H * 2))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((totals.requests, totals.input_tokens), (all, all));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_database_password_never_shows() {
    let url = "postgres://ada:hunter2-secret@127.0.0.1:1/ledger";
    let store = postgres::PostgresStore::open(url).unwrap();
    let message = format!("{:#}", store.count().unwrap_err());
    assert!(!message.contains("hunter2"), "{message}");
    assert!(message.contains("ada:***@127.0.0.1:1"), "{message}");
    let config = LedgerConfig {
        url: url.to_owned(),
        ..LedgerConfig::default()
    };
    let shown = format!("{config:?}");
    assert!(!shown.contains("hunter2"), "{shown}");
    let config = LedgerConfig {
        url: "mysql://ada:hunter2-secret@db/x".to_owned(),
        ..LedgerConfig::default()
    };
    let message = format!("{:#}", Ledger::open(&config).err().unwrap());
    assert!(!message.contains("hunter2"), "{message}");
}

/// A store that blocks writes until told, to fill the queue.
struct Stuck(std::sync::Mutex<()>);

impl UsageStore for Stuck {
    fn write_once(&self, _: &BatchId, _: &[UsageRecord]) -> anyhow::Result<bool> {
        drop(self.0.lock());
        Ok(true)
    }
    fn total(&self, _: &str, _: i64, _: i64) -> anyhow::Result<Totals> {
        Ok(Totals::default())
    }
    fn models(
        &self,
        _: &str,
        _: i64,
        _: i64,
        _: Unit,
        _: &UserFilter,
    ) -> anyhow::Result<Vec<ModelBucket>> {
        Ok(Vec::new())
    }
    fn count(&self) -> anyhow::Result<u64> {
        Ok(0)
    }
}

impl RequestLog for Stuck {
    fn record(&self, _: &str) -> anyhow::Result<Option<UsageRecord>> {
        Ok(None)
    }
    fn requests(&self, _: &requests::RequestQuery) -> anyhow::Result<Vec<UsageRecord>> {
        Ok(Vec::new())
    }
    fn project_record(&self, _: &str, _: &str) -> anyhow::Result<Option<UsageRecord>> {
        Ok(None)
    }
}

impl StatsSource for Stuck {
    fn stats_groups(
        &self,
        _: &str,
        _: stats::Part,
        _: stats::Grouping,
    ) -> anyhow::Result<Vec<stats::GroupRow>> {
        Ok(Vec::new())
    }
    fn stats_durations(&self, _: &str, _: stats::Part) -> anyhow::Result<histogram::Durations> {
        Ok(histogram::Durations::default())
    }
}

impl KeyStore for Stuck {
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
    fn key(&self, _: &str) -> anyhow::Result<Option<ApiKey>> {
        Ok(None)
    }
    fn update_key(&self, _: &str, _: Option<&str>, _: &KeyLimits) -> anyhow::Result<bool> {
        Ok(false)
    }
    fn key_spend(&self, _: &str, _: i64) -> anyhow::Result<i64> {
        Ok(0)
    }
    fn insert_admin_key(&self, _: &AdminKey) -> anyhow::Result<()> {
        Ok(())
    }
    fn admin_key_by_hash(&self, _: &str) -> anyhow::Result<Option<AdminKey>> {
        Ok(None)
    }
    fn admin_keys(&self) -> anyhow::Result<Vec<AdminKey>> {
        Ok(Vec::new())
    }
    fn revoke_admin_key(&self, _: &str, _: i64) -> anyhow::Result<bool> {
        Ok(false)
    }
}

impl ResponseStore for Stuck {
    fn put_response(&self, _: &StoredResponse) -> anyhow::Result<()> {
        Ok(())
    }
    fn response(&self, _: &str, _: &str) -> anyhow::Result<Option<StoredResponse>> {
        Ok(None)
    }
    fn delete_response(&self, _: &str, _: &str) -> anyhow::Result<bool> {
        Ok(false)
    }
}

/// A [`BatchStore`] that keeps nothing, for the test stores that only test usage records.
macro_rules! no_batches {
    ($store:ty) => {
        impl crate::ledger::BatchStore for $store {
            fn put_file(&self, _: &crate::ledger::StoredFile) -> anyhow::Result<()> {
                Ok(())
            }
            fn file(&self, _: &str, _: &str) -> anyhow::Result<Option<crate::ledger::StoredFile>> {
                Ok(None)
            }
            fn files(
                &self,
                _: &str,
                _: Option<&str>,
                _: Option<&str>,
                _: crate::ledger::Order,
                _: usize,
            ) -> anyhow::Result<Vec<crate::ledger::StoredFile>> {
                Ok(Vec::new())
            }
            fn delete_file(&self, _: &str, _: &str) -> anyhow::Result<bool> {
                Ok(false)
            }
            fn put_batch(&self, _: &crate::ledger::StoredBatch) -> anyhow::Result<()> {
                Ok(())
            }
            fn batch(
                &self,
                _: &str,
                _: &str,
            ) -> anyhow::Result<Option<crate::ledger::StoredBatch>> {
                Ok(None)
            }
            fn batches(
                &self,
                _: &str,
                _: Option<&str>,
                _: usize,
            ) -> anyhow::Result<Vec<crate::ledger::StoredBatch>> {
                Ok(Vec::new())
            }
            fn update_batch(&self, _: &str, _: &str, _: &str, _: &str) -> anyhow::Result<()> {
                Ok(())
            }
            fn unmetered_batches(
                &self,
                _: usize,
            ) -> anyhow::Result<Vec<crate::ledger::StoredBatch>> {
                Ok(Vec::new())
            }
            fn claim_metering(&self, _: &str, _: &str, _: i64, _: i64) -> anyhow::Result<bool> {
                Ok(false)
            }
            fn metered(&self, _: &str, _: &str, _: i64, _: i64) -> anyhow::Result<()> {
                Ok(())
            }
        }
    };
}

no_batches!(Stuck);
no_batches!(LosesFirstAck);

/// An [`AuditStore`] that keeps nothing, for the test stores that only test usage records.
macro_rules! no_audit {
    ($store:ty) => {
        impl crate::ledger::AuditStore for $store {
            fn append_audit(
                &self,
                change: crate::ledger::AuditChange,
                at_us: i64,
            ) -> anyhow::Result<crate::ledger::AuditEntry> {
                Ok(crate::ledger::AuditEntry::next(None, at_us, change))
            }
            fn audit_entries(
                &self,
                _: &crate::ledger::AuditFilter,
            ) -> anyhow::Result<Vec<crate::ledger::AuditEntry>> {
                Ok(Vec::new())
            }
        }
    };
}

no_audit!(Stuck);
no_audit!(LosesFirstAck);

/// An [`AlertStore`] that keeps nothing.
macro_rules! no_alerts {
    ($store:ty) => {
        impl crate::ledger::AlertStore for $store {
            fn claim_alert(&self, _: &crate::ledger::alerts::Fired) -> anyhow::Result<bool> {
                Ok(false)
            }
            fn record_delivery(
                &self,
                _: &crate::ledger::alerts::Fired,
                _: &crate::ledger::alerts::Delivery,
            ) -> anyhow::Result<()> {
                Ok(())
            }
            fn deliveries(
                &self,
                _: i64,
            ) -> anyhow::Result<
                Vec<(
                    crate::ledger::alerts::Fired,
                    crate::ledger::alerts::Delivery,
                )>,
            > {
                Ok(Vec::new())
            }
            fn provider_errors(
                &self,
                _: i64,
            ) -> anyhow::Result<Vec<crate::ledger::alerts::ProviderErrors>> {
                Ok(Vec::new())
            }
            fn slow_answers(
                &self,
                _: i64,
                _: i64,
                _: bool,
            ) -> anyhow::Result<Vec<crate::ledger::alerts::SlowAnswers>> {
                Ok(Vec::new())
            }
            fn spend_by(
                &self,
                _: crate::ledger::alerts::SpendScope,
                _: i64,
            ) -> anyhow::Result<Vec<(String, i64)>> {
                Ok(Vec::new())
            }
        }
    };
}

no_alerts!(Stuck);
no_alerts!(LosesFirstAck);

#[tokio::test]
async fn a_full_queue_drops_and_counts() {
    let stuck = Arc::new(Stuck(std::sync::Mutex::new(())));
    let guard = stuck.0.lock().unwrap();
    let ledger = Ledger::with_store(stuck.clone(), 4);
    for i in 0..20 {
        drop(ledger.record(record(H + i, "a", 1, 1, 1)));
    }
    // The writer may hold one batch; the queue holds 4; the rest is dropped.
    assert!(ledger.dropped() >= 12, "{}", ledger.dropped());
    assert!(ledger.queued() <= 4);
    drop(guard);
    ledger.shutdown().await;
    assert_eq!(ledger.queued(), 0);
}

/// A store whose first commit goes through but whose acknowledgement is lost, as when the
/// connection breaks at that moment.
struct LosesFirstAck {
    inner: sqlite::SqliteStore,
    lost: std::sync::atomic::AtomicBool,
}

impl UsageStore for LosesFirstAck {
    fn write_once(&self, batch: &BatchId, records: &[UsageRecord]) -> anyhow::Result<bool> {
        let written = self.inner.write_once(batch, records)?;
        if !self.lost.swap(true, std::sync::atomic::Ordering::SeqCst) {
            anyhow::bail!("connection reset while committing");
        }
        Ok(written)
    }
    fn total(&self, project: &str, start: i64, end: i64) -> anyhow::Result<Totals> {
        self.inner.total(project, start, end)
    }
    fn models(
        &self,
        project: &str,
        start: i64,
        end: i64,
        unit: Unit,
        filter: &UserFilter,
    ) -> anyhow::Result<Vec<ModelBucket>> {
        self.inner.models(project, start, end, unit, filter)
    }
    fn count(&self) -> anyhow::Result<u64> {
        self.inner.count()
    }
}

impl RequestLog for LosesFirstAck {
    fn record(&self, request_id: &str) -> anyhow::Result<Option<UsageRecord>> {
        self.inner.record(request_id)
    }
    fn requests(&self, query: &requests::RequestQuery) -> anyhow::Result<Vec<UsageRecord>> {
        self.inner.requests(query)
    }
    fn project_record(&self, project: &str, id: &str) -> anyhow::Result<Option<UsageRecord>> {
        self.inner.project_record(project, id)
    }
}

impl StatsSource for LosesFirstAck {
    fn stats_groups(
        &self,
        project: &str,
        part: stats::Part,
        g: stats::Grouping,
    ) -> anyhow::Result<Vec<stats::GroupRow>> {
        self.inner.stats_groups(project, part, g)
    }
    fn stats_durations(
        &self,
        project: &str,
        part: stats::Part,
    ) -> anyhow::Result<histogram::Durations> {
        self.inner.stats_durations(project, part)
    }
}

impl KeyStore for LosesFirstAck {
    fn insert_key(&self, key: &ApiKey) -> anyhow::Result<()> {
        self.inner.insert_key(key)
    }
    fn keys(&self, project: Option<&str>) -> anyhow::Result<Vec<ApiKey>> {
        self.inner.keys(project)
    }
    fn revoke_key(&self, id: &str, at_us: i64) -> anyhow::Result<bool> {
        self.inner.revoke_key(id, at_us)
    }
    fn key_by_hash(&self, hash: &str) -> anyhow::Result<Option<ApiKey>> {
        self.inner.key_by_hash(hash)
    }
    fn key(&self, id: &str) -> anyhow::Result<Option<ApiKey>> {
        self.inner.key(id)
    }
    fn update_key(&self, id: &str, name: Option<&str>, limits: &KeyLimits) -> anyhow::Result<bool> {
        self.inner.update_key(id, name, limits)
    }
    fn key_spend(&self, key_id: &str, since_us: i64) -> anyhow::Result<i64> {
        self.inner.key_spend(key_id, since_us)
    }
    fn insert_admin_key(&self, key: &AdminKey) -> anyhow::Result<()> {
        self.inner.insert_admin_key(key)
    }
    fn admin_key_by_hash(&self, hash: &str) -> anyhow::Result<Option<AdminKey>> {
        self.inner.admin_key_by_hash(hash)
    }
    fn admin_keys(&self) -> anyhow::Result<Vec<AdminKey>> {
        self.inner.admin_keys()
    }
    fn revoke_admin_key(&self, id: &str, at_us: i64) -> anyhow::Result<bool> {
        self.inner.revoke_admin_key(id, at_us)
    }
}

impl ResponseStore for LosesFirstAck {
    fn put_response(&self, response: &StoredResponse) -> anyhow::Result<()> {
        self.inner.put_response(response)
    }
    fn response(&self, project: &str, id: &str) -> anyhow::Result<Option<StoredResponse>> {
        self.inner.response(project, id)
    }
    fn delete_response(&self, project: &str, id: &str) -> anyhow::Result<bool> {
        self.inner.delete_response(project, id)
    }
}

#[tokio::test]
async fn a_batch_retried_after_a_lost_acknowledgement_is_counted_once() {
    let store = Arc::new(LosesFirstAck {
        inner: sqlite::SqliteStore::in_memory().unwrap(),
        lost: std::sync::atomic::AtomicBool::new(false),
    });
    let ledger = Ledger::with_store(store.clone(), 100);
    for i in 0..20 {
        let mut r = record(H + i, "a", 1, 1, 1);
        r.request_id = format!("ack-{i}");
        drop(ledger.record(r));
    }
    ledger.shutdown().await;
    assert!(store.lost.load(std::sync::atomic::Ordering::SeqCst));
    assert_eq!(store.count().unwrap(), 20);
    assert_eq!(store.total("p", H, H + HOUR_US).unwrap().requests, 20);
}

/// A database written before records had `ttft_us` gets the column when opened.
#[test]
fn an_older_sqlite_file_gains_the_ttft_column() {
    let dir = std::env::temp_dir().join(format!("wasmgate-ledger-ttft-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("old.db");
    let old = record(H, "a", 1, 2, 3);
    at_v1(|| drop(sqlite::SqliteStore::open(&path).unwrap()));
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(&format!(
            "ALTER TABLE usage_records DROP COLUMN ttft_us; {}",
            before_history()
        ))
        .unwrap();
    }
    let store = sqlite::SqliteStore::open(&path).unwrap();
    let mut new = record(H + 1, "a", 1, 2, 3);
    new.ttft_us = Some(42);
    store.write(&[old.clone(), new.clone()]).unwrap();
    assert_eq!(store.record(&old.request_id).unwrap(), Some(old));
    assert_eq!(store.record(&new.request_id).unwrap(), Some(new));
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A database written before records had `reasoning_tokens` and `cache_write_tokens` gets the
/// columns when opened, 0 for its older records, and new records keep theirs.
#[test]
fn an_older_sqlite_file_gains_the_reasoning_tokens_column() {
    let dir =
        std::env::temp_dir().join(format!("wasmgate-ledger-reasoning-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("old.db");
    let old = record(H, "a", 1, 2, 3);
    at_v1(|| {
        let store = sqlite::SqliteStore::open(&path).unwrap();
        store.write(std::slice::from_ref(&old)).unwrap();
    });
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(&format!(
            "ALTER TABLE usage_records DROP COLUMN reasoning_tokens;
             ALTER TABLE usage_records DROP COLUMN cache_write_tokens; {}",
            before_history()
        ))
        .unwrap();
    }
    let store = sqlite::SqliteStore::open(&path).unwrap();
    let mut new = record(H + 1, "a", 1, 200, 3);
    new.reasoning_tokens = 150;
    new.cache_write_tokens = 40;
    store.write(std::slice::from_ref(&new)).unwrap();
    assert_eq!(store.record(&old.request_id).unwrap(), Some(old));
    assert_eq!(store.record(&new.request_id).unwrap(), Some(new));
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The same on PostgreSQL: the schema's `ADD COLUMN IF NOT EXISTS` brings an older database up.
#[test]
fn an_older_postgres_database_gains_the_reasoning_tokens_column() {
    let (url, _cluster) = pg::database();
    let old = record(H, "a", 1, 2, 3);
    at_v1(|| {
        let store = postgres::PostgresStore::open(&url).unwrap();
        store.write(std::slice::from_ref(&old)).unwrap();
    });
    let mut client = ::postgres::Client::connect(&url, ::postgres::NoTls).unwrap();
    client
        .batch_execute(&format!(
            "ALTER TABLE usage_records DROP COLUMN reasoning_tokens;
             ALTER TABLE usage_records DROP COLUMN cache_write_tokens; {}",
            before_history()
        ))
        .unwrap();
    drop(client);
    let store = postgres::PostgresStore::open(&url).unwrap();
    let mut new = record(H + 1, "a", 1, 200, 3);
    new.reasoning_tokens = 150;
    new.cache_write_tokens = 40;
    store.write(std::slice::from_ref(&new)).unwrap();
    assert_eq!(store.record(&old.request_id).unwrap(), Some(old));
    assert_eq!(store.record(&new.request_id).unwrap(), Some(new));
}

/// A database whose `api_keys` predates keys' own limits gets the columns when opened: its
/// keys have no limits, and new keys keep theirs.
#[test]
fn an_older_sqlite_file_gains_the_key_limit_columns() {
    let dir = std::env::temp_dir().join(format!("wasmgate-ledger-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("old.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE api_keys (id TEXT PRIMARY KEY, project TEXT NOT NULL, name TEXT,
                 key_hash TEXT NOT NULL UNIQUE, prefix TEXT NOT NULL,
                 created_us INTEGER NOT NULL, revoked_us INTEGER);
             INSERT INTO api_keys VALUES ('key_old', 'p', NULL, 'hash-old', 'wg-1', 1, NULL);",
        )
        .unwrap();
    }
    let store = sqlite::SqliteStore::open(&path).unwrap();
    let old = store.key("key_old").unwrap().unwrap();
    assert_eq!(old.limits, KeyLimits::default());
    let mut new = key("key_new", "p", 2);
    new.limits.requests_per_minute = Some(5);
    store.insert_key(&new).unwrap();
    assert_eq!(store.key("key_new").unwrap(), Some(new));
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The same on PostgreSQL.
#[test]
fn an_older_postgres_database_gains_the_key_limit_columns() {
    let (url, _cluster) = pg::database();
    at_v1(|| {
        let store = postgres::PostgresStore::open(&url).unwrap();
        store.insert_key(&key("key_old", "p", 1)).unwrap();
    });
    let mut client = ::postgres::Client::connect(&url, ::postgres::NoTls).unwrap();
    client
        .batch_execute(&format!(
            "ALTER TABLE api_keys DROP COLUMN models, DROP COLUMN expires_us, DROP COLUMN rpm,
                 DROP COLUMN tpm, DROP COLUMN budget_micros, DROP COLUMN budget_period;
             {}",
            before_history()
        ))
        .unwrap();
    drop(client);
    let store = postgres::PostgresStore::open(&url).unwrap();
    assert_eq!(
        store.key("key_old").unwrap().unwrap().limits,
        KeyLimits::default()
    );
    let mut new = key("key_new", "p", 2);
    new.limits.budget = Some(Budget {
        micros: 1,
        period: BudgetPeriod::Month,
    });
    store.insert_key(&new).unwrap();
    assert_eq!(store.key("key_new").unwrap(), Some(new));
}

/// `sslmode=verify-full` with the CA in `sslrootcert`: every connection is TLS. Without the CA
/// the server is refused (its certificate is always verified), and no error shows the password.
#[test]
fn postgres_over_tls_verifies_the_server() {
    let (cluster, ca) = pg::PgCluster::start_tls();
    let url = cluster.database();
    let tls_url = format!("{url}?sslmode=verify-full&sslrootcert={}", ca.display());
    let store = postgres::PostgresStore::open(&tls_url).unwrap();
    store.write(&[record(H, "a", 1, 2, 3)]).unwrap();
    assert_eq!(store.count().unwrap(), 1);
    let mut admin = ::postgres::Client::connect(&url, ::postgres::NoTls).unwrap();
    let row = admin
        .query_one(
            "SELECT count(*) FILTER (WHERE s.ssl), count(*)
             FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
             WHERE a.application_name = 'wasmgate'",
            &[],
        )
        .unwrap();
    let (encrypted, all): (i64, i64) = (row.get(0), row.get(1));
    assert!(all >= 2, "the writer and a reader are connected: {all}");
    assert_eq!(encrypted, all, "every connection of the store is TLS");
    drop(store);

    let unverified = postgres::PostgresStore::open(&format!("{url}?sslmode=require")).unwrap();
    let error = format!(
        "{:#}",
        unverified.write(&[record(H, "a", 1, 2, 3)]).unwrap_err()
    );
    assert!(error.contains("certificate"), "{error}");
    assert!(!error.contains("pg-test-secret"), "{error}");
    assert!(
        format!(
            "{:#}",
            postgres::PostgresStore::open(&format!("{url}?sslmode=maybe"))
                .err()
                .unwrap()
        )
        .contains("sslmode `maybe`")
    );
}

/// A database written before `usage_daily_models` existed gets it filled from the hourly rollup.
#[test]
fn an_older_sqlite_file_gains_the_daily_model_rollup() {
    use super::time::DAY_US;
    let dir = std::env::temp_dir().join(format!("wasmgate-ledger-daily-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("old.db");
    let records: Vec<_> = (0..48)
        .map(|i| {
            let mut r = record(H + i * HOUR_US, "a", 1 + i as u64, 2, 3);
            r.request_id = format!("old-{i}");
            r
        })
        .collect();
    let store = at_v1(|| {
        let store = sqlite::SqliteStore::open(&path).unwrap();
        store.write(&records).unwrap();
        store
    });
    let day0 = H - 13 * HOUR_US;
    let range = (day0, day0 + 3 * DAY_US);
    let before = store
        .models("p", range.0, range.1, Unit::Day, &UserFilter::default())
        .unwrap();
    let total = store.total("p", range.0, range.1).unwrap();
    assert_eq!(before.len(), 3);
    drop(store);
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(&format!(
            "{} DROP TABLE usage_daily_models;",
            before_history()
        ))
        .unwrap();
    let store = sqlite::SqliteStore::open(&path).unwrap();
    let after = store
        .models("p", range.0, range.1, Unit::Day, &UserFilter::default())
        .unwrap();
    assert_eq!(after, before);
    assert_eq!(store.total("p", range.0, range.1).unwrap(), total);
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A file from the first development schema (records without `user_key`) is refused with a
/// message that says what to do, not an SQL error.
#[test]
fn a_first_schema_sqlite_file_is_refused_clearly() {
    let dir = std::env::temp_dir().join(format!("wasmgate-ledger-first-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("first.db");
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("CREATE TABLE usage_records (request_id TEXT, time_us INTEGER)")
        .unwrap();
    let error = format!("{:#}", sqlite::SqliteStore::open(&path).err().unwrap());
    assert!(error.contains("earlier development version"), "{error}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A database written before the request log gets its indexes, and loses the old time index
/// that the new one extends.
#[test]
fn an_older_sqlite_file_gains_the_request_log_indexes() {
    let dir = std::env::temp_dir().join(format!("wasmgate-ledger-log-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("old.db");
    at_v1(|| {
        sqlite::SqliteStore::open(&path)
            .unwrap()
            .write(&[record(H, "a", 1, 2, 3)])
            .unwrap();
    });
    let indexes = |conn: &rusqlite::Connection| -> Vec<String> {
        let mut stmt = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'usage_records%' ORDER BY name")
            .unwrap();
        stmt.query_map([], |row| row.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "DROP INDEX usage_records_by_project_time_id; DROP INDEX usage_records_by_project_user;
             DROP INDEX usage_records_failed; DROP INDEX usage_records_by_request;
             DROP INDEX usage_records_by_key;
             CREATE INDEX usage_records_by_project_time ON usage_records (project, time_us);",
        )
        .unwrap();
        conn.execute_batch(&before_history()).unwrap();
        assert_eq!(indexes(&conn), ["usage_records_by_project_time"]);
    }
    let store = sqlite::SqliteStore::open(&path).unwrap();
    let page = store
        .requests(&requests::RequestQuery {
            project: "p".to_owned(),
            end_us: i64::MAX,
            limit: 5,
            ..requests::RequestQuery::default()
        })
        .unwrap();
    assert_eq!(page.len(), 1);
    drop(store);
    let conn = rusqlite::Connection::open(&path).unwrap();
    assert_eq!(
        indexes(&conn),
        [
            "usage_records_by_key",
            "usage_records_by_project_time_id",
            "usage_records_by_project_user",
            "usage_records_by_request",
            "usage_records_by_time",
            "usage_records_failed"
        ]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn stored(
    id: &str,
    project: &str,
    previous: Option<&str>,
    input: &str,
    output: &str,
) -> StoredResponse {
    StoredResponse {
        id: id.to_owned(),
        project: project.to_owned(),
        created_us: H,
        previous_id: previous.map(str::to_owned),
        input_items: format!(r#"[{{"type":"message","role":"user","content":"{input}"}}]"#),
        response: format!(
            r#"{{"id":"{id}","object":"response","output":[{{"type":"message","role":"assistant","content":[{{"type":"output_text","text":"{output}"}}]}}]}}"#
        ),
    }
}

/// Texts of a history's items, in order, to compare conversations at a glance.
fn texts(items: &[serde_json::Value]) -> Vec<String> {
    items
        .iter()
        .map(|item| match &item["content"] {
            serde_json::Value::String(text) => text.clone(),
            content => content[0]["text"].as_str().unwrap_or("?").to_owned(),
        })
        .collect()
}

/// Stored responses read back by project and id only, chain into a conversation oldest first,
/// and are forgotten on delete.
fn check_stored_responses(store: &dyn Store) {
    use super::responses::{HistoryError, history};
    store
        .put_response(&stored("resp_1", "p", None, "hi", "hello"))
        .unwrap();
    store
        .put_response(&stored("resp_2", "p", Some("resp_1"), "and?", "more"))
        .unwrap();
    store
        .put_response(&stored("resp_3", "p", Some("resp_2"), "end", "bye"))
        .unwrap();
    // The same id in another project is another response.
    store
        .put_response(&stored("resp_1", "q", None, "other", "secret"))
        .unwrap();

    let one = store.response("p", "resp_2").unwrap().unwrap();
    assert_eq!(one, stored("resp_2", "p", Some("resp_1"), "and?", "more"));
    assert_eq!(store.response("q", "resp_2").unwrap(), None);

    let items = history(store, "p", "resp_3").unwrap();
    assert_eq!(texts(&items), ["hi", "hello", "and?", "more", "end", "bye"]);
    assert_eq!(
        texts(&history(store, "q", "resp_1").unwrap()),
        ["other", "secret"]
    );
    assert_eq!(history(store, "q", "resp_3"), Err(HistoryError::NotFound));

    // Replacing keeps one row; deleting the oldest turn ends the walk there.
    store
        .put_response(&stored("resp_1", "p", None, "hi", "HELLO"))
        .unwrap();
    assert_eq!(
        texts(&history(store, "p", "resp_2").unwrap()),
        ["hi", "HELLO", "and?", "more"]
    );
    assert!(!store.delete_response("q", "resp_2").unwrap());
    assert!(store.delete_response("p", "resp_1").unwrap());
    assert!(!store.delete_response("p", "resp_1").unwrap());
    assert_eq!(
        texts(&history(store, "p", "resp_3").unwrap()),
        ["and?", "more", "end", "bye"]
    );
    assert_eq!(history(store, "p", "resp_1"), Err(HistoryError::NotFound));
    assert!(store.response("q", "resp_1").unwrap().is_some());
}

/// Two processes (here two connections, at the same moment) opening one new SQLite ledger both
/// migrate it: the second waits for the first's migration and finds it done, rather than
/// failing with "database is locked".
#[test]
fn two_stores_opening_one_new_sqlite_file_at_once_both_open() {
    let dir = std::env::temp_dir().join(format!("wasmgate-ledger-race-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for round in 0..12 {
        let path = dir.join(format!("race-{round}.db"));
        let start = std::sync::Arc::new(std::sync::Barrier::new(2));
        let openers: Vec<_> = (0..2)
            .map(|_| {
                let (path, start) = (path.clone(), std::sync::Arc::clone(&start));
                std::thread::spawn(move || {
                    start.wait();
                    sqlite::SqliteStore::open(&path)
                        .map(drop)
                        .map_err(|e| format!("{e:#}"))
                })
            })
            .collect();
        for opener in openers {
            let opened = opener.join().unwrap();
            assert!(opened.is_ok(), "round {round}: {opened:?}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
