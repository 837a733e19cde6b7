//! The usage ledger through the real gateway: one exact record per request (whole, streamed,
//! disconnected, failed), the `/usage/*` analytics endpoints, and no record lost on shutdown.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::mock_openai::{CACHED_TOKENS, COMPLETION_TOKENS, MockOpenAi, PROMPT_TOKENS};
use common::{TestGateway, config_for, http};
use serde_json::{Value, json};

/// gpt-4o-mini's catalog price of the mock's usage (13 prompt, 5 of them cached, 7 completion).
const MOCK_COST_MICROS: i64 = 6;

/// A fresh ledger file for one test.
fn ledger_file(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wasmgate-usage-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("ledger.db")
}

async fn start(mock: &MockOpenAi, db: &std::path::Path) -> TestGateway {
    let yaml = format!(
        "{}\nledger: {{ url: 'sqlite://{}' }}\n",
        config_for(&mock.base_url()),
        db.display()
    );
    TestGateway::start(&yaml).await
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

fn rows(db: &std::path::Path) -> Vec<(String, i64, i64, Row)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT request_id, time_us, latency_us, project, user_id, provider, model, operation,
                input_tokens, output_tokens, cached_input_tokens, cost_micros, status, error_type,
                estimated
             FROM usage_records ORDER BY time_us",
        )
        .unwrap();
    stmt.query_map([], |r| {
        Ok((
            r.get(0)?,
            r.get(1)?,
            r.get(2)?,
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

#[tokio::test]
async fn every_request_gets_one_exact_record_flushed_on_shutdown() {
    let mock = MockOpenAi::start().await;
    let db = ledger_file("records");
    let gateway = start(&mock, &db).await;
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
    let rows = rows(&db);
    let by_id = |id: &str| {
        let (_, time, latency, row) = rows.iter().find(|(r, ..)| r == id).unwrap_or_else(|| {
            panic!("no record {id} in {rows:#?}");
        });
        assert!((before..=after).contains(time), "{id}: {time}");
        assert!(*latency > 0 && *latency < after - before, "{id}: {latency}");
        row
    };
    assert_eq!(rows.len(), 6, "{rows:#?}");
    assert_eq!(by_id("req-whole"), &mock_row("acme"));
    assert_eq!(by_id("req-stream"), &mock_row("default"));

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
        .bearer_auth(gateway.api_key(project))
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

#[tokio::test]
async fn totals_and_model_buckets_per_project_in_ms_or_us() {
    let mock = MockOpenAi::start().await;
    let db = ledger_file("endpoints");
    let gateway = start(&mock, &db).await;
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
    let db = ledger_file("bad");
    let gateway = start(&mock, &db).await;
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
        .bearer_auth(gateway.api_key("acme"))
        .body("{nope")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let answer: Value = response.json().await.unwrap();
    assert_eq!(answer["error"]["code"], "invalid_json");
    gateway.stop().await;
}
