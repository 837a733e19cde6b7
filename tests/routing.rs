//! Virtual models: each shipped router's choice, retries across targets, the circuit breaker,
//! and an operator's own router built from the test tree (tests/policies/reverse).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::HashMap;

use common::gateway::{Gateway, GatewayBuilder, Provider};
use common::mock_openai::MockOpenAi;
use common::{TestGateway, http};
use serde_json::{Value, json};

/// Providers: `openai` (the mock, whose `error-*` models fail), and two local `echo` entries;
/// `routing` is the body of `routing:`, indented.
fn config(base_url: &str, routing: &str) -> GatewayBuilder {
    let models = [
        "gpt-4o-mini",
        "error-500",
        "error-429",
        "error-400",
        "flaky-2",
        "flaky-5",
        "delay-500",
    ];
    Gateway::builder()
        .test_plugins()
        .provider(
            "openai",
            Provider::openai(base_url).models(models).timeout_ms(2000),
        )
        .provider("a", Provider::echo().models(["m"]))
        .provider("b", Provider::echo().models(["m"]))
        .yaml(&format!("routing:\n{routing}"))
}

struct Answer {
    status: u16,
    provider: String,
    attempts: String,
    body: Value,
}

async fn ask(gateway: &TestGateway, model: &str, extra: Value) -> Answer {
    let response = http()
        .post(gateway.url("/v1/chat/completions"))
        .json(&json!({"model": model, "messages": [{"role": "user", "content": "hi"}], "extra": extra}))
        .send()
        .await
        .unwrap();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default()
    };
    let (provider, attempts) = (header("x-wasmgate-provider"), header("x-wasmgate-attempts"));
    let status = response.status().as_u16();
    let body = response.json().await.unwrap();
    Answer {
        status,
        provider,
        attempts,
        body,
    }
}

async fn count_upstream(mock: &MockOpenAi, model: &str) -> usize {
    mock.requests()
        .await
        .iter()
        .filter(|r| r.body["model"] == model)
        .count()
}

#[tokio::test]
async fn fallback_moves_on_from_a_failing_target_and_lists_the_virtual_model() {
    let mock = MockOpenAi::start().await;
    let routing = "  smart:\n    policy: fallback\n    targets: [openai/error-500, openai/error-429, openai/gpt-4o-mini]\n    retry: { backoff_ms: 1 }";
    let gateway = config(&mock.base_url(), routing).start().await;
    let answer = ask(&gateway, "smart", Value::Null).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(answer.provider, "openai");
    assert_eq!(answer.attempts, "3");
    assert_eq!(count_upstream(&mock, "error-500").await, 1);
    assert_eq!(count_upstream(&mock, "error-429").await, 1);
    assert_eq!(count_upstream(&mock, "gpt-4o-mini").await, 1);

    let models: Value = http()
        .get(gateway.url("/v1/models"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        models["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["id"] == "smart")
    );
}

#[tokio::test]
async fn a_client_error_is_not_retried_on_another_target() {
    let mock = MockOpenAi::start().await;
    let routing =
        "  smart:\n    policy: fallback\n    targets: [openai/error-400, openai/gpt-4o-mini]";
    let gateway = config(&mock.base_url(), routing).start().await;
    let answer = ask(&gateway, "smart", Value::Null).await;
    assert_eq!(answer.status, 400);
    assert_eq!(count_upstream(&mock, "gpt-4o-mini").await, 0);
}

#[tokio::test]
async fn when_every_target_fails_the_last_error_is_returned() {
    let mock = MockOpenAi::start().await;
    let routing = "  smart:\n    policy: fallback\n    targets: [openai/error-429, openai/error-500]\n    retry: { backoff_ms: 1 }";
    let gateway = config(&mock.base_url(), routing).start().await;
    let answer = ask(&gateway, "smart", Value::Null).await;
    assert_eq!(answer.status, 502);
    assert_eq!(answer.body["error"]["type"], "api_error");
}

#[tokio::test]
async fn an_open_circuit_is_skipped_until_its_cooldown_passes() {
    let mock = MockOpenAi::start().await;
    let routing = "  smart:\n    policy: fallback\n    targets: [openai/error-500, b/m]\n    retry: { backoff_ms: 1 }\n    circuit_breaker: { failures: 2, cooldown_ms: 60000 }";
    let gateway = config(&mock.base_url(), routing).start().await;
    for _ in 0..2 {
        let answer = ask(&gateway, "smart", Value::Null).await;
        assert_eq!((answer.status, answer.attempts.as_str()), (200, "2"));
    }
    // The circuit of openai/error-500 is open now: the next requests go straight to b/m.
    for _ in 0..3 {
        let answer = ask(&gateway, "smart", Value::Null).await;
        assert_eq!(
            (
                answer.status,
                answer.provider.as_str(),
                answer.attempts.as_str()
            ),
            (200, "b", "1")
        );
    }
    assert_eq!(count_upstream(&mock, "error-500").await, 2);
}

#[tokio::test]
async fn weighted_splits_traffic_by_weight() {
    let mock = MockOpenAi::start().await;
    let routing = "  ab:\n    policy: weighted\n    targets: [{ id: a/m, weight: 80 }, { id: b/m, weight: 20 }]";
    let gateway = config(&mock.base_url(), routing).start().await;
    let mut counts: HashMap<String, usize> = HashMap::new();
    for _ in 0..200 {
        let answer = ask(&gateway, "ab", Value::Null).await;
        assert_eq!(answer.status, 200);
        *counts.entry(answer.provider).or_default() += 1;
    }
    let a = counts.get("a").copied().unwrap_or(0);
    assert!((140..=180).contains(&a), "80% expected, got {counts:?}");
}

#[tokio::test]
async fn cheapest_picks_the_lowest_priced_target() {
    let mock = MockOpenAi::start().await;
    let routing = "  cheap:\n    policy: cheapest\n    targets:\n      - { id: a/m, input_price: 5.0, output_price: 15.0 }\n      - { id: b/m, input_price: 0.15, output_price: 0.6 }";
    let gateway = config(&mock.base_url(), routing).start().await;
    for _ in 0..3 {
        assert_eq!(ask(&gateway, "cheap", Value::Null).await.provider, "b");
    }
}

#[tokio::test]
async fn fastest_prefers_the_lower_latency_target_once_both_are_measured() {
    let mock = MockOpenAi::start().await;
    // The mock takes half a second; echo answers in-process. A loaded machine can stall either
    // by a few milliseconds, never by that much (a plain mock model raced echo and, in CI, won).
    let routing = "  fast:\n    policy: fastest\n    targets: [openai/delay-500, a/m]\n    options: { by: latency }";
    let gateway = config(&mock.base_url(), routing).start().await;
    for _ in 0..2 {
        ask(&gateway, "fast", Value::Null).await;
    }
    for _ in 0..5 {
        assert_eq!(ask(&gateway, "fast", Value::Null).await.provider, "a");
    }
}

#[tokio::test]
async fn conditional_routes_on_user_tags() {
    let mock = MockOpenAi::start().await;
    let routing = r#"  tiered:
    policy: conditional
    targets: [a/m, b/m]
    options:
      rules:
        - { when: { user_tags_any: [beta] }, targets: [b/m] }
      default: [a/m]"#;
    let gateway = config(&mock.base_url(), routing).start().await;
    let beta = ask(
        &gateway,
        "tiered",
        json!({"user": {"id": "u1", "tags": ["beta"]}}),
    )
    .await;
    assert_eq!(beta.provider, "b");
    let other = ask(
        &gateway,
        "tiered",
        json!({"user": {"id": "u2", "tags": ["ga"]}}),
    )
    .await;
    assert_eq!(other.provider, "a");
}

#[tokio::test]
async fn an_operators_own_router_from_the_plugin_directory_is_used() {
    let mock = MockOpenAi::start().await;
    // tests/policies/reverse: tries the targets in reverse order.
    let routing = "  mine:\n    policy: reverse\n    targets: [a/m, b/m]";
    let gateway = config(&mock.base_url(), routing).start().await;
    assert_eq!(ask(&gateway, "mine", Value::Null).await.provider, "b");
}

#[tokio::test]
async fn bad_routing_config_is_rejected_naming_the_entry() {
    let mock = MockOpenAi::start().await;
    let unknown = "  smart:\n    policy: fallback\n    targets: [openai/not-a-model]";
    let err = config(&mock.base_url(), unknown)
        .try_start()
        .await
        .err()
        .unwrap();
    assert!(format!("{err:#}").contains("routing.smart"), "{err:#}");
    let options = "  ab:\n    policy: weighted\n    targets: [a/m]\n    options: { bogus: 1 }";
    let err = config(&mock.base_url(), options)
        .try_start()
        .await
        .err()
        .unwrap();
    let text = format!("{err:#}");
    assert!(
        text.contains("routing.ab") && text.contains("bogus"),
        "{text}"
    );
}

/// `retry.max_attempts` larger than the number of targets tries again: a one-target route
/// with `max_attempts: 3` gets past two transient 503s, and gives up after three tries.
#[tokio::test]
async fn max_attempts_retries_a_single_target_after_a_transient_5xx() {
    let upstream = MockOpenAi::start().await;
    let routing = "  once-more:\n    policy: fallback\n    targets: [openai/flaky-2]\n    retry: { max_attempts: 3, backoff_ms: 1 }\n  give-up:\n    policy: fallback\n    targets: [openai/flaky-5]\n    retry: { max_attempts: 3, backoff_ms: 1 }";
    let gateway = config(&upstream.base_url(), routing).start().await;
    let answer = ask(&gateway, "once-more", Value::Null).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(answer.attempts, "3");
    let answer = ask(&gateway, "give-up", Value::Null).await;
    assert_eq!(answer.status, 502, "{}", answer.body);
    let requests = upstream.requests().await;
    let tries = |model: &str| requests.iter().filter(|r| r.body["model"] == model).count();
    assert_eq!(tries("flaky-2"), 3);
    assert_eq!(tries("flaky-5"), 3);
    gateway.stop().await;
}
