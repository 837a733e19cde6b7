//! The cache-key policy plugin end to end: the Python example (`examples/plugins/py-cache-key`,
//! built by `scripts/polyglot.sh`) keys Claude Code's turns without their `<system-reminder>`
//! blocks, so two Messages requests that differ only in a reminder hit with it and miss without
//! it; a plugin that traps, loops or answers nonsense makes its request a bypass, never an error.

use crate::common;

use std::path::{Path, PathBuf};

use common::mock_openai::MockOpenAi;
use common::{TestGateway, plugin_cache_dir};
use serde_json::{Value, json};

use super::cache::{calls, post};

fn plugins() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/polyglot/plugins");
    for name in ["py-cache-key", "py-cache-faults"] {
        let path = dir.join(format!("{name}.wasm"));
        assert!(
            path.exists(),
            "{} is missing: run scripts/polyglot.sh",
            path.display()
        );
    }
    dir
}

/// The mock's `openai` entry (models `gpt-4o-mini` and the faults' names), the cache on, and
/// `key_plugin` as its plugin entry (none when empty).
async fn start(key_plugin: &str) -> (MockOpenAi, TestGateway) {
    let mock = MockOpenAi::start().await;
    let key_plugin = match key_plugin {
        "" => String::new(),
        entry => format!("\n  key_plugin: {entry}"),
    };
    let yaml = format!(
        r#"
auth: {{ required: true }}
plugins: {{ dir: "{dir}", cache_dir: "{cache}" }}
providers:
  openai:
    plugin: openai
    base_url: {base}
    api_key: sk-upstream-secret
    models: [gpt-4o-mini, trap, loop, nonsense]
cache:
  enabled: true{key_plugin}
"#,
        dir = plugins().display(),
        cache = plugin_cache_dir().display(),
        base = mock.base_url(),
    );
    (mock, TestGateway::start(&yaml).await)
}

/// A Claude Code turn as it sends it (Messages, text blocks, a reminder before the prompt).
fn turn(date: &str, model: &str) -> Value {
    json!({
        "model": model,
        "max_tokens": 1024,
        "system": [{"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."}],
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": format!("<system-reminder>\nToday's date is {date}.\n</system-reminder>\n")},
            {"type": "text", "text": "Run the tests and fix what fails."},
        ]}],
        "metadata": {"user_id": "user_abc_account__session_1"},
    })
}

const MESSAGES: &str = "/v1/messages";
const UPSTREAM: &str = "/v1/chat/completions";

#[tokio::test]
async fn turns_differing_only_in_a_reminder_hit_with_the_python_plugin_and_miss_without() {
    let (mock, gateway) = start("").await;
    let key = gateway.api_key("p").await;
    let model = "openai/gpt-4o-mini";
    let first = post(&gateway, MESSAGES, &key, &turn("2026-11-26", model), &[]).await;
    assert_eq!(
        (first.status, first.cache()),
        (200, "miss"),
        "{}",
        first.body
    );
    let second = post(&gateway, MESSAGES, &key, &turn("2026-11-27", model), &[]).await;
    assert_eq!(
        second.cache(),
        "miss",
        "without the plugin the reminder is in the key"
    );
    assert_eq!(calls(&mock, UPSTREAM).await, 2);

    let (mock, gateway) = start("{ plugin: py-cache-key }").await;
    let key = gateway.api_key("p").await;
    let first = post(&gateway, MESSAGES, &key, &turn("2026-11-26", model), &[]).await;
    assert_eq!(
        (first.status, first.cache()),
        (200, "miss"),
        "{}",
        first.body
    );
    let second = post(&gateway, MESSAGES, &key, &turn("2026-11-27", model), &[]).await;
    assert_eq!(second.cache(), "hit", "{}", second.body);
    assert_eq!(first.json()["content"], second.json()["content"]);
    assert_eq!(calls(&mock, UPSTREAM).await, 1);
    // What went upstream is the client's request, reminder and all: only the key lost it.
    let sent = mock.last_request().await.body.to_string();
    assert!(sent.contains("Today's date is 2026-11-26"), "{sent}");
    // Another prompt is another key.
    let mut other = turn("2026-11-27", model);
    other["messages"][0]["content"][1]["text"] = json!("Now write the docs.");
    assert_eq!(
        post(&gateway, MESSAGES, &key, &other, &[]).await.cache(),
        "miss"
    );
}

#[tokio::test]
async fn a_plugin_that_fails_makes_a_bypass_not_an_error() {
    let (mock, gateway) = start("{ plugin: py-cache-faults }").await;
    let key = gateway.api_key("p").await;
    for model in ["openai/trap", "openai/loop", "openai/nonsense"] {
        for _ in 0..2 {
            let started = std::time::Instant::now();
            let answer = post(&gateway, MESSAGES, &key, &turn("2026-11-26", model), &[]).await;
            assert_eq!(answer.status, 200, "{model}: {}", answer.body);
            assert_eq!(answer.cache(), "bypass", "{model}");
            assert!(started.elapsed().as_secs() < 5, "{model}");
        }
    }
    assert_eq!(calls(&mock, UPSTREAM).await, 6, "each went upstream");
    // The plugin's own requests still hit.
    let model = "openai/gpt-4o-mini";
    post(&gateway, MESSAGES, &key, &turn("2026-11-26", model), &[]).await;
    let hit = post(&gateway, MESSAGES, &key, &turn("2026-11-26", model), &[]).await;
    assert_eq!(hit.cache(), "hit");
}

/// Options the plugin refuses stop the config, naming the key at fault.
#[tokio::test]
async fn options_the_plugin_refuses_name_their_key() {
    let mock = MockOpenAi::start().await;
    let yaml = format!(
        "plugins: {{ dir: \"{}\", cache_dir: \"{}\" }}\nproviders:\n  openai: {{ plugin: openai, base_url: {}, api_key: k, models: [m] }}\ncache: {{ enabled: true, key_plugin: {{ plugin: py-cache-key, options: {{ tags: [] }} }} }}\n",
        plugins().display(),
        plugin_cache_dir().display(),
        mock.base_url()
    );
    let config = wasmgate::config::Config::from_yaml(&yaml).unwrap();
    let error = wasmgate::build_state(config)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(error.contains("cache.key_plugin.options.tags"), "{error}");
}
