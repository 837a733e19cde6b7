//! Regression guards that count rather than time: what one request and one stream cost the
//! gateway in heap allocations (and bytes allocated, per byte of request body), plugin
//! instantiations and calls, and reads and writes on its client and upstream sockets. Counts do
//! not move with the machine as times do, so each has a bound a little above today's value
//! (`BOUNDS`), and a change that doubles one fails with a message naming it.
//!
//! Allocations are counted by this binary's global allocator on the gateway's threads only: the
//! mock upstream and the client run on threads marked uncounted. Each figure is the minimum of
//! several runs after a warm-up, which drops what background tasks (the ledger's flush every
//! 200 ms) add to a run now and then. Socket reads and writes are counted by `strace` attached to
//! the real binary (each syscall's file descriptor names its socket's ports).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "counts/idle_rss.rs"]
mod idle_rss;
#[path = "counts/session_rss.rs"]
mod session_rss;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::TestGateway;
use common::gateway::{Gateway, Guard, Provider};
use common::mock_openai::MockOpenAi;
use common::mock_providers::MockProvider;
use serde_json::json;

/// Today's values (debug build, 2026-11-26; the plain path's 2026-11-28) and the bounds, ~25 %
/// above, that the tests hold. Raise a bound only with a reason in the commit that raises it.
const BOUNDS: &[(&str, u64, u64)] = &[
    // (count, today, bound)
    // A chat request and stream to an OpenAI entry take the host's plain path (issue 38): no
    // plugin instance, no plugin call. Before it: 193 allocations, 7 bytes per body byte, 402
    // per stream, 1 instance and 2 calls per request, 1 and 14 per stream (the plugin path's
    // rows below).
    ("allocations per request", 171, 214),
    ("allocated bytes per request body byte", 4, 5),
    // A stream lasts longer than the ledger's 200 ms flush, so its count holds its record's
    // write (one batch of one record: about 35 allocations, SQLite's and the rollups').
    ("allocations per stream", 353, 441),
    ("plugin instantiations per request", 0, 0),
    ("plugin calls per request", 0, 0),
    ("plugin instantiations per stream", 0, 0),
    ("plugin calls per stream", 0, 0),
    // The same entry with `plain_path: false`, as any provider that declares nothing plain:
    // `prepare` and `parse-response`; per stream `prepare`, `open_stream`, a `push` per upstream
    // chunk (the mock's 12) and `finish`, none per event. gatebench's stream of 24 chunks costs
    // 27 by the same count. The allocations are the host's only: the guest's are in its memory.
    ("allocations per request on the plugin path", 195, 244),
    ("allocations per stream on the plugin path", 403, 504),
    ("plugin instantiations per request on the plugin path", 1, 1),
    ("plugin calls per request on the plugin path", 2, 2),
    ("plugin instantiations per stream on the plugin path", 1, 1),
    ("plugin calls per stream on the plugin path", 14, 17),
    // With the `redact` guard on requests and answers: its request check, and its answer
    // guard's instance, constructor, pushes and finish; the provider costs nothing (plain).
    // Without a guard the counts above are the whole cost: no guard is called. (On the plugin
    // path, before issue 38: 2 instances, 6 calls per request, 26 per stream.)
    ("plugin instantiations per request with redact", 1, 1),
    ("plugin calls per request with redact", 4, 4),
    ("plugin calls per stream with redact", 12, 15),
    // A Messages request to an Anthropic entry with `redact`: its canonical view checked, the
    // native body sent (before guard/native.rs it was translated: 8, 8 and 195 calls). A
    // rewrite costs the dialect's reading of the edited body (+1); a whole answer the
    // provider's canonical reading of it, in place of the dialect's encoding; a stream a second
    // decoder's reads, in place of the dialect encoder's pushes. The mock streams 5-9 byte
    // pieces, so the stream's count moves with how they coalesce.
    ("plugin calls per native request with redact", 8, 10),
    ("plugin calls per native request redact rewrote", 9, 11),
    ("plugin calls per native stream with redact", 202, 250),
    // The response cache, off (no `cache:` section): no key computed, no lookup, no write.
    (
        "cache operations per request and stream with the cache off",
        0,
        0,
    ),
    // One read of the request, one write of the answer, per request, each way.
    ("client socket reads per 10 requests", 10, 12),
    ("client socket writes per 10 requests", 10, 12),
    ("upstream socket reads per 10 requests", 10, 12),
    ("upstream socket writes per 10 requests", 10, 12),
    // A stream of 11 upstream chunks: a read of each (the first may come with the head) and a
    // write of each translated one.
    ("client socket reads per 10 streams", 10, 12),
    ("client socket writes per 10 streams", 107, 130),
    ("upstream socket reads per 10 streams", 107, 130),
    ("upstream socket writes per 10 streams", 10, 12),
];

/// Checks every measured count against its bound; fails naming each one over it.
fn check(measured: &[(&str, u64)]) {
    let mut report = String::new();
    let mut over = Vec::new();
    for (name, value) in measured {
        let &(_, today, bound) = BOUNDS
            .iter()
            .find(|(n, _, _)| n == name)
            .unwrap_or_else(|| panic!("no bound for {name}"));
        writeln!(report, "  {name}: {value} (bound {bound}, today {today})").unwrap();
        if *value > bound {
            over.push(format!("{name} is {value}, over its bound of {bound}"));
        }
    }
    eprintln!("counts:\n{report}");
    assert!(
        over.is_empty(),
        "{}\nall counts:\n{report}",
        over.join("\n")
    );
}

// ---- heap allocations ----------------------------------------------------------------------

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static ALLOCATED_BYTES: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// Set on the threads of the client and the mock upstream, whose allocations are not the
    /// gateway's.
    static UNCOUNTED: Cell<bool> = const { Cell::new(false) };
}

fn note(size: usize) {
    if UNCOUNTED.try_with(Cell::get).unwrap_or(true) {
        return;
    }
    ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    ALLOCATED_BYTES.fetch_add(size as u64, Ordering::Relaxed);
}

// SAFETY: every method forwards to the system allocator with the caller's arguments.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn mark_uncounted() {
    UNCOUNTED.with(|u| u.set(true));
}

/// What one run cost the gateway.
#[derive(Clone, Copy, Default)]
struct Cost {
    allocations: u64,
    bytes: u64,
    instantiations: u64,
    calls: u64,
}

/// The gateway on a runtime of its own (one worker, counted), the mock upstream and the client
/// on the test's thread (uncounted).
struct Rig {
    client: tokio::runtime::Runtime,
    /// Kept alive: the gateway's tasks run on it.
    _server: tokio::runtime::Runtime,
    gateway: TestGateway,
    _mock: MockOpenAi,
    /// The Anthropic mock, for a rig whose requests go to `/v1/messages` natively.
    _anthropic: Option<MockProvider>,
    path: &'static str,
    http: reqwest::Client,
}

impl Rig {
    fn start() -> Self {
        Self::start_with(None)
    }

    /// A rig whose gateway has `guard` on.
    fn start_with(guard: Option<Guard>) -> Self {
        Self::start_on(guard, false)
    }

    /// A rig whose `openai` entry has the host's plain path off (`plain_path: false`): every
    /// request goes through the plugin, as a provider that declares nothing plain does.
    fn start_plugin_path() -> Self {
        Self::start_as(None, false, false)
    }

    /// With `native`, requests are Anthropic Messages to an `anthropic` entry (the strict mock),
    /// which speaks their dialect.
    fn start_on(guard: Option<Guard>, native: bool) -> Self {
        Self::start_as(guard, native, true)
    }

    fn start_as(guard: Option<Guard>, native: bool, plain_path: bool) -> Self {
        mark_uncounted();
        let client = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .on_thread_start(mark_uncounted)
            .build()
            .unwrap();
        let server = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let mock = client.block_on(MockOpenAi::start());
        let anthropic = native.then(|| client.block_on(MockProvider::anthropic()));
        let openai = Provider::at("openai", &mock.base_url(), "sk-test")
            .models([REQUEST_MODEL, STREAM_MODEL])
            .set("plain_path", plain_path);
        let mut config = Gateway::builder().provider("openai", openai);
        if let Some(anthropic) = &anthropic {
            let key = common::mock_providers::KEY;
            let entry =
                Provider::at("anthropic", &anthropic.base_url(), key).models(["claude-sonnet-4-5"]);
            config = config.provider("anthropic", entry);
        }
        if let Some(guard) = guard {
            config = config.guard(guard);
        }
        let gateway = server.block_on(config.start());
        Self {
            client,
            _server: server,
            gateway,
            _mock: mock,
            path: if native {
                "/v1/messages"
            } else {
                "/v1/chat/completions"
            },
            _anthropic: anthropic,
            http: common::http(),
        }
    }

    /// Sends `body` to the chat endpoint and reads the whole answer, which must be a 200.
    async fn chat(&self, body: &serde_json::Value) {
        let response = self
            .http
            .post(self.gateway.url(self.path))
            .header("anthropic-version", "2023-06-01")
            .json(body)
            .send()
            .await
            .unwrap();
        let status = response.status();
        let text = response.text().await.unwrap();
        assert_eq!(status, 200, "{text}");
    }

    /// The least each count took over `runs` runs of `body`, after `runs` runs of warm-up.
    fn cost(&self, body: &serde_json::Value, runs: usize) -> Cost {
        for _ in 0..runs {
            self.client.block_on(self.chat(body));
        }
        let mut least: Option<Cost> = None;
        for _ in 0..runs {
            let work = self.gateway.state.plugins.work();
            let allocations = ALLOCATIONS.load(Ordering::Relaxed);
            let bytes = ALLOCATED_BYTES.load(Ordering::Relaxed);
            self.client.block_on(async {
                self.chat(body).await;
                // What the gateway does once the answer is sent (the request's end: settle,
                // record, telemetry) belongs to the request too.
                tokio::time::sleep(Duration::from_millis(20)).await;
            });
            let after = self.gateway.state.plugins.work();
            let run = Cost {
                allocations: ALLOCATIONS.load(Ordering::Relaxed) - allocations,
                bytes: ALLOCATED_BYTES.load(Ordering::Relaxed) - bytes,
                instantiations: after.instantiations - work.instantiations,
                calls: after.calls - work.calls,
            };
            least = Some(match least {
                None => run,
                Some(l) => Cost {
                    allocations: l.allocations.min(run.allocations),
                    bytes: l.bytes.min(run.bytes),
                    instantiations: l.instantiations.min(run.instantiations),
                    calls: l.calls.min(run.calls),
                },
            });
        }
        least.unwrap()
    }
}

/// The mock's ordinary model: a whole answer, or a stream of 7-byte pieces.
const REQUEST_MODEL: &str = "gpt-4o-mini";
/// The mock's model whose stream sends its 10 chunks 20 ms apart (then usage and `[DONE]`), so
/// each arrives in a read of its own however busy the machine: per-stream counts then do not
/// depend on how pieces happened to coalesce.
const STREAM_MODEL: &str = "paced-200";

fn chat_body(content: &str, stream: bool) -> serde_json::Value {
    let model = if stream { STREAM_MODEL } else { REQUEST_MODEL };
    json!({"model": model, "stream": stream, "messages": [{"role": "user", "content": content}]})
}

/// The tests of this file run one at a time: the other one's threads (a child's log reader
/// among them) would allocate during this one's count.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[test]
fn allocations_and_plugin_calls_per_request_and_per_stream() {
    let _alone = one_at_a_time();
    let rig = Rig::start();
    let cache_before = rig.gateway.state.cache.counts.work();
    let request = rig.cost(&chat_body("Say hello.", false), 7);
    let stream = rig.cost(&chat_body("Say hello.", true), 5);
    let cache_work = rig.gateway.state.cache.counts.work() - cache_before;

    // Bytes allocated per byte of a large request body: how many times the path copies (or
    // re-encodes) the body. The small request's cost is taken off, so what is left is the
    // body's share.
    const LARGE: usize = 256 << 10;
    let large_body = chat_body(&"x".repeat(LARGE), false);
    let large = rig.cost(&large_body, 3);
    let body_bytes = large_body.to_string().len() as u64;
    let per_body_byte = large.bytes.saturating_sub(request.bytes) / body_bytes;

    check(&[
        ("allocations per request", request.allocations),
        ("allocated bytes per request body byte", per_body_byte),
        ("allocations per stream", stream.allocations),
        ("plugin instantiations per request", request.instantiations),
        ("plugin calls per request", request.calls),
        ("plugin instantiations per stream", stream.instantiations),
        ("plugin calls per stream", stream.calls),
        (
            "cache operations per request and stream with the cache off",
            cache_work,
        ),
    ]);
}

/// The plugin's path, which a provider that declares nothing plain takes (and the plain path's
/// fallback for what the host cannot read): `prepare` and `parse-response` in an instance per
/// request; per stream `prepare`, the decoder's constructor, a `push` per chunk and `finish`.
#[test]
fn the_plugin_path_costs_an_instance_and_its_calls() {
    let _alone = one_at_a_time();
    let rig = Rig::start_plugin_path();
    let request = rig.cost(&chat_body("Say hello.", false), 7);
    let stream = rig.cost(&chat_body("Say hello.", true), 5);
    check(&[
        (
            "allocations per request on the plugin path",
            request.allocations,
        ),
        (
            "allocations per stream on the plugin path",
            stream.allocations,
        ),
        (
            "plugin instantiations per request on the plugin path",
            request.instantiations,
        ),
        ("plugin calls per request on the plugin path", request.calls),
        (
            "plugin instantiations per stream on the plugin path",
            stream.instantiations,
        ),
        ("plugin calls per stream on the plugin path", stream.calls),
    ]);
}

#[test]
fn a_guard_costs_its_own_plugin_calls_and_nothing_else() {
    let _alone = one_at_a_time();
    let rig = Rig::start_with(Some(Guard::plugin("redact")));
    // Warm: the guard's request checks run on a warm instance after the first.
    let request = rig.cost(&chat_body("Say hello.", false), 7);
    let stream = rig.cost(&chat_body("Say hello.", true), 5);
    check(&[
        (
            "plugin instantiations per request with redact",
            request.instantiations,
        ),
        ("plugin calls per request with redact", request.calls),
        ("plugin calls per stream with redact", stream.calls),
    ]);
}

/// A Messages request to an Anthropic entry with `redact` on: the guards check its canonical
/// view and the native body goes on (`guard/native.rs`).
#[test]
fn a_guard_on_a_native_request_costs_its_canonical_view() {
    let _alone = one_at_a_time();
    let rig = Rig::start_on(Some(Guard::plugin("redact")), true);
    let body = |content: &str, stream: bool| {
        json!({"model": "anthropic/claude-sonnet-4-5", "max_tokens": 64, "stream": stream,
               "messages": [{"role": "user", "content": content}]})
    };
    let request = rig.cost(&body("Say hello.", false), 7);
    let rewritten = rig.cost(&body("My card is 4111 1111 1111 1111.", false), 5);
    let stream = rig.cost(&body("Say hello.", true), 5);
    check(&[
        ("plugin calls per native request with redact", request.calls),
        (
            "plugin calls per native request redact rewrote",
            rewritten.calls,
        ),
        ("plugin calls per native stream with redact", stream.calls),
    ]);
}

// ---- socket reads and writes ---------------------------------------------------------------

/// Reads and writes on the gateway's sockets, as `strace` saw them.
#[derive(Default, Debug)]
struct Syscalls {
    client_reads: u64,
    client_writes: u64,
    upstream_reads: u64,
    upstream_writes: u64,
}

const READS: &[&str] = &["read", "readv", "recvfrom", "recvmsg", "recvmmsg"];
const WRITES: &[&str] = &["write", "writev", "sendto", "sendmsg", "sendmmsg"];

/// Counts the socket reads and writes of an `strace -f -yy` log: a call on a TCP socket whose
/// local port is the gateway's is on a client connection, one whose peer is the mock's port is
/// on an upstream one. A call split by another thread's (`<unfinished ...>`, later
/// `<... resumed>`) is counted at its first line, which names the descriptor.
fn count_syscalls(log: &str, gateway_port: u16, mock_port: u16) -> Syscalls {
    let client = format!(":{gateway_port}->");
    let upstream = format!("->127.0.0.1:{mock_port}]");
    let mut counted = Syscalls::default();
    for line in log.lines() {
        // `<pid> <name>(<fd><TCP:[local->peer]>, ...`
        let Some(call) = line.split_whitespace().nth(1) else {
            continue;
        };
        let Some((name, args)) = call.split_once('(') else {
            continue;
        };
        // The first argument, the descriptor: `22<TCP:[127.0.0.1:8080->127.0.0.1:50000]>`.
        let fd = args.split_once(">,").map_or(args, |(fd, _)| fd);
        let (read, write) = (READS.contains(&name), WRITES.contains(&name));
        match (fd.contains(&client), fd.contains(&upstream), read, write) {
            (true, _, true, _) => counted.client_reads += 1,
            (true, _, _, true) => counted.client_writes += 1,
            (_, true, true, _) => counted.upstream_reads += 1,
            (_, true, _, true) => counted.upstream_writes += 1,
            _ => {}
        }
    }
    counted
}

/// `strace` attached to every thread of `pid`, writing to `log`, until stopped.
struct Strace {
    child: std::process::Child,
    log: std::path::PathBuf,
}

impl Strace {
    async fn attach(pid: u32, log: std::path::PathBuf) -> Self {
        let names = [READS, WRITES].concat().join(",");
        let child = std::process::Command::new("strace")
            .args(["-f", "-qq", "-yy", "-s", "0", "-e"])
            .arg(format!("trace={names}"))
            .arg("-o")
            .arg(&log)
            .arg("-p")
            .arg(pid.to_string())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("strace is needed (apt-get install strace): {e}"));
        // Attached once every thread of the process names a tracer.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let traced = std::fs::read_dir(format!("/proc/{pid}/task"))
                .unwrap()
                .all(|task| {
                    let status = std::fs::read_to_string(task.unwrap().path().join("status"))
                        .unwrap_or_default();
                    status
                        .lines()
                        .any(|l| l.starts_with("TracerPid:") && l.trim_end() != "TracerPid:\t0")
                });
            if traced {
                break;
            }
            assert!(Instant::now() < deadline, "strace did not attach to {pid}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Self { child, log }
    }

    /// Detaches and returns the log.
    async fn stop(mut self) -> String {
        let pid = i32::try_from(self.child.id()).unwrap();
        // SAFETY: interrupting our own child process, which detaches from its tracees and exits.
        #[allow(unsafe_code)]
        let rc = unsafe { libc::kill(pid, libc::SIGINT) };
        assert_eq!(rc, 0);
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "strace did not exit");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        std::fs::read_to_string(&self.log).unwrap()
    }
}

/// A keep-alive HTTP/1.1 client that writes each request whole, in one write: a client that
/// sends the head and the body apart (as reqwest may) costs the gateway a second read or not
/// depending on timing, which would make the client's read count drift.
struct RawClient {
    socket: tokio::net::TcpStream,
}

impl RawClient {
    async fn connect(port: u16) -> Self {
        let socket = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        socket.set_nodelay(true).unwrap();
        Self { socket }
    }

    /// Posts `body` to the chat endpoint; returns the status and the whole answer.
    async fn post(&mut self, body: &serde_json::Value) -> (u16, String) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let body = body.to_string();
        let request = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\n\
             content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        self.socket.write_all(request.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !whole(&answer) {
            assert!(Instant::now() < deadline, "no whole answer");
            let mut buf = [0u8; 16 << 10];
            let n = tokio::time::timeout(Duration::from_secs(10), self.socket.read(&mut buf))
                .await
                .unwrap()
                .unwrap();
            assert!(n > 0, "the gateway closed the connection");
            answer.extend_from_slice(&buf[..n]);
        }
        let answer = String::from_utf8_lossy(&answer).into_owned();
        let status = answer
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap();
        (status, answer)
    }
}

/// Whether `answer` holds a whole HTTP/1.1 response: its head and a body of its
/// `content-length`, or a chunked body up to its last chunk.
fn whole(answer: &[u8]) -> bool {
    let text = String::from_utf8_lossy(answer).to_ascii_lowercase();
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return false;
    };
    if head.contains("transfer-encoding: chunked") {
        return body.ends_with("0\r\n\r\n");
    }
    head.lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .and_then(|n| n.trim().parse::<usize>().ok())
        .is_some_and(|n| body.len() >= n)
}

#[test]
fn socket_reads_and_writes_per_request_and_per_stream() {
    let _alone = one_at_a_time();
    // This test's threads allocate too, beside the other test's gateway: they are not counted.
    mark_uncounted();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .on_thread_start(mark_uncounted)
        .build()
        .unwrap()
        .block_on(count_socket_calls());
}

async fn count_socket_calls() {
    let mock = MockOpenAi::start().await;
    let dir = common::binary::temp_dir("counts");
    let config = format!(
        "server: {{ host: 127.0.0.1, port: 0 }}\n\
         plugins: {{ cache_dir: {cache} }}\n\
         ledger: {{ url: 'sqlite://{db}' }}\n\
         providers:\n  openai:\n    plugin: openai\n    base_url: {base}\n    api_key: sk-test\n    \
         models: [{REQUEST_MODEL}, {STREAM_MODEL}]\n",
        cache = common::plugin_cache_dir().display(),
        db = dir.join("ledger.db").display(),
        base = mock.base_url(),
    );
    let path = dir.join("config.yaml");
    std::fs::write(&path, config).unwrap();
    let gateway = common::binary::Gateway::serve(&dir, &path).await;
    let mut client = RawClient::connect(gateway.port).await;
    let mut chat = async |stream: bool| {
        let (status, answer) = client.post(&chat_body("Say hello.", stream)).await;
        assert_eq!(status, 200, "{answer}");
    };

    // Counted over ten runs, so a read that only some runs need (one that finds nothing yet)
    // shows as a fraction of one, and a doubled count still stands out.
    const RUNS: u64 = 10;
    let mut per = Vec::new();
    for stream in [false, true] {
        // Warm: the connection pools hold a connection each way.
        for _ in 0..3 {
            chat(stream).await;
        }
        let strace = Strace::attach(gateway.pid(), dir.join(format!("strace-{stream}"))).await;
        for _ in 0..RUNS {
            chat(stream).await;
        }
        // Let the last request end (its record queued, its connection idle) before detaching.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let log = strace.stop().await;
        let counted = count_syscalls(&log, gateway.port, mock.addr.port());
        assert!(
            counted.client_reads > 0 && counted.upstream_writes > 0,
            "strace saw no socket calls: {counted:?}\n{}",
            log.lines().take(20).collect::<Vec<_>>().join("\n")
        );
        per.push(counted);
    }
    let (request, stream) = (&per[0], &per[1]);
    check(&[
        ("client socket reads per 10 requests", request.client_reads),
        (
            "client socket writes per 10 requests",
            request.client_writes,
        ),
        (
            "upstream socket reads per 10 requests",
            request.upstream_reads,
        ),
        (
            "upstream socket writes per 10 requests",
            request.upstream_writes,
        ),
        ("client socket reads per 10 streams", stream.client_reads),
        ("client socket writes per 10 streams", stream.client_writes),
        (
            "upstream socket reads per 10 streams",
            stream.upstream_reads,
        ),
        (
            "upstream socket writes per 10 streams",
            stream.upstream_writes,
        ),
    ]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_strace_log_is_counted_by_socket_and_direction() {
    let log = "\
10 recvfrom(22<TCP:[127.0.0.1:8080->127.0.0.1:50000]>, \"\"..., 8192, 0, NULL, NULL) = 216
10 writev(23<TCP:[127.0.0.1:47962->127.0.0.1:9090]>, [...], 2) = 247
11 recvfrom(23<TCP:[127.0.0.1:47962->127.0.0.1:9090]>, \"\"..., 8192, 0, NULL, NULL) = -1 EAGAIN
11 write(2<pipe:[134284]>, \"\"..., 252) = 252
11 recvfrom(23<TCP:[127.0.0.1:47962->127.0.0.1:9090]>, <unfinished ...>
10 <... recvfrom resumed>\"\"..., 8192, 0, NULL, NULL) = 646
11 writev(22<TCP:[127.0.0.1:8080->127.0.0.1:50000]>, [...], 2) = 782
";
    let counted = count_syscalls(log, 8080, 9090);
    assert_eq!(
        (
            counted.client_reads,
            counted.client_writes,
            counted.upstream_reads,
            counted.upstream_writes
        ),
        (1, 1, 2, 1),
        "{counted:?}"
    );
}
