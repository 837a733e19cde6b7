//! A plugin that traps, loops forever or eats memory fails only its own request, quickly, with a
//! 502 naming the plugin; the gateway goes on serving. Uses the test-only `faulty` plugin
//! (tests/plugins/faulty), which misbehaves according to the requested model.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::gateway::{Gateway, Provider};
use common::mock_openai::MockOpenAi;
use common::{TestGateway, http};
use serde_json::{Value, json};

async fn gateway(base_url: &str) -> TestGateway {
    gateway_with(base_url, 100).await
}

async fn gateway_with(base_url: &str, call_timeout_ms: u64) -> TestGateway {
    let faulty = Provider::plugin("faulty").base_url(base_url).models([
        "trap",
        "loop",
        "hog",
        "ok",
        "slow-ok",
        "trap-stream",
        "snoop",
    ]);
    Gateway::builder()
        .test_plugins()
        .set("plugins.call_timeout_ms", call_timeout_ms)
        .set("plugins.memory_limit_mib", 32)
        .set("plugins.max_instances", 16)
        .provider("faulty", faulty)
        .start()
        .await
}

async fn send(gateway: &TestGateway, model: &str, stream: bool) -> (u16, Value, Duration) {
    let started = Instant::now();
    let response = http()
        .post(gateway.url("/v1/chat/completions"))
        .json(&json!({"model": model, "stream": stream, "messages": [{"role": "user", "content": "x"}]}))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    let body = if stream {
        json!(text)
    } else {
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"))
    };
    (status, body, started.elapsed())
}

async fn assert_still_serving(gateway: &TestGateway) {
    let (status, body, _) = send(gateway, "faulty/ok", false).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["choices"][0]["message"]["content"], "ok");
}

#[tokio::test]
async fn a_trapping_plugin_fails_only_its_request() {
    let mock = MockOpenAi::start().await;
    let gateway = gateway(&mock.base_url()).await;
    let (status, body, elapsed) = send(&gateway, "faulty/trap", false).await;
    assert_eq!(status, 502);
    assert_eq!(body["error"]["code"], "plugin_trapped");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("faulty")
    );
    assert!(elapsed < Duration::from_secs(2));
    assert_still_serving(&gateway).await;
}

#[tokio::test]
async fn a_looping_plugin_is_stopped_at_its_deadline() {
    let mock = MockOpenAi::start().await;
    let gateway = gateway(&mock.base_url()).await;
    let (status, body, elapsed) = send(&gateway, "faulty/loop", false).await;
    assert_eq!(status, 502);
    assert_eq!(body["error"]["code"], "plugin_timeout");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("faulty")
    );
    assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
    assert_still_serving(&gateway).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn looping_plugins_do_not_hold_up_other_requests() {
    let mock = MockOpenAi::start().await;
    // A long deadline: the loops are still running when the normal request is served.
    let gateway = gateway_with(&mock.base_url(), 1000).await;
    let loops: Vec<_> = (0..4)
        .map(|_| send(&gateway, "faulty/loop", false))
        .collect();
    let ok = async {
        // Give the loops a head start, so they hold both worker threads.
        tokio::time::sleep(Duration::from_millis(50)).await;
        send(&gateway, "faulty/ok", false).await
    };
    let (looped, (status, _, ok_elapsed)) = tokio::join!(futures_util::future::join_all(loops), ok);
    assert_eq!(status, 200);
    for (status, body, elapsed) in looped {
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (502, Some("plugin_timeout"))
        );
        assert!(
            ok_elapsed + Duration::from_millis(50) < elapsed,
            "the normal request ({ok_elapsed:?}) waited for a loop ({elapsed:?})"
        );
    }
}

#[tokio::test]
async fn a_plugin_that_eats_memory_hits_its_cap() {
    let mock = MockOpenAi::start().await;
    // A CPU budget of 1 s, not 100 ms: touching 32 MiB is thousands of page faults, which a
    // loaded machine made cost more than 100 ms of the call's CPU time (plugin_timeout first).
    let gateway = gateway_with(&mock.base_url(), 1000).await;
    let (status, body, elapsed) = send(&gateway, "faulty/hog", false).await;
    assert_eq!(status, 502);
    assert_eq!(body["error"]["code"], "plugin_out_of_memory");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("32 MiB")
    );
    assert!(elapsed < Duration::from_secs(2));
    assert_still_serving(&gateway).await;
}

#[tokio::test]
async fn a_decoder_that_traps_mid_stream_ends_that_stream_with_an_error_event() {
    let mock = MockOpenAi::start().await;
    let gateway = gateway(&mock.base_url()).await;
    let (status, body, _) = send(&gateway, "faulty/trap-stream", true).await;
    assert_eq!(status, 200, "headers were sent before the decoder ran");
    let text = body.as_str().unwrap();
    assert!(text.contains("\"plugin_trapped\""), "{text}");
    assert!(!text.contains("[DONE]"), "{text}");
    assert_still_serving(&gateway).await;
}

#[tokio::test]
async fn a_slow_but_legitimate_call_within_the_deadline_succeeds() {
    let mock = MockOpenAi::start().await;
    let gateway = gateway(&mock.base_url()).await;
    let (status, body, _) = send(&gateway, "faulty/slow-ok", false).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn a_plugin_reaches_no_environment_files_or_sockets() {
    let mock = MockOpenAi::start().await;
    let gateway = gateway(&mock.base_url()).await;
    let (status, body, _) = send(&gateway, "faulty/snoop", false).await;
    assert_eq!(status, 200, "{body}");
    let report: Value =
        serde_json::from_str(body["choices"][0]["message"]["content"].as_str().unwrap()).unwrap();
    assert_eq!(
        report,
        json!({"env": 0, "args": 0, "files": 0, "socket": false})
    );
}
