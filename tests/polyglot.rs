//! Plugins written in Python and JavaScript, built from `examples/plugins/` and
//! `tests/polyglot/` by `scripts/polyglot.sh` (pinned componentize-py and componentize-js) into
//! `target/polyglot/plugins/`, loaded by the gateway and driven with real clients.
//!
//! These tests fail, not skip, when the components are missing: run `scripts/polyglot.sh`
//! (`scripts/test.sh` does) first.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use async_openai::types::chat::CreateChatCompletionRequestArgs;
use common::js_guard::{build_js_guard, js_guarded, say};
use common::mock_openai::{MockOpenAi, REPLY};
use common::{TestGateway, http, plugin_cache_dir};
use serde_json::{Value, json};

pub(crate) fn polyglot_plugins() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/polyglot/plugins");
    for name in [
        "py-router",
        "js-limiter",
        "py-provider",
        "js-provider",
        "py-faults",
        "js-faults",
    ] {
        let path = dir.join(format!("{name}.wasm"));
        assert!(
            path.exists(),
            "{} is missing: run scripts/polyglot.sh to build the Python and JavaScript plugins",
            path.display()
        );
    }
    dir
}

/// Two echo providers (`a`, `b`) and whatever `rest` adds, with the polyglot plugins.
fn config(rest: &str) -> String {
    format!(
        r#"
plugins: {{ dir: "{dir}", cache_dir: "{cache}", max_instances: 64 }}
providers:
  a: {{ plugin: echo, models: [m] }}
  b: {{ plugin: echo, models: [m] }}
{rest}
"#,
        dir = polyglot_plugins().display(),
        cache = plugin_cache_dir().display(),
    )
}

struct Answer {
    status: u16,
    provider: String,
    body: Value,
}

async fn ask(gateway: &TestGateway, model: &str, extra: Value) -> Answer {
    let response = http()
        .post(gateway.url("/v1/chat/completions"))
        .json(&json!({"model": model, "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}], "extra": extra}))
        .send()
        .await
        .unwrap();
    let provider = response
        .headers()
        .get("x-wasmgate-provider")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let status = response.status().as_u16();
    let body = response.json().await.unwrap();
    Answer {
        status,
        provider,
        body,
    }
}

#[tokio::test]
async fn the_python_router_routes_by_user_tags_and_latency() {
    let gateway = TestGateway::start(&config(
        r#"
routing:
  smart:
    policy: py-router
    targets: [a/m, b/m]
    options: { rules: [{ tags: [premium], targets: [b/m], from_hour: 0, to_hour: 24 }] }
"#,
    ))
    .await;
    let premium = ask(
        &gateway,
        "smart",
        json!({"user": {"id": "u1", "tags": ["premium"]}}),
    )
    .await;
    assert_eq!(
        (premium.status, premium.provider.as_str()),
        (200, "b"),
        "{}",
        premium.body
    );
    // Unmeasured targets come first, in config order, so that they get measured.
    let other = ask(
        &gateway,
        "smart",
        json!({"user": {"id": "u2", "tags": ["free"]}}),
    )
    .await;
    assert_eq!(
        (other.status, other.provider.as_str()),
        (200, "a"),
        "{}",
        other.body
    );
}

#[tokio::test]
async fn the_python_router_refuses_a_rule_naming_no_target() {
    let refused = TestGateway::try_start(&config(
        r#"
routing:
  smart:
    policy: py-router
    targets: [a/m]
    options: { rules: [{ tags: [x], targets: [nope/m] }] }
"#,
    ))
    .await;
    let message = format!("{:#}", refused.err().expect("the config should be refused"));
    assert!(message.contains("rules[0].targets"), "{message}");
}

#[tokio::test]
async fn the_javascript_limiter_keeps_a_daily_token_quota_per_user() {
    let gateway = TestGateway::start(&config(
        r#"
limits:
  rules:
    - { policy: js-limiter, scope: user, options: { daily_tokens: 60 } }
"#,
    ))
    .await;
    // Each request reserves its prompt (about 8 tokens) and its 10-token cap, then settles to
    // what echo used: 3 requests fit in 60 tokens, whatever the exact count.
    let mut statuses = Vec::new();
    for _ in 0..8 {
        statuses.push(ask(&gateway, "a/m", json!({"user": {"id": "alice"}})).await);
    }
    let first_refusal = statuses
        .iter()
        .position(|a| a.status == 429)
        .expect("alice is never refused");
    assert!(first_refusal >= 2, "refused too early: {first_refusal}");
    let refused = &statuses[first_refusal];
    assert_eq!(
        refused.body["error"]["code"], "insufficient_quota",
        "{}",
        refused.body
    );
    let message = refused.body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("of your 60 tokens for today") && message.contains("midnight UTC"),
        "{message}"
    );
    assert!(statuses[first_refusal..].iter().all(|a| a.status == 429));
    let bob = ask(&gateway, "a/m", json!({"user": {"id": "bob"}})).await;
    assert_eq!(bob.status, 200, "{}", bob.body);
}

#[tokio::test]
async fn the_python_provider_speaks_to_an_openai_compatible_host() {
    let mock = MockOpenAi::start().await;
    let gateway = TestGateway::start(&config(&format!(
        r#"
  local:
    plugin: py-provider
    base_url: {}
    api_key: sk-upstream-secret
    models: [gpt-4o-mini, error-429]
    options: {{ headers: {{ x-org: o1 }} }}
"#,
        mock.base_url()
    )))
    .await;
    let client = gateway.openai();
    let request = CreateChatCompletionRequestArgs::default()
        .model("local/gpt-4o-mini")
        .messages(vec![
            async_openai::types::chat::ChatCompletionRequestUserMessage::from("hi").into(),
        ])
        .build()
        .unwrap();
    let response = client.chat().create(request).await.unwrap();
    assert_eq!(response.choices[0].message.content.as_deref(), Some(REPLY));
    assert_eq!(response.usage.unwrap().completion_tokens, 7);
    let seen = mock.last_request().await;
    assert_eq!(seen.path, "/v1/chat/completions");
    assert_eq!(seen.headers["authorization"], "Bearer sk-upstream-secret");
    assert_eq!(seen.headers["x-org"], "o1");

    // A stream passes through the SDK's SSE decoder.
    let streamed = http()
        .post(gateway.url("/v1/chat/completions"))
        .json(&json!({"model": "local/gpt-4o-mini", "stream": true, "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(streamed.status(), 200);
    let text = streamed.text().await.unwrap();
    assert!(text.trim_end().ends_with("data: [DONE]"), "{text}");
    assert!(text.matches("data: ").count() >= 3, "{text}");

    // An upstream error becomes OpenAI's error with the upstream's status.
    let failed = ask(&gateway, "local/error-429", json!({})).await;
    assert_eq!(failed.status, 429, "{}", failed.body);
    assert_eq!(
        failed.body["error"]["code"], "rate_limit_exceeded",
        "{}",
        failed.body
    );
}

/// A trap, an endless loop and a memory grab in a router fail only the request that caused
/// them: requests sent alongside and after them are served.
async fn faults_fail_only_their_own_request(policy: &str) {
    let gateway = TestGateway::start(&config(&format!(
        "routing:\n  faulty: {{ policy: {policy}, targets: [a/m, b/m] }}\n"
    )))
    .await;
    for fault in ["trap", "loop", "grab"] {
        let bad = ask(&gateway, "faulty", json!({"metadata": {"fault": fault}}));
        let good = ask(&gateway, "faulty", json!({"metadata": {"fault": "none"}}));
        let (bad, good) = tokio::join!(bad, good);
        assert!(bad.status >= 500, "{fault}: {} {}", bad.status, bad.body);
        assert_eq!(good.status, 200, "{fault}: {}", good.body);
        let after = ask(&gateway, "faulty", json!({})).await;
        assert_eq!(after.status, 200, "after {fault}: {}", after.body);
    }
}

#[tokio::test]
async fn python_faults_fail_only_their_own_request() {
    faults_fail_only_their_own_request("py-faults").await;
}

#[tokio::test]
async fn javascript_faults_fail_only_their_own_request() {
    faults_fail_only_their_own_request("js-faults").await;
}

#[tokio::test]
async fn a_rebuilt_python_router_is_picked_up_without_a_restart() {
    let dir = common::binary::temp_dir("polyglot-reload");
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let built = polyglot_plugins();
    // First `mine` is the fault router (config order: a first), then the tag router.
    std::fs::copy(built.join("py-faults.wasm"), plugins.join("mine.wasm")).unwrap();
    let config = dir.join("config.yaml");
    std::fs::write(
        &config,
        format!(
            r#"
server: {{ host: 127.0.0.1, port: 0 }}
plugins: {{ dir: ./plugins, cache_dir: "{cache}" }}
ledger: {{ url: "sqlite::memory:" }}
providers:
  a: {{ plugin: echo, models: [m] }}
  b: {{ plugin: echo, models: [m] }}
routing:
  smart:
    policy: mine
    targets: [a/m, b/m]
    options: {{}}
"#,
            cache = plugin_cache_dir().display()
        ),
    )
    .unwrap();
    let mut gateway = common::binary::Gateway::serve(&dir, &config).await;
    let provider = async |gateway: &common::binary::Gateway| {
        let response = http()
            .post(gateway.url("/v1/chat/completions"))
            .json(&json!({"model": "smart", "messages": [{"role": "user", "content": "hi"}], "extra": {"user": {"tags": ["premium"]}}}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        response.headers()["x-wasmgate-provider"]
            .to_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(provider(&gateway).await, "a");
    // `wasmgate plugin build` moves a finished file into place the same way.
    let partial = plugins.join(".mine.wasm.partial");
    std::fs::copy(built.join("py-router.wasm"), &partial).unwrap();
    std::fs::write(
        &config,
        std::fs::read_to_string(&config).unwrap().replace(
            "options: {}",
            "options: { rules: [{ tags: [premium], targets: [b/m] }] }",
        ),
    )
    .unwrap();
    std::fs::rename(&partial, plugins.join("mine.wasm")).unwrap();
    gateway
        .wait_for_line(|l| l.contains("config reloaded"), Duration::from_secs(60))
        .await;
    assert_eq!(provider(&gateway).await, "b");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `wasmgate plugin new --lang rust` writes, for each kind, a project that `plugin build` turns
/// into a component against the current contract (the provider template once stopped compiling
/// when the contract's operations grew, and nothing built it).
#[test]
fn new_rust_projects_build_into_components() {
    let dir = common::binary::temp_dir("rust-new");
    let wasmgate = env!("CARGO_BIN_EXE_wasmgate");
    for kind in ["router", "limiter", "provider", "guard", "cache-key"] {
        let name = format!("my-rust-{kind}");
        let created = std::process::Command::new(wasmgate)
            .args(["plugin", "new", kind, &name, "--lang", "rust", "--dir"])
            .arg(&dir)
            .output()
            .unwrap();
        assert!(
            created.status.success(),
            "{}",
            String::from_utf8_lossy(&created.stderr)
        );
        let built = std::process::Command::new(wasmgate)
            .args(["plugin", "build"])
            .arg(dir.join(&name))
            .arg("--out")
            .arg(dir.join("out"))
            // One build of the SDK for the projects.
            .env("CARGO_TARGET_DIR", dir.join("target"))
            .output()
            .unwrap();
        assert!(
            built.status.success(),
            "{kind}: {}",
            String::from_utf8_lossy(&built.stderr)
        );
        let wasm = dir.join("out").join(format!("{name}.wasm"));
        let bytes = std::fs::read(&wasm).unwrap();
        // A component, not a core module: the layer field of the preamble is 1.
        assert_eq!(&bytes[..4], b"\0asm", "{}", wasm.display());
        assert_eq!(bytes[6..8], [1, 0], "{} is not a component", wasm.display());
    }
    // The projects' shared target directory holds 170 MB: left behind by every run, it
    // once helped fill the disk.
    let _ = std::fs::remove_dir_all(&dir);
}

/// `wasmgate plugin new` writes, for each kind in Python and JavaScript, a project whose own unit
/// test passes under `wasmgate plugin test` (with the toolchains `scripts/polyglot.sh` installed).
#[test]
fn new_python_and_javascript_projects_pass_their_own_tests() {
    let tools = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/polyglot");
    assert!(
        tools.join("py/venv/bin/componentize-py").exists()
            && tools.join("js/node_modules").exists(),
        "the toolchains are missing: run scripts/polyglot.sh"
    );
    let dir = common::binary::temp_dir("polyglot-new");
    let wasmgate = env!("CARGO_BIN_EXE_wasmgate");
    for lang in ["python", "js"] {
        for kind in ["router", "limiter", "provider", "guard", "cache-key"] {
            let name = format!("my-{lang}-{kind}");
            let created = std::process::Command::new(wasmgate)
                .args(["plugin", "new", kind, &name, "--lang", lang, "--dir"])
                .arg(&dir)
                .output()
                .unwrap();
            assert!(
                created.status.success(),
                "{}",
                String::from_utf8_lossy(&created.stderr)
            );
            let tested = std::process::Command::new(wasmgate)
                .args(["plugin", "test"])
                .arg(dir.join(&name))
                .env("WASMGATE_PYTHON_TOOLCHAIN", tools.join("py/venv"))
                .env("WASMGATE_JS_TOOLCHAIN", tools.join("js"))
                .output()
                .unwrap();
            assert!(
                tested.status.success(),
                "{name}: {}{}",
                String::from_utf8_lossy(&tested.stdout),
                String::from_utf8_lossy(&tested.stderr)
            );
        }
    }
    let again = std::process::Command::new(wasmgate)
        .args(["plugin", "new", "router", "my-python-router", "--dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        !again.status.success(),
        "an existing project is not overwritten"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The JavaScript guard `plugin new guard --lang js` writes, built by `plugin build` and loaded
/// from `plugins.dir`: it refuses a request naming its word, and its answer guard (the exported
/// `answer-guard` resource, a class componentize-js must find by its WIT name) stops an answer
/// that names it, while everything else passes unchanged.
#[tokio::test]
async fn a_javascript_guard_built_from_the_template_refuses_and_stops_in_the_gateway() {
    let dir = common::binary::temp_dir("js-guard");
    let plugins = build_js_guard(&dir, "js-words", None);
    let gateway = js_guarded(
        &plugins,
        "  - plugin: js-words\n    options: { words: [Falcon] }\n",
    )
    .await;

    let passed = say(&gateway, "a/m", "hello there", false).await;
    assert_eq!(passed.status(), 200);
    let body: Value = passed.json().await.unwrap();
    assert!(
        body["choices"][0]["message"]["content"]
            .as_str()
            .unwrap()
            .contains("hello there"),
        "{body}"
    );

    let refused = say(&gateway, "a/m", "tell me about the FALCON", false).await;
    assert_eq!(refused.status(), 400);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "guard_refused", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("this topic is not allowed here"),
        "{body}"
    );

    // Another route's body: the refusal says where the word stood (`request_origin`).
    let embeddings = http()
        .post(gateway.url("/v1/embeddings"))
        .json(&json!({"model": "a/m", "input": ["fine", "the falcon"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(embeddings.status(), 400);
    let body: Value = embeddings.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("(embeddings, at /input/1)"),
        "{body}"
    );

    let stopped = say(&gateway, "b/m", "hello there", false).await;
    let status = stopped.status().as_u16();
    let body = stopped.text().await.unwrap();
    assert_ne!(status, 200, "{body}");
    assert!(body.contains("answer_stopped"), "{body}");
    assert!(!body.to_lowercase().contains("falcon flies"), "{body}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A gateway with [`config`]'s echo providers, a third (`c`) whose answer is always `reply` in
/// 3-character deltas, and `guards` (the items of a `guards:` list).
async fn guarded(reply: &str, guards: &str) -> TestGateway {
    TestGateway::start(&config(&format!(
        "  c: {{ plugin: echo, models: [m], options: {{ reply: \"{reply}\", chunk_size: 3 }} }}\nguards:\n{guards}"
    )))
    .await
}

/// The text of a streamed chat answer: its choice 0 deltas' content, joined.
fn streamed_text(body: &str) -> String {
    body.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter(|data| *data != "[DONE]")
        .map(|data| serde_json::from_str::<Value>(data).unwrap())
        .filter_map(|c| {
            c.pointer("/choices/0/delta/content")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .collect()
}

/// The Python example guard (`examples/plugins/py-guard`, built by `scripts/polyglot.sh`): a
/// request naming an internal host is refused before it leaves; an answer's internal host names
/// are masked, whole or streamed in 3-character deltas that split the name, and nothing else in
/// the answer changes.
#[tokio::test]
async fn the_python_example_guard_masks_internal_hosts_streamed_and_whole() {
    assert!(
        polyglot_plugins().join("py-guard.wasm").exists(),
        "py-guard.wasm is missing: run scripts/polyglot.sh"
    );
    let gateway = guarded(
        "Ask db1.corp.example or example.com.",
        "  - { plugin: py-guard, options: { domains: [corp.example] } }\n",
    )
    .await;
    const MASKED: &str = "Ask [internal host] or example.com.";

    let refused = say(&gateway, "a/m", "Why is DB1.Corp.Example slow?", false).await;
    assert_eq!(refused.status(), 400);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "guard_refused", "{body}");

    let whole: Value = say(&gateway, "c/m", "hello", false)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(whole["choices"][0]["message"]["content"], MASKED, "{whole}");

    let streamed = say(&gateway, "c/m", "hello", true).await;
    assert_eq!(streamed.status(), 200);
    let body = streamed.text().await.unwrap();
    assert_eq!(streamed_text(&body), MASKED, "{body}");
    assert!(body.contains("[DONE]"), "{body}");
}

/// The JavaScript example guard (`examples/plugins/js-guard`, built by `scripts/polyglot.sh`):
/// ticket keys in a request are rewritten before it leaves (the echo upstream answers with what
/// it was sent), and an answer's keys are masked, streamed in 3-character deltas that split them.
#[tokio::test]
async fn the_javascript_example_guard_rewrites_requests_and_masks_streamed_answers() {
    assert!(
        polyglot_plugins().join("js-guard.wasm").exists(),
        "js-guard.wasm is missing: run scripts/polyglot.sh"
    );
    // On requests to `a` alone, so that its echoed answer shows what the upstream was sent.
    let gateway = guarded(
        "See OPS-1234 today.",
        "  - { plugin: js-guard, name: tickets-in, apply: request, scope: { models: [a/m] }, options: { projects: [OPS] } }
  - { plugin: js-guard, name: tickets-out, apply: answer, scope: { models: [c/m] }, options: { projects: [OPS] } }
",
    )
    .await;

    let echoed: Value = say(&gateway, "a/m", "Is OPS-1234 fixed?", false)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        echoed["choices"][0]["message"]["content"], "Is [ticket] fixed?",
        "the upstream saw the rewritten request: {echoed}"
    );

    let body = say(&gateway, "c/m", "hello", true)
        .await
        .text()
        .await
        .unwrap();
    assert_eq!(streamed_text(&body), "See [ticket] today.", "{body}");
}
