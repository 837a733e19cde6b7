//! Alerts from two replicas of the real binary on one ledger: a key's budget crossing 50 % and
//! 100 %, and a provider failing more than half its requests, each reach a signed webhook and a
//! Slack sink exactly once; each delivery is recorded; `wasmgate alerts test` reaches both.
//! The latency, circuit and journal rules are in `alerts/outages.rs`, project and user budgets
//! in `alerts/scoped_budgets.rs`.

mod outages;
mod scoped_budgets;

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Json;
use axum::http::HeaderMap;
use axum::routing::post;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use crate::common::binary::{Gateway, temp_dir};
use crate::common::gateway::{Gateway as Config, Provider};
use crate::common::http;
use crate::keys::{cli, dollar_answer};

const SECRET: &str = "alert-signing-secret";

/// An OpenAI upstream: `gpt-4o` answers with 100,000 completion tokens ($1.00 at its catalog
/// price), `gpt-4o-mini` fails with a 500; under `/slow` every model answers after 300 ms.
pub(crate) async fn upstream() -> String {
    let app = axum::Router::new()
        .route(
            "/v1/chat/completions",
            post(|Json(body): Json<Value>| async move {
                if body["model"] == "gpt-4o-mini" {
                    return (
                        axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                        Json(json!({"error": {"message": "down", "type": "server_error"}})),
                    );
                }
                (
                    axum::http::StatusCode::OK,
                    Json(dollar_answer(&body["model"])),
                )
            }),
        )
        .route(
            "/slow/v1/chat/completions",
            post(|Json(body): Json<Value>| async move {
                tokio::time::sleep(Duration::from_millis(300)).await;
                Json(dollar_answer(&body["model"]))
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/v1")
}

pub(crate) type Received = Arc<Mutex<Vec<(String, Value)>>>;

/// A sink for both kinds: `/hook` checks the webhook's signature (a bad one is a 401, which
/// the gateway would retry), `/slack` takes Slack's `{"text"}`. Keeps what it took.
pub(crate) async fn sink() -> (String, Received) {
    let received: Received = Arc::default();
    let (hook, slack) = (Arc::clone(&received), Arc::clone(&received));
    let app = axum::Router::new()
        .route(
            "/hook",
            post(move |headers: HeaderMap, body: String| {
                let received = Arc::clone(&hook);
                async move {
                    let signature = headers["x-wasmgate-signature"].to_str().unwrap();
                    let (t, v1) = signature
                        .strip_prefix("t=")
                        .and_then(|s| s.split_once(",v1="))
                        .unwrap();
                    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
                    mac.update(format!("{t}.{body}").as_bytes());
                    if hex::encode(mac.finalize().into_bytes()) != v1 {
                        return axum::http::StatusCode::UNAUTHORIZED;
                    }
                    let body = serde_json::from_str(&body).unwrap();
                    received.lock().unwrap().push(("hook".to_owned(), body));
                    axum::http::StatusCode::OK
                }
            }),
        )
        .route(
            "/slack",
            post(move |Json(body): Json<Value>| {
                let received = Arc::clone(&slack);
                async move {
                    assert!(body["text"].is_string(), "{body}");
                    received.lock().unwrap().push(("slack".to_owned(), body));
                    axum::http::StatusCode::OK
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), received)
}

fn write_config(dir: &Path, upstream: &str, sink: &str) -> std::path::PathBuf {
    let config = dir.join("config.yaml");
    let openai = Provider::at("openai", upstream, "sk-upstream").models(["gpt-4o", "gpt-4o-mini"]);
    let alerts = alerts_yaml(
        "budget_percent: [50, 100],
         error_rate: {window_s: 600, min_requests: 4, above_percent: 50}",
        sink,
    );
    let yaml = Config::builder()
        .any_port()
        .ledger(&format!("sqlite://{}", dir.join("ledger.db").display()))
        .auth_required()
        .provider("openai", openai)
        .set_yaml("alerts", &alerts)
        .to_yaml();
    std::fs::write(&config, yaml).unwrap();
    config
}

/// The `alerts:` section: `rules` (YAML mapping entries), looked at every 200 ms, and both
/// sinks of [`sink`] at `sink`.
pub(crate) fn alerts_yaml(rules: &str, sink: &str) -> String {
    format!(
        "{{interval_ms: 200, {rules},
          sinks: [{{name: hook, kind: webhook, url: '{sink}/hook', secret: {SECRET}}},
                  {{name: chat, kind: slack, url: '{sink}/slack'}}]}}"
    )
}

/// Two replicas of the binary on `config`, in `dir`.
pub(crate) async fn two_replicas(dir: &Path, config: &Path) -> [Gateway; 2] {
    [
        Gateway::serve(dir, config).await,
        Gateway::serve(dir, config).await,
    ]
}

/// A chat request's status; `key` empty for a gateway that does not require one.
pub(crate) async fn chat(gateway: &Gateway, key: &str, model: &str) -> u16 {
    let mut request = http().post(gateway.url("/v1/chat/completions"));
    if !key.is_empty() {
        request = request.bearer_auth(key);
    }
    request
        .json(&json!({"model": model, "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// Waits (up to 15 s) for the sinks to hold `n` alerts, then for a second more (several looks
/// by both replicas) to see that no more come; the webhook's bodies.
pub(crate) async fn exactly(received: &Received, n: usize) -> Vec<Value> {
    exactly_within(received, n, Duration::from_secs(15)).await
}

/// [`exactly`], waiting up to `wait` for them.
pub(crate) async fn exactly_within(received: &Received, n: usize, wait: Duration) -> Vec<Value> {
    let deadline = Instant::now() + wait;
    while received.lock().unwrap().len() < 2 * n && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let all = received.lock().unwrap().clone();
    let hooks: Vec<Value> = all
        .iter()
        .filter(|(sink, _)| sink == "hook")
        .map(|(_, body)| body.clone())
        .collect();
    assert_eq!(hooks.len(), n, "{hooks:?}");
    assert_eq!(all.len(), 2 * n, "each alert once to each sink: {all:?}");
    hooks
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn budget_and_error_rate_alerts_reach_each_sink_once_from_two_replicas() {
    let dir = temp_dir("alerts");
    let (sink_url, received) = sink().await;
    let config = write_config(&dir, &upstream().await, &sink_url);
    let budgeted = cli(
        &config,
        &[
            "keys",
            "create",
            "--project",
            "p",
            "--budget",
            "2",
            "--budget-period",
            "day",
        ],
    );
    let plain = cli(&config, &["keys", "create", "--project", "p"]);
    let (budgeted, plain) = (budgeted.trim(), plain.trim());
    let replicas = two_replicas(&dir, &config).await;

    // $1 of $2: the 50 % alert, once.
    assert_eq!(chat(&replicas[0], budgeted, "openai/gpt-4o").await, 200);
    let hooks = exactly(&received, 1).await;
    assert_eq!(hooks[0]["rule"], "budget");
    assert_eq!(hooks[0]["threshold"], 50);
    assert!(
        hooks[0]["message"]
            .as_str()
            .unwrap()
            .contains("$1.00 of its $2.00 day budget"),
        "{}",
        hooks[0]
    );

    // $2 of $2: the 100 % alert, once.
    assert_eq!(chat(&replicas[1], budgeted, "openai/gpt-4o").await, 200);
    let hooks = exactly(&received, 2).await;
    assert_eq!(hooks[1]["threshold"], 100);
    assert_eq!(hooks[1]["subject"], hooks[0]["subject"]);

    // Four failures of six requests to `openai`: the error-rate alert, once.
    for i in 0..4 {
        let status = chat(&replicas[i % 2], plain, "openai/gpt-4o-mini").await;
        assert!(status >= 500, "{status}");
    }
    let hooks = exactly(&received, 3).await;
    assert_eq!(hooks[2]["rule"], "error_rate");
    assert_eq!(hooks[2]["subject"], "openai");
    drop(replicas);

    // Every delivery is recorded, delivered.
    let db = rusqlite::Connection::open(dir.join("ledger.db")).unwrap();
    let (deliveries, delivered): (i64, i64) = db
        .query_row(
            "SELECT COUNT(*), COUNT(delivered_us) FROM alert_deliveries",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap();
    assert_eq!((deliveries, delivered), (6, 6));
    drop(db);

    // The test command reaches both sinks and records nothing.
    let tested = Command::new(env!("CARGO_BIN_EXE_wasmgate"))
        .args(["alerts", "test", "--config"])
        .arg(&config)
        .env_remove("WASMGATE_CONFIG")
        .output()
        .unwrap();
    assert!(tested.status.success(), "{tested:?}");
    let stdout = String::from_utf8_lossy(&tested.stdout);
    assert!(
        stdout.contains("hook: delivered") && stdout.contains("chat: delivered"),
        "{stdout}"
    );
    assert_eq!(received.lock().unwrap().len(), 8);
    let _ = std::fs::remove_dir_all(&dir);
}
