//! A host starved of CPU fails no valid request: a plugin call's budget is its own CPU time, not
//! the wall-clock time a busy host stretches. The real binary runs pinned to one CPU with eight
//! busy threads pinned beside it (as a container at its CPU quota, or a core shared with other
//! work), so the gateway gets about a ninth of that CPU. Valid calls that need a few ms of CPU
//! then take tens of ms of wall-clock time, past their 20 ms budget, and must still succeed; a
//! looping plugin must still be stopped, by its CPU budget or by the wall-clock backstop.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::binary::{Gateway, temp_dir};
use common::gateway::{Gateway as Config, Provider};
use serde_json::{Value, json};

/// Busy threads pinned to the gateway's CPU.
const HOGS: usize = 8;

fn write_config(dir: &Path, cpu_ms: u64, wall_ms: u64) -> PathBuf {
    let config = Config::builder()
        .any_port()
        .test_plugins()
        .set(
            "plugins.cache_dir",
            common::plugin_cache_dir().display().to_string(),
        )
        .set("plugins.call_timeout_ms", cpu_ms)
        .set("plugins.call_wall_timeout_ms", wall_ms)
        .set("plugins.max_instances", 16)
        .ledger(&format!("sqlite://{}", dir.join("ledger.db").display()))
        .provider(
            "faulty",
            Provider::plugin("faulty").models(["ok", "work", "loop"]),
        )
        .to_yaml();
    let path = dir.join("config.yaml");
    std::fs::write(&path, config).unwrap();
    path
}

/// The CPU the gateway and the hogs share: the last one this test may run on, so that its own
/// threads mostly run on the others.
fn shared_cpu() -> usize {
    // SAFETY: a zeroed cpu_set_t is an empty set, which sched_getaffinity fills in.
    #[allow(unsafe_code)]
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let done = libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set);
        assert_eq!(done, 0, "sched_getaffinity");
        (0..libc::CPU_SETSIZE as usize)
            .rev()
            .find(|&cpu| libc::CPU_ISSET(cpu, &set))
            .expect("this thread may run on some CPU")
    }
}

/// Pins thread `tid` (0: the calling thread) to `cpu`.
fn pin(tid: libc::pid_t, cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is an empty set; the calls only read and write that set.
    #[allow(unsafe_code)]
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        let done = libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set);
        assert_eq!(done, 0, "sched_setaffinity({tid}, {cpu})");
    }
}

/// Pins every thread of process `pid` to `cpu`; threads it starts later inherit the affinity
/// of the thread that starts them.
fn pin_process(pid: u32, cpu: usize) {
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let tid: libc::pid_t = task.unwrap().file_name().to_str().unwrap().parse().unwrap();
        pin(tid, cpu);
    }
}

/// Threads that keep one CPU busy until dropped (or for a minute at most).
struct Hogs {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Hogs {
    fn start(cpu: usize) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..HOGS)
            .map(|_| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    pin(0, cpu);
                    let started = Instant::now();
                    let mut x = 0u64;
                    while !stop.load(Ordering::Relaxed)
                        && started.elapsed() < Duration::from_secs(60)
                    {
                        for _ in 0..10_000 {
                            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
                        }
                    }
                })
            })
            .collect();
        Self { stop, threads }
    }
}

impl Drop for Hogs {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

async fn send(gateway: &Gateway, model: &str) -> (u16, Value, Duration) {
    let started = Instant::now();
    let response = common::http()
        .post(gateway.url("/v1/chat/completions"))
        .json(&json!({"model": model, "messages": [{"role": "user", "content": "x"}]}))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body = response.json().await.unwrap();
    (status, body, started.elapsed())
}

/// Starts the binary on `config`, then pins it (and the hogs) to the shared CPU.
async fn starved_gateway(dir: &Path, cpu_ms: u64, wall_ms: u64) -> (Gateway, Hogs) {
    let config = write_config(dir, cpu_ms, wall_ms);
    let gateway = Gateway::serve(dir, &config).await;
    // Warm: the first request of each plugin runs before the host is starved.
    assert_eq!(send(&gateway, "faulty/ok").await.0, 200);
    let cpu = shared_cpu();
    pin_process(gateway.pid(), cpu);
    (gateway, Hogs::start(cpu))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_starved_host_fails_no_valid_request_and_still_stops_a_loop() {
    let dir = temp_dir("starvation");

    // A 20 ms CPU budget; valid calls need about 3 ms of it ("work") or far less ("ok").
    let (gateway, hogs) = starved_gateway(&dir, 20, 2000).await;
    let started = Instant::now();
    let mut slowest = Duration::ZERO;
    for round in 0..10 {
        let burst = ["faulty/work", "faulty/ok", "faulty/work", "faulty/ok"]
            .map(|model| send(&gateway, model));
        for (status, body, elapsed) in futures_util::future::join_all(burst).await {
            assert_eq!(status, 200, "round {round}: a valid request failed: {body}");
            slowest = slowest.max(elapsed);
        }
    }
    // The starvation was real: some valid call took longer than its whole budget of wall-clock
    // time, so a wall-clock deadline would have failed it.
    assert!(
        slowest > Duration::from_millis(20),
        "the host was not starved: the slowest request took {slowest:?}"
    );

    // A loop is stopped by its CPU budget, long before the backstop.
    let (status, body, elapsed) = send(&gateway, "faulty/loop").await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["error"]["code"], "plugin_timeout");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("20 ms CPU-time budget"), "{message}");
    assert!(elapsed < Duration::from_millis(2000), "{elapsed:?}");
    drop(hogs);
    drop(gateway);
    eprintln!(
        "starved: 40 valid requests, slowest {slowest:?}; loop stopped after {elapsed:?}; {:?} in all",
        started.elapsed()
    );

    // With a budget the starved loop cannot use up in time, the wall-clock backstop stops it.
    let (gateway, hogs) = starved_gateway(&dir, 1000, 1000).await;
    let (status, body, elapsed) = send(&gateway, "faulty/loop").await;
    assert_eq!(status, 502, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("1000 ms wall-clock deadline"), "{message}");
    assert!(
        elapsed >= Duration::from_millis(1000) && elapsed < Duration::from_secs(5),
        "{elapsed:?}"
    );
    drop(hogs);
    let _ = std::fs::remove_dir_all(&dir);
}
