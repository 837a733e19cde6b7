//! The operator's console in a real browser: the real binary with a SQLite ledger filled
//! through the gateway (two providers, several models, users and tags, streams, failures, and
//! hostile user ids and tags), then `tests/console/console.mjs` driving Debian's headless
//! Chromium with playwright-core (installed by `scripts/console-browser.sh`): sign-in, a wrong
//! key refused, the page's figures equal to the usage API's, the log narrowed by filters, one
//! request opened, charts drawn, a CSV export, no console error and no request to another
//! origin. Screenshots land in `target/console-screenshots/`. With an admin key,
//! `tests/console/keys.mjs` checks the Keys view against `GET /admin/keys` and creates, changes
//! (models, limits, MCP tool patterns) and revokes a key through it, then narrows a project's
//! request log to MCP tool calls (an MCP server over stdio, written with the official Python
//! SDK, which `scripts/sdk-clients.sh` installs).
//!
//! Also here, without a browser: the console's files and their headers.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::binary::{Gateway, temp_dir};
use common::http;
use common::mock_batches::MockBatches;
use common::mock_openai::MockOpenAi;
use serde_json::{Value, json};

const CHROMIUM: &str = "/usr/bin/chromium";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn wasmgate(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_wasmgate"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// Lines of the console's batch.
const BATCH_LINES: usize = 3;

/// Uploads `lines` lines for `batchy/gpt-4o` and submits their batch.
async fn batch(gateway: &Gateway, key: &str, lines: usize) {
    let text: String = (0..lines)
        .map(|i| {
            json!({"custom_id": format!("c{i}"), "method": "POST", "url": "/v1/chat/completions",
                   "body": {"model": "batchy/gpt-4o", "max_tokens": 50,
                            "messages": [{"role": "user", "content": "hello"}]}})
            .to_string()
                + "\n"
        })
        .collect();
    let form = reqwest::multipart::Form::new()
        .text("purpose", "batch")
        .part(
            "file",
            reqwest::multipart::Part::text(text).file_name("console.jsonl"),
        );
    let file: Value = http()
        .post(gateway.url("/v1/files"))
        .bearer_auth(key)
        .multipart(form)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let created = http()
        .post(gateway.url("/v1/batches"))
        .bearer_auth(key)
        .json(
            &json!({"input_file_id": file["id"], "endpoint": "/v1/chat/completions",
                      "completion_window": "24h"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 200, "{file}");
}

/// One chat request as `user` (an `extra.user` object), streamed or not; returns its status.
async fn chat(gateway: &Gateway, key: &str, model: &str, user: Value, stream: bool) -> u16 {
    let response = http()
        .post(gateway.url("/v1/chat/completions"))
        .bearer_auth(key)
        .json(&json!({
            "model": model,
            "stream": stream,
            "stream_options": {"include_usage": true},
            "messages": [{"role": "user", "content": "hello there"}],
            "extra": {"user": user},
        }))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    // Read to the end: a stream is recorded when it ends.
    let _ = response.bytes().await;
    status
}

/// Records of the project the ledger holds now (the request log, paged through).
async fn logged(gateway: &Gateway, key: &str) -> usize {
    let (mut n, mut cursor) = (0, Value::Null);
    for _ in 0..20 {
        let mut body = json!({"limit": 500});
        if !cursor.is_null() {
            body["cursor"] = cursor.clone();
        }
        let page: Value = http()
            .post(gateway.url("/usage/requests"))
            .bearer_auth(key)
            .json(&body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        n += page["data"].as_array().unwrap().len();
        cursor = page["next_cursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_in_a_real_browser_shows_what_the_usage_api_answers() {
    let browser_dir = repo().join("target/console-browser");
    assert!(
        browser_dir
            .join("node_modules/playwright-core/package.json")
            .exists(),
        "playwright-core is missing: run scripts/console-browser.sh (scripts/test.sh does)"
    );
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: apt-get install chromium (scripts/test.sh does)"
    );
    let mock = MockOpenAi::start().await;
    let batches = MockBatches::start().await;
    let dir = temp_dir("console");
    let db = dir.join("ledger.db");
    let ledger = format!("sqlite://{}", db.display());
    let config = format!(
        "server: {{ host: 127.0.0.1, port: 0 }}\n\
         auth: {{ required: true }}\n\
         plugins: {{ dir: {plugins}, cache_dir: {cache} }}\n\
         ledger: {{ url: '{ledger}' }}\n\
         providers:\n  openai:\n    plugin: openai\n    base_url: {base}\n    api_key: sk-test\n    \
         models: [gpt-4o-mini, gpt-4o, error-500, error-429]\n  \
         echo:\n    plugin: echo\n    models: [echo-1]\n  \
         batchy:\n    plugin: openai\n    base_url: {batches_url}\n    api_key: {batches_key}\n    \
         options: {{ batches: true }}\n    models: [gpt-4o]\n\
         guards:\n  - plugin: deny\n    name: no-falcon\n    apply: request\n    \
         scope: {{models: [echo-1]}}\n    options: {{phrases: [project falcon]}}\n\
         cache: {{ rules: [ {{ models: [gpt-4o-mini], enabled: true }} ] }}\n\
         batches: {{ poll_interval_ms: 100 }}\n",
        plugins = dir.join("plugins").display(),
        cache = common::plugin_cache_dir().display(),
        base = mock.base_url(),
        batches_url = batches.openai_url(),
        batches_key = common::mock_batches::API_KEY,
    );
    std::fs::write(dir.join("config.yaml"), config).unwrap();
    let key = wasmgate(
        &dir,
        &["keys", "create", "--project", "acme", "--ledger", &ledger],
    );
    let other = wasmgate(
        &dir,
        &["keys", "create", "--project", "other", "--ledger", &ledger],
    );
    let gateway = Gateway::serve(&dir, &dir.join("config.yaml")).await;

    // Traffic: what the page must show, and another project's, which it must not.
    let ada = json!({"id": "ada", "name": "Ada", "tags": ["research", "eu"]});
    let bob = json!({"id": "bob", "tags": ["support"]});
    // Hostile strings a client may send: markup, and cells a spreadsheet would run.
    let mallory = json!({"id": "<img src=x onerror=\"window.__pwned=1\">",
                         "tags": ["=HYPERLINK(\"http://evil.example\",\"x\")", "+1-2"]});
    let mut sent = 0;
    // Two requests the guard refuses, for the log's guard filter (first: the newest error
    // stays one an upstream answered).
    for _ in 0..2 {
        let response = http()
            .post(gateway.url("/v1/chat/completions"))
            .bearer_auth(&key)
            .json(&json!({"model": "echo-1",
                          "messages": [{"role": "user", "content": "Tell me about Project Falcon"}]}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400);
        sent += 1;
    }
    for (model, user, stream, n) in [
        ("gpt-4o-mini", &ada, false, 6),
        ("gpt-4o-mini", &bob, true, 4),
        ("gpt-4o", &ada, true, 3),
        ("echo-1", &bob, false, 3),
        ("echo-1", &mallory, true, 2),
        ("error-500", &ada, false, 2),
        ("error-429", &mallory, false, 1),
    ] {
        for _ in 0..n {
            chat(&gateway, &key, model, user.clone(), stream).await;
            sent += 1;
        }
    }
    for _ in 0..3 {
        chat(&gateway, &other, "gpt-4o", bob.clone(), false).await;
    }
    // A batch of three lines, metered by the poller once it ends: shown as batch spend.
    batch(&gateway, &key, BATCH_LINES).await;
    sent += BATCH_LINES;
    let deadline = Instant::now() + Duration::from_secs(20);
    while logged(&gateway, &key).await < sent {
        assert!(Instant::now() < deadline, "the ledger never held {sent}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let shots = repo().join("target/console-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let out = tokio::task::spawn_blocking({
        let (url, key) = (gateway.url(""), key.clone());
        move || {
            Command::new("node")
                .arg(repo().join("tests/console/console.mjs"))
                .env("CONSOLE_URL", url)
                .env("CONSOLE_KEY", key)
                .env("CONSOLE_REQUESTS", sent.to_string())
                .env("CONSOLE_BATCH_LINES", BATCH_LINES.to_string())
                .env("CONSOLE_SCREENSHOTS", shots)
                .env("CONSOLE_CHROMIUM", CHROMIUM)
                .env("CONSOLE_PLAYWRIGHT", browser_dir)
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the browser checks failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("console: all checks passed"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_shows_an_admin_every_projects_keys_and_manages_them() {
    let browser_dir = repo().join("target/console-browser");
    assert!(
        browser_dir
            .join("node_modules/playwright-core/package.json")
            .exists(),
        "playwright-core is missing: run scripts/console-browser.sh (scripts/test.sh does)"
    );
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: apt-get install chromium (scripts/test.sh does)"
    );
    let dir = temp_dir("console-keys");
    let ledger = format!("sqlite://{}", dir.join("ledger.db").display());
    let config = format!(
        "server: {{ host: 127.0.0.1, port: 0 }}\n\
         auth: {{ required: true }}\n\
         plugins: {{ dir: {plugins}, cache_dir: {cache} }}\n\
         ledger: {{ url: '{ledger}' }}\n\
         providers:\n  echo:\n    plugin: echo\n    models: [echo-1]\n\
         mcp:\n  servers:\n    files:\n      transport: stdio\n      command: {python}\n      \
         args: ['{stdio}']\n      timeout_ms: 10000\n",
        plugins = dir.join("plugins").display(),
        cache = common::plugin_cache_dir().display(),
        python = common::mcp::python().display(),
        stdio = common::mcp::script("stdio_server.py").display(),
    );
    std::fs::write(dir.join("config.yaml"), config).unwrap();
    let key = wasmgate(
        &dir,
        &["keys", "create", "--project", "acme", "--ledger", &ledger],
    );
    // A hostile name, shown to the admin as text.
    wasmgate(
        &dir,
        &[
            "keys",
            "create",
            "--project",
            "other",
            "--name",
            "<img src=x onerror=\"window.__pwned=1\">",
            "--models",
            "echo/*",
            "--budget",
            "3",
            "--ledger",
            &ledger,
        ],
    );
    let admin_key = wasmgate(
        &dir,
        &["admin-key", "create", "--name", "ops", "--ledger", &ledger],
    );
    assert!(admin_key.starts_with("wgadm_"), "{admin_key}");
    let gateway = Gateway::serve(&dir, &dir.join("config.yaml")).await;
    // The project's traffic: a chat request and two tool calls, for the log's MCP filter.
    assert_eq!(
        chat(&gateway, &key, "echo-1", json!({"id": "ada"}), false).await,
        200
    );
    tool_calls(&gateway, &key, &["add", "pid"]).await;

    let shots = repo().join("target/console-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let out = tokio::task::spawn_blocking({
        let url = gateway.url("");
        move || {
            Command::new("node")
                .arg(repo().join("tests/console/keys.mjs"))
                .env("CONSOLE_URL", url)
                .env("CONSOLE_ADMIN_KEY", admin_key)
                .env("CONSOLE_KEY", key)
                .env("CONSOLE_SCREENSHOTS", shots)
                .env("CONSOLE_CHROMIUM", CHROMIUM)
                .env("CONSOLE_PLAYWRIGHT", browser_dir)
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the browser checks failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("keys: all checks passed"), "{stdout}");
    drop(gateway);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Calls each of the stdio server's `tools` once through `/mcp` with `key` (waiting for the
/// server, which the gateway starts in the background, to be up).
async fn tool_calls(gateway: &Gateway, key: &str, tools: &[&str]) {
    let post = |body: Value, session: Option<String>| {
        let mut request = http()
            .post(gateway.url("/mcp"))
            .bearer_auth(key)
            .header("accept", "application/json, text/event-stream")
            .json(&body);
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        async move {
            let response = request.send().await.unwrap();
            let session = response
                .headers()
                .get("mcp-session-id")
                .map(|v| v.to_str().unwrap().to_owned());
            (session, response.json::<Value>().await.unwrap())
        }
    };
    let (session, _) = post(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "console-test", "version": "1"}}}),
        None,
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, listed) = post(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            session.clone(),
        )
        .await;
        if listed["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty())
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the stdio MCP server never came up"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for (i, tool) in tools.iter().enumerate() {
        let arguments = if *tool == "add" {
            json!({"a": 1, "b": 2})
        } else {
            json!({})
        };
        let (_, called) = post(
            json!({"jsonrpc": "2.0", "id": i + 2, "method": "tools/call",
                   "params": {"name": format!("files_{tool}"), "arguments": arguments}}),
            session.clone(),
        )
        .await;
        assert!(called["result"].is_object(), "{called}");
    }
}

/// The console's files: the right content types, a strict CSP, nosniff, an ETag that a
/// revalidation answers with 304, `/ui` sent to `/ui/`, and an unknown file a 404.
#[tokio::test]
async fn the_console_files_are_served_with_strict_headers() {
    let gateway = common::gateway::Gateway::echo()
        .auth_required()
        .start()
        .await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let moved = client.get(gateway.url("/ui")).send().await.unwrap();
    assert_eq!(moved.status(), 308);
    assert_eq!(moved.headers()["location"], "/ui/");
    for (path, content_type) in [
        ("/ui/", "text/html; charset=utf-8"),
        ("/ui/app.js", "text/javascript; charset=utf-8"),
        ("/ui/app.css", "text/css; charset=utf-8"),
        (
            "/ui/vendor/uPlot.iife.min.js",
            "text/javascript; charset=utf-8",
        ),
        ("/ui/icon.svg", "image/svg+xml"),
    ] {
        let response = client.get(gateway.url(path)).send().await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
        let headers = response.headers().clone();
        assert_eq!(headers["content-type"], content_type, "{path}");
        assert_eq!(headers["x-content-type-options"], "nosniff");
        let csp = headers["content-security-policy"].to_str().unwrap();
        assert!(csp.starts_with("default-src 'self'"), "{csp}");
        assert!(!csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"));
        assert!(csp.contains("frame-ancestors 'none'"));
        let etag = headers["etag"].clone();
        assert!(!response.bytes().await.unwrap().is_empty());
        let again = client
            .get(gateway.url(path))
            .header("if-none-match", etag.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(again.status(), 304, "{path}");
        assert_eq!(again.headers()["etag"], etag);
        assert!(again.bytes().await.unwrap().is_empty());
    }
    // The page holds no inline script or style for the CSP to refuse.
    let index = client
        .get(gateway.url("/ui/"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!index.contains("<script>") && !index.contains("style="));
    assert!(!index.contains("http://") && !index.contains("https://"));
    let missing = client
        .get(gateway.url("/ui/../Cargo.toml"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    let missing = client.get(gateway.url("/ui/nope.js")).send().await.unwrap();
    assert_eq!(missing.status(), 404);
    gateway.stop().await;
}

/// Sign-in through the identity provider in a real browser (`tests/console/oidc.mjs`): the
/// local provider of `common::oidc` signs an admin in, the page creates a key with the session
/// and finds it in the Audit view under the OIDC subject, beside an admin key's change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_signs_in_through_the_identity_provider_and_shows_the_audit_log() {
    let browser_dir = repo().join("target/console-browser");
    assert!(
        browser_dir
            .join("node_modules/playwright-core/package.json")
            .exists(),
        "playwright-core is missing: run scripts/console-browser.sh (scripts/test.sh does)"
    );
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: apt-get install chromium (scripts/test.sh does)"
    );
    let idp = common::oidc::Provider::start("http://gateway.test/console/callback").await;
    idp.sign_in_as("ana", &["ops"]);
    let dir = temp_dir("console-oidc");
    let gateway = common::gateway::Gateway::echo()
        .ledger(&format!("sqlite://{}", dir.join("ledger.db").display()))
        .yaml(&idp.console_yaml())
        .start()
        .await;
    let (admin_key, stored) = wasmgate::auth::generate_admin(Some("automation"), 0);
    let store = gateway.state.ledger.store();
    tokio::task::spawn_blocking(move || store.insert_admin_key(&stored))
        .await
        .unwrap()
        .unwrap();
    let made = http()
        .post(gateway.url("/admin/keys"))
        .bearer_auth(&admin_key)
        .json(&json!({"project": "acme"}))
        .send()
        .await
        .unwrap();
    assert_eq!(made.status(), 201);

    let shots = repo().join("target/console-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let resolve = format!("MAP gateway.test 127.0.0.1:{}", gateway.addr.port());
    let out = tokio::task::spawn_blocking({
        let issuer = idp.issuer.clone();
        move || {
            Command::new("node")
                .arg(repo().join("tests/console/oidc.mjs"))
                .env("CONSOLE_URL", "http://gateway.test")
                .env("CONSOLE_RESOLVE", resolve)
                .env("CONSOLE_IDP", issuer)
                .env("CONSOLE_SUBJECT", "ana")
                .env("CONSOLE_SCREENSHOTS", shots)
                .env("CONSOLE_CHROMIUM", CHROMIUM)
                .env("CONSOLE_PLAYWRIGHT", browser_dir)
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the browser checks failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("oidc: all checks passed"), "{stdout}");
    assert_eq!(idp.exchanged(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}
