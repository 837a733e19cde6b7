//! What the alert rules read of the ledger, on both databases: an alert claimed once, each
//! provider's failures, and its answers slower than a latency (by provider or by model) within
//! a window.

use super::by;
use super::records::record;
use super::{H, Store};
use crate::ledger::alerts::{Fired, SlowAnswers, SpendScope};
use crate::ledger::time::DAY_US;

fn fired(threshold: i64) -> Fired {
    Fired {
        rule: "latency".to_owned(),
        subject: "openai".to_owned(),
        threshold,
        period_us: H,
        fired_us: H + 1,
        message: "slow".to_owned(),
    }
}

fn slow(subject: &str, answered: i64, slower: i64) -> SlowAnswers {
    SlowAnswers {
        subject: subject.to_owned(),
        answered,
        slower,
    }
}

pub fn check_alert_queries(store: &dyn Store) {
    assert!(store.claim_alert(&fired(500)).unwrap());
    assert!(!store.claim_alert(&fired(500)).unwrap());
    assert!(store.claim_alert(&fired(900)).unwrap());

    // Before the window: slow and failed, not counted.
    let mut old = record(H - 1, "a", 1, 1, 1);
    old.latency_us = 9_000_000;
    let mut records = vec![old];
    for (i, (model, latency_us, status)) in [
        ("a", 100_000, 200),
        ("a", 600_000, 200),
        ("a", 500_000, 200), // not above 500 ms
        ("b", 700_000, 200),
        ("b", 9_000_000, 500), // failed: an error, not a slow answer
        ("b", 100, 0),
    ]
    .into_iter()
    .enumerate()
    {
        let mut r = record(H + i as i64, model, 1, 1, 1);
        r.latency_us = latency_us;
        r.status = status;
        records.push(r);
    }
    let mut elsewhere = record(H + 10, "c", 1, 1, 1);
    elsewhere.provider = Some("anthropic".to_owned());
    elsewhere.latency_us = 1;
    records.push(elsewhere);
    store.write(&records).unwrap();

    assert_eq!(
        store.slow_answers(H, 500_000, false).unwrap(),
        [slow("anthropic", 1, 0), slow("openai", 4, 2)]
    );
    assert_eq!(
        store.slow_answers(H, 500_000, true).unwrap(),
        [
            slow("anthropic/c", 1, 0),
            slow("openai/a", 3, 1),
            slow("openai/b", 1, 1)
        ]
    );
    let errors = store.provider_errors(H).unwrap();
    assert_eq!(
        errors
            .iter()
            .map(|e| (e.provider.as_str(), e.requests, e.failed))
            .collect::<Vec<_>>(),
        [("anthropic", 1, 0), ("openai", 6, 2)]
    );
}

/// Each project's and user's spend since a day's start: the day before is not counted, a user
/// is one across projects, a record without a user id is no user's.
pub fn check_spend_by_scope(store: &dyn Store) {
    let day = H - H.rem_euclid(DAY_US);
    let mut q = by(record(day + 5, "a", 1, 1, 40), "ada", "", &[]);
    q.project = "q".to_owned();
    store
        .write(&[
            by(record(day - 1, "a", 1, 1, 1000), "ada", "", &[]),
            by(record(day + 1, "a", 1, 1, 100), "ada", "Ada", &[]),
            by(record(day + 2, "b", 1, 1, 20), "bob", "", &[]),
            record(day + 3, "b", 1, 1, 3),
            q,
        ])
        .unwrap();
    let spend = |scope| store.spend_by(scope, H).unwrap();
    let owned = |all: &[(&str, i64)]| -> Vec<(String, i64)> {
        all.iter().map(|(s, n)| ((*s).to_owned(), *n)).collect()
    };
    assert_eq!(spend(SpendScope::Project), owned(&[("p", 123), ("q", 40)]));
    assert_eq!(spend(SpendScope::User), owned(&[("ada", 140), ("bob", 20)]));
    assert_eq!(
        store.spend_by(SpendScope::Project, day - 1).unwrap(),
        owned(&[("p", 1123), ("q", 40)])
    );
}
