//! The real `wasmgate` binary: start-up on the embedded config, command-line overrides, config
//! errors that name the bad key or entry, and a clean exit on SIGTERM.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_wasmgate");

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("wasmgate-cli-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn serve(cwd: &Path, args: &[&str]) -> Child {
    Command::new(BIN)
        .arg("serve")
        .args(args)
        .current_dir(cwd)
        .env("XDG_CACHE_HOME", common::plugin_cache_dir())
        .env_remove("WASMGATE_CONFIG")
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits until the gateway logs that it listens; returns the lines seen.
fn wait_listening(child: &mut Child) -> Vec<String> {
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // Keeps draining after the test stops listening, so the child never writes to a
        // closed pipe.
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut lines = Vec::new();
    while Instant::now() < deadline {
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(100)) {
            let done = line.contains("listening on");
            lines.push(line);
            if done {
                return lines;
            }
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("wasmgate exited with {status}: {lines:#?}");
        }
    }
    panic!("wasmgate did not start: {lines:#?}");
}

fn sigterm(child: &Child) {
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: sending a signal to our own child process.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::kill(pid, libc::SIGTERM) };
    assert_eq!(rc, 0);
}

#[tokio::test]
async fn serves_the_embedded_config_with_overrides_and_exits_cleanly_on_sigterm() {
    let cwd = temp_dir("default");
    let port = free_port();
    let port_arg = port.to_string();
    let mut child = serve(
        &cwd,
        &[
            "--host",
            "127.0.0.1",
            "--port",
            &port_arg,
            "--log-level",
            "info",
        ],
    );
    let lines = wait_listening(&mut child);
    assert!(
        lines.iter().any(|l| l.contains("embedded default")),
        "{lines:#?}"
    );

    let response = common::http()
        .post(format!("http://127.0.0.1:{port}/v1/chat/completions"))
        .json(&serde_json::json!({"model": "echo-1", "messages": [{"role": "user", "content": "hi there"}]}))
        .send()
        .await
        .unwrap();
    let status = response.status();
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["choices"][0]["message"]["content"], "hi there");

    sigterm(&child);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "exit status {status}");
            break;
        }
        assert!(Instant::now() < deadline, "did not exit after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn start_error(config: &str) -> String {
    // A directory per start: the tests run at once, and two gateways creating the default ledger
    // file of one directory at the same moment can find it locked by the other's migration.
    let run = free_port();
    let cwd = temp_dir(&format!("bad-{run}"));
    let path = cwd.join(format!("config-{run}.yaml"));
    std::fs::write(&path, config).unwrap();
    let output = Command::new(BIN)
        .args(["serve", "--port", "0", "--config"])
        .arg(&path)
        // Not the source tree: the default ledger file is created before the plugins load.
        .current_dir(&cwd)
        .env("XDG_CACHE_HOME", common::plugin_cache_dir())
        .output()
        .unwrap();
    assert!(!output.status.success(), "a bad config must not start");
    let _ = std::fs::remove_dir_all(&cwd);
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_bad_config_key_is_named_with_its_path() {
    let stderr = start_error("server:\n  host: 127.0.0.1\n  prot: 9000\n");
    assert!(
        stderr.contains("server") && stderr.contains("prot"),
        "{stderr}"
    );
    let stderr =
        start_error("providers:\n  p:\n    plugin: openai\n    base_url: localhost:1234\n");
    assert!(stderr.contains("providers.p.base_url"), "{stderr}");
}

#[test]
fn options_a_plugin_rejects_are_reported_naming_the_entry() {
    let stderr =
        start_error("providers:\n  my-echo:\n    plugin: echo\n    options: { bogus: 1 }\n");
    assert!(stderr.contains("providers.my-echo"), "{stderr}");
    assert!(stderr.contains("bogus"), "{stderr}");
}

#[test]
fn a_dialect_plugin_that_is_missing_or_of_another_kind_is_named_by_its_key() {
    let stderr = start_error("dialects:\n  messages:\n    plugin: no-such-dialect\n");
    assert!(
        stderr.contains("dialects.messages.plugin") && stderr.contains("no-such-dialect"),
        "{stderr}"
    );
    // A provider plugin is not a dialect.
    let stderr = start_error("dialects:\n  responses:\n    plugin: openai\n");
    assert!(
        stderr.contains("dialects.responses.plugin") && stderr.contains("not a dialect plugin"),
        "{stderr}"
    );
}

#[test]
fn a_missing_plugin_is_reported_naming_the_entry() {
    let stderr = start_error("providers:\n  x:\n    plugin: no-such-plugin\n");
    assert!(
        stderr.contains("providers.x") && stderr.contains("no-such-plugin"),
        "{stderr}"
    );
}
