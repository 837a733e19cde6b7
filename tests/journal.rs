//! The usage journal through the real binary: a gateway under load killed with SIGKILL and
//! started again has, in its ledger, every request a client saw answered (whole answers, streams
//! and errors), exactly once, rollups included; on SQLite, on PostgreSQL, and with two replicas
//! sharing PostgreSQL of which one is killed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::gateway::Gateway;
use common::http;
use common::mock_openai::MockOpenAi;
use common::postgres::PgCluster;
use serde_json::json;

/// Where the test's gateways keep their ledger.
enum Backend {
    Sqlite(PathBuf),
    Postgres {
        url: String,
        _cluster: Arc<PgCluster>,
    },
}

impl Backend {
    fn url(&self) -> String {
        match self {
            Self::Sqlite(path) => format!("sqlite://{}", path.display()),
            Self::Postgres { url, .. } => url.clone(),
        }
    }

    /// How many times each request id is stored, and the request count the hourly rollup sums.
    async fn stored(&self) -> (HashMap<String, usize>, i64) {
        let (ids, rollup): (Vec<String>, i64) = match self {
            Self::Sqlite(path) => {
                let conn = rusqlite::Connection::open(path).unwrap();
                let mut stmt = conn
                    .prepare("SELECT request_id FROM usage_records")
                    .unwrap();
                let ids = stmt
                    .query_map([], |r| r.get(0))
                    .unwrap()
                    .collect::<Result<_, _>>()
                    .unwrap();
                let rollup = conn
                    .query_row(
                        "SELECT COALESCE(SUM(requests), 0) FROM usage_hourly_models",
                        [],
                        |r| r.get(0),
                    )
                    .unwrap();
                (ids, rollup)
            }
            Self::Postgres { url, .. } => {
                let url = url.clone();
                tokio::task::spawn_blocking(move || {
                    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
                    let ids = client
                        .query("SELECT request_id FROM usage_records", &[])
                        .unwrap()
                        .iter()
                        .map(|r| r.get(0))
                        .collect();
                    let rollup = client
                        .query_one(
                            "SELECT COALESCE(SUM(requests), 0)::BIGINT FROM usage_hourly_models",
                            &[],
                        )
                        .unwrap()
                        .get(0);
                    (ids, rollup)
                })
                .await
                .unwrap()
            }
        };
        let mut counts = HashMap::new();
        for id in ids {
            *counts.entry(id).or_insert(0) += 1;
        }
        (counts, rollup)
    }
}

/// One replica: its own directory (its journal lives there) and config.
struct Replica {
    dir: PathBuf,
    config: PathBuf,
}

impl Replica {
    fn new(name: &str, backend: &Backend, mock: &MockOpenAi) -> Self {
        let dir = common::binary::temp_dir(name);
        let config = dir.join("config.yaml");
        let yaml = Gateway::standard(&mock.base_url())
            .any_port()
            .ledger(&backend.url())
            .to_yaml();
        std::fs::write(&config, yaml).unwrap();
        Self { dir, config }
    }

    async fn serve(&self) -> common::binary::Gateway {
        common::binary::Gateway::serve(&self.dir, &self.config).await
    }
}

/// Clients sending a mix of streams (through the upstream relay), whole answers and errors to
/// `urls` until `stop`; the ids of requests whose whole answer came back go to `answered`.
fn load(
    urls: &[String],
    clients: usize,
    answered: &Arc<Mutex<Vec<String>>>,
    stop: &tokio_util::sync::CancellationToken,
) -> Vec<tokio::task::JoinHandle<()>> {
    let client = http();
    (0..clients)
        .map(|c| {
            let url = urls[c % urls.len()].clone();
            let (client, answered, stop) = (client.clone(), Arc::clone(answered), stop.clone());
            tokio::spawn(async move {
                for i in 0..100_000 {
                    if stop.is_cancelled() {
                        break;
                    }
                    let id = format!("kill-{c}-{i}");
                    let (model, stream) = match i % 4 {
                        0 => ("gpt-4o-mini", true),
                        1 | 2 => ("echo-1", false),
                        _ => ("no-such-model", false),
                    };
                    let body = json!({
                        "model": model, "stream": stream,
                        "messages": [{"role": "user", "content": "hi"}],
                    });
                    let sent = client
                        .post(format!("{url}/v1/chat/completions"))
                        .header("x-request-id", &id)
                        .json(&body)
                        .send()
                        .await;
                    let Ok(response) = sent else { continue };
                    let status = response.status().as_u16();
                    let Ok(bytes) = response.bytes().await else {
                        continue;
                    };
                    let whole = match (status, stream) {
                        (200, true) => bytes.ends_with(b"data: [DONE]\n\n"),
                        (200, false) => serde_json::from_slice::<serde_json::Value>(&bytes)
                            .is_ok_and(|v| v["choices"].is_array()),
                        (404, _) => serde_json::from_slice::<serde_json::Value>(&bytes)
                            .is_ok_and(|v| v["error"]["code"] == "model_not_found"),
                        _ => false,
                    };
                    if whole {
                        answered.lock().unwrap().push(id);
                    }
                }
            })
        })
        .collect()
}

/// Waits until `answered` holds `n` ids (the load is under way).
async fn until_answered(answered: &Mutex<Vec<String>>, n: usize) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while answered.lock().unwrap().len() < n {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the load never got going"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// `replicas` gateways on one ledger under load; the first is killed with SIGKILL mid-load
/// (and its clients' requests break), then started again on the same journal; then all stop.
/// Every request a client saw answered is stored exactly once, and the rollups count each once.
async fn sigkill_loses_nothing_and_doubles_nothing(backend: Backend, name: &str, replicas: usize) {
    let mock = MockOpenAi::start().await;
    let replicas: Vec<_> = (0..replicas)
        .map(|r| Replica::new(&format!("journal-{name}-{r}"), &backend, &mock))
        .collect();
    let mut gateways = Vec::new();
    for replica in &replicas {
        gateways.push(replica.serve().await);
    }
    let urls: Vec<_> = gateways.iter().map(|g| g.url("")).collect();
    let answered = Arc::new(Mutex::new(Vec::new()));
    let stop = tokio_util::sync::CancellationToken::new();
    let clients = load(&urls, 8, &answered, &stop);
    until_answered(&answered, 300).await;

    gateways[0].signal(libc::SIGKILL);
    let (status, _) = gateways[0].wait_exit(Duration::from_secs(10)).await;
    assert!(!status.success(), "killed: {status}");
    // The others keep serving a moment after the kill.
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.cancel();
    for client in clients {
        client.await.unwrap();
    }
    let answered = answered.lock().unwrap().clone();
    let (before, _) = backend.stored().await;
    let pending = answered
        .iter()
        .filter(|id| !before.contains_key(*id))
        .count();

    // The killed replica starts again on its journal: it writes what its predecessor left.
    let mut restarted = replicas[0].serve().await;
    restarted.signal(libc::SIGTERM);
    let (status, _) = restarted.wait_exit(Duration::from_secs(30)).await;
    assert!(
        status.success(),
        "exit status {status}: {:#?}",
        restarted.lines()
    );
    for gateway in &mut gateways[1..] {
        gateway.signal(libc::SIGTERM);
        let (status, _) = gateway.wait_exit(Duration::from_secs(30)).await;
        assert!(status.success(), "exit status {status}");
    }

    let (stored, rollup) = backend.stored().await;
    let missing: Vec<_> = answered
        .iter()
        .filter(|id| !stored.contains_key(*id))
        .collect();
    assert!(missing.is_empty(), "answered but not recorded: {missing:?}");
    let doubled: Vec<_> = stored.iter().filter(|(_, n)| **n > 1).collect();
    assert!(doubled.is_empty(), "recorded twice: {doubled:?}");
    let records = stored.len() as i64;
    assert_eq!(rollup, records, "the rollups count each record once");
    // Requests the kill cut short may be recorded too (their client saw no answer); no more.
    assert!(stored.len() >= answered.len());
    assert!(
        stored.len() <= answered.len() + 8,
        "{} records for {} answers and at most 8 cut short",
        stored.len(),
        answered.len()
    );
    assert!(
        pending > 0,
        "the kill left nothing unwritten to the database: nothing was tested"
    );
    eprintln!(
        "{} requests answered; {pending} of them were only in the killed replica's journal; \
         {} records",
        answered.len(),
        stored.len()
    );
    for replica in &replicas {
        let _ = std::fs::remove_dir_all(&replica.dir);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_under_load_on_sqlite() {
    let dir = common::binary::temp_dir("journal-sqlite-ledger");
    let backend = Backend::Sqlite(dir.join("ledger.db"));
    sigkill_loses_nothing_and_doubles_nothing(backend, "sqlite", 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_under_load_on_postgres() {
    let (url, cluster) = common::postgres::database();
    let backend = Backend::Postgres {
        url,
        _cluster: cluster,
    };
    sigkill_loses_nothing_and_doubles_nothing(backend, "postgres", 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_sharing_postgres_one_killed() {
    let (url, cluster) = common::postgres::database();
    let backend = Backend::Postgres {
        url,
        _cluster: cluster,
    };
    sigkill_loses_nothing_and_doubles_nothing(backend, "replicas", 2).await;
}

/// With the database unreachable, records pile up in the journal; at its bound the gateway
/// refuses new requests with 503 `ledger_full` in OpenAI's error shape, and says so in its
/// metrics, rather than answer without a record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_journal_refuses_new_requests_with_503() {
    let dir = common::binary::temp_dir("journal-full");
    let gateway = common::gateway::Gateway::echo()
        .ledger("postgres://nobody:secret@127.0.0.1:1/none")
        .set(
            "ledger.journal.dir",
            dir.join("journal").display().to_string(),
        )
        .set("ledger.journal.max_bytes", 1_048_576)
        .start()
        .await;
    let client = http();
    let mut refused = None;
    for i in 0..20_000 {
        let response = client
            .post(gateway.url("/v1/chat/completions"))
            .json(&json!({"model": "echo-1", "messages": [{"role": "user", "content": "hi"}]}))
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let body: serde_json::Value = response.json().await.unwrap();
        if status == 503 {
            refused = Some((i, body));
            break;
        }
        assert_eq!(status, 200, "{body}");
    }
    let (answered, body) = refused.expect("the journal never filled");
    assert!(answered > 1_000, "refused after {answered} requests");
    assert_eq!(body["error"]["code"], "ledger_full", "{body}");
    assert_eq!(body["error"]["type"], "api_error", "{body}");
    let metrics = gateway.metrics().await;
    assert!(metric(&metrics, "wasmgate_ledger_journal_bytes") >= 1_048_576.0);
    assert_eq!(
        metric(&metrics, "wasmgate_ledger_journal_refusals_total"),
        1.0
    );
    assert_eq!(
        metric(&metrics, "wasmgate_ledger_journal_appended_records_total"),
        answered as f64,
        "every answered request, and not the refused one"
    );
    drop(gateway);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Requests that end together share the journal's writes: each one's record is appended by
/// the first of them (the group's leader) in one `write()`, where each used to make its own.
/// Every answered request is still appended before its answer ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_ending_together_share_journal_writes() {
    let dir = common::binary::temp_dir("journal-groups");
    let gateway = common::gateway::Gateway::echo()
        .ledger(&format!("sqlite://{}", dir.join("ledger.db").display()))
        .start()
        .await;
    let client = http();
    let (clients, each) = (64, 20);
    let tasks: Vec<_> = (0..clients)
        .map(|_| {
            let (client, url) = (client.clone(), gateway.url("/v1/chat/completions"));
            tokio::spawn(async move {
                for _ in 0..each {
                    let response = client
                        .post(&url)
                        .json(&json!({"model": "echo-1", "messages": [{"role": "user", "content": "hi"}]}))
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(response.status(), 200);
                    response.bytes().await.unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let metrics = gateway.metrics().await;
    let records = metric(&metrics, "wasmgate_ledger_journal_appended_records_total");
    let writes = metric(&metrics, "wasmgate_ledger_journal_writes_total");
    assert_eq!(records, f64::from(clients * each), "every answered request");
    // One write per record would be no grouping at all; 64 clients at once share many.
    assert!(
        writes * 4.0 <= records * 3.0,
        "{writes} writes for {records} records"
    );
    eprintln!("{writes} writes for {records} records");
    drop(gateway);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The value of metric `name` (a series without labels) in a `/metrics` text.
fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {text}"))
}
