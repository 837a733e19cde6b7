//! OpenAI's Files and Batch APIs through the gateway (issue 24, part 4), against the strict mock
//! of `common/mock_batches.rs`: the official `openai` Python SDK (`tests/sdk/openai_batches.py`)
//! runs a batch of 1,000 lines from upload to metered records (each at its exact batch price,
//! once), cancels one, is refused another project's ids and a line for a model its key may not
//! use; the Node SDK makes one call of each kind (`openai_batches.mjs`). Metering happens once
//! across a restart and across two gateways sharing one PostgreSQL.

use std::time::Duration;

use crate::common;

use common::gateway::{Gateway, GatewayBuilder, Provider, Route};
use common::mock_batches::{API_KEY, MockBatches, PROMPT_TOKENS};
use serde_json::{Value, json};

use crate::sdk_clients::assert_passed;
use common::scenario::scenario;

fn config(mock: &MockBatches) -> GatewayBuilder {
    let openai = Provider::at("openai", &mock.openai_url(), API_KEY)
        .options("{ batches: true }")
        .models(["gpt-4o", "gpt-4o-mini"]);
    let azure = Provider::at("azure-openai", &mock.azure_url(), API_KEY).models(["gpt-4.1-mini"]);
    let plain = Provider::at("openai", &mock.openai_url(), API_KEY).models(["gpt-3.5-turbo"]);
    Gateway::builder()
        .provider("openai", openai)
        .provider("azure", azure)
        .provider("plain", plain)
}

/// gpt-4o's batch price: half of $2.50 and $10 per million tokens.
fn batch_cost(completion_tokens: u64) -> i64 {
    // 100 prompt tokens at $1.25/M = 125 µUSD; each completion token $5/M = 5 µUSD.
    (PROMPT_TOKENS * 125 / 100 + completion_tokens * 5) as i64
}

pub(crate) async fn records(gateway: &common::TestGateway) -> u64 {
    let store = gateway.state.ledger.store();
    tokio::task::spawn_blocking(move || store.count())
        .await
        .unwrap()
        .unwrap()
}

/// Waits until the ledger holds `n` records (the writer flushes every 200 ms), then a little
/// longer to see that no more come.
pub(crate) async fn settles_at(gateway: &common::TestGateway, n: u64) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while records(gateway).await < n {
        assert!(
            std::time::Instant::now() < deadline,
            "only {} of {n} records",
            records(gateway).await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(records(gateway).await, n, "more records than lines");
}

#[tokio::test]
async fn the_python_sdk_runs_a_batch_of_1000_lines_metered_once_at_the_batch_price() {
    let s = scenario(MockBatches::start().await, config).await;
    let output = s
        .client(
            "openai_batches.py",
            &["--scenario", "batch", "--lines", "1000"],
        )
        .await;
    assert_passed(&output, &["batch"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let batch = stdout
        .lines()
        .find_map(|l| l.strip_prefix("batch "))
        .unwrap()
        .to_owned();
    let lines: Vec<(String, u64)> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("custom "))
        .map(|l| {
            let (id, max) = l.split_once(' ').unwrap();
            (id.to_owned(), max.parse().unwrap())
        })
        .collect();
    // Lines 7, 251, 501 and 751 failed (the mock's error file): 996 billed.
    assert_eq!(lines.len(), 996);
    let mut total = 0;
    for (custom_id, max_tokens) in &lines {
        let record = s.gateway.record_of(&format!("{batch}:{custom_id}")).await;
        let cost = batch_cost(*max_tokens);
        assert_eq!(record.cost_micros, Some(cost), "{custom_id}: {record:?}");
        assert_eq!(record.batch_id.as_deref(), Some(batch.as_str()));
        assert_eq!(
            (record.input_tokens, record.output_tokens),
            (PROMPT_TOKENS, *max_tokens)
        );
        assert_eq!(record.status, 200);
        assert_eq!(record.operation, "chat.completions");
        assert_eq!(record.model.as_deref(), Some("gpt-4o"));
        assert_eq!(record.provider.as_deref(), Some("openai"));
        assert_eq!(record.project, "default");
        assert!(record.api_key_id.is_some());
        total += cost;
    }
    settles_at(&s.gateway, 996).await;

    // Asked again, the batch is answered from the ledger and metered no more.
    let upstream_polls = s.mock.calls().await.len();
    let again = common::http()
        .get(s.gateway.url(&format!("/v1/batches/{batch}")))
        .bearer_auth(&s.key)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 200);
    let again: Value = again.json().await.unwrap();
    assert_eq!(again["status"], "completed");
    assert_eq!(
        s.mock.calls().await.len(),
        upstream_polls,
        "no upstream call"
    );
    settles_at(&s.gateway, 996).await;

    // The usage API shows the batch spend apart.
    let totals: Value = common::http()
        .post(s.gateway.url("/usage/total"))
        .bearer_auth(&s.key)
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(totals["batch"]["requests"], 996, "{totals}");
    let cost = totals["batch"]["cost"].as_f64().unwrap();
    assert!((cost - total as f64 / 1e6).abs() < 1e-9, "{totals}");

    // What went upstream: the lines rewritten for it (the upstream's model name).
    let input = s
        .mock
        .files()
        .await
        .into_iter()
        .find(|f| f.purpose == "batch")
        .unwrap();
    let text = s.mock.file_text(&input.id).await;
    let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(first["body"]["model"], "gpt-4o");
    assert_eq!(first["custom_id"], "req-0");
    s.gateway.stop().await;
}

#[tokio::test]
async fn the_node_sdk_makes_one_call_of_each_kind() {
    let s = scenario(MockBatches::start().await, config).await;
    let output = s.client("openai_batches.mjs", &[]).await;
    assert_passed(&output, &["files", "batch", "cancel", "delete"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let batch = stdout
        .lines()
        .find_map(|l| l.strip_prefix("batch "))
        .unwrap();
    for i in 0..4u64 {
        let record = s.gateway.record_of(&format!("{batch}:node-{i}")).await;
        assert_eq!(record.cost_micros, Some(batch_cost(1 + i)));
    }
    assert!(
        s.mock
            .calls()
            .await
            .iter()
            .any(|c| c.starts_with("DELETE /files/"))
    );
    s.gateway.stop().await;
}

#[tokio::test]
async fn the_python_sdk_cancels_a_batch_and_only_the_lines_run_are_metered() {
    let s = scenario(MockBatches::start().await, config).await;
    let output = s
        .client("openai_batches.py", &["--scenario", "cancel"])
        .await;
    assert_passed(&output, &["cancel"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let batch = stdout
        .lines()
        .find_map(|l| l.strip_prefix("batch "))
        .unwrap();
    // The first five of the ten ran before the cancel (the seventh, which fails, did not).
    for i in 0..5u64 {
        let record = s.gateway.record_of(&format!("{batch}:req-{i}")).await;
        assert_eq!(record.cost_micros, Some(batch_cost(1 + i)));
    }
    settles_at(&s.gateway, 5).await;
    s.gateway.stop().await;
}

#[tokio::test]
async fn another_projects_ids_are_not_found_and_a_forbidden_line_is_refused_by_number() {
    let s = scenario(MockBatches::start().await, config).await;
    let other = s.gateway.api_key("other").await;
    let output = s
        .client(
            "openai_batches.py",
            &["--scenario", "isolation", "--other-key", &other],
        )
        .await;
    assert_passed(&output, &["isolation"]);

    let restricted = restricted_key(&s.gateway, "default", &["openai/gpt-4o"]).await;
    let output = s
        .client(
            "openai_batches.py",
            &["--scenario", "refused", "--restricted-key", &restricted],
        )
        .await;
    assert_passed(&output, &["refused"]);
    // The refused file never went upstream: one batch upload from `isolation`, one allowed.
    let uploads = s
        .mock
        .calls()
        .await
        .iter()
        .filter(|c| *c == "POST /files")
        .count();
    assert_eq!(uploads, 2);
    s.gateway.stop().await;
}

/// How often an output file was read upstream.
async fn output_reads(mock: &MockBatches) -> usize {
    mock.calls()
        .await
        .iter()
        .filter(|c| c.starts_with("GET /files/file-out") && c.ends_with("/content"))
        .count()
}

/// A key of `project` that may use only `models`.
async fn restricted_key(gateway: &common::TestGateway, project: &str, models: &[&str]) -> String {
    let limits = wasmgate::ledger::KeyLimits {
        models: models.iter().map(|m| (*m).to_owned()).collect(),
        ..Default::default()
    };
    key_with(gateway, project, limits).await
}

async fn key_with(
    gateway: &common::TestGateway,
    project: &str,
    limits: wasmgate::ledger::KeyLimits,
) -> String {
    let (key, mut stored) = wasmgate::auth::generate(project, None, 0);
    stored.limits = limits;
    let store = gateway.state.ledger.store();
    tokio::task::spawn_blocking(move || store.insert_key(&stored))
        .await
        .unwrap()
        .unwrap();
    key
}

/// Uploads `lines` chat lines for `model` and creates their batch; returns its id.
pub async fn submit(gateway: &common::TestGateway, key: &str, model: &str, lines: usize) -> String {
    let (status, batch) = try_submit(gateway, key, model, lines, 10).await;
    assert_eq!(status, 200, "{batch}");
    batch["id"].as_str().unwrap().to_owned()
}

/// Uploads `lines` lines of `max_tokens` each and asks for their batch: its status and answer.
async fn try_submit(
    gateway: &common::TestGateway,
    key: &str,
    model: &str,
    lines: usize,
    max_tokens: u64,
) -> (u16, Value) {
    let (_, file) = upload(gateway, key, model, lines, max_tokens).await;
    let file_id = file["id"].as_str().unwrap_or_else(|| panic!("{file}"));
    let response = common::http()
        .post(gateway.url("/v1/batches"))
        .bearer_auth(key)
        .json(
            &json!({"input_file_id": file_id, "endpoint": "/v1/chat/completions",
                      "completion_window": "24h"}),
        )
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

/// Uploads a batch input file of `lines` chat lines for `model`: the status and answer.
async fn upload(
    gateway: &common::TestGateway,
    key: &str,
    model: &str,
    lines: usize,
    max_tokens: u64,
) -> (u16, Value) {
    let mut text = String::new();
    for i in 0..lines {
        text.push_str(
            &json!({"custom_id": format!("r{i}"), "method": "POST", "url": "/v1/chat/completions",
                    "body": {"model": model, "max_tokens": max_tokens,
                             "messages": [{"role": "user", "content": "hi"}]}})
            .to_string(),
        );
        text.push('\n');
    }
    let form = reqwest::multipart::Form::new()
        .text("purpose", "batch")
        .part(
            "file",
            reqwest::multipart::Part::text(text).file_name("in.jsonl"),
        );
    let response = common::http()
        .post(gateway.url("/v1/files"))
        .bearer_auth(key)
        .multipart(form)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

#[tokio::test]
async fn a_keys_budget_refuses_a_batch_that_may_cost_more_before_it_is_submitted() {
    let mock = MockBatches::start().await;
    let gateway = config(&mock).start().await;
    let limits = wasmgate::ledger::KeyLimits {
        budget: Some(wasmgate::ledger::Budget {
            micros: 10_000,
            period: wasmgate::ledger::BudgetPeriod::Day,
        }),
        ..Default::default()
    };
    let key = key_with(&gateway, "default", limits).await;
    // 100 lines of up to 1,000 tokens at gpt-4o's batch price ($5/M out) may cost $0.50.
    let (status, refused) = try_submit(&gateway, &key, "openai/gpt-4o", 100, 1000).await;
    assert_eq!(status, 429, "{refused}");
    assert_eq!(refused["error"]["code"], "insufficient_quota", "{refused}");
    assert!(!mock.calls().await.iter().any(|c| c == "POST /batches"));
    // One line of 10 tokens may cost 51 µUSD: within the $0.01.
    let (status, accepted) = try_submit(&gateway, &key, "openai/gpt-4o", 1, 10).await;
    assert_eq!(status, 200, "{accepted}");
    assert_eq!(accepted["status"], "validating");
    gateway.stop().await;
}

#[tokio::test]
async fn two_gateways_sharing_postgres_meter_a_batch_once() {
    let mock = MockBatches::start().await;
    let (url, _cluster) = common::postgres::database();
    let config = || {
        config(&mock)
            .ledger(&url)
            .set("batches.poll_interval_ms", 100)
    };
    let a = config().start().await;
    let b = config().start().await;
    let key = a.api_key("default").await;
    let batch = submit(&a, &key, "openai/gpt-4o", 40).await;
    // Both poll it every 100 ms and both see it end at once; one meters it.
    settles_at(&a, 40).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(records(&b).await, 40);
    let polls = mock
        .calls()
        .await
        .iter()
        .filter(|c| c.starts_with("GET /batches/"))
        .count();
    assert!(polls >= 3, "the pollers drove the batch ({polls} polls)");
    assert_eq!(
        output_reads(&mock).await,
        1,
        "one gateway claimed the metering"
    );
    let record = a.record_of(&format!("{batch}:r0")).await;
    assert_eq!(record.cost_micros, Some(batch_cost(10)));
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn a_batch_left_by_a_stopped_gateway_is_metered_once_by_the_next() {
    let mock = MockBatches::start().await;
    let dir = common::binary::temp_dir("batch-restart");
    let db = dir.join("ledger.db");
    let ledger = format!("sqlite://{}", db.display());
    let first = config(&mock).ledger(&ledger).start().await;
    let key = first.api_key("default").await;
    let batch = submit(&first, &key, "openai/gpt-4o", 25).await;
    first.stop().await;

    let fast = || {
        config(&mock)
            .ledger(&ledger)
            .set("batches.poll_interval_ms", 100)
    };
    let second = fast().start().await;
    settles_at(&second, 25).await;
    second.stop().await;
    let third = fast().start().await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    settles_at(&third, 25).await;
    assert_eq!(output_reads(&mock).await, 1, "metered once");
    let record = third.record_of(&format!("{batch}:r24")).await;
    assert_eq!(record.batch_id.as_deref(), Some(batch.as_str()));
    third.stop().await;
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_batch_goes_to_azure_openai_and_a_provider_without_batches_is_refused() {
    let s = scenario(MockBatches::start().await, |m| {
        config(m).set("batches.poll_interval_ms", 100)
    })
    .await;
    let batch = submit(&s.gateway, &s.key, "azure/gpt-4.1-mini", 3).await;
    // gpt-4.1-mini at Azure's batch price: 100 × $0.20/M + 10 × $0.80/M = 28 µUSD.
    let record = s.gateway.record_of(&format!("{batch}:r0")).await;
    assert_eq!(record.cost_micros, Some(28));
    assert_eq!(record.provider.as_deref(), Some("azure"));
    assert!(s.mock.calls().await.iter().any(|c| c == "POST /batches"));

    // `plain` is an OpenAI-compatible entry without `batches: true`.
    let form = reqwest::multipart::Form::new()
        .text("purpose", "batch")
        .part(
            "file",
            reqwest::multipart::Part::text(
                json!({"custom_id": "a", "method": "POST", "url": "/v1/chat/completions",
                   "body": {"model": "plain/gpt-3.5-turbo",
                            "messages": [{"role": "user", "content": "hi"}]}})
                .to_string(),
            )
            .file_name("in.jsonl"),
        );
    let refused = common::http()
        .post(s.gateway.url("/v1/files"))
        .bearer_auth(&s.key)
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 400);
    let body: Value = refused.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("runs neither"),
        "{body}"
    );
    s.gateway.stop().await;
}

#[tokio::test]
async fn each_kind_of_bad_line_is_refused_with_its_number_and_nothing_goes_upstream() {
    let s = scenario(MockBatches::start().await, config).await;
    let good = |id: &str, model: &str| {
        json!({"custom_id": id, "method": "POST", "url": "/v1/chat/completions",
               "body": {"model": model, "messages": [{"role": "user", "content": "hi"}]}})
        .to_string()
    };
    let cases: Vec<(Vec<String>, u64, &str)> = vec![
        (
            vec![good("a", "openai/gpt-4o"), "{not json".into()],
            2,
            "not a JSON object",
        ),
        (
            vec![good("a", "openai/gpt-4o"), good("a", "openai/gpt-4o")],
            2,
            "used by an earlier line",
        ),
        (
            vec![
                good("a", "openai/gpt-4o"),
                String::new(),
                good("b", "azure/gpt-4.1-mini"),
            ],
            3,
            "a batch goes to one provider",
        ),
        (vec![good("a", "openai/no-such-model")], 1, "model"),
        (
            vec![
                json!({"custom_id": "a", "method": "POST", "url": "/v1/images/generations",
                        "body": {"model": "openai/gpt-4o", "prompt": "x"}})
                .to_string(),
            ],
            1,
            "not an endpoint the Batch API runs",
        ),
        (
            vec![
                json!({"custom_id": "a", "method": "GET", "url": "/v1/chat/completions",
                        "body": {}})
                .to_string(),
            ],
            1,
            "`method` must be `POST`",
        ),
        (
            vec![
                json!({"custom_id": "a", "method": "POST", "url": "/v1/chat/completions",
                        "body": {"model": "openai/gpt-4o", "stream": true,
                                 "messages": [{"role": "user", "content": "hi"}]}})
                .to_string(),
            ],
            1,
            "stream",
        ),
        (vec![String::new()], 1, "no requests"),
    ];
    for (lines, number, fragment) in cases {
        let form = reqwest::multipart::Form::new()
            .text("purpose", "batch")
            .part(
                "file",
                reqwest::multipart::Part::text(lines.join("\n")).file_name("bad.jsonl"),
            );
        let response = common::http()
            .post(s.gateway.url("/v1/files"))
            .bearer_auth(&s.key)
            .multipart(form)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400, "{lines:?}");
        let body: Value = response.json().await.unwrap();
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with(&format!("Line {number} of the batch input file: ")),
            "{lines:?}: {message}"
        );
        assert!(message.contains(fragment), "{lines:?}: {message}");
        assert_eq!(body["error"]["code"], "invalid_batch_line");
    }
    assert!(s.mock.calls().await.is_empty(), "nothing went upstream");
    s.gateway.stop().await;
}

#[tokio::test]
async fn a_virtual_models_lines_go_to_its_first_listed_target_that_runs_batches() {
    // `plain` runs no batch API; `weighted` would draw among all three live.
    let s = scenario(MockBatches::start().await, |m| {
        config(m)
            .set("batches.poll_interval_ms", 100)
            .route(
                "smart",
                Route::new(
                    "weighted",
                    ["plain/gpt-3.5-turbo", "openai/gpt-4o", "azure/gpt-4.1-mini"],
                ),
            )
            .route("unbatched", Route::new("fallback", ["plain/gpt-3.5-turbo"]))
    })
    .await;
    let batch = submit(&s.gateway, &s.key, "smart", 3).await;
    for i in 0..3 {
        let record = s.gateway.record_of(&format!("{batch}:r{i}")).await;
        assert_eq!(record.provider.as_deref(), Some("openai"), "{record:?}");
        assert_eq!(record.model.as_deref(), Some("gpt-4o"));
        assert_eq!(record.cost_micros, Some(batch_cost(10)));
    }
    let input = s.mock.files().await;
    let input = input.iter().find(|f| f.purpose == "batch").unwrap();
    let text = s.mock.file_text(&input.id).await;
    for line in text.lines() {
        let line: Value = serde_json::from_str(line).unwrap();
        assert_eq!(line["body"]["model"], "gpt-4o", "{line}");
    }

    let (status, refused) = upload(&s.gateway, &s.key, "unbatched", 1, 10).await;
    assert_eq!(status, 400, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("Line 1 of the batch input file: ")
            && message.contains("no target of the virtual model `unbatched`"),
        "{message}"
    );
    s.gateway.stop().await;
}
