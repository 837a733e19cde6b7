//! OpenAI batches of Claude lines run on Anthropic's Message Batches (issue 24), against the
//! strict mock of `common/mock_anthropic_batches.rs`: the official `openai` Python SDK uploads
//! 1,000 lines (held by the gateway, translated as live requests are), runs the batch to its
//! end and reads its output and error files translated back; every line that ran is metered
//! once at the catalog's batch price (half of Anthropic's, cache writes included). A cancelled
//! batch meters only the lines run before the cancel.

use crate::common;

use common::gateway::{Gateway, GatewayBuilder, Provider};
use common::mock_anthropic_batches::{
    API_KEY, CACHE_WRITE_TOKENS, INPUT_TOKENS, MockAnthropicBatches,
};
use serde_json::Value;

use crate::batches::settles_at;
use crate::sdk_clients::assert_passed;
use common::scenario::scenario;

const MODEL: &str = "anthropic/claude-sonnet-4-5";

fn config(mock: &MockAnthropicBatches) -> GatewayBuilder {
    let anthropic = Provider::at("anthropic", &mock.url(), API_KEY).models(["claude-sonnet-4-5"]);
    Gateway::builder().provider("anthropic", anthropic)
}

/// claude-sonnet-4-5 at the batch price, in µUSD: half of $3 in, $3.75 written to the cache
/// and $15 out per million tokens, rounded half up as the ledger rounds.
fn batch_cost(output_tokens: u64) -> i64 {
    // In tenths of a µUSD: 100 in at 15, 20 written at 18.75, each output token 75.
    let tenths = INPUT_TOKENS * 15 + CACHE_WRITE_TOKENS * 1875 / 100 + output_tokens * 75;
    (tenths as i64 + 5) / 10
}

fn batch_of(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("batch "))
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn the_python_sdk_runs_1000_claude_lines_on_message_batches_metered_once() {
    let s = scenario(MockAnthropicBatches::start().await, config).await;
    let output = s
        .client(
            "openai_batches.py",
            &["--scenario", "claude", "--lines", "1000", "--model", MODEL],
        )
        .await;
    assert_passed(&output, &["claude"]);
    let batch = batch_of(&output);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<(String, u64)> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("custom "))
        .map(|l| {
            let (id, max) = l.split_once(' ').unwrap();
            (id.to_owned(), max.parse().unwrap())
        })
        .collect();
    assert_eq!(lines.len(), 996);
    for (custom_id, max_tokens) in &lines {
        let record = s.gateway.record_of(&format!("{batch}:{custom_id}")).await;
        assert_eq!(
            record.cost_micros,
            Some(batch_cost(*max_tokens)),
            "{custom_id}: {record:?}"
        );
        assert_eq!(
            (
                record.input_tokens,
                record.cache_write_tokens,
                record.output_tokens
            ),
            (
                INPUT_TOKENS + CACHE_WRITE_TOKENS,
                CACHE_WRITE_TOKENS,
                *max_tokens
            )
        );
        assert_eq!(record.batch_id.as_deref(), Some(batch.as_str()));
        assert_eq!(record.status, 200);
        assert_eq!(record.provider.as_deref(), Some("anthropic"));
        assert_eq!(record.model.as_deref(), Some("claude-sonnet-4-5"));
    }
    // The four lines Anthropic answered with an error are recorded too, at no cost.
    for custom_id in ["req-6", "req-250", "req-500", "req-750"] {
        let record = s.gateway.record_of(&format!("{batch}:{custom_id}")).await;
        assert_eq!((record.status, record.cost_micros), (400, Some(0)));
    }
    settles_at(&s.gateway, 1000).await;

    // What went upstream: one create of 1,000 Messages requests in Anthropic's shape, the
    // results read once to meter (and once for each file the client read).
    let batches = s.mock.batches().await;
    assert_eq!(batches.len(), 1);
    let (custom_id, params) = &batches[0].requests[0];
    assert_eq!(custom_id, "req-0");
    assert_eq!(params["model"], "claude-sonnet-4-5");
    assert_eq!(params["max_tokens"], 1);
    assert_eq!(params["messages"][0]["role"], "user");
    let calls = s.mock.calls().await;
    assert_eq!(
        calls
            .iter()
            .filter(|c| *c == "POST /v1/messages/batches")
            .count(),
        1
    );
    let results = calls.iter().filter(|c| c.ends_with("/results")).count();
    assert_eq!(results, 3, "{calls:?}");

    // Asked again, the batch is answered from the ledger and metered no more.
    let again: Value = common::http()
        .get(s.gateway.url(&format!("/v1/batches/{batch}")))
        .bearer_auth(&s.key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(again["status"], "completed");
    assert_eq!(s.mock.calls().await.len(), calls.len(), "no upstream call");
    settles_at(&s.gateway, 1000).await;
    s.gateway.stop().await;
}

#[tokio::test]
async fn a_cancelled_message_batch_meters_only_the_lines_run() {
    let s = scenario(MockAnthropicBatches::start().await, config).await;
    let output = s
        .client(
            "openai_batches.py",
            &["--scenario", "claude_cancel", "--model", MODEL],
        )
        .await;
    assert_passed(&output, &["claude_cancel"]);
    let batch = batch_of(&output);
    for i in 0..5u64 {
        let record = s.gateway.record_of(&format!("{batch}:req-{i}")).await;
        assert_eq!(record.cost_micros, Some(batch_cost(1 + i)));
    }
    settles_at(&s.gateway, 5).await;
    assert!(
        s.mock
            .calls()
            .await
            .iter()
            .any(|c| c.starts_with("POST /v1/messages/batches/") && c.ends_with("/cancel"))
    );
    s.gateway.stop().await;
}
