//! Claude Code end to end through the `redact` guard: Claude Code 2.1.332 (pinned in
//! `scripts/sdk-clients.sh`) runs non-interactively (`claude -p ... --output-format json`)
//! against a gateway whose `anthropic` entry is the strict mock of the Messages API, with a
//! gateway key and nothing else to call. The mock plays an agent's turn: a `Read` of a file that
//! holds a card number and an Anthropic key, then an answer quoting what the tool returned.
//!
//! What Claude Code sends was studied from the mock's log, not guessed: `POST
//! /v1/messages?beta=true` streamed, with its `anthropic-beta` flags, `x-api-key`, a system
//! prompt in blocks with `cache_control`, a dozen tools (some `defer_loading`), `thinking`
//! enabled, `context_management` and `metadata`. The target speaks Messages, so with the guard
//! on the upstream still gets Claude Code's own body, the guard's redactions made in its text
//! (`guards_native.rs`): its fields arrive, and the signed thinking block of the tool-call turn
//! comes back to the mock, which refuses one whose signature does not match.
//!
//! The test asserts that the upstream never saw either secret (only `[CARD_1]` and
//! `[ANTHROPIC-KEY_1]`), that Claude Code completed, and that reversible mode gave Claude Code
//! its own values back in the streamed answer.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::{Path, PathBuf};

use common::gateway::{Gateway, Guard, Provider};
use common::mock_providers::{KEY, MockProvider, anthropic::Script};
use serde_json::{Value, json};

const CARD: &str = "4111 1111 1111 1111";
const ANTHROPIC_KEY: &str = "sk-ant-api03-Zq8vN2xK4mT7pR1sW9yB3dF6hJ0lC5";

fn claude() -> PathBuf {
    common::sdk::installed(
        common::sdk::root().join("target/sdk-clients/js/node_modules/.bin/claude"),
    )
}

/// Runs `claude -p prompt` in `dir` against `base_url` with `key`; its JSON result.
async fn run_claude(dir: &Path, base_url: &str, key: &str, prompt: &str) -> Value {
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let mut command = std::process::Command::new(claude());
    command
        .args(["-p", prompt, "--output-format", "json"])
        .args(["--model", "anthropic/claude-sonnet-4-5"])
        .current_dir(dir)
        // Only what it needs: the gateway, its key, and nothing else to call home to.
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("CLAUDE_CONFIG_DIR", home.join(".claude"))
        .env("ANTHROPIC_BASE_URL", base_url)
        .env("ANTHROPIC_API_KEY", key)
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = command.spawn().expect("claude starts");
    let output = common::sdk::bounded(child, "Claude Code").await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "claude failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[tokio::test]
async fn claude_code_reads_a_file_of_secrets_through_redact_and_the_upstream_never_sees_them() {
    let dir = std::env::temp_dir().join(format!("wasmgate-claude-code-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("secrets.txt");
    std::fs::write(&file, format!("Card: {CARD}\nKey: {ANTHROPIC_KEY}\n")).unwrap();

    let mock = MockProvider::anthropic().await;
    *mock.shared.script.lock().await = Some(Script {
        tool: "Read".to_owned(),
        input: json!({"file_path": file.display().to_string()}),
    });
    let anthropic = Provider::at("anthropic", &mock.base_url(), KEY)
        .models(["claude-sonnet-4-5", "claude-haiku-4-5"]);
    let gateway = Gateway::builder()
        .auth_required()
        .provider("anthropic", anthropic)
        .guard(Guard::plugin("redact").options("{reversible: true, window: 48}"))
        .start()
        .await;
    let key = gateway.api_key("coding").await;

    let result = run_claude(
        &dir,
        &gateway.url(""),
        &key,
        "Read secrets.txt and tell me what it says.",
    )
    .await;
    assert_eq!(result["is_error"], false, "{result}");
    assert_eq!(result["subtype"], "success", "{result}");
    let answer = result["result"].as_str().unwrap();
    // The mock quoted the tool's result with placeholders; reversible mode put the values back.
    assert!(answer.starts_with("The tool said:"), "{answer}");
    assert!(
        answer.contains(CARD) && answer.contains(ANTHROPIC_KEY),
        "{answer}"
    );

    let requests = mock.shared.requests.lock().await.clone();
    assert!(requests.len() >= 2, "a tool call and the answer to it");
    for request in &requests {
        let sent = request.body.to_string();
        assert!(
            !sent.contains("4111") && !sent.contains("sk-ant-api03"),
            "the upstream saw a secret: {sent}"
        );
        assert_eq!(
            request.header("x-api-key"),
            Some(KEY),
            "the upstream's own key"
        );
    }
    // Claude Code's real request went through: its tools, and the file's placeholders in the
    // tool result it sent back.
    let last = &requests.last().unwrap().body;
    let tools: Vec<&str> = (last["tools"].as_array().unwrap().iter())
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        tools.contains(&"Read") && tools.contains(&"Bash") && tools.len() > 5,
        "{tools:?}"
    );
    let sent = last.to_string();
    assert!(
        sent.contains("[CARD_1]") && sent.contains("[ANTHROPIC-KEY_1]"),
        "{sent}"
    );
    // Its own fields, which the canonical form cannot carry, arrived, and the thinking block
    // the mock signed came back with its signature.
    assert!(last["thinking"].is_object(), "{last}");
    assert!(last["metadata"]["user_id"].is_string(), "{last}");
    assert!(sent.contains("cache_control"), "{sent}");
    let thinking = (last["messages"].as_array().unwrap().iter())
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
        .find(|b| b["type"] == "thinking");
    assert_eq!(
        thinking.map(|b| &b["signature"]),
        Some(&json!(common::mock_providers::anthropic::signature(
            common::mock_providers::anthropic::THINKING
        ))),
        "{last}"
    );
    let metrics = gateway.metrics().await;
    assert!(
        metrics.contains(r#"wasmgate_guard_verdicts_total{guard="redact",action="rewrite"}"#),
        "{metrics}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
