//! Graceful shutdown of the real binary: on SIGTERM it stops accepting, lets a stream in flight
//! finish, cuts one that outlives `server.shutdown_timeout_ms`, writes the usage records of both,
//! and exits 0.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use common::binary::{Gateway, temp_dir};
use common::gateway::{Gateway as Config, Provider};
use common::mock_openai::MockOpenAi;
use futures_util::StreamExt;
use serde_json::json;

fn write_config(dir: &Path, mock: &MockOpenAi, shutdown_timeout_ms: u64) -> std::path::PathBuf {
    let entry = Provider::at("openai", &mock.base_url(), "sk-test").models([
        "paced-2000",
        "endless",
        "slow",
    ]);
    let config = Config::builder()
        .any_port()
        .set("server.shutdown_timeout_ms", shutdown_timeout_ms)
        .set("plugins.dir", dir.join("plugins").display().to_string())
        .set(
            "plugins.cache_dir",
            common::plugin_cache_dir().display().to_string(),
        )
        .ledger(&format!("sqlite://{}", dir.join("ledger.db").display()))
        .provider("mock", entry)
        .to_yaml();
    let path = dir.join("config.yaml");
    std::fs::write(&path, config).unwrap();
    path
}

/// Starts a stream of `model` with the request id `id` and returns its body once the first
/// chunk has arrived.
async fn start_stream(
    gateway: &Gateway,
    model: &str,
    id: &str,
) -> (
    String,
    futures_util::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
) {
    let response = common::http()
        .post(gateway.url("/v1/chat/completions"))
        .header("x-request-id", id)
        .json(&json!({"model": model, "stream": true,
                      "messages": [{"role": "user", "content": "count"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut body = response.bytes_stream().boxed();
    let first = body.next().await.unwrap().unwrap();
    (String::from_utf8_lossy(&first).into_owned(), body)
}

/// The status and `estimated` flag of the usage record of `request_id`, read after exit.
fn record(db: &Path, request_id: &str) -> Option<(i64, bool)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row(
        "SELECT status, estimated FROM usage_records WHERE request_id = ?1",
        [request_id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_in_flight_at_sigterm_completes_and_the_process_exits_0() {
    let mock = MockOpenAi::start().await;
    let dir = temp_dir("shutdown-drain");
    let config = write_config(&dir, &mock, 10_000);
    let mut gateway = Gateway::serve(&dir, &config).await;

    let (mut text, mut body) = start_stream(&gateway, "mock/paced-2000", "drained-stream").await;
    gateway.signal(libc::SIGTERM);
    gateway
        .wait_for_line(
            |l| l.contains("draining 1 connections"),
            Duration::from_secs(5),
        )
        .await;
    // New connections are refused while the stream goes on.
    let refused = tokio::net::TcpStream::connect(("127.0.0.1", gateway.port)).await;
    assert!(refused.is_err(), "still accepting after SIGTERM");

    while let Some(chunk) = body.next().await {
        text.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
    }
    assert!(text.contains("t99 "), "the stream was not complete: {text}");
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");

    let (status, _) = gateway.wait_exit(Duration::from_secs(10)).await;
    assert!(status.success(), "exit status {status}");
    assert!(
        !gateway.lines().iter().any(|l| l.contains("deadline")),
        "{:#?}",
        gateway.lines()
    );
    // Reported by the upstream, so not an estimate.
    assert_eq!(
        record(&dir.join("ledger.db"), "drained-stream"),
        Some((200, false))
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_past_the_deadline_is_cut_recorded_and_the_process_exits_0() {
    let mock = MockOpenAi::start().await;
    let dir = temp_dir("shutdown-cut");
    let config = write_config(&dir, &mock, 300);
    let mut gateway = Gateway::serve(&dir, &config).await;

    let (_, mut body) = start_stream(&gateway, "mock/endless", "cut-stream").await;
    // And a request waiting for an upstream that answers after 3 s.
    let slow = tokio::spawn(
        common::http()
            .post(gateway.url("/v1/chat/completions"))
            .header("x-request-id", "cut-request")
            .json(&json!({"model": "mock/slow", "messages": [{"role": "user", "content": "hi"}]}))
            .send(),
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !mock
        .requests()
        .await
        .iter()
        .any(|r| r.body["model"] == "slow")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the slow request did not reach the mock"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    gateway.signal(libc::SIGTERM);
    let (status, took) = gateway.wait_exit(Duration::from_secs(10)).await;
    assert!(status.success(), "exit status {status}");
    // The deadline, plus the time to unwind and flush; not the 10 s the test would wait.
    assert!(took < Duration::from_secs(3), "exited after {took:?}");
    assert!(
        gateway
            .lines()
            .iter()
            .any(|l| l.contains("shutdown deadline of 300 ms passed: cut 2")),
        "{:#?}",
        gateway.lines()
    );

    // The client sees its stream end (cut, without `[DONE]`) rather than hang.
    let rest = tokio::time::timeout(Duration::from_secs(5), async {
        let mut text = String::new();
        while let Some(Ok(chunk)) = body.next().await {
            text.push_str(&String::from_utf8_lossy(&chunk));
        }
        text
    })
    .await
    .expect("the cut stream did not end");
    assert!(!rest.contains("[DONE]"), "{rest}");

    // The upstream request was cancelled with it (noticed at the mock's next chunk), and the
    // relayed part was recorded.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while mock.shared.cancelled_streams.load(Ordering::SeqCst) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the upstream stream was not cancelled"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (status, estimated) = record(&dir.join("ledger.db"), "cut-stream")
        .unwrap_or_else(|| panic!("no record for the cut stream: {:#?}", gateway.lines()));
    assert_eq!(status, 200);
    assert!(
        estimated,
        "the endless stream reports no usage: the record is counted"
    );
    // The request cut while it waited is recorded as cancelled.
    assert!(
        slow.await.unwrap().is_err(),
        "the cut request got an answer"
    );
    assert_eq!(
        record(&dir.join("ledger.db"), "cut-request"),
        Some((499, false))
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_signal_cuts_the_drain_short() {
    let mock = MockOpenAi::start().await;
    let dir = temp_dir("shutdown-twice");
    let config = write_config(&dir, &mock, 60_000);
    let mut gateway = Gateway::serve(&dir, &config).await;

    let (_, _body) = start_stream(&gateway, "mock/endless", "impatient").await;
    gateway.signal(libc::SIGINT);
    gateway
        .wait_for_line(
            |l| l.contains("draining 1 connections"),
            Duration::from_secs(5),
        )
        .await;
    gateway.signal(libc::SIGINT);
    let (status, took) = gateway.wait_exit(Duration::from_secs(10)).await;
    assert!(status.success(), "exit status {status}");
    assert!(
        took < Duration::from_secs(3),
        "exited after {took:?}, not at once"
    );
    assert!(
        gateway
            .lines()
            .iter()
            .any(|l| l.contains("cut 1 connections still in flight")),
        "{:#?}",
        gateway.lines()
    );
    assert_eq!(
        record(&dir.join("ledger.db"), "impatient").map(|(status, _)| status),
        Some(200)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
