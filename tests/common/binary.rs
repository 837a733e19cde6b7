//! The real `wasmgate` binary as a child process: started on a config file (listening on a port
//! it picks), its log lines collected as they come, signals sent to it.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_wasmgate");

/// A fresh, empty directory for one test.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wasmgate-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub struct Gateway {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    pub port: u16,
}

impl Gateway {
    /// Runs `wasmgate serve --config <config>` in `cwd` and waits until it listens. The config
    /// should say `server: { host: 127.0.0.1, port: 0 }`; the port is read from the log.
    pub async fn serve(cwd: &Path, config: &Path) -> Self {
        Self::serve_with_env(cwd, config, &[]).await
    }

    /// [`Gateway::serve`] with these environment variables set, and no provider key in the
    /// environment unless given here.
    pub async fn serve_with_env(cwd: &Path, config: &Path, env: &[(&str, &str)]) -> Self {
        Self::serve_args(cwd, &["--config".as_ref(), config.as_os_str()], env).await
    }

    /// `wasmgate serve` on the embedded default config (no config file in `cwd`), on
    /// 127.0.0.1 and a free port.
    pub async fn serve_embedded(cwd: &Path) -> Self {
        let args = ["--host", "127.0.0.1", "--port", "0"].map(std::ffi::OsStr::new);
        Self::serve_args(cwd, &args, &[]).await
    }

    async fn serve_args(cwd: &Path, args: &[&std::ffi::OsStr], env: &[(&str, &str)]) -> Self {
        let mut child = Command::new(BIN)
            .arg("serve")
            .args(args)
            .current_dir(cwd)
            .env("XDG_CACHE_HOME", super::plugin_cache_dir())
            .env_remove("WASMGATE_CONFIG")
            .env_remove("RUST_LOG")
            .env_remove("OPENAI_API_KEY")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&lines);
        // Drains stderr until the child exits, so it never writes to a full or closed pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                sink.lock().unwrap().push(strip_ansi(&line));
            }
        });
        let mut gateway = Self {
            child,
            lines,
            port: 0,
        };
        let listening = gateway
            .wait_for_line(|l| l.contains("listening on"), Duration::from_secs(60))
            .await;
        let port = listening
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.split([' ', ')']).next())
            .and_then(|addr| addr.rsplit(':').next())
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("no port in {listening:?}"));
        gateway.port = port;
        gateway
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Every log line so far, colours removed.
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// The first log line matching `found`, waiting up to `timeout` for it.
    pub async fn wait_for_line(
        &mut self,
        found: impl Fn(&str) -> bool,
        timeout: Duration,
    ) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(line) = self.lines().into_iter().find(|l| found(l)) {
                return line;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                // The reader thread may still be behind the exit: one more look.
                tokio::time::sleep(Duration::from_millis(50)).await;
                if let Some(line) = self.lines().into_iter().find(|l| found(l)) {
                    return line;
                }
                panic!("wasmgate exited with {status}: {:#?}", self.lines());
            }
            assert!(
                Instant::now() < deadline,
                "no such log line within {timeout:?}: {:#?}",
                self.lines()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn signal(&self, signal: libc::c_int) {
        let pid = i32::try_from(self.child.id()).unwrap();
        // SAFETY: sending a signal to our own child process, which has not been reaped yet.
        #[allow(unsafe_code)]
        let rc = unsafe { libc::kill(pid, signal) };
        assert_eq!(rc, 0, "kill({pid}, {signal})");
    }

    /// Waits up to `timeout` for the process to exit; returns its status and how long it took.
    pub async fn wait_exit(&mut self, timeout: Duration) -> (ExitStatus, Duration) {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return (status, started.elapsed());
            }
            assert!(
                started.elapsed() < timeout,
                "wasmgate did not exit within {timeout:?}: {:#?}",
                self.lines()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        // A failed test must not leave the server running.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Removes the terminal colour codes (`ESC [ ... m`) the text log format uses.
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}
