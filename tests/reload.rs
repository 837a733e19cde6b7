//! Hot reload of the real binary under load: a config rewritten and signalled (SIGHUP), or just
//! rewritten (the file watcher), is swapped in without failing a request; a stream started
//! before the swap finishes on the old config; a bad config or a bad plugin file is rejected
//! with a log line naming it while the running config keeps serving.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::binary::{Gateway, temp_dir};
use common::mock_openai::MockOpenAi;
use futures_util::StreamExt;
use serde_json::json;
use tokio::task::JoinSet;

/// How long a file-change reload may take to be noticed: two polls of 1 s, and the load.
const WATCH_TIMEOUT: Duration = Duration::from_secs(15);

struct Setup {
    dir: PathBuf,
    config: PathBuf,
    base_url: String,
}

impl Setup {
    /// Writes a config: `server` on `port` (0: any), `plugins` fixed, `providers` as given.
    fn write(&self, port: u16, providers: &str) {
        // The per-request log lines are left out: the test looks for the reload lines.
        let text = format!(
            "server: {{ host: 127.0.0.1, port: {port} }}\n\
             plugins: {{ dir: {plugins}, cache_dir: {cache} }}\n\
             ledger: {{ url: 'sqlite::memory:' }}\n\
             observability: {{ log_level: 'info,wasmgate::server::request_log=warn' }}\n\
             providers:\n{providers}",
            plugins = self.dir.join("plugins").display(),
            cache = common::plugin_cache_dir().display(),
        );
        // Written aside and renamed over the old file, as editors and deploy tools do, so the
        // watcher never sees a half-written file.
        let tmp = self.dir.join("config.yaml.tmp");
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, &self.config).unwrap();
    }

    fn mock(&self) -> String {
        format!(
            "  mock:\n    plugin: openai\n    base_url: {}\n    api_key: sk-test\n    models: [paced-1500]\n",
            self.base_url
        )
    }
}

fn echo(name: &str, model: &str) -> String {
    format!("  {name}:\n    plugin: echo\n    models: [{model}]\n")
}

/// Requests from 4 tasks, one after another with a short pause, until stopped (and at most
/// 1,000 each): every one must succeed.
struct Load {
    stop: Arc<AtomicBool>,
    ok: Arc<AtomicU64>,
    tasks: JoinSet<Vec<String>>,
}

impl Load {
    fn start(url: String, model: &'static str) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let ok = Arc::new(AtomicU64::new(0));
        let mut tasks = JoinSet::new();
        for _ in 0..4 {
            let (stop, ok, url) = (Arc::clone(&stop), Arc::clone(&ok), url.clone());
            tasks.spawn(async move {
                let client = common::http();
                let mut failures = Vec::new();
                for _ in 0..1_000 {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let sent = client
                        .post(&url)
                        .json(&json!({"model": model,
                                      "messages": [{"role": "user", "content": "ping"}]}))
                        .send()
                        .await;
                    match sent {
                        Ok(r) if r.status() == 200 => {
                            ok.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(r) => failures.push(format!(
                            "{}: {}",
                            r.status(),
                            r.text().await.unwrap_or_default()
                        )),
                        Err(e) => failures.push(e.to_string()),
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                failures
            });
        }
        Self { stop, ok, tasks }
    }

    fn succeeded(&self) -> u64 {
        self.ok.load(Ordering::Relaxed)
    }

    /// Stops the load; returns how many succeeded, after checking none failed.
    async fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        let mut failures = Vec::new();
        while let Some(task) = self.tasks.join_next().await {
            failures.extend(task.unwrap());
        }
        assert!(
            failures.is_empty(),
            "requests failed under reload: {failures:#?}"
        );
        self.succeeded()
    }
}

/// Which provider answered `model`, or the status when none did.
async fn answered_by(gateway: &Gateway, model: &str) -> Result<String, u16> {
    let response = common::http()
        .post(gateway.url("/v1/chat/completions"))
        .json(&json!({"model": model, "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    if response.status() != 200 {
        return Err(response.status().as_u16());
    }
    Ok(response.headers()["x-wasmgate-provider"]
        .to_str()
        .unwrap()
        .to_owned())
}

/// Waits until the load has made progress, so that each reload happens under it.
async fn under_load(load: &Load) {
    let before = load.succeeded();
    let deadline = Instant::now() + Duration::from_secs(10);
    while load.succeeded() < before + 8 {
        assert!(Instant::now() < deadline, "the load makes no progress");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn count(lines: &[String], needle: &str) -> usize {
    lines.iter().filter(|l| l.contains(needle)).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn good_and_bad_reloads_under_load() {
    let mock = MockOpenAi::start().await;
    let dir = temp_dir("reload");
    std::fs::create_dir_all(dir.join("plugins")).unwrap();
    let setup = Setup {
        config: dir.join("config.yaml"),
        dir: dir.clone(),
        base_url: mock.base_url(),
    };
    setup.write(0, &format!("{}{}", setup.mock(), echo("echo", "echo-1")));
    let mut gateway = Gateway::serve(&dir, &setup.config).await;
    let load = Load::start(gateway.url("/v1/chat/completions"), "echo-1");
    assert_eq!(answered_by(&gateway, "echo-2").await, Err(404));

    // A stream of the `mock` provider, which the next config drops.
    let stream = common::http()
        .post(gateway.url("/v1/chat/completions"))
        .json(&json!({"model": "paced-1500", "stream": true,
                      "messages": [{"role": "user", "content": "count"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let mut stream = stream.bytes_stream();
    let first = stream.next().await.unwrap().unwrap();
    let stream = tokio::spawn(async move {
        let mut text = String::from_utf8_lossy(&first).into_owned();
        while let Some(chunk) = stream.next().await {
            text.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        }
        text
    });

    // 1. SIGHUP: `echo2` added, `mock` removed.
    under_load(&load).await;
    setup.write(
        0,
        &format!("{}{}", echo("echo", "echo-1"), echo("echo2", "echo-2")),
    );
    gateway.signal(libc::SIGHUP);
    let line = gateway
        .wait_for_line(
            |l| l.contains("config reloaded (SIGHUP): generation 2"),
            WATCH_TIMEOUT,
        )
        .await;
    assert!(line.contains("2 providers"), "{line}");
    assert_eq!(
        answered_by(&gateway, "echo-2").await.as_deref(),
        Ok("echo2")
    );
    assert_eq!(answered_by(&gateway, "paced-1500").await, Err(404));
    // The stream started on generation 1 went on to its end.
    let text = stream.await.unwrap();
    assert!(text.contains("t74 "), "{text}");
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");

    // 2. A rewrite alone, found by the watcher; a restart-only key is named and kept.
    under_load(&load).await;
    setup.write(
        1,
        &format!(
            "{}{}{}",
            echo("echo", "echo-1"),
            echo("echo2", "echo-2"),
            echo("echo3", "echo-3")
        ),
    );
    let line = gateway
        .wait_for_line(|l| l.contains("generation 3"), WATCH_TIMEOUT)
        .await;
    assert!(line.contains("(file change)"), "{line}");
    let lines = gateway.lines();
    assert_eq!(
        count(&lines, "server.port cannot change without a restart"),
        1,
        "{lines:#?}"
    );
    assert_eq!(
        answered_by(&gateway, "echo-3").await.as_deref(),
        Ok("echo3")
    );

    // 3. An invalid config: rejected, naming the entry; generation 3 keeps serving.
    under_load(&load).await;
    setup.write(
        0,
        &format!(
            "{}{}",
            echo("echo", "echo-1"),
            "  broken:\n    plugin: no-such-plugin\n"
        ),
    );
    gateway.signal(libc::SIGHUP);
    let line = gateway
        .wait_for_line(|l| l.contains("rejected"), WATCH_TIMEOUT)
        .await;
    assert!(
        line.contains("config reload (SIGHUP) rejected, still serving generation 3"),
        "{line}"
    );
    assert!(
        line.contains("providers.broken") && line.contains("no-such-plugin"),
        "{line}"
    );
    assert_eq!(
        answered_by(&gateway, "echo-3").await.as_deref(),
        Ok("echo3")
    );

    // 4. A valid config again (generation 4), then a plugin file that is no component: the
    //    reload it triggers is rejected naming the plugin, and the built-in `echo` serves on.
    setup.write(0, &echo("echo", "echo-1"));
    gateway
        .wait_for_line(|l| l.contains("generation 4"), WATCH_TIMEOUT)
        .await;
    under_load(&load).await;
    std::fs::write(dir.join("plugins").join("echo.wasm"), b"not a component").unwrap();
    let line = gateway
        .wait_for_line(
            |l| l.contains("config reload (file change) rejected"),
            WATCH_TIMEOUT,
        )
        .await;
    assert!(line.contains("still serving generation 4"), "{line}");
    assert!(
        line.contains("providers.echo") && line.contains("plugin `echo`"),
        "{line}"
    );
    under_load(&load).await;
    assert_eq!(answered_by(&gateway, "echo-1").await.as_deref(), Ok("echo"));
    assert_eq!(answered_by(&gateway, "echo-3").await, Err(404));

    let ok = load.finish().await;
    assert!(ok >= 40, "only {ok} requests under load");
    let lines = gateway.lines();
    assert_eq!(count(&lines, "config reloaded"), 3, "{lines:#?}");
    assert_eq!(count(&lines, "rejected"), 2, "{lines:#?}");

    gateway.signal(libc::SIGTERM);
    let (status, _) = gateway.wait_exit(Duration::from_secs(10)).await;
    assert!(status.success(), "exit status {status}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limit_counts_survive_a_reload() {
    let dir = temp_dir("reload-limits");
    let config = dir.join("config.yaml");
    let write = |providers: &str| {
        let text = format!(
            "server: {{ host: 127.0.0.1, port: 0 }}\n\
             plugins: {{ dir: {plugins}, cache_dir: {cache} }}\n\
             ledger: {{ url: 'sqlite::memory:' }}\n\
             limits:\n  rules:\n    - {{ policy: rate-limit, id: daily, options: {{ requests_per_day: 3 }} }}\n\
             providers:\n{providers}",
            plugins = dir.join("plugins").display(),
            cache = common::plugin_cache_dir().display(),
        );
        std::fs::write(&config, text).unwrap();
    };
    write(&echo("echo", "echo-1"));
    let mut gateway = Gateway::serve(&dir, &config).await;
    for _ in 0..3 {
        assert_eq!(answered_by(&gateway, "echo-1").await.as_deref(), Ok("echo"));
    }
    // A reload that leaves the rule (and its id) as it was keeps its count: the allowance is
    // spent, not handed out again.
    write(&format!(
        "{}{}",
        echo("echo", "echo-1"),
        echo("echo2", "echo-2")
    ));
    gateway.signal(libc::SIGHUP);
    gateway
        .wait_for_line(|l| l.contains("generation 2"), WATCH_TIMEOUT)
        .await;
    assert_eq!(answered_by(&gateway, "echo-2").await, Err(429));
    assert_eq!(answered_by(&gateway, "echo-1").await, Err(429));
    drop(gateway);
    let _ = std::fs::remove_dir_all(&dir);
}
