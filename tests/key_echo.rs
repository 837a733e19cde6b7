//! Upstreams that repeat the key they received (tests/common/mock_leaky.rs), behind the real
//! binary: the provider keys, and the gateway key of the request (which the client's prompt
//! repeats and the upstream quotes back), must reach neither the client's body, nor the
//! binary's log, nor the ledger's SQLite file; while the error stays useful: its status, and the
//! rest of its message, with `[redacted]` where the key was. Whole answers, stream requests
//! refused before they start, and error events in the middle of a stream, for OpenAI, Anthropic
//! and Gemini; and a key changed by a reload.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::binary::{Gateway, temp_dir};
use common::gateway::{Gateway as Config, Provider};
use common::http;
use common::mock_leaky::MockLeaky;
use serde_json::{Value, json};

const OPENAI_KEY: &str = "sk-proj-leaked0penAiKey0123456789";
const ANTHROPIC_KEY: &str = "sk-ant-api03-leakedAnthropicKey987";
const GEMINI_KEY: &str = "AIzaSyLeakedGeminiKey-0123456789ab";
/// The OpenAI entry's key after a reload.
const RELOADED_KEY: &str = "sk-proj-reloaded0penAiKey98765";

/// A key of project `acme` in the ledger at `ledger`, made as an operator would.
fn create_key(dir: &Path, ledger: &str) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_wasmgate"))
        .args(["keys", "create", "--project", "acme", "--ledger", ledger])
        .current_dir(dir)
        .env("XDG_CACHE_HOME", common::plugin_cache_dir())
        .env_remove("WASMGATE_CONFIG")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// Sends a chat request for `model` with `key`, whose prompt repeats the key; returns the
/// status and the whole body (a stream read to its end).
async fn send(gateway: &Gateway, key: &str, model: &str, stream: bool) -> (u16, String) {
    let response = http()
        .post(gateway.url("/v1/chat/completions"))
        .bearer_auth(key)
        .json(&json!({
            "model": model,
            "stream": stream,
            "messages": [{"role": "user", "content": format!("my key is {key}, keep it safe")}],
        }))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body = tokio::time::timeout(Duration::from_secs(10), response.text())
        .await
        .unwrap()
        .unwrap();
    (status, body)
}

/// Which of `secrets` `text` holds.
fn leaked<'a>(text: &str, secrets: &[&'a str]) -> Vec<&'a str> {
    secrets
        .iter()
        .copied()
        .filter(|s| text.contains(s))
        .collect()
}

#[tokio::test]
async fn keys_an_upstream_repeats_reach_neither_client_nor_log_nor_ledger() {
    let mock = MockLeaky::start().await;
    let dir = temp_dir("key-echo");
    let ledger = format!("sqlite://{}", dir.join("ledger.db").display());
    let gateway_key = create_key(&dir, &ledger);
    let config = dir.join("config.yaml");
    let yaml = Config::builder()
        .any_port()
        .auth_required()
        .ledger(&ledger)
        .provider(
            "oa",
            Provider::at("openai", &mock.base_url("openai"), OPENAI_KEY),
        )
        .provider(
            "an",
            Provider::at("anthropic", &mock.base_url("anthropic"), ANTHROPIC_KEY),
        )
        .provider(
            "ge",
            Provider::at("gemini", &mock.base_url("gemini"), GEMINI_KEY),
        )
        .to_yaml();
    std::fs::write(&config, yaml).unwrap();
    let mut gateway = Gateway::serve(&dir, &config).await;
    let secrets = [OPENAI_KEY, ANTHROPIC_KEY, GEMINI_KEY, gateway_key.as_str()];

    let cases = [
        (
            "oa",
            401,
            "Incorrect API key provided: [redacted]. You can find",
        ),
        (
            "an",
            401,
            "invalid x-api-key: [redacted] (request: my key is [redacted]",
        ),
        (
            "ge",
            400,
            "API key not valid: [redacted]. Please pass a valid API key.",
        ),
    ];
    for (provider, status, message) in cases {
        for stream in [false, true] {
            let model = format!("{provider}/reject");
            let (got, body) = send(&gateway, &gateway_key, &model, stream).await;
            assert_eq!(got, status, "{model} (stream: {stream}): {body}");
            assert_eq!(leaked(&body, &secrets), [] as [&str; 0], "{model}: {body}");
            let error: Value = serde_json::from_str(&body).unwrap();
            let text = error["error"]["message"].as_str().unwrap_or_default();
            assert!(text.starts_with(message), "{model}: {text}");
            assert!(error["error"]["type"].is_string(), "{body}");
        }
        let model = format!("{provider}/fail-midway");
        let (got, body) = send(&gateway, &gateway_key, &model, true).await;
        assert_eq!(got, 200, "{model}: {body}");
        assert_eq!(leaked(&body, &secrets), [] as [&str; 0], "{model}: {body}");
        assert!(
            body.contains("Hel"),
            "{model}: the text before the error: {body}"
        );
        let event = body
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .find(|data| data.contains(r#""error""#))
            .unwrap_or_else(|| panic!("{model}: no error event: {body}"));
        let event: Value = serde_json::from_str(event).unwrap();
        let text = event["error"]["message"].as_str().unwrap_or_default();
        assert!(text.contains("[redacted]"), "{model}: {text}");
    }
    // The upstreams did receive the provider keys: their answers really held them.
    let received = mock.keys.lock().await.clone();
    for key in [OPENAI_KEY, ANTHROPIC_KEY, GEMINI_KEY] {
        assert!(received.iter().any(|k| k == key), "{key} never sent");
    }

    // A reload that changes a key redacts the new one.
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, text.replace(OPENAI_KEY, RELOADED_KEY)).unwrap();
    gateway.signal(libc::SIGHUP);
    gateway
        .wait_for_line(|l| l.contains("config reloaded"), Duration::from_secs(20))
        .await;
    let (got, body) = send(&gateway, &gateway_key, "oa/reject", false).await;
    assert_eq!(got, 401, "{body}");
    assert!(mock.keys.lock().await.iter().any(|k| k == RELOADED_KEY));
    assert_eq!(leaked(&body, &[RELOADED_KEY]), [] as [&str; 0], "{body}");
    let secrets = [
        OPENAI_KEY,
        ANTHROPIC_KEY,
        GEMINI_KEY,
        RELOADED_KEY,
        gateway_key.as_str(),
    ];

    gateway.signal(libc::SIGTERM);
    let (exit, _) = gateway.wait_exit(Duration::from_secs(20)).await;
    assert!(exit.success(), "{exit}");
    let log = gateway.lines().join("\n");
    assert_eq!(leaked(&log, &secrets), [] as [&str; 0], "{log}");
    assert!(
        log.lines().any(|l| l.contains("request failed")
            && l.contains("Incorrect API key provided: [redacted]")),
        "the log still says what failed: {log}"
    );

    // Every file of the SQLite ledger (its WAL and its journal too), byte for byte.
    let mut stored = Vec::new();
    for path in common::files_under(&dir) {
        let relative = path
            .strip_prefix(&dir)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if relative.starts_with("ledger.db") {
            stored.extend(std::fs::read(&path).unwrap());
        }
    }
    let stored = String::from_utf8_lossy(&stored);
    assert_eq!(leaked(&stored, &secrets), [] as [&str; 0]);
    assert!(
        stored.contains("invalid_api_key:[redacted]"),
        "the records of the refused requests were stored"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
