//! `wasmgate config`: the JSON Schema agrees with the loader (it accepts the shipped configs and
//! refuses what `serve` refuses), `config check` reads a file as `serve` does and names the key
//! at fault, the generated pages in `docs/` match the config types, the manual's YAML examples
//! follow the schema, and each provider page's options table lists every option its plugin
//! takes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use wasmgate::config::{Config, DEFAULT_CONFIG};

const BIN: &str = env!("CARGO_BIN_EXE_wasmgate");

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn wasmgate(args: &[&str], cwd: &Path) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .env("XDG_CACHE_HOME", common::plugin_cache_dir())
        .env_remove("WASMGATE_CONFIG")
        .env_remove("RUST_LOG")
        .output()
        .unwrap()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wasmgate-config-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The schema as the binary prints it, compiled.
fn validator() -> jsonschema::Validator {
    let output = wasmgate(&["config", "schema"], &repo());
    assert!(output.status.success(), "{output:?}");
    let schema: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        schema["$schema"], "http://json-schema.org/draft-07/schema#",
        "editors handle draft 7"
    );
    jsonschema::validator_for(&schema).unwrap()
}

fn yaml(text: &str) -> Value {
    serde_yaml::from_str(text).unwrap()
}

fn schema_errors(validator: &jsonschema::Validator, text: &str) -> Vec<String> {
    validator
        .iter_errors(&yaml(text))
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

/// The provider entries of config.example.yaml's commented presets block, uncommented.
fn example_presets() -> String {
    let text = std::fs::read_to_string(repo().join("config.example.yaml")).unwrap();
    let block = text
        .split("# presets:begin\n")
        .nth(1)
        .and_then(|rest| rest.split("  # presets:end").next())
        .unwrap();
    let entries: String = block
        .lines()
        .map(|line| format!("{}\n", line.replacen("# ", "", 1)))
        .collect();
    format!("providers:\n{entries}")
}

#[test]
fn the_schema_accepts_the_shipped_configs() {
    let validator = validator();
    let example = std::fs::read_to_string(repo().join("config.example.yaml")).unwrap();
    for (name, text) in [
        ("config.example.yaml", example.as_str()),
        ("the embedded default", DEFAULT_CONFIG),
        ("the example's presets", &example_presets()),
        ("an empty file", "{}"),
    ] {
        let errors = schema_errors(&validator, text);
        assert!(errors.is_empty(), "{name}: {errors:#?}");
        Config::from_yaml(text).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn the_schema_refuses_what_the_loader_refuses() {
    let validator = validator();
    for text in [
        "server: { prot: 9000 }",
        "server: { port: 70000 }",
        "server: { port: eighty }",
        "providers: { p: { plugin: echo, modles: [a] } }",
        "providers: { p: { models: [a] } }",
        "providers: { p: { preset: no-such-preset } }",
        "routing: { r: { policy: fallback, targets: [{ id: p/m, wieght: 2 }] } }",
        "limits: { rules: [{ policy: budget, scope: team }] }",
        "plugins: { memory_limit_mib: 0 }",
        "plugins: { stream_share_percent: 101 }",
        "observability: { log_format: xml }",
        "observability: { traces: { service_name: x } }",
        "catalog: { providers: [{ provider: p, models: [{ model: m, kind: audio }] }] }",
        "dialects: { messages: {} }",
        "ledger: { url: sqlite://x.db, queue: 1 }",
        "wat: 1",
    ] {
        let errors = schema_errors(&validator, text);
        assert!(!errors.is_empty(), "the schema accepts `{text}`");
        assert!(
            Config::from_yaml(text).is_err(),
            "the loader accepts `{text}`"
        );
    }
    let errors = schema_errors(
        &validator,
        "providers: { p: { plugin: echo, modles: [a] } }",
    );
    assert!(
        errors.iter().any(|e| e.starts_with("/providers/p")),
        "{errors:?}"
    );
}

fn check(config: &str) -> Output {
    let cwd = temp_dir("check");
    let path = cwd.join(format!("config-{}.yaml", rand_suffix()));
    std::fs::write(&path, config).unwrap();
    wasmgate(&["config", "check", path.to_str().unwrap()], &cwd)
}

fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

fn failure(config: &str) -> String {
    let output = check(config);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert!(output.stdout.is_empty(), "{output:?}");
    String::from_utf8(output.stderr).unwrap()
}

#[test]
fn config_check_passes_a_good_file_without_serving_or_connecting() {
    let example = std::fs::read_to_string(repo().join("config.example.yaml")).unwrap();
    // Nothing listens on port 1: a check that connected to the counters' Redis would fail.
    let config = format!(
        "{example}\nlimits:\n  store: redis://127.0.0.1:1\n  rules: [{{ policy: rate-limit, options: {{ requests_per_minute: 5 }} }}]\n\
         routing:\n  smart: {{ policy: fallback, targets: [openai/gpt-4o-mini, echo/echo-1] }}\n"
    );
    let output = check(&config);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{output:?}");
    assert!(
        stdout.starts_with("ok: ")
            && stdout.ends_with(": 2 providers, 1 virtual models, 1 limit rules\n"),
        "{stdout}"
    );
}

#[test]
fn config_check_names_the_key_at_fault() {
    let stderr = failure("server:\n  port: eighty\n");
    assert!(
        stderr.starts_with("error: config key `server.port`: invalid type"),
        "{stderr}"
    );
    let stderr = failure("providers:\n  p:\n    plugin: echo\n    modles: [a]\n");
    assert!(
        stderr.starts_with("error: config key `providers.p.modles`: unknown field"),
        "{stderr}"
    );
    let stderr = failure(
        "providers:\n  p: { plugin: echo }\nrouting:\n  r: { policy: fallback, targets: [p/m, q/m] }\n",
    );
    assert!(stderr.contains("`routing.r.targets[1]`"), "{stderr}");
}

#[test]
fn a_console_oidc_section_is_checked_key_by_key() {
    let good = "console:\n  oidc:\n    issuer: https://idp.example.com/realms/acme\n    \
                client_id: wasmgate\n    client_secret: s3cret\n    \
                redirect_url: https://gw.example.com/console/callback\n    \
                session_secret: 0123456789abcdef0123456789abcdef\n    \
                roles: { claim: realm_access.roles, admin: [ops], projects: { acme: { viewer: [devs] } } }\n";
    let output = check(good);
    assert!(output.status.success(), "{output:?}");
    for (from, to, key) in [
        (
            "https://idp.example.com",
            "idp.example.com",
            "console.oidc.issuer",
        ),
        (
            "https://gw.example.com/console/callback",
            "ftp://gw",
            "console.oidc.redirect_url",
        ),
        (
            "0123456789abcdef0123456789abcdef",
            "too-short",
            "console.oidc.session_secret",
        ),
        (
            "client_id: wasmgate\n",
            "client_id: ''\n",
            "console.oidc.client_id",
        ),
        (
            "    roles:",
            "    scopes: [profile]\n    roles:",
            "console.oidc.scopes",
        ),
        (
            "claim: realm_access.roles",
            "claim: realm_access.",
            "console.oidc.roles.claim",
        ),
        (
            "acme: {",
            "'bad project!': {",
            "console.oidc.roles.projects.bad project!",
        ),
        (
            "admin: [ops], projects: { acme: { viewer: [devs] } }",
            "admin: []",
            "console.oidc.roles",
        ),
        (
            "    roles:",
            "    session_ttl_s: 10\n    roles:",
            "console.oidc.session_ttl_s",
        ),
        ("    client_secret: s3cret\n", "", "console.oidc"),
    ] {
        assert!(good.contains(from), "{from}");
        let stderr = failure(&good.replace(from, to));
        assert!(
            stderr.contains(&format!("config key `{key}`")),
            "{key}: {stderr}"
        );
    }
}

#[test]
fn config_check_loads_the_plugins_as_serve_does() {
    // Each error only a plugin can find: the file is well-formed.
    let stderr = failure("providers:\n  x:\n    plugin: no-such-plugin\n");
    assert!(
        stderr.contains("providers.x") && stderr.contains("no-such-plugin"),
        "{stderr}"
    );
    assert_eq!(stderr.matches("does not exist").count(), 1, "{stderr}");
    let stderr = failure("providers:\n  my-echo:\n    plugin: echo\n    options: { bogus: 1 }\n");
    assert!(
        stderr.contains("providers.my-echo") && stderr.contains("bogus"),
        "{stderr}"
    );
    let stderr = failure(
        "providers:\n  e: { plugin: echo }\nrouting:\n  r: { policy: weighted, targets: [e/m], options: { nope: 1 } }\n",
    );
    assert!(
        stderr.contains("routing.r") && stderr.contains("nope"),
        "{stderr}"
    );
    let stderr = failure("dialects:\n  messages:\n    plugin: openai\n");
    assert!(stderr.contains("dialects.messages.plugin"), "{stderr}");
}

#[test]
fn config_check_reads_what_serve_would_without_a_file() {
    // No argument, no $WASMGATE_CONFIG, no ./config.yaml: the embedded default, as for `serve`.
    let output = wasmgate(&["config", "check"], &temp_dir("embedded"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{output:?}");
    assert!(stdout.starts_with("ok: embedded default: "), "{stdout}");
}

/// A page generated from the config types, compared with the committed copy.
fn assert_current(relative: &str, generated: &str, command: &str) {
    let path = repo().join(relative);
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "{relative} is stale (the config types changed); regenerate it with\n  \
         cargo run -- {command} > {relative}"
    );
}

#[test]
fn the_generated_reference_and_schema_in_docs_are_current() {
    assert_current(
        "docs/src/reference/config.md",
        &wasmgate::cli::config::reference(),
        "config reference",
    );
    assert_current(
        "docs/src/reference/config.schema.json",
        &wasmgate::cli::config::schema(),
        "config schema",
    );
}

/// The ```yaml blocks of the manual's pages (not the reference's: its snippets show one key
/// alone, without the keys its object requires).
fn manual_yaml_blocks() -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    for path in common::files_under(&repo().join("docs/src")) {
        if path.extension().is_none_or(|e| e != "md") || path.ends_with("reference/config.md") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (i, block) in text.split("```yaml\n").skip(1).enumerate() {
            let block = block.split("```").next().unwrap();
            let name = format!("{} block {}", path.display(), i + 1);
            blocks.push((name, block.to_owned()));
        }
    }
    blocks
}

#[test]
fn the_manuals_yaml_examples_follow_the_schema() {
    let validator = validator();
    let blocks = manual_yaml_blocks();
    assert!(blocks.len() > 15, "{}", blocks.len());
    let mut failures = Vec::new();
    for (name, block) in &blocks {
        let value = yaml(block);
        if value.is_null() {
            continue; // a comment alone (the editor's modeline)
        }
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| format!("  {}: {e}", e.instance_path()))
            .collect();
        if !errors.is_empty() {
            failures.push(format!("{name}:\n{}", errors.join("\n")));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The options a provider plugin's settings take, as it names them when it refuses an unknown
/// one (serde's `expected one of `a`, `b``, `expected `a` or `b``, `there are no fields`).
fn plugin_options(plugin: &str) -> Vec<String> {
    let stderr = failure(&format!(
        "providers:\n  x:\n    plugin: {plugin}\n    base_url: http://127.0.0.1:9\n    \
         api_key: k\n    options: {{ not_an_option_of_any_plugin: 1 }}\n"
    ));
    assert!(
        stderr.contains("unknown field `not_an_option_of_any_plugin`"),
        "{plugin}: {stderr}"
    );
    let expected = match stderr.split_once(", expected ") {
        Some((_, names)) => names,
        None if stderr.contains("there are no fields") => return Vec::new(),
        None => panic!("{plugin}: {stderr}"),
    };
    expected
        .lines()
        .next()
        .unwrap_or_default()
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

#[test]
fn each_provider_page_lists_every_option_its_plugin_takes() {
    let pages = repo().join("docs/src/providers");
    let mut missing = Vec::new();
    let mut checked = 0;
    for entry in std::fs::read_dir(&pages).unwrap() {
        let path = entry.unwrap().path();
        let plugin = path.file_stem().unwrap().to_str().unwrap().to_owned();
        if plugin == "index" {
            continue;
        }
        let page = std::fs::read_to_string(&path).unwrap();
        // The first cell of each table row: `| `a`, `b` | what it does |`.
        let rows: Vec<&str> = page
            .lines()
            .filter_map(|l| l.strip_prefix('|'))
            .filter_map(|l| l.split('|').next())
            .collect();
        for option in plugin_options(&plugin) {
            let cell = format!("`{option}`");
            if !rows.iter().any(|r| r.contains(&cell)) {
                missing.push(format!("{}: `{option}`", path.display()));
            }
        }
        checked += 1;
    }
    assert!(checked >= 7, "{checked} provider pages");
    assert!(
        missing.is_empty(),
        "options missing from the tables:\n{}",
        missing.join("\n")
    );
}
