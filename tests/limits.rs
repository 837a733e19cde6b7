//! Limits end to end: the `rate-limit` limiter's decisions and headers per scope, the 429 in
//! OpenAI's shape, and two gateway replicas enforcing one limit through one Redis.
//! (Window arithmetic is tested with paused time in `host/src/limits`; here the windows are
//! days, so a test never straddles one.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::gateway::{Gateway, GatewayBuilder, Provider};
use common::redis::RedisServer;
use common::{TestGateway, http};
use futures_util::StreamExt;
use serde_json::{Value, json};

/// An `echo` entry, and `limits:` with `store` and `rules` (list items, indented).
fn config(store: &str, rules: &str) -> GatewayBuilder {
    Gateway::builder()
        .provider("echo", Provider::echo().models(["echo-1", "echo-2"]))
        .yaml(&format!("limits:\n  store: {store}\n  rules:\n{rules}"))
}

struct Answer {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: Value,
}

async fn ask(gateway: &TestGateway, model: &str, user: &str) -> Answer {
    let response = http()
        .post(gateway.url("/v1/chat/completions"))
        .json(
            &json!({"model": model, "messages": [{"role": "user", "content": "hello there"}],
                      "max_tokens": 10, "extra": {"user": {"id": user}}}),
        )
        .send()
        .await
        .unwrap();
    Answer {
        status: response.status().as_u16(),
        headers: response.headers().clone(),
        body: response.json().await.unwrap(),
    }
}

fn header<'a>(answer: &'a Answer, name: &str) -> &'a str {
    answer
        .headers
        .get(name)
        .map_or("", |v| v.to_str().unwrap_or(""))
}

#[tokio::test]
async fn a_per_user_request_limit_allows_exactly_the_limit_then_429s() {
    let rules = "    - { policy: rate-limit, scope: user, options: { requests_per_day: 3 } }";
    let gateway = config("memory", rules).start().await;
    for remaining in ["2", "1", "0"] {
        let answer = ask(&gateway, "echo-1", "u1").await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert_eq!(header(&answer, "x-ratelimit-limit-requests"), "3");
        assert_eq!(header(&answer, "x-ratelimit-remaining-requests"), remaining);
        assert!(!header(&answer, "x-ratelimit-reset-requests").is_empty());
    }
    let denied = ask(&gateway, "echo-1", "u1").await;
    assert_eq!(denied.status, 429);
    assert_eq!(denied.body["error"]["code"], "rate_limit_exceeded");
    assert!(
        denied.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("user:u1")
    );
    let retry_after: u64 = header(&denied, "retry-after").parse().unwrap();
    assert!((1..=86_400).contains(&retry_after), "{retry_after}");
    assert_eq!(header(&denied, "x-ratelimit-remaining-requests"), "0");

    // Another user has a counter of their own.
    assert_eq!(ask(&gateway, "echo-1", "u2").await.status, 200);
}

#[tokio::test]
async fn a_global_rule_counts_everyone_and_a_model_rule_only_its_models() {
    let rules = "    - { policy: rate-limit, scope: model, models: [echo-2], options: { requests_per_day: 1 } }\n    - { policy: rate-limit, scope: global, options: { requests_per_day: 4 } }";
    let gateway = config("memory", rules).start().await;
    assert_eq!(ask(&gateway, "echo-2", "a").await.status, 200);
    let second = ask(&gateway, "echo-2", "b").await;
    assert_eq!(second.status, 429, "echo-2 allows one request a day");
    // The denied request gave back what the global rule had counted: 3 more fit globally.
    for user in ["c", "d", "e"] {
        assert_eq!(ask(&gateway, "echo-1", user).await.status, 200);
    }
    assert_eq!(ask(&gateway, "echo-1", "f").await.status, 429);
}

#[tokio::test]
async fn a_token_limit_reserves_and_settles_to_real_usage() {
    // Each request reserves its input estimate plus max_tokens (10), then settles to what echo
    // really used (a few tokens), so more requests fit than the reservations alone would allow.
    let rules = "    - { policy: rate-limit, scope: user, options: { tokens_per_day: 40 } }";
    let gateway = config("memory", rules).start().await;
    let mut allowed = 0;
    for _ in 0..10 {
        let answer = ask(&gateway, "echo-1", "t1").await;
        if answer.status != 200 {
            assert_eq!(answer.body["error"]["code"], "rate_limit_exceeded");
            break;
        }
        allowed += 1;
        // Let the settlement (done after the response) land before the next check.
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        allowed >= 2,
        "settling to real usage frees room: {allowed} allowed"
    );
    assert!(allowed < 10, "the limit still holds");
}

#[tokio::test]
async fn bad_limit_options_are_rejected_naming_the_rule() {
    let rules = "    - { policy: rate-limit, options: { requests_per_fortnight: 3 } }";
    let err = config("memory", rules).try_start().await.err().unwrap();
    let text = format!("{err:#}");
    assert!(
        text.contains("limits.rules[0]") && text.contains("requests_per_fortnight"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_on_one_redis_enforce_one_limit() {
    let redis = RedisServer::start();
    let rules = "    - { policy: rate-limit, scope: global, options: { requests_per_day: 100 } }";
    // What is checked is the count across replicas, not speed: on a loaded 2-core machine a
    // limiter call can outlast the default 200 ms plugin deadline (a 503), so allow it more.
    let config = || config(&redis.url(), rules).set("plugins.call_timeout_ms", 5000);
    let replicas = [config().start().await, config().start().await];
    let client = http();
    let requests = (0..400).map(|i| {
        let url = replicas[i % 2].url("/v1/chat/completions");
        let client = client.clone();
        async move {
            client
                .post(url)
                .json(&json!({"model": "echo-1", "messages": [{"role": "user", "content": "x"}]}))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    });
    // 32 at a time, as a busy client pool would send them.
    let statuses: Vec<u16> = futures_util::stream::iter(requests)
        .buffer_unordered(32)
        .collect()
        .await;
    let passed = statuses.iter().filter(|s| **s == 200).count();
    let limited = statuses.iter().filter(|s| **s == 429).count();
    assert_eq!((passed, limited), (100, 300));
}

#[tokio::test]
async fn an_unreachable_redis_is_reported_at_start_up() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let rules = "    - { policy: rate-limit, options: { requests_per_day: 3 } }";
    let err = config(&format!("redis://127.0.0.1:{port}/"), rules)
        .try_start()
        .await
        .err()
        .unwrap();
    assert!(format!("{err:#}").contains("limits.store"), "{err:#}");
}

/// An `openai` provider on the mock upstream: gpt-4o-mini is in the catalog at $0.15 / $0.60 /
/// $0.075 (cached) per million tokens, so the mock's usage (13 prompt tokens of which 5 cached,
/// 7 completion tokens) costs 5.775 µUSD, 6 once rounded.
fn priced_config(base_url: &str, rules: &str) -> GatewayBuilder {
    let openai = Provider::at("openai", base_url, "sk-test").models(["gpt-4o-mini"]);
    Gateway::builder()
        .provider("openai", openai)
        .yaml(&format!("limits:\n  store: memory\n  rules:\n{rules}"))
}

async fn ask_priced(gateway: &TestGateway, max_tokens: u32) -> Answer {
    let response = http()
        .post(gateway.url("/v1/chat/completions"))
        .json(
            &json!({"model": "openai/gpt-4o-mini", "max_tokens": max_tokens,
                      "messages": [{"role": "user", "content": "hi"}]}),
        )
        .send()
        .await
        .unwrap();
    Answer {
        status: response.status().as_u16(),
        headers: response.headers().clone(),
        body: response.json().await.unwrap(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_cannot_overshoot_a_budget() {
    let mock = common::mock_openai::MockOpenAi::start().await;
    // 20 µUSD; each request reserves ~6 µUSD (1 input token, 10 output tokens at list prices).
    let rules = "    - { policy: budget, scope: project, options: { total_usd: 0.00002 } }";
    let gateway = priced_config(&mock.base_url(), rules).start().await;
    let answers = futures_util::future::join_all((0..10).map(|_| ask_priced(&gateway, 10))).await;
    let passed = answers.iter().filter(|a| a.status == 200).count();
    assert_eq!(passed, 3, "three reservations of 6 µUSD fit in 20");
    let denied = answers.iter().find(|a| a.status == 429).unwrap();
    assert_eq!(denied.body["error"]["code"], "insufficient_quota");
    assert_eq!(denied.body["error"]["type"], "insufficient_quota");
    assert_eq!(
        mock.requests().await.len(),
        3,
        "denied requests never reach the upstream"
    );
}

#[tokio::test]
async fn a_budget_reserves_the_estimate_and_settles_to_the_real_cost() {
    let mock = common::mock_openai::MockOpenAi::start().await;
    // 1000 µUSD; with max_tokens 1000 each request reserves ~600 µUSD but really costs 6, so
    // only settling to the real cost lets a second request in.
    let rules = "    - { policy: budget, scope: project, options: { total_usd: 0.001 } }";
    let gateway = priced_config(&mock.base_url(), rules).start().await;
    for _ in 0..5 {
        let answer = ask_priced(&gateway, 1000).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        // The settlement runs after the response; give it a moment.
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let answer = ask_priced(&gateway, 1000).await;
    assert_eq!(header(&answer, "x-ratelimit-limit-usd"), "0.001");
}
