//! The MCP gateway (`/mcp`) end to end: the official MCP Python and TypeScript SDKs as clients
//! of a gateway merging two servers written with the Python SDK (one over Streamable HTTP, one
//! over stdio that the gateway starts), with keys, per-key tool permissions, guards on arguments
//! and results, records of every call, a call limit, a server that dies mid-session, an upstream
//! session that expires, and sessions served by another replica.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::gateway::{Gateway, Guard};
use crate::common::mcp::with_servers;
use crate::common::mcp::{
    HttpMcpServer, McpGateway, TOKEN, connected, python_client, typescript_client,
};
use crate::common::{TestGateway, http};

#[tokio::test]
async fn the_python_sdk_lists_and_calls_the_tools_of_two_servers_through_one_endpoint() {
    let mcp = McpGateway::builder().mcp("page_size: 3").start().await;
    let out = mcp
        .python(json!([
            ["tools"],
            ["call", "files_add", {"a": 2, "b": 3}],
            ["call", "search_search", {"query": "wasm"}],
            ["call", "search_nope", {}],
            ["prompts"],
            ["prompt", "search_summarize", {"topic": "MCP"}],
            ["resources"],
            ["read", "search+docs://readme"],
        ]))
        .await;
    let mut names: Vec<&str> = out[0]["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "files_add",
            "files_crash",
            "files_delete_all",
            "files_pid",
            "search_cancelled",
            "search_config",
            "search_count",
            "search_search",
            "search_slow",
            "search_steps",
            "search_wait",
        ]
    );
    assert_eq!(out[0]["pages"], 4, "11 tools in pages of 3");
    assert_eq!(out[1], json!({"texts": ["5"], "is_error": false}));
    assert_eq!(
        out[2],
        json!({"texts": ["results for wasm"], "is_error": false})
    );
    assert!(
        out[3]["error"].is_object() || out[3]["is_error"] == true,
        "{}",
        out[3]
    );
    assert_eq!(out[4]["names"], json!(["search_summarize"]));
    assert_eq!(
        out[5]["messages"],
        json!(["Summarize what is known about MCP."])
    );
    assert_eq!(out[6]["uris"], json!(["search+docs://readme"]));
    assert_eq!(
        out[7]["contents"],
        json!([{"uri": "search+docs://readme", "text": "The search server's readme."}])
    );

    // Every call is recorded: server, tool, key, project, status, latency, bytes.
    let records = mcp.calls(3).await;
    let add = records.iter().find(|r| r["model"] == "add").unwrap();
    assert_eq!(add["provider"], "files");
    assert_eq!(add["operation"], "mcp.tools.call");
    assert_eq!(add["project"], "acme");
    assert!(add["api_key_id"].as_str().unwrap().starts_with("key_"));
    assert_eq!(add["status"], 200);
    assert_eq!(add["bytes_in"], r#"{"a":2,"b":3}"#.len());
    assert!(add["bytes_out"].as_i64().unwrap() > 0);
    assert!(add["latency_us"].as_i64().unwrap() > 0);
    let search = records.iter().find(|r| r["model"] == "search").unwrap();
    assert_eq!(search["provider"], "search");
    let metrics = mcp.gateway.metrics().await;
    assert!(
        metrics.contains(r#"operation="mcp.tools.call""#),
        "tool calls are counted: {metrics}"
    );
    mcp.stop().await;
}

#[tokio::test]
async fn the_typescript_sdk_lists_and_calls_tools() {
    let mcp = McpGateway::start().await;
    let out = typescript_client(
        &mcp.url(),
        &mcp.key,
        json!([["tools"], ["call", "files_add", {"a": 40, "b": 2}], ["call", "search_search", {"query": "ts"}]]),
    )
    .await;
    assert_eq!(out[0]["names"].as_array().unwrap().len(), 11, "{out}");
    assert_eq!(out[1], json!({"texts": ["42"], "is_error": false}));
    assert_eq!(
        out[2],
        json!({"texts": ["results for ts"], "is_error": false})
    );
    mcp.stop().await;
}

#[tokio::test]
async fn a_key_that_may_not_see_a_tool_neither_lists_nor_calls_it() {
    let mcp = McpGateway::builder()
        .mcp("projects:\n  support:\n    tools: [\"search/*\", \"files/*\"]")
        .project("support")
        .start()
        .await;
    // The key is narrowed further than its project: one tool of `files`, all of `search`.
    let (status, _) = admin_patch_tools(&mcp.gateway, &mcp.key, &["files/add", "search/*"]).await;
    assert_eq!(status, 200);
    let out = mcp
        .python(json!([["tools"], ["call", "files_delete_all", {}], ["call", "files_add", {"a": 1, "b": 1}], ["resources"]]))
        .await;
    let names = out[0]["names"].as_array().unwrap();
    assert!(names.contains(&json!("files_add")) && names.contains(&json!("search_search")));
    assert!(!names.contains(&json!("files_delete_all")), "{names:?}");
    assert!(!names.contains(&json!("files_crash")));
    assert_eq!(out[1]["error"]["code"], -32602, "{}", out[1]);
    assert!(
        out[1]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Unknown tool")
    );
    assert_eq!(out[2]["texts"], json!(["2"]));
    // `search/*` lets it read the search server's resources.
    assert_eq!(out[3]["uris"], json!(["search+docs://readme"]));

    // A project whose rule allows only `search` tools: its key sees no `files` tool at all.
    let other = McpGateway::builder()
        .mcp("projects:\n  support:\n    tools: [\"search/search\"]")
        .project("support")
        .start()
        .await;
    let out = other
        .python(json!([["tools"], ["call", "files_add", {"a": 1, "b": 1}]]))
        .await;
    assert_eq!(out[0]["names"], json!(["search_search"]));
    assert_eq!(out[1]["error"]["code"], -32602);
    let records = other.calls(1).await;
    assert_eq!(records[0]["status"], 404);
    assert_eq!(records[0]["error_type"], "unknown_tool");
    mcp.stop().await;
    other.stop().await;
}

/// Sets the key's tools through the admin API (with a fresh admin key).
async fn admin_patch_tools(gateway: &TestGateway, key: &str, tools: &[&str]) -> (u16, Value) {
    let (secret, stored) = wasmgate::auth::generate_admin(Some("t"), 0);
    let store = gateway.state.ledger.store();
    tokio::task::spawn_blocking(move || store.insert_admin_key(&stored))
        .await
        .unwrap()
        .unwrap();
    let store = gateway.state.ledger.store();
    let hash = wasmgate::auth::hash(key);
    let id = tokio::task::spawn_blocking(move || store.key_by_hash(&hash))
        .await
        .unwrap()
        .unwrap()
        .unwrap()
        .id;
    let response = http()
        .patch(gateway.url(&format!("/admin/keys/{id}")))
        .bearer_auth(secret)
        .json(&json!({"tools": tools}))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["tools"], json!(tools), "{body}");
    // The gateway caches key lookups for a few seconds.
    tokio::time::sleep(wasmgate::auth::CACHE_TTL + Duration::from_millis(200)).await;
    (status, body)
}

/// An MCP gateway whose guards redact OpenAI keys from tool results and refuse a search
/// argument that holds SQL ("drop table").
pub(crate) async fn guarded() -> McpGateway {
    let redact = Guard::plugin("redact")
        .apply("answer")
        .options(r#"{kinds: {openai-key: placeholder}, default: "off"}"#);
    let deny = Guard::plugin("deny")
        .apply("request")
        .options(r#"{phrases: ["drop table"], reason: "no SQL in searches"}"#);
    McpGateway::builder()
        .guard(redact)
        .guard(deny)
        .start()
        .await
}

#[tokio::test]
pub(crate) async fn guards_redact_a_key_from_a_tool_result_and_refuse_a_forbidden_argument() {
    let mcp = guarded().await;
    let out = mcp
        .python(json!([["call", "search_config", {}], ["call", "search_search", {"query": "x; DROP TABLE users"}], ["call", "search_search", {"query": "fine"}]]))
        .await;
    let text = out[0]["texts"][0].as_str().unwrap();
    assert!(
        !text.contains("sk-proj-"),
        "the key reached the client: {text}"
    );
    assert!(
        text.contains("endpoint=https://api.example.com") && text.contains("OPENAI-KEY"),
        "{text}"
    );
    assert_eq!(out[1]["error"]["code"], -32005, "{}", out[1]);
    assert!(
        out[1]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no SQL in searches")
    );
    assert_eq!(out[2]["texts"], json!(["results for fine"]));

    let records = mcp.calls(3).await;
    let config_call = records.iter().find(|r| r["model"] == "config").unwrap();
    let refused = records.iter().find(|r| r["status"] == 403).unwrap();
    assert_eq!(refused["error_type"], "guard_refused");
    let record = mcp
        .gateway
        .record_of(config_call["request_id"].as_str().unwrap())
        .await;
    let verdicts: Value = serde_json::from_str(record.guards.as_deref().unwrap()).unwrap();
    assert!(
        verdicts
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v["guard"] == "redact" && v["side"] == "answer" && v["action"] == "rewrite"),
        "{verdicts}"
    );
    mcp.stop().await;
}

#[tokio::test]
async fn a_server_that_dies_mid_session_is_restarted_without_disturbing_the_other() {
    let mcp = McpGateway::start().await;
    let out = mcp
        .python(json!([
            ["call", "files_pid", {}],
            ["call", "files_crash", {}],
            ["call", "search_search", {"query": "still here"}],
            ["sleep", 8],
            ["call", "files_pid", {}],
            ["tools"],
        ]))
        .await;
    let first = out[0]["texts"][0].as_str().unwrap().to_owned();
    assert_eq!(
        out[1]["error"]["code"], -32003,
        "the crash is an unavailable server: {}",
        out[1]
    );
    assert_eq!(out[2]["texts"], json!(["results for still here"]));
    let second = out[4]["texts"][0].as_str().unwrap_or_default();
    assert!(
        !second.is_empty() && second != first,
        "restarted: {first} then {}",
        out[4]
    );
    assert_eq!(out[5]["names"].as_array().unwrap().len(), 11);
    assert!(
        mcp.gateway
            .state
            .mcp
            .servers()
            .iter()
            .any(|s| &*s.name == "files" && s.connections() >= 2)
    );
    mcp.stop().await;
}

#[tokio::test]
async fn a_server_that_is_down_is_left_out_of_listings_and_reported() {
    let mut server = HttpMcpServer::start(Some(TOKEN)).await;
    server.stop().await;
    let gateway = with_servers(Gateway::builder(), &server, TOKEN)
        .start()
        .await;
    // The stdio server comes up; the HTTP one never answers.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let servers = gateway.state.mcp.servers();
    let files = &servers[1];
    while files.peer().is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "the stdio server did not connect"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let key = gateway.api_key("acme").await;
    let out = python_client(
        &gateway.url("/mcp"),
        &key,
        json!([["sleep", 0], ["tools"], ["call", "search_search", {"query": "x"}], ["call", "files_add", {"a": 1, "b": 2}]]),
    )
    .await;
    assert_eq!(
        out[1]["names"],
        json!(["files_add", "files_pid", "files_crash", "files_delete_all"])
    );
    assert_eq!(out[1]["meta"]["wasmgate/unavailable"], json!(["search"]));
    assert_eq!(out[2]["error"]["code"], -32003);
    assert_eq!(out[3]["texts"], json!(["3"]));
    gateway.stop().await;
}

#[tokio::test]
async fn an_expired_upstream_session_is_reestablished_without_the_client_noticing() {
    let mut mcp = McpGateway::start().await;
    let first = mcp
        .python(json!([["call", "search_search", {"query": "a"}], ["call", "search_count", {}]]))
        .await;
    assert_eq!(first[1]["texts"], json!(["1"]));
    // The upstream forgets every session it handed out (a new process on the same port): the
    // gateway's session with it answers 404 from now on.
    mcp.server.restart().await;
    let second = mcp
        .python(json!([["call", "search_search", {"query": "b"}], ["call", "search_count", {}]]))
        .await;
    assert_eq!(second[0]["texts"], json!(["results for b"]), "{second}");
    assert_eq!(
        second[1]["texts"],
        json!(["1"]),
        "served by the new process"
    );
    mcp.stop().await;
}

#[tokio::test]
async fn calls_past_the_keys_limit_are_refused() {
    let mcp = McpGateway::builder()
        .mcp("calls_per_minute: 2")
        .start()
        .await;
    let call = json!(["call", "files_add", {"a": 1, "b": 1}]);
    let out = mcp.python(json!([call, call, call, ["tools"]])).await;
    assert_eq!(out[1]["texts"], json!(["2"]));
    assert_eq!(out[2]["error"]["code"], -32004, "{}", out[2]);
    assert!(out[3]["names"].is_array(), "listing is not a call");
    let records = mcp.calls(3).await;
    assert!(records.iter().any(|r| r["status"] == 429));
    mcp.stop().await;
}

/// One raw JSON-RPC POST to `/mcp`; the status, the session header and the body.
async fn post(
    url: &str,
    key: Option<&str>,
    session: Option<&str>,
    body: Value,
) -> (u16, Option<String>, Value) {
    let mut request = http()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .json(&body);
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let session = response
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    let text = response.text().await.unwrap();
    (
        status,
        session,
        serde_json::from_str(&text).unwrap_or(Value::Null),
    )
}

#[tokio::test]
async fn sessions_are_served_by_any_replica_and_bound_to_their_key() {
    let server = HttpMcpServer::start(Some(TOKEN)).await;
    let config = || with_servers(Gateway::builder(), &server, TOKEN);
    let a = config().start().await;
    connected(&a).await;
    // A second replica on the same ledger database would share keys; an in-memory one does not,
    // so the key is issued in both with the same secret.
    let b = config().start().await;
    connected(&b).await;
    let (key, stored) = wasmgate::auth::generate("acme", None, 0);
    for gateway in [&a, &b] {
        let (store, stored) = (gateway.state.ledger.store(), stored.clone());
        tokio::task::spawn_blocking(move || store.insert_key(&stored))
            .await
            .unwrap()
            .unwrap();
    }
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let (status, _, body) = post(&a.url("/mcp"), None, None, init.clone()).await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["error"]["code"], -32001);
    let (status, session, body) = post(&a.url("/mcp"), Some(&key), None, init).await;
    assert_eq!(status, 200);
    assert_eq!(body["result"]["protocolVersion"], "2025-06-18");
    let session = session.unwrap();
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let (status, _, body) = post(&b.url("/mcp"), Some(&key), Some(&session), list.clone()).await;
    assert_eq!(status, 200, "replica b serves a's session: {body}");
    assert_eq!(body["result"]["tools"].as_array().unwrap().len(), 11);
    let (status, _, _) = post(&b.url("/mcp"), Some(&key), None, list.clone()).await;
    assert_eq!(status, 400, "no session");
    let other = b.api_key("acme").await;
    let (status, _, body) = post(&b.url("/mcp"), Some(&other), Some(&session), list.clone()).await;
    assert_eq!(status, 404, "another key's session: {body}");
    let last = if session.ends_with('A') { 'B' } else { 'A' };
    let tampered = format!("{}{last}", &session[..session.len() - 1]);
    let (status, _, _) = post(&b.url("/mcp"), Some(&key), Some(&tampered), list).await;
    assert_eq!(status, 404);
    let (status, _, _) = post(
        &a.url("/mcp"),
        Some(&key),
        Some(&session),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    assert_eq!(status, 202);
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn a_server_on_the_older_sse_transport_is_merged_too() {
    let server = HttpMcpServer::start(Some(TOKEN)).await;
    let legacy = HttpMcpServer::start_legacy(Some("legacy-token")).await;
    let gateway = with_servers(Gateway::builder(), &server, TOKEN)
        .set("mcp.servers.legacy.transport", "sse")
        .set("mcp.servers.legacy.url", legacy.url())
        .set("mcp.servers.legacy.token", "legacy-token")
        .set("mcp.servers.legacy.prefix", "old_")
        .start()
        .await;
    connected(&gateway).await;
    let key = gateway.api_key("acme").await;
    let out = python_client(
        &gateway.url("/mcp"),
        &key,
        json!([["sleep", 1], ["tools"], ["call", "old_search", {"query": "legacy"}]]),
    )
    .await;
    let names = out[1]["names"].as_array().unwrap();
    assert_eq!(names.len(), 18, "{names:?}");
    assert!(names.contains(&json!("old_search")) && names.contains(&json!("search_search")));
    assert_eq!(out[2]["texts"], json!(["results for legacy"]));
    gateway.stop().await;
}

/// Median and 90th percentile of `samples`, in µs.
fn percentiles(mut samples: Vec<u128>) -> (u128, u128) {
    samples.sort_unstable();
    (samples[samples.len() / 2], samples[samples.len() * 9 / 10])
}

/// `n` sequential calls of `tool` on a fresh rmcp client over Streamable HTTP at `url`
/// (with `token` as its bearer token); each call's time in µs.
async fn timed_calls(url: &str, token: &str, tool: &str, arguments: Value, n: usize) -> Vec<u128> {
    use rmcp::ServiceExt;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let config =
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()).auth_header(token.to_owned());
    let transport = StreamableHttpClientTransport::with_client(http(), config);
    let client = ().serve(transport).await.unwrap();
    let params: rmcp::model::CallToolRequestParams =
        serde_json::from_value(json!({"name": tool, "arguments": arguments})).unwrap();
    let mut samples = Vec::with_capacity(n);
    for i in 0..n + 20 {
        let started = std::time::Instant::now();
        let result = client.peer().call_tool(params.clone()).await.unwrap();
        assert_ne!(result.is_error, Some(true));
        // The first calls warm the connections and caches: not counted.
        if i >= 20 {
            samples.push(started.elapsed().as_micros());
        }
    }
    let _ = client.cancel().await;
    samples
}

/// The latency the gateway adds to a tool call: the same calls, in the same run, straight to the
/// Streamable HTTP server and through `/mcp` (key, session, permit, guards: none configured,
/// record). Prints the figures; run with
/// `cargo test --release --test e2e mcp_gateway::added_latency -- --ignored --nocapture`.
#[tokio::test]
#[ignore = "a measurement: prints figures, asserts nothing about them"]
async fn added_latency_per_tool_call() {
    let mcp = McpGateway::start().await;
    let n = 300;
    let query = json!({"query": "latency"});
    let direct = timed_calls(&mcp.server.url(), TOKEN, "search", query.clone(), n).await;
    let through = timed_calls(&mcp.url(), &mcp.key, "search_search", query.clone(), n).await;
    let direct_again = timed_calls(&mcp.server.url(), TOKEN, "search", query, n).await;
    let (d50, d90) = percentiles(direct.into_iter().chain(direct_again).collect());
    let (g50, g90) = percentiles(through);
    eprintln!(
        "MCP tool call, {n} sequential calls each: direct p50 {d50} µs p90 {d90} µs; through the \
         gateway p50 {g50} µs p90 {g90} µs; added p50 {} µs",
        g50.saturating_sub(d50)
    );
    mcp.stop().await;
}
