//! What happens during one tool call through `/mcp`, with the official MCP Python SDK as the
//! client and a server written with the same SDK: the server's progress reaches the client's
//! progress callback, a call the client abandons is cancelled at the server (which sees
//! `notifications/cancelled` naming the request as it knows it) and recorded as cancelled, and a
//! guard that asks for an outside verdict on a call's arguments gets it.

use serde_json::{Value, json};

use crate::common::gateway::Guard;
use crate::common::guards::falcon_webhook;
use crate::common::mcp::McpGateway;

fn numbers(progress: &Value) -> Vec<(f64, f64, String)> {
    progress
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p[0].as_f64().unwrap(),
                p[1].as_f64().unwrap(),
                p[2].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn progress_reaches_the_client_and_a_cancelled_call_is_cancelled_at_the_server() {
    let mcp = McpGateway::start().await;
    let out = mcp
        .python(json!([
            ["progress", "search_steps", {"n": 3}],
            ["cancel", "search_wait", {}, 1.0],
            ["sleep", 0.5],
            ["call", "search_cancelled", {}],
            // Without a progress callback the answer is plain JSON, as before.
            ["call", "search_steps", {"n": 2}],
        ]))
        .await;
    assert_eq!(out[0]["texts"], json!(["3 steps done"]), "{out}");
    assert_eq!(
        numbers(&out[0]["progress"]),
        [
            (1.0, 3.0, "step 1 of 3".to_owned()),
            (2.0, 3.0, "step 2 of 3".to_owned()),
            (3.0, 3.0, "step 3 of 3".to_owned()),
        ]
    );
    assert_eq!(out[1]["cancelled"], true, "the client gave up: {out}");
    // The server's own count: its `wait` was interrupted by a cancellation naming its request.
    assert_eq!(out[3]["texts"], json!(["1"]), "{out}");
    assert_eq!(out[4]["texts"], json!(["2 steps done"]));

    let records = mcp.calls(4).await;
    // The tool's name is recorded once the server has answered for it; this one never did.
    let wait = records.iter().find(|r| r["status"] == 499).unwrap();
    assert_eq!(wait["provider"], "search", "{wait}");
    assert_eq!(wait["error_type"], "cancelled");
    assert!(wait["latency_us"].as_i64().unwrap() < 30_000_000);
    let steps: Vec<_> = records.iter().filter(|r| r["model"] == "steps").collect();
    assert_eq!(steps.len(), 2);
    assert!(steps.iter().all(|r| r["status"] == 200));
    mcp.stop().await;
}

#[tokio::test]
async fn a_guard_asking_for_an_outside_verdict_on_a_tool_call_gets_it() {
    let (url, seen) = falcon_webhook().await;
    let moderation = Guard::plugin("moderation")
        .apply("request")
        .yaml(
            "endpoint",
            &format!("{{ url: \"{url}\", timeout_ms: 2000 }}"),
        )
        .options("{ format: webhook, reason: \"no birds of prey\" }");
    let mcp = McpGateway::builder().guard(moderation).start().await;
    let out = mcp
        .python(json!([
            ["call", "search_search", {"query": "where the falcon nests"}],
            ["call", "search_search", {"query": "sparrows"}],
        ]))
        .await;
    assert_eq!(out[0]["error"]["code"], -32005, "{out}");
    assert!(
        out[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no birds of prey"),
        "{out}"
    );
    assert_eq!(out[1]["texts"], json!(["results for sparrows"]), "{out}");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "one outside call per tool call: {seen:?}");
    assert_eq!(seen[0]["side"], "request");
    assert!(seen[0]["input"].to_string().contains("falcon"), "{seen:?}");

    let records = mcp.calls(2).await;
    let refused = records.iter().find(|r| r["status"] == 403).unwrap();
    assert_eq!(refused["error_type"], "guard_refused");
    let record = mcp
        .gateway
        .record_of(refused["request_id"].as_str().unwrap())
        .await;
    let verdicts: Value = serde_json::from_str(record.guards.as_deref().unwrap()).unwrap();
    assert_eq!(verdicts[0]["guard"], "moderation", "{verdicts}");
    assert_eq!(verdicts[0]["action"], "refuse", "{verdicts}");
    mcp.stop().await;
}
