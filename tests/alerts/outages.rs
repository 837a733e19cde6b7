//! The rules on latency (from the ledger) and on each replica's own state (a circuit breaker
//! opening, the usage journal filling), from two replicas of the real binary on one ledger:
//! each alert reaches the sinks exactly once, even while the ledger's database is locked.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{alerts_yaml, exactly, exactly_within, sink, two_replicas, upstream};
use crate::common::binary::{Gateway, temp_dir};
use crate::common::gateway::{Gateway as Config, Provider, Route};

/// The journal's bound: the smallest accepted.
const JOURNAL_MAX: u64 = 1 << 20;

fn write_config(dir: &Path, upstream: &str, sink: &str) -> PathBuf {
    let config = dir.join("config.yaml");
    let base = upstream.trim_end_matches("/v1");
    let alerts = alerts_yaml(
        "latency: {window_s: 86400, min_requests: 4, percentile: 50, above_ms: 250},
         circuit_open: {period_s: 604800},
         journal_full: {above_percent: 20, period_s: 604800}",
        sink,
    );
    let yaml = Config::builder()
        .any_port()
        .ledger(&format!("sqlite://{}", dir.join("ledger.db").display()))
        .set("ledger.journal.max_bytes", JOURNAL_MAX)
        .provider(
            "slow",
            Provider::at("openai", &format!("{base}/slow/v1"), "sk-upstream").models(["gpt-4o"]),
        )
        .provider(
            "flaky",
            Provider::at("openai", upstream, "sk-upstream").models(["gpt-4o-mini"]),
        )
        .provider(
            "fast",
            Provider::at("openai", upstream, "sk-upstream").models(["gpt-4o"]),
        )
        .route(
            "outage",
            Route::new("fallback", ["flaky/gpt-4o-mini"])
                .yaml("retry", "{backoff_ms: 0}")
                .yaml("circuit_breaker", "{failures: 2, cooldown_ms: 600000}"),
        )
        .set_yaml("alerts", &alerts)
        .to_yaml();
    std::fs::write(&config, yaml).unwrap();
    config
}

async fn chat(gateway: &Gateway, model: &str) -> u16 {
    super::chat(gateway, "", model).await
}

/// The bytes of the fullest journal slot under `dir`.
fn fullest_journal(dir: &Path) -> u64 {
    let Ok(slots) = std::fs::read_dir(dir) else {
        return 0;
    };
    slots
        .flatten()
        .filter_map(|slot| std::fs::read_dir(slot.path()).ok())
        .map(|files| {
            files
                .flatten()
                .filter(|f| f.path().extension().is_some_and(|e| e == "journal"))
                .map(|f| f.metadata().map_or(0, |m| m.len()))
                .sum::<u64>()
        })
        .max()
        .unwrap_or(0)
}

fn rules(hooks: &[Value]) -> Vec<(String, String)> {
    let mut rules: Vec<(String, String)> = hooks
        .iter()
        .map(|h| {
            (
                h["rule"].as_str().unwrap().to_owned(),
                h["subject"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    rules.sort();
    rules
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latency_circuit_and_journal_alerts_reach_each_sink_once_from_two_replicas() {
    let dir = temp_dir("alerts-outages");
    let (sink_url, received) = sink().await;
    let config = write_config(&dir, &upstream().await, &sink_url);
    let replicas = two_replicas(&dir, &config).await;

    // Four answers of `slow`, 300 ms each, two per replica: its p50 is above 250 ms. Each
    // replica's `outage` circuit opens after two failures: two openings, one alert.
    for i in 0..4 {
        assert_eq!(chat(&replicas[i % 2], "slow/gpt-4o").await, 200);
    }
    for i in 0..4 {
        let status = chat(&replicas[i / 2], "outage").await;
        assert!(status >= 500, "{status}");
    }
    let hooks = exactly(&received, 2).await;
    assert_eq!(
        rules(&hooks),
        [
            ("circuit_open".to_owned(), "flaky".to_owned()),
            ("latency".to_owned(), "slow".to_owned())
        ]
    );
    let latency = hooks.iter().find(|h| h["rule"] == "latency").unwrap();
    assert_eq!(latency["threshold"], 250);
    assert!(
        latency["message"]
            .as_str()
            .unwrap()
            .contains("p50 latency of its 4 answers"),
        "{latency}"
    );
    let circuit = hooks.iter().find(|h| h["rule"] == "circuit_open").unwrap();
    assert!(
        circuit["message"]
            .as_str()
            .unwrap()
            .contains("flaky/gpt-4o-mini"),
        "{circuit}"
    );

    // The database locked (as when it is down): records wait in replica 0's journal until it
    // holds more than a fifth of its bound. Its alert cannot be claimed, and is sent once all
    // the same; replica 1's journal stays nearly empty.
    let journal = dir.join("ledger.db.usage-journal");
    let db = rusqlite::Connection::open(dir.join("ledger.db")).unwrap();
    db.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let started = Instant::now();
    let mut sent = 0;
    while fullest_journal(&journal) * 100 <= 21 * JOURNAL_MAX {
        assert!(sent < 4000, "{} bytes", fullest_journal(&journal));
        let answers =
            futures_util::future::join_all((0..8).map(|_| chat(&replicas[0], "fast/gpt-4o"))).await;
        assert!(answers.iter().all(|s| *s == 200), "{answers:?}");
        sent += 8;
    }
    eprintln!(
        "{sent} requests filled a fifth of the journal in {:?}",
        started.elapsed()
    );
    let hooks = exactly_within(&received, 3, Duration::from_secs(60)).await;
    db.execute_batch("COMMIT").unwrap();
    assert_eq!(hooks[2]["rule"], "journal_full");
    assert_eq!(hooks[2]["threshold"], 20);
    let subject = hooks[2]["subject"].as_str().unwrap();
    assert!(subject.ends_with("ledger.db.usage-journal/0"), "{subject}");
    // Once the database takes the records again, no other alert comes.
    tokio::time::sleep(Duration::from_secs(2)).await;
    exactly(&received, 3).await;
    drop(replicas);

    // The claims in the ledger: the latency and circuit alerts (the journal's could not be).
    let fired: Vec<(String, String)> = db
        .prepare("SELECT rule, subject FROM alerts_fired ORDER BY rule")
        .unwrap()
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        fired,
        [
            ("circuit_open".to_owned(), "flaky".to_owned()),
            ("latency".to_owned(), "slow".to_owned())
        ]
    );
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
}
