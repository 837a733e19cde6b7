//! The older HTTP+SSE transport downstream (`GET /mcp/sse`, then `POST /mcp/messages`), for
//! clients that still use it: the official MCP Python SDK's `sse_client` lists and calls the
//! merged tools, sees progress, cancels; keys and bounds as on `/mcp`.

use std::time::Duration;

use futures_util::StreamExt;
use serde_json::json;

use crate::common::http;
use crate::common::mcp::{McpGateway, python_sse_client};

#[tokio::test]
async fn the_python_sdks_sse_client_lists_calls_sees_progress_and_cancels() {
    let mcp = McpGateway::start().await;
    let out = python_sse_client(
        &mcp.gateway.url("/mcp/sse"),
        &mcp.key,
        json!([
            ["tools"],
            ["call", "files_add", {"a": 20, "b": 22}],
            ["call", "search_search", {"query": "old"}],
            ["progress", "search_steps", {"n": 2}],
            ["cancel", "search_wait", {}, 1.0],
            ["sleep", 0.5],
            ["call", "search_cancelled", {}],
            ["call", "nowhere_tool", {}],
        ]),
    )
    .await;
    assert_eq!(out[0]["names"].as_array().unwrap().len(), 11, "{out}");
    assert_eq!(out[1]["texts"], json!(["42"]), "{out}");
    assert_eq!(out[2]["texts"], json!(["results for old"]));
    assert_eq!(out[3]["texts"], json!(["2 steps done"]));
    assert_eq!(
        out[3]["progress"].as_array().unwrap().len(),
        2,
        "{}",
        out[3]
    );
    assert_eq!(out[4]["cancelled"], true);
    assert_eq!(out[6]["texts"], json!(["1"]), "the server saw the cancel");
    assert_eq!(out[7]["error"]["code"], -32602, "{out}");
    let records = mcp.calls(6).await;
    assert!(
        records
            .iter()
            .any(|r| r["model"] == "add" && r["status"] == 200)
    );
    assert!(
        records
            .iter()
            .any(|r| r["provider"] == "search" && r["status"] == 499)
    );
    mcp.stop().await;
}

/// The guards hold on the older transport as on `/mcp`: a tool result's key redacted on its way
/// back over the event stream, a forbidden argument refused, each verdict recorded.
#[tokio::test]
pub(crate) async fn guards_hold_on_the_sse_transport() {
    let mcp = crate::mcp_gateway::guarded().await;
    let out = python_sse_client(
        &mcp.gateway.url("/mcp/sse"),
        &mcp.key,
        json!([
            ["call", "search_config", {}],
            ["call", "search_search", {"query": "x; DROP TABLE users"}],
            ["call", "search_search", {"query": "fine"}],
        ]),
    )
    .await;
    let text = out[0]["texts"][0].as_str().unwrap();
    assert!(
        !text.contains("sk-proj-"),
        "the key reached the client: {text}"
    );
    assert!(text.contains("OPENAI-KEY"), "{text}");
    assert_eq!(out[1]["error"]["code"], -32005, "{}", out[1]);
    assert_eq!(out[2]["texts"], json!(["results for fine"]));
    let records = mcp.calls(3).await;
    let refused = records.iter().find(|r| r["status"] == 403).unwrap();
    assert_eq!(refused["error_type"], "guard_refused");
    mcp.stop().await;
}

/// Opens `/mcp/sse` with `key`; the status and, on 200, the endpoint its first event names and
/// the rest of the stream (open for as long as it is held).
async fn open(
    url: &str,
    key: Option<&str>,
) -> (
    u16,
    Option<String>,
    Option<impl futures_util::Stream + use<>>,
) {
    let mut request = http().get(url).header("accept", "text/event-stream");
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    if status != 200 {
        return (status, None, None);
    }
    let mut body = response.bytes_stream();
    let mut text = String::new();
    while !text.contains("\n\n") {
        let chunk = tokio::time::timeout(Duration::from_secs(5), body.next())
            .await
            .expect("the endpoint event")
            .unwrap()
            .unwrap();
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(text.starts_with("event: endpoint\n"), "{text}");
    let endpoint = text
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .unwrap()
        .to_owned();
    (status, Some(endpoint), Some(body))
}

#[tokio::test]
async fn the_sse_transport_takes_keys_and_is_bounded() {
    let mcp = McpGateway::builder()
        .mcp("sse_streams_per_key: 2")
        .start()
        .await;
    let url = mcp.gateway.url("/mcp/sse");
    let (status, _, _) = open(&url, None).await;
    assert_eq!(status, 401);

    // Two streams per key: the third is refused while both are open.
    let held: Vec<reqwest::Response> = futures_util::future::join_all((0..2).map(|_| {
        http()
            .get(&url)
            .bearer_auth(&mcp.key)
            .header("accept", "text/event-stream")
            .send()
    }))
    .await
    .into_iter()
    .map(Result::unwrap)
    .collect();
    assert!(held.iter().all(|r| r.status() == 200));
    let (status, _, _) = open(&url, Some(&mcp.key)).await;
    assert_eq!(status, 429);
    drop(held);
    // A closed stream frees its place (once the server notices the client has gone).
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let (endpoint, _stream) = loop {
        if let (200, Some(endpoint), Some(stream)) = open(&url, Some(&mcp.key)).await {
            break (endpoint, stream);
        }
        assert!(std::time::Instant::now() < deadline, "no stream freed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(
        endpoint.starts_with("/mcp/messages?session_id="),
        "{endpoint}"
    );

    // Another key cannot post to this key's session, nor can anyone to a made-up one.
    let other = mcp.gateway.api_key("acme").await;
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let messages = mcp.gateway.url(&endpoint);
    let status = |key: String, url: String| {
        let ping = ping.clone();
        async move {
            http()
                .post(url)
                .bearer_auth(key)
                .json(&ping)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    assert_eq!(status(mcp.key.clone(), messages.clone()).await, 202);
    assert_eq!(status(other, messages.clone()).await, 404);
    assert_eq!(
        status(
            mcp.key.clone(),
            mcp.gateway.url("/mcp/messages?session_id=made.up")
        )
        .await,
        404
    );
    mcp.stop().await;
}
