//! The usage ledger through the real gateway: one exact record per request (whole, streamed,
//! disconnected, failed), the `/usage/*` analytics endpoints and their user filter, and no record
//! lost on shutdown (also under load, with SIGTERM sent to the real binary). Each test that
//! touches the store runs twice: on SQLite and on a throwaway PostgreSQL cluster.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::gateway::Gateway;
use common::mock_openai::{CACHED_TOKENS, COMPLETION_TOKENS, MockOpenAi, PROMPT_TOKENS};
use common::postgres::PgCluster;
use common::{TestGateway, http};
use serde_json::{Value, json};

/// gpt-4o-mini's catalog price of the mock's usage (13 prompt, 5 of them cached, 7 completion).
const MOCK_COST_MICROS: i64 = 6;

/// Where a test's gateway keeps its ledger.
enum Backend {
    Sqlite(PathBuf),
    /// A database of its own on the shared cluster, kept alive while the test runs.
    Postgres {
        url: String,
        _cluster: Arc<PgCluster>,
    },
}

/// Each test taking a [`Backend`], once on SQLite and once on PostgreSQL.
macro_rules! on_both_stores {
    ($($test:ident),* $(,)?) => {$(
        mod $test {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$test(super::Backend::sqlite(stringify!($test))).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$test(super::Backend::postgres()).await;
            }
        }
    )*};
}

on_both_stores!(
    every_request_gets_one_exact_record_flushed_on_shutdown,
    totals_and_model_buckets_per_project_in_ms_or_us,
    models_filtered_by_user_are_bucketed_by_day,
    no_record_lost_on_sigterm_under_load,
    request_log_pages_filters_and_one_request,
    stats_agree_with_the_request_log_and_the_totals,
);

impl Backend {
    /// A fresh ledger file for one test.
    fn sqlite(name: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("wasmgate-usage-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self::Sqlite(dir.join("ledger.db"))
    }

    /// A database of its own on the shared cluster (the test fails without PostgreSQL).
    fn postgres() -> Self {
        let (url, cluster) = common::postgres::database();
        Self::Postgres {
            url,
            _cluster: cluster,
        }
    }

    fn url(&self) -> String {
        match self {
            Self::Sqlite(path) => format!("sqlite://{}", path.display()),
            Self::Postgres { url, .. } => url.clone(),
        }
    }

    /// Every stored record, oldest first: (request id, time, latency, the rest).
    async fn rows(&self) -> Vec<Stored> {
        match self {
            Self::Sqlite(path) => sqlite_rows(path),
            Self::Postgres { url, .. } => {
                let url = url.clone();
                // The sync client blocks on a runtime of its own: not on this test's thread.
                tokio::task::spawn_blocking(move || postgres_rows(&url))
                    .await
                    .unwrap()
            }
        }
    }
}

async fn start(mock: &MockOpenAi, backend: &Backend) -> TestGateway {
    Gateway::standard(&mock.base_url())
        .ledger(&backend.url())
        .start()
        .await
}

fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros() as i64
}

/// One stored record, as the tests compare it.
#[derive(Debug, PartialEq)]
struct Row {
    project: String,
    user_id: Option<String>,
    provider: Option<String>,
    model: Option<String>,
    operation: String,
    input: i64,
    output: i64,
    cached: i64,
    cost: Option<i64>,
    status: i64,
    error_type: Option<String>,
    estimated: bool,
}

const ROW_COLUMNS: &str = "request_id, time_us, latency_us, project, user_id, provider, model,
    operation, input_tokens, output_tokens, cached_input_tokens, cost_micros, status, error_type,
    estimated, ttft_us";

/// A stored record: request id, time, latency, time to first token, and the rest.
type Stored = (String, i64, i64, Option<i64>, Row);

fn postgres_rows(url: &str) -> Vec<Stored> {
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    let rows = client
        .query(
            &format!("SELECT {ROW_COLUMNS} FROM usage_records ORDER BY time_us"),
            &[],
        )
        .unwrap();
    rows.iter()
        .map(|r| {
            (
                r.get(0),
                r.get(1),
                r.get(2),
                r.get(15),
                Row {
                    project: r.get(3),
                    user_id: r.get(4),
                    provider: r.get(5),
                    model: r.get(6),
                    operation: r.get(7),
                    input: r.get(8),
                    output: r.get(9),
                    cached: r.get(10),
                    cost: r.get(11),
                    status: i64::from(r.get::<_, i32>(12)),
                    error_type: r.get(13),
                    estimated: r.get(14),
                },
            )
        })
        .collect()
}

fn sqlite_rows(db: &std::path::Path) -> Vec<Stored> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare(&format!(
            "SELECT {ROW_COLUMNS} FROM usage_records ORDER BY time_us"
        ))
        .unwrap();
    stmt.query_map([], |r| {
        Ok((
            r.get(0)?,
            r.get(1)?,
            r.get(2)?,
            r.get(15)?,
            Row {
                project: r.get(3)?,
                user_id: r.get(4)?,
                provider: r.get(5)?,
                model: r.get(6)?,
                operation: r.get(7)?,
                input: r.get(8)?,
                output: r.get(9)?,
                cached: r.get(10)?,
                cost: r.get(11)?,
                status: r.get(12)?,
                error_type: r.get(13)?,
                estimated: r.get(14)?,
            },
        ))
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}

fn chat(model: &str, stream: bool) -> Value {
    json!({
        "model": model,
        "stream": stream,
        "messages": [{"role": "user", "content": "Say hello"}],
        "extra": {"user": {"id": "u-1", "name": "Ada", "tags": ["beta"]}},
    })
}

fn mock_row(project: &str) -> Row {
    Row {
        project: project.to_owned(),
        user_id: Some("u-1".to_owned()),
        provider: Some("openai".to_owned()),
        model: Some("gpt-4o-mini".to_owned()),
        operation: "chat.completions".to_owned(),
        input: PROMPT_TOKENS as i64,
        output: COMPLETION_TOKENS as i64,
        cached: CACHED_TOKENS as i64,
        cost: Some(MOCK_COST_MICROS),
        status: 200,
        error_type: None,
        estimated: false,
    }
}

async fn every_request_gets_one_exact_record_flushed_on_shutdown(backend: Backend) {
    let mock = MockOpenAi::start().await;
    let gateway = start(&mock, &backend).await;
    let client = http();
    let before = now_us();

    // Whole answer, for project `acme`.
    let response = client
        .post(gateway.url("/v1/chat/completions"))
        .header("x-project-id", "acme")
        .header("x-request-id", "req-whole")
        .json(&chat("gpt-4o-mini", false))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response.bytes().await.unwrap();

    // Streamed answer, read to the end (usage comes in the last chunk).
    let response = client
        .post(gateway.url("/v1/chat/completions"))
        .header("x-request-id", "req-stream")
        .json(&chat("gpt-4o-mini", true))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");

    // A stream the client leaves midway: the mock never reports usage.
    let mut response = client
        .post(gateway.url("/v1/chat/completions"))
        .header("x-request-id", "req-gone")
        .json(&chat("endless", true))
        .send()
        .await
        .unwrap();
    assert!(response.chunk().await.unwrap().is_some());
    drop(response);
    for _ in 0..200 {
        if mock.shared.cancelled_streams.load(Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(mock.shared.cancelled_streams.load(Ordering::SeqCst), 1);

    // Errors: an upstream 429, an unknown model, a body that is not JSON.
    for (id, body) in [
        ("req-429", chat("error-429", false).to_string()),
        ("req-unknown", chat("no-such-model", false).to_string()),
        ("req-bad", "{not json".to_owned()),
    ] {
        let response = client
            .post(gateway.url("/v1/chat/completions"))
            .header("x-request-id", id)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert!(response.status().is_client_error(), "{id}");
    }

    // Nothing is read before the gateway stops: shutdown must write every queued record.
    gateway.stop().await;
    let after = now_us();
    let rows = backend.rows().await;
    let stored = |id: &str| {
        let (_, time, latency, ttft, row) =
            rows.iter().find(|(r, ..)| r == id).unwrap_or_else(|| {
                panic!("no record {id} in {rows:#?}");
            });
        assert!((before..=after).contains(time), "{id}: {time}");
        assert!(*latency > 0 && *latency < after - before, "{id}: {latency}");
        (*latency, *ttft, row)
    };
    let by_id = |id: &str| stored(id).2;
    assert_eq!(rows.len(), 6, "{rows:#?}");
    assert_eq!(by_id("req-whole"), &mock_row("acme"));
    assert_eq!(by_id("req-stream"), &mock_row("default"));
    // Time to first token: for streams, the first chunk came before the end; an answer sent
    // whole has none.
    for id in ["req-stream", "req-gone"] {
        let (latency, ttft, _) = stored(id);
        let ttft = ttft.unwrap_or_else(|| panic!("{id}: no time to first token"));
        assert!(
            ttft > 0 && ttft <= latency,
            "{id}: ttft {ttft} latency {latency}"
        );
    }
    assert_eq!(stored("req-whole").1, None);
    assert_eq!(stored("req-429").1, None);

    let gone = by_id("req-gone");
    assert_eq!(gone.model.as_deref(), Some("endless"));
    assert_eq!(gone.status, 200);
    assert_eq!(gone.error_type.as_deref(), Some("stream_incomplete"));
    assert!(gone.estimated);
    assert!(gone.input > 0 && gone.output > 0, "{gone:?}");

    let limited = by_id("req-429");
    assert_eq!(
        (limited.status, limited.error_type.as_deref(), limited.input),
        (429, Some("rate_limit_exceeded"), 0)
    );
    assert_eq!(limited.provider.as_deref(), Some("openai"));
    let unknown = by_id("req-unknown");
    assert_eq!(
        (
            unknown.status,
            unknown.error_type.as_deref(),
            unknown.provider.as_deref()
        ),
        (404, Some("model_not_found"), None)
    );
    let bad = by_id("req-bad");
    assert_eq!(
        (bad.status, bad.error_type.as_deref()),
        (400, Some("invalid_json"))
    );
    assert_eq!(bad.user_id, None);
}

async fn usage(gateway: &TestGateway, path: &str, project: &str, body: Value) -> (u16, Value) {
    let response = http()
        .post(gateway.url(path))
        .bearer_auth(gateway.api_key(project).await)
        .header("x-project-id", project)
        .json(&body)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

/// Sends `n` whole requests for `project` and waits until the ledger has written them.
async fn send(gateway: &TestGateway, project: &str, n: u64) {
    let client = http();
    for _ in 0..n {
        let response = client
            .post(gateway.url("/v1/chat/completions"))
            .header("x-project-id", project)
            .json(&chat("gpt-4o-mini", false))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
    }
}

async fn wait_for_tokens(gateway: &TestGateway, project: &str, input: u64) {
    for _ in 0..100 {
        let (_, body) = usage(gateway, "/usage/total", project, json!({})).await;
        if body["total"]["total_input_tokens"] == input {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the ledger never showed {input} input tokens for {project}");
}

async fn totals_and_model_buckets_per_project_in_ms_or_us(backend: Backend) {
    let mock = MockOpenAi::start().await;
    let gateway = start(&mock, &backend).await;
    let start_us = now_us();
    send(&gateway, "acme", 3).await;
    send(&gateway, "other", 1).await;
    wait_for_tokens(&gateway, "acme", 3 * PROMPT_TOKENS).await;
    wait_for_tokens(&gateway, "other", PROMPT_TOKENS).await;
    let end_us = now_us() + 1_000_000;

    // Microseconds in, microseconds out.
    let (status, body) = usage(
        &gateway,
        "/usage/total",
        "acme",
        json!({"start_time_us": start_us, "end_time_us": end_us}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({
            "total": {
                "total_input_tokens": 3 * PROMPT_TOKENS,
                "total_output_tokens": 3 * COMPLETION_TOKENS,
                "total_cost": 3.0 * MOCK_COST_MICROS as f64 / 1e6,
            },
            "cache": {"hits": 0, "hit_rate": 0.0, "saved_cost": 0.0},
            "batch": {"requests": 0, "cost": 0.0},
            "period_start": start_us,
            "period_end": end_us,
        })
    );

    // Milliseconds in (13 digits), microseconds out; the same totals.
    let (start_ms, end_ms) = (start_us / 1000, end_us / 1000 + 1);
    let (status, ms) = usage(
        &gateway,
        "/usage/total",
        "acme",
        json!({"start_time_us": start_ms, "end_time_us": end_ms}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(ms["total"], body["total"]);
    assert_eq!(ms["period_start"], start_ms * 1000);
    assert_eq!(ms["period_end"], end_ms * 1000);

    // Another project sees only its own; an unknown one sees nothing.
    let range = json!({"start_time_us": start_us, "end_time_us": end_us});
    let (_, other) = usage(&gateway, "/usage/total", "other", range.clone()).await;
    assert_eq!(other["total"]["total_input_tokens"], PROMPT_TOKENS);
    let (_, nobody) = usage(&gateway, "/usage/total", "nobody", range.clone()).await;
    assert_eq!(nobody["total"]["total_input_tokens"], 0);
    assert_eq!(nobody["total"]["total_cost"], 0.0);

    // Per model, in every unit: one bucket holding all three requests.
    for unit in ["minute", "hour", "day", "week", "month"] {
        let mut query = range.clone();
        query["min_unit"] = unit.into();
        let (status, body) = usage(&gateway, "/usage/models", "acme", query).await;
        assert_eq!(status, 200, "{body}");
        let models = body["models"].as_array().unwrap();
        // A minute or hour boundary may fall between the requests.
        let input: u64 = models
            .iter()
            .map(|m| m["total_input_tokens"].as_u64().unwrap())
            .sum();
        assert_eq!(input, 3 * PROMPT_TOKENS, "{unit}: {body}");
        let first = &models[0];
        assert_eq!(first["provider"], "openai");
        assert_eq!(first["model_name"], "gpt-4o-mini");
        let bucket = first[unit].as_str().unwrap();
        assert_eq!(bucket.len(), "YYYY-MM-DD HH:MM:SS".len(), "{bucket}");
        if unit == "day" {
            assert!(bucket.ends_with(" 00:00:00"), "{bucket}");
        }
        assert_eq!(body["period_start"], start_us);
    }
    gateway.stop().await;
}

#[tokio::test]
async fn bad_usage_queries_get_400_in_openais_shape() {
    let mock = MockOpenAi::start().await;
    let gateway = start(&mock, &Backend::sqlite("bad")).await;
    let cases = [
        (
            "/usage/total",
            json!({"start_time_us": "yesterday"}),
            "start_time_us",
        ),
        (
            "/usage/total",
            json!({"start_time_us": -5}),
            "start_time_us",
        ),
        (
            "/usage/total",
            json!({"start_time_us": 1_700_000_000_000_000i64, "end_time_us": 1_600_000_000_000_000i64}),
            "start_time_us",
        ),
        (
            "/usage/models",
            json!({"min_unit": "fortnight"}),
            "min_unit",
        ),
        ("/usage/models", json!({"min_unit": 3}), "min_unit"),
        ("/usage/models", json!({"user_id": ""}), "user_id"),
        ("/usage/models", json!({"user_id": 7}), "user_id"),
        ("/usage/models", json!({"user_tags": "vip"}), "user_tags"),
        (
            "/usage/models",
            json!({"user_tags": ["vip", " "]}),
            "user_tags",
        ),
        ("/usage/total", json!({"user_id": "u-1"}), ""),
        ("/usage/stats", json!({"bucket": "fortnight"}), "bucket"),
        (
            "/usage/stats",
            json!({"bucket": "minute", "start_time_us": 0}),
            "bucket",
        ),
        ("/usage/stats", json!({"user_id": "u-1"}), ""),
        ("/usage/total", json!({"star_time_us": 1}), ""),
    ];
    for (path, body, param) in cases {
        let (status, answer) = usage(&gateway, path, "acme", body.clone()).await;
        assert_eq!(status, 400, "{body} -> {answer}");
        let error = &answer["error"];
        assert_eq!(error["type"], "invalid_request_error", "{answer}");
        assert!(error["message"].as_str().is_some_and(|m| !m.is_empty()));
        if !param.is_empty() {
            assert_eq!(error["param"], param, "{body} -> {answer}");
        }
    }
    // Not JSON at all.
    let response = http()
        .post(gateway.url("/usage/models"))
        .bearer_auth(gateway.api_key("acme").await)
        .body("{nope")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let answer: Value = response.json().await.unwrap();
    assert_eq!(answer["error"]["code"], "invalid_json");
    gateway.stop().await;
}

/// Sends one whole request for `project` as `user` (an `extra.user` object).
async fn send_as(gateway: &TestGateway, project: &str, user: Value) {
    let mut body = chat("gpt-4o-mini", false);
    body["extra"]["user"] = user;
    let response = http()
        .post(gateway.url("/v1/chat/completions"))
        .header("x-project-id", project)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}

async fn models_filtered_by_user_are_bucketed_by_day(backend: Backend) {
    let mock = MockOpenAi::start().await;
    let gateway = start(&mock, &backend).await;
    let start_us = now_us();
    send_as(
        &gateway,
        "acme",
        json!({"id": "ada", "name": "Ada", "tags": ["beta"]}),
    )
    .await;
    send_as(
        &gateway,
        "acme",
        json!({"id": "ada", "name": "Ada", "tags": ["beta"]}),
    )
    .await;
    send_as(
        &gateway,
        "acme",
        json!({"id": "bob", "name": "Bob", "tags": ["vip", "beta"]}),
    )
    .await;
    send_as(&gateway, "acme", json!({"id": "cy", "tags": ["free"]})).await;
    send_as(&gateway, "other", json!({"id": "ada", "name": "Ada"})).await;
    wait_for_tokens(&gateway, "acme", 4 * PROMPT_TOKENS).await;
    wait_for_tokens(&gateway, "other", PROMPT_TOKENS).await;
    let end_us = now_us() + 1_000_000;
    let range = json!({"start_time_us": start_us, "end_time_us": end_us});

    // The input tokens of each answer's buckets, and the buckets' key.
    let ask = |filter: Value| {
        let mut query = range.clone();
        query
            .as_object_mut()
            .unwrap()
            .extend(filter.as_object().unwrap().clone());
        let gateway = &gateway;
        async move {
            let (status, body) = usage(gateway, "/usage/models", "acme", query).await;
            assert_eq!(status, 200, "{body}");
            assert_eq!(body["period_start"], start_us, "{body}");
            let models = body["models"].as_array().unwrap().clone();
            let input: u64 = models
                .iter()
                .map(|m| m["total_input_tokens"].as_u64().unwrap())
                .sum();
            (models, input / PROMPT_TOKENS)
        }
    };

    let (models, requests) = ask(json!({"user_id": "ada"})).await;
    assert_eq!(requests, 2, "only ada's two requests in acme: {models:?}");
    let day = models[0]["day"].as_str().unwrap();
    assert!(day.ends_with(" 00:00:00"), "bucketed by day: {day}");
    assert!(models[0].get("hour").is_none(), "{models:?}");
    assert_eq!(models[0]["model_name"], "gpt-4o-mini");
    assert_eq!(
        models[0]["total_cost"].as_f64().unwrap(),
        2.0 * MOCK_COST_MICROS as f64 / 1e6
    );

    assert_eq!(ask(json!({"user_name": "Bob"})).await.1, 1);
    assert_eq!(ask(json!({"user_tags": ["beta"]})).await.1, 3);
    assert_eq!(
        ask(json!({"user_tags": ["vip", "free"]})).await.1,
        2,
        "any tag"
    );
    assert_eq!(
        ask(json!({"user_id": "ada", "user_tags": ["vip"]})).await.1,
        0
    );
    assert_eq!(
        ask(json!({"user_id": "nobody"})).await.0,
        Vec::<Value>::new()
    );

    // An explicit unit still wins over the filter's day.
    let (models, requests) = ask(json!({"user_id": "ada", "min_unit": "hour"})).await;
    assert_eq!(requests, 2);
    assert!(models[0]["hour"].as_str().is_some(), "{models:?}");

    // The time range still applies: before the requests, nothing.
    let (status, body) = usage(
        &gateway,
        "/usage/models",
        "acme",
        json!({"start_time_us": start_us - 3_600_000_000i64, "end_time_us": start_us, "user_id": "ada"}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body["models"], json!([]));
    gateway.stop().await;
}

/// The real binary under a bounded load (8 clients, at most 480 requests, at most 5 s) gets
/// SIGTERM midway: it exits 0, and the ledger holds exactly one record per response, each
/// named by the response's `x-request-id`.
async fn no_record_lost_on_sigterm_under_load(backend: Backend) {
    const CLIENTS: usize = 8;
    const PER_CLIENT: usize = 60;
    const SIGTERM_AFTER: usize = 120;
    let dir = common::binary::temp_dir(&format!(
        "usage-sigterm-{}",
        matches!(backend, Backend::Sqlite(_))
    ));
    let config = dir.join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "server: {{ host: 127.0.0.1, port: 0 }}\n\
             providers:\n  echo: {{ plugin: echo, models: [echo-1] }}\n\
             ledger: {{ url: '{}' }}\n",
            backend.url()
        ),
    )
    .unwrap();
    let mut gateway = common::binary::Gateway::serve(&dir, &config).await;
    let client = http();
    let url = gateway.url("");

    let answered = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let load_ends = tokio::time::Instant::now() + Duration::from_secs(5);
    let clients: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let (client, url, answered) = (client.clone(), url.clone(), Arc::clone(&answered));
            tokio::spawn(async move {
                for i in 0..PER_CLIENT {
                    if tokio::time::Instant::now() > load_ends {
                        break;
                    }
                    let id = format!("load-{c}-{i}");
                    let sent = client
                        .post(format!("{url}/v1/chat/completions"))
                        .header("x-request-id", &id)
                        .json(&json!({"model": "echo-1", "messages": [{"role": "user", "content": "hi"}]}))
                        .send()
                        .await;
                    // After SIGTERM, new connections are refused: that request never existed.
                    let Ok(response) = sent else { continue };
                    let echoed = response.headers()["x-request-id"].to_str().unwrap().to_owned();
                    if response.bytes().await.is_ok() {
                        assert_eq!(echoed, id);
                        answered.lock().unwrap().push(echoed);
                    }
                }
            })
        })
        .collect();
    while answered.lock().unwrap().len() < SIGTERM_AFTER {
        assert!(
            tokio::time::Instant::now() < load_ends,
            "the load never got going"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    gateway.signal(libc::SIGTERM);
    for client in clients {
        client.await.unwrap();
    }
    let (status, _) = gateway.wait_exit(Duration::from_secs(20)).await;
    assert!(status.success(), "exit status {status}");

    let answered = answered.lock().unwrap().clone();
    let stored: Vec<String> = backend
        .rows()
        .await
        .into_iter()
        .map(|(id, ..)| id)
        .collect();
    let missing: Vec<_> = answered.iter().filter(|id| !stored.contains(id)).collect();
    assert!(missing.is_empty(), "answered but not recorded: {missing:?}");
    assert_eq!(
        stored.len(),
        answered.len(),
        "one record per answered request (sent {} of {})",
        answered.len(),
        CLIENTS * PER_CLIENT
    );
    assert!(
        answered.len() < CLIENTS * PER_CLIENT,
        "SIGTERM came after the load ended: nothing was tested"
    );
    eprintln!(
        "{} of {} requests answered before SIGTERM ended the load; as many records",
        answered.len(),
        CLIENTS * PER_CLIENT
    );
}

/// Sends one chat request named `id` for `project` and returns its status.
async fn send_named(
    gateway: &TestGateway,
    project: &str,
    id: &str,
    model: &str,
    user: Value,
    key: Option<&str>,
) -> u16 {
    let mut body = chat(model, false);
    body["extra"]["user"] = user;
    let mut request = http()
        .post(gateway.url("/v1/chat/completions"))
        .header("x-project-id", project)
        .header("x-request-id", id)
        .json(&body);
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    request.send().await.unwrap().status().as_u16()
}

/// The ids of a `/usage/requests` answer, in order.
fn ids(body: &Value) -> Vec<String> {
    body["data"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"))
        .iter()
        .map(|r| r["request_id"].as_str().unwrap().to_owned())
        .collect()
}

/// The request log through the real gateway: newest first, each filter, pages that neither
/// repeat nor skip while new requests arrive, one request by id (404 for another project's or
/// an unknown one), bad queries and cursors a 400 in OpenAI's shape, and no key a 401.
async fn request_log_pages_filters_and_one_request(backend: Backend) {
    let mock = MockOpenAi::start().await;
    let gateway = start(&mock, &backend).await;
    let key = gateway.api_key("acme").await;
    let ada = json!({"id": "ada", "name": "Ada", "tags": ["beta"]});
    let bob = json!({"id": "bob", "tags": ["vip"]});
    let mut sent = Vec::new();
    for i in 0..6 {
        let id = format!("log-{i}");
        let user = if i % 2 == 0 { ada.clone() } else { bob.clone() };
        assert_eq!(
            send_named(
                &gateway,
                "acme",
                &id,
                "gpt-4o-mini",
                user,
                (i == 5).then_some(key.as_str())
            )
            .await,
            200
        );
        sent.push(id);
    }
    assert_eq!(
        send_named(
            &gateway,
            "acme",
            "log-fail",
            "no-such-model",
            ada.clone(),
            None
        )
        .await,
        404
    );
    assert_eq!(
        send_named(
            &gateway,
            "other",
            "log-other",
            "gpt-4o-mini",
            ada.clone(),
            None
        )
        .await,
        200
    );
    // Newest first: the failure, then log-5 .. log-0.
    let mut newest_first: Vec<String> = sent.iter().rev().cloned().collect();
    newest_first.insert(0, "log-fail".to_owned());
    let mut all = json!({});
    for _ in 0..100 {
        all = usage(&gateway, "/usage/requests", "acme", json!({}))
            .await
            .1;
        if ids(&all).len() == 7 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(ids(&all), newest_first, "{all}");
    assert_eq!(all["has_more"], false);
    assert_eq!(all["next_cursor"], Value::Null);
    let first = &all["data"][1];
    assert_eq!(first["dialect"], "openai.chat");
    assert_eq!(first["operation"], "chat.completions");
    assert_eq!(first["model"], "gpt-4o-mini");
    assert_eq!(first["provider"], "openai");
    assert_eq!(first["status"], 200);
    assert_eq!(
        first["user"],
        json!({"id": "bob", "name": null, "tags": ["vip"]})
    );
    assert_eq!(first["input_tokens"], PROMPT_TOKENS);
    // The mock reports `completion_tokens_details.reasoning_tokens: 0`; the field is shown.
    assert_eq!(first["reasoning_tokens"], 0);
    assert_eq!(
        first["cost"].as_f64().unwrap(),
        MOCK_COST_MICROS as f64 / 1e6
    );
    let key_id = first["api_key_id"].as_str().unwrap().to_owned();
    assert!(key_id.starts_with("key_"), "{first}");
    assert_eq!(all["data"][0]["status"], 404);
    assert_eq!(all["data"][0]["error_type"], "model_not_found");

    // Each filter.
    let ask = |filter: Value| {
        let gateway = &gateway;
        async move {
            let (status, body) = usage(gateway, "/usage/requests", "acme", filter.clone()).await;
            assert_eq!(status, 200, "{filter} -> {body}");
            ids(&body)
        }
    };
    assert_eq!(ask(json!({"status": "error"})).await, ["log-fail"]);
    assert_eq!(ask(json!({"status": "4xx"})).await, ["log-fail"]);
    assert_eq!(ask(json!({"status": "5xx"})).await, Vec::<String>::new());
    assert_eq!(ask(json!({"status": "2xx"})).await.len(), 6);
    assert_eq!(ask(json!({"model": "gpt-4o-mini"})).await.len(), 6);
    assert_eq!(ask(json!({"provider": "openai"})).await.len(), 6);
    assert_eq!(
        ask(json!({"user_id": "bob"})).await,
        ["log-5", "log-3", "log-1"]
    );
    assert_eq!(
        ask(json!({"user_tags": ["beta"]})).await,
        ["log-fail", "log-4", "log-2", "log-0"]
    );
    assert_eq!(ask(json!({"api_key_id": key_id})).await, ["log-5"]);
    assert_eq!(ask(json!({"dialect": "openai.chat"})).await.len(), 7);
    assert_eq!(
        ask(json!({"dialect": "openai.embeddings"})).await,
        Vec::<String>::new()
    );
    assert_eq!(
        ask(json!({"user_id": "ada", "status": "2xx", "limit": 2})).await,
        ["log-4", "log-2"]
    );
    assert_eq!(
        ask(json!({"end_time_us": 1_000_000_000_000i64})).await,
        Vec::<String>::new()
    );

    // Pages of 3 while new requests arrive between them: none repeated, none skipped.
    let mut pages = Vec::new();
    let mut query = json!({"limit": 3});
    for round in 0..10 {
        let (status, body) = usage(&gateway, "/usage/requests", "acme", query.clone()).await;
        assert_eq!(status, 200, "{body}");
        pages.extend(ids(&body));
        let Some(cursor) = body["next_cursor"].as_str() else {
            assert_eq!(body["has_more"], false);
            break;
        };
        assert_eq!(body["has_more"], true);
        query["cursor"] = cursor.into();
        assert_eq!(
            send_named(
                &gateway,
                "acme",
                &format!("late-{round}"),
                "gpt-4o-mini",
                ada.clone(),
                None
            )
            .await,
            200
        );
    }
    assert_eq!(pages, newest_first);
    // A cursor belongs to its filters.
    let (status, body) = usage(
        &gateway,
        "/usage/requests",
        "acme",
        json!({"limit": 1, "cursor": query["cursor"], "model": "gpt-4o-mini"}),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["param"], "cursor");
    // And to its project.
    let (status, body) = usage(
        &gateway,
        "/usage/requests",
        "other",
        json!({"limit": 1, "cursor": query["cursor"]}),
    )
    .await;
    assert_eq!(status, 400, "{body}");

    // One request: only its own project's.
    let one = |project: &'static str, id: &'static str| {
        let gateway = &gateway;
        async move {
            let response = http()
                .get(gateway.url(&format!("/usage/requests/{id}")))
                .bearer_auth(gateway.api_key(project).await)
                .send()
                .await
                .unwrap();
            (
                response.status().as_u16(),
                response.json::<Value>().await.unwrap(),
            )
        }
    };
    let (status, body) = one("acme", "log-3").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["request_id"], "log-3");
    assert_eq!(body["user"]["id"], "bob");
    assert_eq!(body, all["data"][3]);
    let (status, body) = one("acme", "log-other").await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["error"]["code"], "request_not_found");
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert_eq!(one("other", "log-other").await.0, 200);
    assert_eq!(one("other", "log-3").await.0, 404);
    assert_eq!(one("acme", "nope").await.0, 404);

    // Bad queries, in OpenAI's shape.
    for (body, param) in [
        (json!({"cursor": "not-hex"}), "cursor"),
        (json!({"cursor": "01"}), "cursor"),
        (json!({"limit": 0}), "limit"),
        (json!({"limit": 501}), "limit"),
        (json!({"status": "3xx"}), "status"),
        (json!({"dialect": "cobol"}), "dialect"),
        (json!({"model": ""}), "model"),
        (json!({"model": "m".repeat(10_000)}), "model"),
        (json!({"api_key_id": "k".repeat(100)}), "api_key_id"),
        (json!({"user_tags": vec!["x"; 17]}), "user_tags"),
    ] {
        let (status, answer) = usage(&gateway, "/usage/requests", "acme", body.clone()).await;
        assert_eq!(status, 400, "{body} -> {answer}");
        assert_eq!(answer["error"]["type"], "invalid_request_error", "{answer}");
        assert_eq!(answer["error"]["param"], param, "{body} -> {answer}");
        assert!(answer.to_string().len() < 2_000, "{answer}");
    }
    // No key: 401, for the list and for one request.
    let response = http()
        .post(gateway.url("/usage/requests"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    let response = http()
        .get(gateway.url("/usage/requests/log-3"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    gateway.stop().await;
}

/// The nearest-rank percentile `p` of `values`, as the ledger computes it.
fn nearest_rank(values: &[i64], p: u64) -> Value {
    let mut sorted = values.to_vec();
    sorted.sort();
    if sorted.is_empty() {
        return Value::Null;
    }
    let rank = (p * sorted.len() as u64).div_ceil(100).max(1) - 1;
    json!(sorted[rank as usize])
}

/// `POST /usage/stats` through the real gateway: its totals, per-bucket sums, breakdowns and
/// latency percentiles (within the histograms' precision) equal what the request log holds for the same range, its cost and tokens
/// equal `/usage/total`'s, and another project's requests are never in them.
async fn stats_agree_with_the_request_log_and_the_totals(backend: Backend) {
    let mock = MockOpenAi::start().await;
    let gateway = start(&mock, &backend).await;
    let ada = json!({"id": "ada", "tags": ["research", "eu"]});
    let bob = json!({"id": "bob", "tags": ["eu"]});
    for i in 0..5 {
        let user = if i % 2 == 0 { &ada } else { &bob };
        let id = format!("stats-{i}");
        assert_eq!(
            send_named(&gateway, "acme", &id, "gpt-4o-mini", user.clone(), None).await,
            200
        );
    }
    for i in 0..2 {
        let id = format!("stats-fail-{i}");
        assert_eq!(
            send_named(&gateway, "acme", &id, "error-500", bob.clone(), None).await,
            502
        );
    }
    // Streams, which have a time to first token.
    for i in 0..3 {
        let mut body = chat("gpt-4o-mini", true);
        body["extra"]["user"] = ada.clone();
        let response = http()
            .post(gateway.url("/v1/chat/completions"))
            .header("x-project-id", "acme")
            .header("x-request-id", format!("stats-stream-{i}"))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        response.bytes().await.unwrap();
    }
    assert_eq!(
        send_named(
            &gateway,
            "globex",
            "stats-other",
            "gpt-4o-mini",
            ada.clone(),
            None
        )
        .await,
        200
    );
    let sent = 10;
    let mut log = Vec::new();
    for _ in 0..200 {
        let (_, page) = usage(&gateway, "/usage/requests", "acme", json!({"limit": 500})).await;
        log = page["data"].as_array().unwrap().clone();
        if log.len() >= sent {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(log.len(), sent);
    let (start, end) = (now_us() - 3_600_000_000, now_us() + 1_000_000);
    let range = json!({"start_time_us": start, "end_time_us": end});
    let (status, stats) = usage(
        &gateway,
        "/usage/stats",
        "acme",
        json!({"start_time_us": start, "end_time_us": end, "bucket": "minute"}),
    )
    .await;
    assert_eq!(status, 200, "{stats}");
    let (_, total) = usage(&gateway, "/usage/total", "acme", range.clone()).await;
    let t = &stats["total"];
    assert_eq!(t["requests"], sent);
    assert_eq!(t["errors"], 2);
    assert_eq!(t["error_rate"], 0.2);
    assert_eq!(t["cost"], total["total"]["total_cost"]);
    assert_eq!(t["input_tokens"], total["total"]["total_input_tokens"]);
    assert_eq!(t["output_tokens"], total["total"]["total_output_tokens"]);
    let sum = |field: &str| -> i64 { log.iter().map(|r| r[field].as_i64().unwrap_or(0)).sum() };
    assert_eq!(t["cached_input_tokens"], sum("cached_input_tokens"));
    assert_eq!(t["latency_us_avg"], sum("latency_us") / sent as i64);
    let latencies: Vec<i64> = log
        .iter()
        .map(|r| r["latency_us"].as_i64().unwrap())
        .collect();
    let ttfts: Vec<i64> = log.iter().filter_map(|r| r["ttft_us"].as_i64()).collect();
    assert_eq!(ttfts.len(), 3, "the streams have a TTFT");
    // From histograms: within 1/32 of the exact nearest rank (docs/src/apis/usage.md).
    let close = |got: &Value, exact: Value| {
        let (got, exact) = (got.as_i64().unwrap(), exact.as_i64().unwrap());
        assert!((got - exact).abs() * 32 <= exact, "{got} for {exact}");
    };
    for p in [50, 90, 99] {
        close(
            &t["latency_us"][format!("p{p}")],
            nearest_rank(&latencies, p),
        );
        close(&t["ttft_us"][format!("p{p}")], nearest_rank(&ttfts, p));
    }
    // Buckets and series add up to the totals.
    let add = |rows: &Value, field: &str| -> i64 {
        rows.as_array()
            .unwrap()
            .iter()
            .map(|r| r[field].as_i64().unwrap())
            .sum()
    };
    assert_eq!(add(&stats["buckets"], "requests"), sent as i64);
    assert_eq!(add(&stats["series"], "errors"), 2);
    assert_eq!(stats["bucket_us"], 60_000_000);
    // Breakdowns.
    let row = |list: &str, key: &str, value: &str| -> Value {
        stats[list]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r[key] == value)
            .cloned()
            .unwrap_or_else(|| panic!("no {key} {value} in {stats}"))
    };
    assert_eq!(row("by_user", "user_id", "ada")["requests"], 6);
    assert_eq!(row("by_user", "user_id", "bob")["errors"], 2);
    assert_eq!(row("by_tag", "tag", "eu")["requests"], sent);
    assert_eq!(row("by_tag", "tag", "research")["requests"], 6);
    assert_eq!(row("by_model", "model", "error-500")["errors"], 2);
    assert_eq!(row("by_provider", "provider", "openai")["requests"], sent);
    assert_eq!(stats["by_user"]["count"], 2);
    // Another project sees its own request only.
    let (_, theirs) = usage(&gateway, "/usage/stats", "globex", range).await;
    assert_eq!(theirs["total"]["requests"], 1);
    assert_eq!(theirs["project"], "globex");
    gateway.stop().await;
}
