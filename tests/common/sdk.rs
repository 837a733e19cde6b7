//! Runs the official SDKs' programs in `tests/sdk/` (see `sdk_clients.rs`), installed into
//! `target/sdk-clients/` by `scripts/sdk-clients.sh`.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `path`, which `scripts/sdk-clients.sh` installs; a test without it fails, naming the script.
pub fn installed(path: PathBuf) -> PathBuf {
    assert!(
        path.exists(),
        "{} is missing: run scripts/sdk-clients.sh to install the pinned SDKs",
        path.display()
    );
    path
}

/// Runs `tests/sdk/<program>` (Python or Node, by its extension) with `--base-url`, `--api-key`
/// and `args` (the model flags, `--only`, ...), for at most 120 s.
pub async fn run_client(program: &str, base_url: &str, key: &str, args: &[&str]) -> Output {
    let tools = root().join("target/sdk-clients");
    let script = root().join("tests/sdk").join(program);
    let mut command = if program.ends_with(".py") {
        std::process::Command::new(installed(tools.join("py/bin/python")))
    } else {
        let mut node = std::process::Command::new("node");
        installed(tools.join("js/node_modules/@anthropic-ai/sdk"));
        installed(tools.join("js/node_modules/openai"));
        node.arg(&script)
            .arg("--node-modules")
            .arg(tools.join("js/node_modules"));
        node
    };
    if program.ends_with(".py") {
        command.arg(&script);
    }
    command
        .args(["--base-url", base_url, "--api-key", key])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    // The clients must reach 127.0.0.1 directly and take their key from the arguments only.
    for name in [
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_BASE_URL",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_ORG_ID",
        "OPENAI_PROJECT_ID",
        "GOOGLE_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_GENAI_USE_VERTEXAI",
        "GOOGLE_CLOUD_PROJECT",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ] {
        command.env_remove(name);
    }
    let child = command
        .spawn()
        .unwrap_or_else(|e| panic!("{program} did not start: {e}"));
    bounded(child, program).await
}

/// The output of `child` (`what` names it), killed and a panic after 120 s.
pub async fn bounded(child: std::process::Child, what: &str) -> Output {
    let pid = child.id() as libc::pid_t;
    let mut waiting = tokio::task::spawn_blocking(move || child.wait_with_output());
    match tokio::time::timeout(Duration::from_secs(120), &mut waiting).await {
        Ok(output) => output.unwrap().unwrap(),
        Err(_) => {
            // SAFETY: `pid` is our own child, not yet reaped (its wait is still running).
            #[allow(unsafe_code)]
            unsafe {
                libc::kill(pid, libc::SIGKILL)
            };
            let _ = waiting.await;
            panic!("{what} ran for more than 120 s")
        }
    }
}

/// Asserts the program exited 0 having passed each of `scenarios`.
pub fn assert_passed(output: &Output, scenarios: &[&str]) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the client failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    for scenario in scenarios {
        assert!(
            stdout.lines().any(|l| l == format!("ok {scenario}")),
            "scenario {scenario} did not pass:\n{stdout}\n{stderr}"
        );
    }
}
