//! Codex end to end with WebSocket mode on (issue 36): Codex 0.171.0 (pinned in
//! `scripts/sdk-clients.sh`) runs non-interactively (`codex exec`) against a gateway whose
//! `openai` entry is the strict Responses mock, through a custom provider with
//! `supports_websockets = true`, so that its turns go over `GET /v1/responses` upgraded. The
//! test watches the gateway's open sessions while Codex runs, and asserts that Codex completed
//! with the mock's answer and that the turn was recorded.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use common::gateway::{Gateway, Upstreams};
use common::{TestGateway, http};
use serde_json::Value;

/// A reasoning model of the mock: Codex asks for reasoning.
const GPT: &str = "gpt-5-codex";

fn codex() -> PathBuf {
    common::sdk::installed(
        common::sdk::root().join("target/sdk-clients/js/node_modules/.bin/codex"),
    )
}

/// Runs `codex exec prompt` in `dir` against `gateway` with `key`, WebSocket mode as
/// `websockets` says; its output (stdout, stderr).
async fn run_codex(
    dir: &Path,
    gateway: &TestGateway,
    key: &str,
    websockets: bool,
) -> (String, String) {
    let home = dir.join("codex-home");
    std::fs::create_dir_all(&home).unwrap();
    let config = format!(
        "model = \"openai/{GPT}\"\nmodel_provider = \"wasmgate\"\n\n[model_providers.wasmgate]\n\
         name = \"wasmgate\"\nbase_url = \"{}\"\nenv_key = \"WASMGATE_API_KEY\"\n\
         wire_api = \"responses\"\nsupports_websockets = {websockets}\n",
        gateway.url("/v1")
    );
    std::fs::write(home.join("config.toml"), config).unwrap();
    let mut command = std::process::Command::new(codex());
    command
        .args(["exec", "--skip-git-repo-check", "Say hello."])
        .current_dir(dir)
        // Only what it needs: the gateway, its key, and nothing else to call home to.
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("CODEX_HOME", &home)
        .env("WASMGATE_API_KEY", key)
        .env("RUST_LOG", "warn")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = command.spawn().expect("codex starts");
    let output = common::sdk::bounded(child, "Codex").await;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "codex failed: {stdout}\n{stderr}");
    (stdout, stderr)
}

/// The most sessions `/health` reported open while `run` ran (polled every 20 ms).
async fn most_sessions<T>(
    gateway: &TestGateway,
    run: impl std::future::Future<Output = T>,
) -> (T, u64) {
    let most = Arc::new(AtomicU64::new(0));
    let url = gateway.url("/health");
    let seen = Arc::clone(&most);
    let watch = tokio::spawn(async move {
        loop {
            if let Ok(response) = http().get(&url).send().await
                && let Ok(health) = response.json::<Value>().await
            {
                let open = health["websocket_sessions"].as_u64().unwrap_or(0);
                seen.fetch_max(open, Ordering::SeqCst);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    let out = run.await;
    watch.abort();
    (out, most.load(Ordering::SeqCst))
}

#[tokio::test]
async fn codex_runs_with_websocket_mode_through_the_gateway() {
    let dir = std::env::temp_dir().join(format!("wasmgate-codex-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mocks = Upstreams::start().await;
    let gateway = Gateway::builder()
        .auth_required()
        .provider(
            "openai",
            mocks.openai([GPT]).options("{ responses: native }"),
        )
        .start()
        .await;
    let key = gateway.api_key("codex").await;

    let ((stdout, stderr), sessions) =
        most_sessions(&gateway, run_codex(&dir, &gateway, &key, true)).await;
    assert!(sessions >= 1, "Codex never opened a socket: {stderr}");
    assert!(
        stdout.contains("Hello from the mock Responses API!"),
        "{stdout}\n{stderr}"
    );
    // Its turns went over the socket: no turn failed, and none had to be resent whole because
    // the response it named was not found (Codex sends `store: false` and only its new input).
    assert!(!stderr.contains("Previous response"), "{stderr}");
    let records = crate::responses_ws::records(&gateway, &key, 2).await;
    let turns: Vec<&Value> = (records.iter())
        .filter(|r| r["operation"] == "responses")
        .collect();
    assert!(turns.len() >= 2, "{records:?}");
    assert!(turns.iter().all(|r| r["status"] == 200), "{records:?}");
    let sent: Vec<Value> = (mocks.openai.requests().await.into_iter())
        .filter(|r| r.path == "/v1/responses")
        .map(|r| r.body)
        .collect();
    let last = sent.last().unwrap();
    let input = last["input"].as_array().unwrap();
    assert!(
        input.iter().any(|item| item["type"] == "function_call")
            && input
                .iter()
                .any(|item| item["type"] == "function_call_output"),
        "the context of the turn before, then its output: {last}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
