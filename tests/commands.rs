//! The real binary's commands besides `serve`: `keys` (create, list, revoke, honoured by a
//! gateway on the same ledger), `login` (a private credentials file that `serve` reads) and
//! `usage` (the same table from a local ledger and from a running gateway).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::gateway::Provider;
use common::mock_openai::MockOpenAi;
use common::{TestGateway, binary, http};
use serde_json::json;

const BIN: &str = env!("CARGO_BIN_EXE_wasmgate");

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wasmgate-cmd-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `wasmgate args...` with no ambient config or credentials.
fn wasmgate(dir: &Path, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env("WASMGATE_CREDENTIALS", dir.join("credentials.yaml"))
        .env("XDG_CACHE_HOME", common::plugin_cache_dir())
        .env_remove("WASMGATE_CONFIG")
        .env_remove("WASMGATE_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn ledger_url(dir: &Path) -> String {
    format!("sqlite://{}", dir.join("ledger.db").display())
}

/// A test taking (a temp dir, a ledger URL), once on a SQLite file and once on PostgreSQL.
macro_rules! on_both_stores {
    ($($test:ident),* $(,)?) => {$(
        mod $test {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                let dir = super::temp_dir(concat!(stringify!($test), "-sqlite"));
                let ledger = super::ledger_url(&dir);
                super::$test(dir, ledger).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                let (ledger, _cluster) = super::common::postgres::database();
                let dir = super::temp_dir(concat!(stringify!($test), "-postgres"));
                super::$test(dir, ledger).await;
            }
        }
    )*};
}

on_both_stores!(
    keys_are_created_listed_revoked_and_honoured,
    usage_prints_the_same_table_from_the_ledger_and_from_a_gateway,
);

async fn gateway_on(ledger: &str, base_url: &str) -> TestGateway {
    common::gateway::Gateway::standard(base_url)
        .ledger(ledger)
        .start()
        .await
}

async fn usage_status(gateway: &TestGateway, key: &str) -> u16 {
    http()
        .post(gateway.url("/usage/total"))
        .bearer_auth(key)
        .header("x-project-id", "acme")
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

async fn keys_are_created_listed_revoked_and_honoured(dir: PathBuf, ledger: String) {
    let created = wasmgate(
        &dir,
        &[
            "keys",
            "create",
            "--project",
            "acme",
            "--name",
            "ci",
            "--ledger",
            &ledger,
        ],
        "",
    );
    assert!(created.status.success(), "{}", text(&created.stderr));
    let key = text(&created.stdout).trim().to_owned();
    assert!(
        key.starts_with("wg-") && !key.contains('\n'),
        "only the key on stdout: {key}"
    );
    let note = text(&created.stderr);
    assert!(note.contains("shown once"), "{note}");
    let id = note
        .split_whitespace()
        .find(|w| w.starts_with("key_"))
        .unwrap()
        .to_owned();

    let listed = wasmgate(&dir, &["keys", "list", "--ledger", &ledger], "");
    let list = text(&listed.stdout);
    assert!(listed.status.success());
    assert!(
        list.contains(&id) && list.contains("acme") && list.contains("ci"),
        "{list}"
    );
    assert!(list.contains(&format!("{}…", &key[..10])), "{list}");
    assert!(
        !list.contains(&key),
        "the key itself is never listed: {list}"
    );
    assert!(list.contains("active"));

    let mock = MockOpenAi::start().await;
    let gateway = gateway_on(&ledger, &mock.base_url()).await;
    assert_eq!(usage_status(&gateway, &key).await, 200);
    gateway.stop().await;

    let revoked = wasmgate(&dir, &["keys", "revoke", &id, "--ledger", &ledger], "");
    assert!(revoked.status.success(), "{}", text(&revoked.stderr));
    let again = wasmgate(&dir, &["keys", "revoke", &id, "--ledger", &ledger], "");
    assert!(!again.status.success());
    assert!(
        text(&again.stderr).contains("no active API key"),
        "{}",
        text(&again.stderr)
    );
    let list = text(&wasmgate(&dir, &["keys", "list", "--ledger", &ledger], "").stdout);
    assert!(list.contains("revoked"), "{list}");

    let gateway = gateway_on(&ledger, &mock.base_url()).await;
    assert_eq!(usage_status(&gateway, &key).await, 401);
    gateway.stop().await;
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_keeps_the_key_private_and_serve_uses_it() {
    let dir = temp_dir("login");
    let secret = "sk-from-login-0123456789";
    let login = wasmgate(&dir, &["login", "openai"], &format!("{secret}\n"));
    assert!(login.status.success(), "{}", text(&login.stderr));
    let said = format!("{}{}", text(&login.stdout), text(&login.stderr));
    assert!(!said.contains(secret), "login never prints the key: {said}");
    let file = dir.join("credentials.yaml");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    assert!(std::fs::read_to_string(&file).unwrap().contains(secret));
    let listed = wasmgate(&dir, &["login", "--list"], "");
    assert_eq!(text(&listed.stdout), "openai\n");
    let empty = wasmgate(&dir, &["login", "groq"], "\n");
    assert!(!empty.status.success(), "an empty key is refused");

    // `serve` with a config that has no secret: the key comes from the credentials file.
    let mock = MockOpenAi::start().await;
    let config = dir.join("config.yaml");
    let openai = Provider::plugin("openai")
        .base_url(&mock.base_url())
        .models(["gpt-4o-mini"]);
    let yaml = common::gateway::Gateway::builder()
        .any_port()
        .provider("openai", openai)
        .ledger("sqlite::memory:")
        .set("observability.log_level", "debug")
        .to_yaml();
    std::fs::write(&config, yaml).unwrap();
    let credentials = file.display().to_string();
    let mut gateway =
        binary::Gateway::serve_with_env(&dir, &config, &[("WASMGATE_CREDENTIALS", &credentials)])
            .await;
    let response = http()
        .post(gateway.url("/v1/chat/completions"))
        .json(&json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let upstream = mock.last_request().await;
    assert_eq!(
        upstream.headers["authorization"].to_str().unwrap(),
        format!("Bearer {secret}")
    );
    gateway.signal(libc::SIGTERM);
    let (status, _) = gateway.wait_exit(Duration::from_secs(30)).await;
    assert!(status.success());
    let lines = gateway.lines();
    assert!(
        lines.iter().any(|l| l.contains("wasmgate login")),
        "{lines:#?}"
    );
    assert!(
        !lines.iter().any(|l| l.contains(secret)),
        "the key is never logged: {lines:#?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

async fn usage_prints_the_same_table_from_the_ledger_and_from_a_gateway(
    dir: PathBuf,
    ledger: String,
) {
    let mock = MockOpenAi::start().await;
    let gateway = gateway_on(&ledger, &mock.base_url()).await;
    let key = gateway.api_key("acme").await;
    for model in ["gpt-4o-mini", "gpt-4o-mini", "echo-1"] {
        let response = http()
            .post(gateway.url("/v1/chat/completions"))
            .bearer_auth(&key)
            .json(&json!({"model": model, "messages": [{"role": "user", "content": "hi"}]}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
    }
    let store = gateway.state.ledger.store();
    // The PostgreSQL client blocks on a runtime of its own: not on this test's thread.
    let count = || {
        let store = store.clone();
        tokio::task::spawn_blocking(move || store.count().unwrap())
    };
    for _ in 0..100 {
        if count().await.unwrap() == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(count().await.unwrap(), 3);
    let range = ["--since", "1d", "--until", "2099-01-01"];
    let local_args = [
        &[
            "usage",
            "--project",
            "acme",
            "--by",
            "day",
            "--ledger",
            &ledger,
        ][..],
        &range,
    ]
    .concat();
    let local = wasmgate(&dir, &local_args, "");
    assert!(local.status.success(), "{}", text(&local.stderr));
    let table = text(&local.stdout);
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("project acme, "), "{table}");
    assert!(
        lines[1].starts_with("day ") && lines[1].contains("cost (USD)"),
        "{table}"
    );
    let row = |model: &str| {
        lines
            .iter()
            .find(|l| l.split_whitespace().nth(3) == Some(model))
            .unwrap_or_else(|| panic!("no {model} row: {table}"))
            .split_whitespace()
            .collect::<Vec<_>>()
    };
    // 2 × the mock's 13 prompt and 7 completion tokens, at gpt-4o-mini's catalog price.
    assert_eq!(
        &row("gpt-4o-mini")[4..],
        ["26", "14", "0.000012"],
        "{table}"
    );
    assert_eq!(row("echo-1")[2], "echo", "{table}");
    assert!(lines.last().unwrap().starts_with("total"), "{table}");

    let url = gateway.url("");
    let remote_args = [
        &[
            "usage",
            "--project",
            "acme",
            "--by",
            "day",
            "--gateway",
            &url,
            "--key",
            &key,
        ][..],
        &range,
    ]
    .concat();
    let remote = wasmgate(&dir, &remote_args, "");
    assert!(remote.status.success(), "{}", text(&remote.stderr));
    // The title's range differs by the moments each command ran; the rows are the same.
    assert_eq!(
        text(&remote.stdout).lines().skip(1).collect::<Vec<_>>(),
        lines[1..]
    );

    let totals = wasmgate(
        &dir,
        &["usage", "--project", "acme", "--ledger", &ledger],
        "",
    );
    let totals = text(&totals.stdout);
    assert!(
        totals.lines().nth(1).unwrap().contains("input tokens"),
        "{totals}"
    );
    let wrong_key = [
        &[
            "usage",
            "--project",
            "acme",
            "--gateway",
            &url,
            "--key",
            "wg-nope",
        ][..],
        &range,
    ]
    .concat();
    let refused = wasmgate(&dir, &wrong_key, "");
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("401"),
        "{}",
        text(&refused.stderr)
    );
    gateway.stop().await;
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `wasmgate models` lists the catalog the gateway would use: the config's `catalog:` overrides
/// replace built-in prices and add models.
#[test]
fn models_lists_the_configs_catalog_overrides() {
    let dir = temp_dir("models");
    // Not `config.yaml`, which `models` would find in its working directory by itself.
    let config = dir.join("prices.yaml");
    std::fs::write(
        &config,
        "catalog:\n  providers:\n    - provider: openai\n      models:\n\
         \x20       - {model: gpt-4o-mini, kind: chat, input_per_mtok: 0.12, output_per_mtok: 0.5}\n\
         \x20       - {model: in-house-1, kind: chat, input_per_mtok: 1.5, output_per_mtok: 2.5}\n",
    )
    .unwrap();
    let row = |table: &str, model: &str| -> Vec<String> {
        table
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(model))
            .unwrap_or_else(|| panic!("no {model} row: {table}"))
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    };
    let builtin = wasmgate(&dir, &["models", "--provider", "openai"], "");
    assert!(builtin.status.success(), "{}", text(&builtin.stderr));
    let builtin = text(&builtin.stdout);
    assert_eq!(
        row(&builtin, "gpt-4o-mini")[7..9],
        ["0.15", "0.60"],
        "{builtin}"
    );
    assert!(!builtin.contains("in-house-1"), "{builtin}");

    let path = config.to_str().unwrap();
    let listed = wasmgate(
        &dir,
        &["models", "--provider", "openai", "--config", path],
        "",
    );
    assert!(listed.status.success(), "{}", text(&listed.stderr));
    let listed = text(&listed.stdout);
    assert_eq!(
        row(&listed, "gpt-4o-mini")[7..9],
        ["0.12", "0.50"],
        "{listed}"
    );
    assert_eq!(
        row(&listed, "in-house-1")[7..9],
        ["1.50", "2.50"],
        "{listed}"
    );

    let missing = wasmgate(&dir, &["models", "--config", "nope.yaml"], "");
    assert!(!missing.status.success());
    let error = text(&missing.stderr);
    assert_eq!(
        error.matches("No such file").count(),
        1,
        "said once: {error}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
