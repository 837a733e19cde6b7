//! Budgets of `budget` limits over projects and users (not a key's own): from two replicas on
//! one ledger, each threshold crossed reaches the sinks exactly once.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::{alerts_yaml, exactly, sink, two_replicas, upstream};
use crate::common::binary::{Gateway, temp_dir};
use crate::common::gateway::{Gateway as Config, Provider};
use crate::common::http;
use crate::keys::cli;

fn write_config(dir: &Path, upstream: &str, sink: &str) -> PathBuf {
    let config = dir.join("config.yaml");
    let alerts = alerts_yaml("budget_percent: [50, 100]", sink);
    let yaml = Config::builder()
        .any_port()
        .ledger(&format!("sqlite://{}", dir.join("ledger.db").display()))
        .auth_required()
        .provider(
            "openai",
            Provider::at("openai", upstream, "sk-upstream").models(["gpt-4o"]),
        )
        .limit("budget", "project", "{daily_usd: 4}")
        .limit("budget", "user", "{total_usd: 2}")
        .set_yaml("alerts", &alerts)
        .to_yaml();
    std::fs::write(&config, yaml).unwrap();
    config
}

/// A $1.00 answer for user `ada`.
async fn spend_a_dollar(gateway: &Gateway, key: &str) {
    let status = http()
        .post(gateway.url("/v1/chat/completions"))
        .bearer_auth(key)
        .json(&json!({"model": "openai/gpt-4o", "user": "ada",
                      "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn project_and_user_budget_alerts_reach_each_sink_once_from_two_replicas() {
    let dir = temp_dir("alerts-scoped");
    let (sink_url, received) = sink().await;
    let config = write_config(&dir, &upstream().await, &sink_url);
    let key = cli(&config, &["keys", "create", "--project", "p"]);
    let key = key.trim();
    let replicas = two_replicas(&dir, &config).await;

    // $1: half of the user's $2 in all, a quarter of the project's $4 a day.
    spend_a_dollar(&replicas[0], key).await;
    let hooks = exactly(&received, 1).await;
    assert_eq!(
        (
            &hooks[0]["rule"],
            &hooks[0]["subject"],
            &hooks[0]["threshold"]
        ),
        (&json!("budget"), &json!("user:ada:total"), &json!(50))
    );
    assert!(
        hooks[0]["message"]
            .as_str()
            .unwrap()
            .contains("user `ada` has spent $1.00 of its $2.00 total budget"),
        "{}",
        hooks[0]
    );

    // $2: all of the user's, half of the project's.
    spend_a_dollar(&replicas[1], key).await;
    let hooks = exactly(&received, 3).await;
    let mut later: Vec<(String, i64)> = hooks[1..]
        .iter()
        .map(|h| {
            (
                h["subject"].as_str().unwrap().to_owned(),
                h["threshold"].as_i64().unwrap(),
            )
        })
        .collect();
    later.sort();
    assert_eq!(
        later,
        [
            ("project:p:day".to_owned(), 50),
            ("user:ada:total".to_owned(), 100)
        ]
    );
    drop(replicas);
    let _ = std::fs::remove_dir_all(&dir);
}
