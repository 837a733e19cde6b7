//! Claude Code (the real CLI, pinned by scripts/sdk-clients.sh) with the gateway as both its
//! model endpoint and its MCP server: the model (a mock of Anthropic's Messages API behind the
//! gateway's `anthropic` entry) asks for the MCP tool `mcp__gw__files_add`, Claude Code calls it
//! through `/mcp`, sends the result back, and prints the model's final text.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use tokio::sync::Mutex;

use crate::common::gateway::{Gateway, Provider};
use crate::common::mcp::{HttpMcpServer, calls, connected, with_servers};

const MODEL: &str = "claude-sonnet-4-5";
const SMALL_MODEL: &str = "claude-haiku-4-5";
const UPSTREAM_KEY: &str = "sk-ant-upstream-secret";
/// The tool, as Claude Code names an MCP server's tool (`mcp__<server>__<tool>`).
const TOOL: &str = "mcp__gw__files_add";

/// The Messages requests the mock got.
type Seen = Arc<Mutex<Vec<Value>>>;

/// Anthropic's Messages API as Claude Code needs it (after docs.anthropic.com/en/api/messages
/// and /messages-streaming): a request whose tools hold [`TOOL`] and whose last turn has no
/// `tool_result` gets a `tool_use` of it; one with a `tool_result` gets a text quoting it;
/// anything else (titles, summaries) a short text. Streamed when asked.
async fn messages(State(seen): State<Seen>, headers: HeaderMap, body: Bytes) -> Response {
    let key = headers
        .get("x-api-key")
        .or_else(|| headers.get("authorization"));
    let keyed = key
        .and_then(|k| k.to_str().ok())
        .is_some_and(|k| k.ends_with(UPSTREAM_KEY));
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return error(400, "invalid_request_error", "invalid JSON");
    };
    if !keyed {
        return error(401, "authentication_error", "invalid x-api-key");
    }
    if headers.get("anthropic-version").is_none() {
        return error(
            400,
            "invalid_request_error",
            "anthropic-version header is required",
        );
    }
    if !request["model"].is_string()
        || !request["messages"].is_array()
        || !request["max_tokens"].is_u64()
    {
        return error(
            400,
            "invalid_request_error",
            "model, messages and max_tokens are required",
        );
    }
    seen.lock().await.push(request.clone());
    let last = request["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap_or_default();
    let result = last["content"]
        .as_array()
        .and_then(|c| c.iter().find(|b| b["type"] == "tool_result"))
        .map(|b| match &b["content"] {
            Value::String(s) => s.clone(),
            // Claude Code appends reminders of its own as further blocks: the tool's is first.
            Value::Array(blocks) => blocks
                .iter()
                .find_map(|b| b["text"].as_str())
                .unwrap_or_default()
                .to_owned(),
            _ => String::new(),
        });
    let offers_tool = request["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|t| t["name"] == TOOL));
    let block = match result {
        Some(text) => json!({"type": "text", "text": format!("The sum is {text}.")}),
        None if offers_tool => {
            json!({"type": "tool_use", "id": "toolu_01", "name": TOOL, "input": {"a": 2, "b": 3}})
        }
        None => json!({"type": "text", "text": "Adding numbers"}),
    };
    let stop = if block["type"] == "tool_use" {
        "tool_use"
    } else {
        "end_turn"
    };
    let model = request["model"].clone();
    if request["stream"] != true {
        return axum::Json(json!({
            "id": "msg_01", "type": "message", "role": "assistant", "model": model,
            "content": [block], "stop_reason": stop, "stop_sequence": null,
            "usage": {"input_tokens": 20, "output_tokens": 8}
        }))
        .into_response();
    }
    let (start, delta) = if block["type"] == "tool_use" {
        (
            json!({"type": "tool_use", "id": "toolu_01", "name": TOOL, "input": {}}),
            json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
        )
    } else {
        (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": block["text"]}),
        )
    };
    let events = [
        (
            "message_start",
            json!({"type": "message_start", "message": {
            "id": "msg_01", "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 20, "output_tokens": 1}}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": start}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
                                  "usage": {"output_tokens": 8}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ];
    let body: String = events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect();
    ([("content-type", "text/event-stream")], body).into_response()
}

async fn count_tokens() -> Response {
    axum::Json(json!({"input_tokens": 20})).into_response()
}

fn error(status: u16, kind: &str, message: &str) -> Response {
    let status = axum::http::StatusCode::from_u16(status).unwrap();
    (
        status,
        axum::Json(json!({"type": "error", "error": {"type": kind, "message": message}})),
    )
        .into_response()
}

#[tokio::test]
async fn claude_code_calls_a_tool_of_the_gateways_mcp_server() {
    let claude = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/sdk-clients/js/node_modules/.bin/claude");
    assert!(
        claude.exists(),
        "run scripts/sdk-clients.sh to install Claude Code"
    );
    let seen = Seen::default();
    let app = Router::new()
        .route("/v1/messages", post(messages))
        .route("/v1/messages/count_tokens", post(count_tokens))
        .with_state(Arc::clone(&seen));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mock = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });

    let server = HttpMcpServer::start(Some("t0ken")).await;
    let anthropic = Provider::at("anthropic", &format!("http://{mock}/v1"), UPSTREAM_KEY)
        .models([MODEL, SMALL_MODEL]);
    let config = Gateway::builder().provider("anthropic", anthropic);
    let gateway = with_servers(config, &server, "t0ken").start().await;
    connected(&gateway).await;
    let key = gateway.api_key("acme").await;
    let home = std::env::temp_dir().join(format!("wasmgate-claude-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).unwrap();
    let mcp_config = json!({"mcpServers": {"gw": {
        "type": "http", "url": gateway.url("/mcp"), "headers": {"Authorization": format!("Bearer {key}")}}}});
    let mut command = tokio::process::Command::new(&claude);
    command
        .args([
            "-p",
            "What is 2 + 3? Use the add tool.",
            "--output-format",
            "json",
        ])
        .args(["--model", MODEL, "--tools", "", "--strict-mcp-config"])
        .arg("--mcp-config")
        .arg(mcp_config.to_string())
        .args(["--allowedTools", TOOL])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("ANTHROPIC_BASE_URL", gateway.url(""))
        .env("ANTHROPIC_API_KEY", &key)
        .env("ANTHROPIC_SMALL_FAST_MODEL", SMALL_MODEL)
        .env("ANTHROPIC_DEFAULT_HAIKU_MODEL", SMALL_MODEL)
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(180), command.output())
        .await
        .expect("Claude Code did not finish within 180 s")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let seen = seen.lock().await.clone();
    let asked: Vec<&Value> = seen
        .iter()
        .filter(|r| r["tools"].as_array().is_some_and(|t| !t.is_empty()))
        .collect();
    // The MCP server's result for an `int` is structured (`{"result": 5}`), which Claude Code
    // hands the model as its text.
    let answer: Value = serde_json::from_str(stdout.trim()).unwrap_or_default();
    let text = answer["result"].as_str().unwrap_or_default();
    assert!(
        output.status.success() && text.starts_with("The sum is") && text.contains('5'),
        "Claude Code: {}\nstdout: {stdout}\nstderr: {stderr}\nmodel requests: {}",
        output.status,
        serde_json::to_string_pretty(&seen).unwrap_or_default()
    );
    // It saw the gateway's merged tools under its own server name, and the call went through
    // `/mcp`, recorded as any tool call.
    let names: Vec<&str> = asked[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&TOOL) && names.contains(&"mcp__gw__search_search"),
        "{names:?}"
    );
    let records = calls(&gateway, &key, 1).await;
    assert!(
        records
            .iter()
            .any(|r| r["model"] == "add" && r["status"] == 200),
        "{records:?}"
    );
    let _ = std::fs::remove_dir_all(&home);
    gateway.stop().await;
}
