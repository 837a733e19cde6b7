//! Pass-through routes (issue 21, part 4): `/passthrough/<entry>/<path>` reaches endpoints the
//! gateway does not model, with the gateway's key checked, the entry's own key added by its
//! plugin, the path kept under the entry's base URL, limits checked, and a ledger record with
//! the usage the answer reports. The official `openai` Python SDK drives it
//! (`tests/sdk/passthrough.py`) against the strict mock of `common/mock_passthrough.rs`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::common;

use common::gateway::{Gateway, GatewayBuilder, Provider};
use common::mock_passthrough::{
    ANTHROPIC_KEY, COMPLETION_TOKENS, MockPassthrough, OPENAI_KEY, PROMPT_TOKENS,
};
use common::{TestGateway, http};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::sdk_clients::{assert_passed, run_client};

/// Keys required, bodies up to 256 MiB, and an `openai` and an `anthropic` entry on the mock.
fn config(mock: &MockPassthrough) -> GatewayBuilder {
    let openai = Provider::at("openai", &mock.openai_url(), OPENAI_KEY).models(["gpt-4o-mini"]);
    let anthropic = Provider::at("anthropic", &mock.anthropic_url(), ANTHROPIC_KEY)
        .models(["claude-sonnet-4-5"]);
    Gateway::builder()
        .auth_required()
        .set("server.max_body_bytes", 268_435_456)
        .provider("openai", openai)
        .provider("anthropic", anthropic)
}

#[tokio::test]
async fn the_openai_sdk_reaches_unmodelled_endpoints_with_keys_and_records() {
    let mock = MockPassthrough::start().await;
    let gateway = config(&mock).start().await;
    // Made through the admin API, as an operator would.
    let (admin, stored) = wasmgate::auth::generate_admin(Some("ops"), 0);
    let store = gateway.state.ledger.store();
    tokio::task::spawn_blocking(move || store.insert_admin_key(&stored))
        .await
        .unwrap()
        .unwrap();
    let created: Value = http()
        .post(gateway.url("/admin/keys"))
        .bearer_auth(&admin)
        .json(&json!({"project": "default", "passthrough": ["openai/fine_tuning/*", "openai/vector_stores*", "openai/chat/completions"]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        created["passthrough"][0], "openai/fine_tuning/*",
        "{created}"
    );
    let key = created["key"].as_str().expect("the key").to_owned();
    let denied = gateway.api_key("default").await;

    let output = run_client(
        "passthrough.py",
        &gateway.url("/passthrough/openai"),
        &key,
        &["--denied-key", &denied],
    )
    .await;
    assert_passed(
        &output,
        &[
            "fine_tuning_create",
            "fine_tuning_list",
            "fine_tuning_missing",
            "vector_store_raw",
            "chat_usage",
            "chat_stream_usage",
            "denied",
        ],
    );

    // Recorded as `passthrough`, with the usage the answer reported and its model's price.
    for id in ["pt-chat_usage", "pt-chat_stream_usage"] {
        let record = gateway.record_of(id).await;
        assert_eq!(record.operation, "passthrough", "{record:?}");
        assert_eq!(record.status, 200);
        assert_eq!(record.provider.as_deref(), Some("openai"));
        assert_eq!(record.model.as_deref(), Some("gpt-4o-mini"));
        assert_eq!(
            (record.input_tokens, record.output_tokens, record.estimated),
            (PROMPT_TOKENS, COMPLETION_TOKENS, false),
            "{id}"
        );
        // 31 tokens at $0.15/M and 9 at $0.60/M.
        assert!(
            matches!(record.cost_micros, Some(10..=11)),
            "{id}: {record:?}"
        );
        assert!(record.api_key_id.is_some());
    }
    let job = gateway.record_of("pt-fine_tuning_create").await;
    assert_eq!((job.status, job.input_tokens, job.model), (200, 0, None));
    let missing = gateway.record_of("pt-fine_tuning_missing").await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.error_type.as_deref(), Some("http_404"));
    let refused = gateway.record_of("pt-denied").await;
    assert_eq!(refused.status, 403);
    assert_eq!(
        refused.error_type.as_deref(),
        Some("passthrough_not_allowed")
    );

    // The upstream saw its own key only (the mock refuses anything else), at the paths the
    // client asked for under its base URL, the query kept; the refused request never left.
    let received = mock.received().await;
    let uris: Vec<&str> = received.iter().map(|r| r.uri.as_str()).collect();
    assert!(uris.contains(&"/v1/fine_tuning/jobs?limit=2"), "{uris:?}");
    assert!(uris.contains(&"/v1/vector_stores"), "{uris:?}");
    assert_eq!(
        received.len(),
        7,
        "one upstream request per allowed call: {uris:?}"
    );
    for request in &received {
        let auth = request.headers.get("authorization").unwrap();
        assert_eq!(auth.to_str().unwrap(), format!("Bearer {OPENAI_KEY}"));
    }
}

#[tokio::test]
async fn the_anthropic_entry_adds_its_own_key_and_version() {
    let mock = MockPassthrough::start().await;
    let gateway = config(&mock).start().await;
    let key = gateway.passthrough_key(&["anthropic/messages/*"]).await;
    // As Anthropic's clients send the gateway key: in `x-api-key`.
    let response = http()
        .get(gateway.url("/passthrough/anthropic/messages/batches?limit=5"))
        .header("x-api-key", &key)
        .header("x-request-id", "pt-batches")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["has_more"], false);
    let received = mock.received().await;
    let sent = &received[0];
    assert_eq!(sent.uri, "/anthropic/v1/messages/batches?limit=5");
    assert_eq!(sent.headers["x-api-key"], ANTHROPIC_KEY);
    assert_eq!(sent.headers["anthropic-version"], "2023-06-01");
    let record = gateway.record_of("pt-batches").await;
    assert_eq!(
        (record.operation.as_str(), record.provider.as_deref()),
        ("passthrough", Some("anthropic"))
    );

    // A key whose patterns do not cover the path is refused before anything is sent.
    let response = http()
        .get(gateway.url("/passthrough/anthropic/models"))
        .header("x-api-key", &key)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    // No key at all, on a gateway that requires one.
    let response = http()
        .get(gateway.url("/passthrough/anthropic/messages/batches"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    assert_eq!(mock.received().await.len(), 1);
}

#[tokio::test]
async fn pass_through_requests_are_limited_like_any_other() {
    let mock = MockPassthrough::start().await;
    let gateway = config(&mock)
        .set("limits.store", "memory")
        .limit("rate-limit", "key", "{ requests_per_minute: 2 }")
        .start()
        .await;
    let key = gateway.passthrough_key(&["openai/*"]).await;
    let mut statuses = Vec::new();
    for _ in 0..3 {
        let response = http()
            .get(gateway.url("/passthrough/openai/vector_stores"))
            .bearer_auth(&key)
            .send()
            .await
            .unwrap();
        statuses.push(response.status().as_u16());
    }
    assert_eq!(statuses, [200, 200, 429]);
    assert_eq!(mock.received().await.len(), 2);
}

/// Sends `target` as the raw request line's target, so that no client library normalises it
/// first; the status line's code.
async fn raw_status(gateway: &TestGateway, target: &str, key: &str) -> u16 {
    let mut stream = tokio::net::TcpStream::connect(gateway.addr).await.unwrap();
    let request = format!(
        "GET {target} HTTP/1.1\r\nhost: gateway\r\nauthorization: Bearer {key}\r\nconnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8_lossy(&answer);
    answer
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line for {target}: {answer}"))
}

#[tokio::test]
async fn hostile_paths_never_leave_the_base_url() {
    let mock = MockPassthrough::start().await;
    let gateway = config(&mock).start().await;
    // Everything allowed, so that each refusal is the path guard's.
    let key = gateway.passthrough_key(&["*"]).await;
    for target in [
        "/passthrough/openai/../admin/keys",
        "/passthrough/openai/files/../../admin/keys",
        "/passthrough/openai/%2e%2e/admin/keys",
        "/passthrough/openai/.%2E/admin/keys",
        "/passthrough/openai/%252e%252e/admin",
        "/passthrough/openai/files%2f..%2fadmin",
        "/passthrough/openai/files%5c..%5cadmin",
        "/passthrough/openai//evil.example/v1/files",
        "/passthrough/openai/http://evil.example/v1/files",
        "/passthrough/openai/files@evil.example",
        "/passthrough/openai/files%00",
        "/passthrough/openai/files%0d%0aHost:%20evil.example",
        "/passthrough/openai/files?purpose=%0d%0aHost:evil",
        "/passthrough/openai/files?a=%",
        "/passthrough/openai/./files",
        "/passthrough/openai",
        "/passthrough/openai/",
        "/passthrough/../v1/models",
        "/passthrough/%2e%2e/files",
        "/passthrough/nosuchentry/files",
    ] {
        let status = raw_status(&gateway, target, &key).await;
        assert!(status == 400 || status == 404, "{target} got {status}");
    }
    assert!(
        mock.received().await.is_empty(),
        "a hostile path reached the upstream: {:?}",
        mock.received().await
    );
    // The same route with a plain path does reach it.
    assert_eq!(
        raw_status(&gateway, "/passthrough/openai/vector_stores", &key).await,
        200
    );
}

#[tokio::test]
async fn an_upload_of_many_megabytes_streams_through_without_being_held() {
    const CHUNK: usize = 1 << 20;
    const CHUNKS: usize = 64;
    /// Chunks the client may be ahead of what the upstream has received: the socket buffers
    /// on the way, never the whole body.
    const AHEAD: usize = 12;
    let mock = MockPassthrough::start().await;
    let gateway = config(&mock).start().await;
    let key = gateway.passthrough_key(&["openai/uploads/*"]).await;
    let progress = mock.progress();
    let sent = Arc::new(AtomicUsize::new(0));
    let chunk = bytes::Bytes::from(vec![b'x'; CHUNK]);
    let counted = Arc::clone(&sent);
    let body = futures_util::stream::unfold(0usize, move |i| {
        let (chunk, progress, counted) =
            (chunk.clone(), Arc::clone(&progress), Arc::clone(&counted));
        async move {
            if i == CHUNKS {
                return None;
            }
            // Waits until the upstream has most of what was sent: a gateway that held the
            // body whole would never let it, and the test would time out.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while i >= AHEAD && progress.load(Ordering::SeqCst) < (i - AHEAD) * CHUNK {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the upstream got nothing while the client sent chunk {i}"
                );
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            }
            counted.fetch_add(chunk.len(), Ordering::SeqCst);
            Some((Ok::<_, std::io::Error>(chunk), i + 1))
        }
    });
    let response = http()
        .post(gateway.url("/passthrough/openai/uploads/blob"))
        .bearer_auth(&key)
        .header("content-type", "application/octet-stream")
        .body(reqwest::Body::wrap_stream(body))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let answer: Value = response.json().await.unwrap();
    assert_eq!(answer["bytes"], CHUNKS * CHUNK);
    assert_eq!(sent.load(Ordering::SeqCst), CHUNKS * CHUNK);
}
