//! What serving Anthropic's Messages and OpenAI's Responses costs per request, natively and
//! translated by the dialect plugins.
//!
//! `cargo bench --bench dialects` prints:
//! - the dialect plugin calls alone on a warm engine, as the pipeline makes them (a fresh
//!   instance per call): `decode` of a request and `encode` of an answer, for Messages and
//!   Responses, 1 KiB and 100 KiB prompts; and one stream-encoder `push` per canonical chunk;
//! - end to end through the real router against a mock upstream on 127.0.0.1 that speaks chat
//!   completions, `/v1/messages` and `/v1/responses` (whole and streamed, with usage): latency at
//!   concurrency 1 (p50, p99), requests/s and CPU per request at concurrency 64, for chat (the
//!   baseline), Messages native and translated, Responses native and translated (`store: false`,
//!   and with `store` left at its default, which writes each answer to the ledger's database);
//!   then what translation adds over the native path of the same dialect.
//!
//! `BENCH_PLUGIN_ONLY=1` prints only the plugin calls.
//!
//! As in `overhead.rs`, the mock, the gateway and the load generator each run on a one-thread
//! runtime of their own. Bounded in count and time; 127.0.0.1 only.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::routing;
use serde_json::{Value, json};
use wasmgate::config::Config;
use wasmgate::plugins::{AnswerInfo, DialectPlugin, PluginHost, PluginLimits, SlotKind, Usage};

const SEQUENTIAL: usize = 2_000;
const WARM_UP: usize = 100;
const CONCURRENCY: usize = 64;
const CONCURRENT_REQUESTS: usize = 6_000;
const CONCURRENT_LIMIT: Duration = Duration::from_secs(6);
const PLUGIN_CALLS: usize = 1_000;
/// Stream encoders: `ENCODER_CHUNKS` pushes into each of `ENCODER_STREAMS` streams (after two of
/// warm-up).
const ENCODER_STREAMS: usize = 20;
const ENCODER_CHUNKS: usize = 100;

/// Twenty characters of text, as a delta of a typical token or few.
const DELTA: &str = "the quick brown fox ";
/// Deltas in a streamed answer; the whole answer is their text (640 characters).
const DELTAS: usize = 32;
const SYSTEM: &str = "You are a helpful assistant.";

fn runtime(name: &str) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name(name)
        .enable_all()
        .build()
        .unwrap()
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

/// `a - b` in µs, signed (a translated path may measure faster than the native one in noise).
fn delta_us(a: Duration, b: Duration) -> String {
    format!("{:+.1} µs", (a.as_secs_f64() - b.as_secs_f64()) * 1e6)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

fn filler(size: usize) -> String {
    let text = "lorem ipsum dolor sit amet ".repeat(size / 27 + 1);
    text[..size.saturating_sub(150)].to_owned()
}

/// The client requests of each dialect, about `size` bytes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Dialect {
    Chat,
    Messages,
    Responses,
}

impl Dialect {
    /// The dialect plugin's name for its one model-call route.
    fn route(self) -> &'static str {
        match self {
            Self::Chat => "chat",
            Self::Messages => "messages",
            Self::Responses => "responses",
        }
    }

    /// `body` as a dialect plugin's `decode` receives it.
    fn call(self, body: &str) -> wasmgate::plugins::DialectCallRequest {
        wasmgate::plugins::DialectCallRequest {
            route: self.route().to_owned(),
            params: Vec::new(),
            body: body.to_owned(),
        }
    }

    fn path(self) -> &'static str {
        match self {
            Self::Chat => "/v1/chat/completions",
            Self::Messages => "/v1/messages",
            Self::Responses => "/v1/responses",
        }
    }

    /// A request of about `size` bytes; `store: Some(false)` sets Responses' `store`.
    fn request(self, model: &str, size: usize, stream: bool, store: Option<bool>) -> String {
        let prompt = filler(size);
        let mut body = match self {
            Self::Chat => json!({"model": model, "messages": [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": prompt}]}),
            Self::Messages => json!({"model": model, "max_tokens": 1024, "system": SYSTEM,
                "messages": [{"role": "user", "content": prompt}]}),
            Self::Responses => json!({"model": model, "instructions": SYSTEM, "input": [
                {"type": "message", "role": "user",
                 "content": [{"type": "input_text", "text": prompt}]}]}),
        };
        if stream {
            body["stream"] = json!(true);
        }
        if let Some(store) = store {
            body["store"] = json!(store);
        }
        body.to_string()
    }

    /// Bytes every answer in this dialect carries (the last event, for a stream).
    fn marker(self, stream: bool) -> &'static [u8] {
        match (self, stream) {
            (Self::Chat, false) => b"\"chat.completion\"",
            (Self::Chat, true) => b"[DONE]",
            (Self::Messages, false) => b"\"end_turn\"",
            (Self::Messages, true) => b"message_stop",
            (Self::Responses, false) => b"\"completed\"",
            (Self::Responses, true) => b"response.completed",
        }
    }

    fn headers(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Self::Messages => &[("anthropic-version", "2023-06-01")],
            Self::Chat | Self::Responses => &[],
        }
    }
}

fn usage_json() -> Value {
    json!({"prompt_tokens": 200, "completion_tokens": 50, "total_tokens": 250,
           "prompt_tokens_details": {"cached_tokens": 0}})
}

/// An OpenAI chat completion whose text is `text`, with usage.
fn completion(text: &str) -> String {
    json!({"id": "chatcmpl-bench", "object": "chat.completion", "created": 1_700_000_000,
           "model": "gpt-4o-mini", "system_fingerprint": "fp_bench",
           "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                        "logprobs": null, "finish_reason": "stop"}],
           "usage": usage_json()})
    .to_string()
}

/// One `chat.completion.chunk` with `delta` and `finish_reason`.
fn chat_chunk(delta: Value, finish: Option<&str>) -> String {
    json!({"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1_700_000_000,
           "model": "gpt-4o-mini", "system_fingerprint": "fp_bench",
           "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]})
    .to_string()
}

/// The answers the mock gives, whole and streamed, in each wire format: the same 640
/// characters of text and the same usage.
struct Answers {
    chat: Bytes,
    chat_stream: Bytes,
    messages: Bytes,
    messages_stream: Bytes,
    responses: Bytes,
    responses_stream: Bytes,
}

fn sse(events: &[Value], named: bool) -> String {
    let mut text = String::new();
    for event in events {
        if named {
            let name = event["type"].as_str().unwrap_or_default();
            text.push_str(&format!("event: {name}\n"));
        }
        text.push_str(&format!("data: {event}\n\n"));
    }
    text
}

fn answers() -> Answers {
    let text = DELTA.repeat(DELTAS);
    let chat_stream = {
        let mut events = vec![chat_chunk(
            json!({"role": "assistant", "content": ""}),
            None,
        )];
        events.extend((0..DELTAS).map(|_| chat_chunk(json!({"content": DELTA}), None)));
        events.push(chat_chunk(json!({}), Some("stop")));
        let mut usage: Value = serde_json::from_str(&chat_chunk(json!({}), None)).unwrap();
        usage["choices"] = json!([]);
        usage["usage"] = usage_json();
        events.push(usage.to_string());
        let mut text: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
        text.push_str("data: [DONE]\n\n");
        text
    };
    let messages_usage = json!({"input_tokens": 200, "output_tokens": 50,
        "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0});
    let message = |content: Value, stop: Value, usage: Value| {
        json!({"id": "msg_bench", "type": "message", "role": "assistant",
               "model": "claude-sonnet-4-5", "content": content, "stop_reason": stop,
               "stop_sequence": null, "usage": usage})
    };
    let messages_stream = {
        let mut events = vec![
            json!({"type": "message_start", "message": message(json!([]), Value::Null,
                json!({"input_tokens": 200, "output_tokens": 1,
                       "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}))}),
            json!({"type": "content_block_start", "index": 0,
                   "content_block": {"type": "text", "text": ""}}),
        ];
        events.extend((0..DELTAS).map(|_| {
            json!({"type": "content_block_delta", "index": 0,
                   "delta": {"type": "text_delta", "text": DELTA}})
        }));
        events.push(json!({"type": "content_block_stop", "index": 0}));
        events.push(json!({"type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": null},
            "usage": messages_usage.clone()}));
        events.push(json!({"type": "message_stop"}));
        sse(&events, true)
    };
    let response = |status: &str, output: Value, usage: Value| {
        json!({"id": "resp_bench", "object": "response", "created_at": 1_741_476_542,
               "status": status, "error": null, "incomplete_details": null,
               "instructions": SYSTEM, "max_output_tokens": null, "model": "gpt-4o-mini",
               "output": output, "parallel_tool_calls": true, "previous_response_id": null,
               "reasoning": {"effort": null, "summary": null}, "store": false,
               "temperature": 1.0, "text": {"format": {"type": "text"}}, "tool_choice": "auto",
               "tools": [], "top_p": 1.0, "truncation": "disabled", "usage": usage,
               "metadata": {}})
    };
    let part = |text: &str| json!({"type": "output_text", "text": text, "annotations": []});
    let item = |status: &str, content: Value| {
        json!({"id": "msg_bench", "type": "message", "status": status, "role": "assistant",
               "content": content})
    };
    let responses_usage = json!({"input_tokens": 200,
        "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 50,
        "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 250});
    let done = response(
        "completed",
        json!([item("completed", json!([part(&text)]))]),
        responses_usage,
    );
    let responses_stream = {
        let pending = response("in_progress", json!([]), Value::Null);
        let at = |mut event: Value| {
            event["item_id"] = json!("msg_bench");
            event["output_index"] = json!(0);
            event["content_index"] = json!(0);
            event
        };
        let mut events = vec![
            json!({"type": "response.created", "response": pending}),
            json!({"type": "response.in_progress", "response": pending}),
            json!({"type": "response.output_item.added", "output_index": 0,
                   "item": item("in_progress", json!([]))}),
            at(json!({"type": "response.content_part.added", "part": part("")})),
        ];
        events.extend(
            (0..DELTAS).map(|_| at(json!({"type": "response.output_text.delta", "delta": DELTA}))),
        );
        events.push(at(
            json!({"type": "response.output_text.done", "text": text}),
        ));
        events.push(at(
            json!({"type": "response.content_part.done", "part": part(&text)}),
        ));
        events.push(
            json!({"type": "response.output_item.done", "output_index": 0,
                           "item": item("completed", json!([part(&text)]))}),
        );
        events.push(json!({"type": "response.completed", "response": done.clone()}));
        for (sequence, event) in events.iter_mut().enumerate() {
            event["sequence_number"] = json!(sequence);
        }
        sse(&events, true)
    };
    Answers {
        chat: completion(&text).into(),
        chat_stream: chat_stream.into(),
        messages: message(
            json!([{"type": "text", "text": text}]),
            json!("end_turn"),
            messages_usage,
        )
        .to_string()
        .into(),
        messages_stream: messages_stream.into(),
        responses: done.to_string().into(),
        responses_stream: responses_stream.into(),
    }
}

/// Requests the mock answered, per endpoint (chat, messages, responses).
type Hits = Arc<[AtomicUsize; 3]>;

#[derive(serde::Deserialize)]
struct StreamFlag {
    #[serde(default)]
    stream: bool,
}

/// A fast upstream that answers each endpoint with its precomputed answer, streamed when the
/// request says `"stream": true` (in one write: the upstream is not what is measured).
fn start_mock(rt: &tokio::runtime::Runtime) -> (SocketAddr, Hits) {
    let answers = Arc::new(answers());
    let hits: Hits = Arc::new([const { AtomicUsize::new(0) }; 3]);
    let counted = Arc::clone(&hits);
    let addr = rt.block_on(async move {
        let endpoint = move |index: usize| {
            let (answers, hits) = (Arc::clone(&answers), Arc::clone(&counted));
            routing::post(move |body: Bytes| async move {
                hits[index].fetch_add(1, Ordering::Relaxed);
                let stream = serde_json::from_slice::<StreamFlag>(&body)
                    .map(|f| f.stream)
                    .unwrap_or(false);
                let (whole, streamed) = match index {
                    0 => (&answers.chat, &answers.chat_stream),
                    1 => (&answers.messages, &answers.messages_stream),
                    _ => (&answers.responses, &answers.responses_stream),
                };
                if stream {
                    ([("content-type", "text/event-stream")], streamed.clone())
                } else {
                    ([("content-type", "application/json")], whole.clone())
                }
            })
        };
        let app = Router::new()
            .route("/v1/chat/completions", endpoint(0))
            .route("/v1/messages", endpoint(1))
            .route("/v1/responses", endpoint(2));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        addr
    });
    (addr, hits)
}

/// The gateway with three entries on the mock: `openai` (Responses native), `openai-chat`
/// (Responses translated) and `anthropic` (Messages native); the ledger in a SQLite file.
fn start_gateway(rt: &tokio::runtime::Runtime, upstream: SocketAddr, ledger: &Path) -> SocketAddr {
    let yaml = format!(
        "observability: {{ log_level: error }}
ledger: {{ url: 'sqlite://{ledger}' }}
providers:
  openai: {{ plugin: openai, base_url: 'http://{upstream}/v1', api_key: sk-bench, models: [gpt-4o-mini], options: {{ responses: native }} }}
  openai-chat: {{ plugin: openai, base_url: 'http://{upstream}/v1', api_key: sk-bench, models: [gpt-4o-mini], options: {{ responses: translate }} }}
  anthropic: {{ plugin: anthropic, base_url: 'http://{upstream}/v1', api_key: sk-ant-bench, models: [claude-sonnet-4-5] }}
",
        ledger = ledger.display()
    );
    rt.block_on(async move {
        let config = Config::from_yaml(&yaml).unwrap();
        wasmgate::telemetry::init(&config.observability);
        let state = wasmgate::build_state(config).await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(wasmgate::server::run(
            listener,
            state,
            std::future::pending(),
        ));
        addr
    })
}

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(CONCURRENCY * 2)
        .build()
        .unwrap()
}

/// One request as the load generator sends it, and what its answer must contain.
#[derive(Clone)]
struct Call {
    url: String,
    body: String,
    headers: &'static [(&'static str, &'static str)],
    marker: &'static [u8],
}

async fn send(client: &reqwest::Client, call: &Call) {
    let mut request = client
        .post(&call.url)
        .header("content-type", "application/json")
        .body(call.body.clone());
    for (name, value) in call.headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let bytes = response.bytes().await.unwrap();
    assert_eq!(
        status,
        200,
        "{}: {}",
        call.url,
        String::from_utf8_lossy(&bytes)
    );
    assert!(
        memchr::memmem::find(&bytes, call.marker).is_some(),
        "{}: no {} in {}",
        call.url,
        String::from_utf8_lossy(call.marker),
        String::from_utf8_lossy(&bytes)
    );
}

/// CPU time this process has used, all threads.
fn process_cpu() -> Duration {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given.
    #[allow(unsafe_code)]
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// One path's figures.
#[derive(Clone, Copy)]
struct Measured {
    p50: Duration,
    p99: Duration,
    rps: f64,
    /// CPU per request of the whole process (client, gateway and mock) at concurrency 64.
    cpu: Duration,
    requests: usize,
}

fn measure(load: &tokio::runtime::Runtime, call: &Call) -> Measured {
    let (p50, p99) = load.block_on(async {
        let client = client();
        for _ in 0..WARM_UP {
            send(&client, call).await;
        }
        let mut times = Vec::with_capacity(SEQUENTIAL);
        for _ in 0..SEQUENTIAL {
            let started = Instant::now();
            send(&client, call).await;
            times.push(started.elapsed());
        }
        times.sort();
        (percentile(&times, 0.50), percentile(&times, 0.99))
    });
    let cpu_before = process_cpu();
    let (requests, rps) = load.block_on(async {
        let client = client();
        let started = Instant::now();
        let next = Arc::new(AtomicUsize::new(0));
        let workers: Vec<_> = (0..CONCURRENCY)
            .map(|_| {
                let (client, next, call) = (client.clone(), Arc::clone(&next), call.clone());
                tokio::spawn(async move {
                    let mut done = 0usize;
                    while next.fetch_add(1, Ordering::Relaxed) < CONCURRENT_REQUESTS
                        && started.elapsed() < CONCURRENT_LIMIT
                    {
                        send(&client, &call).await;
                        done += 1;
                    }
                    done
                })
            })
            .collect();
        let mut total = 0;
        for worker in workers {
            total += worker.await.unwrap();
        }
        (total, total as f64 / started.elapsed().as_secs_f64())
    });
    let cpu = (process_cpu() - cpu_before) / u32::try_from(requests.max(1)).unwrap_or(u32::MAX);
    Measured {
        p50,
        p99,
        rps,
        cpu,
        requests,
    }
}

/// A path through the gateway: the client's dialect, the model it names, and which of the
/// mock's endpoints must receive it.
struct GatewayPath {
    label: &'static str,
    dialect: Dialect,
    model: &'static str,
    store: Option<bool>,
    upstream: Dialect,
}

const PATHS: [GatewayPath; 7] = [
    GatewayPath {
        label: "chat → openai (baseline)",
        dialect: Dialect::Chat,
        model: "openai/gpt-4o-mini",
        store: None,
        upstream: Dialect::Chat,
    },
    GatewayPath {
        label: "messages native (anthropic)",
        dialect: Dialect::Messages,
        model: "anthropic/claude-sonnet-4-5",
        store: None,
        upstream: Dialect::Messages,
    },
    GatewayPath {
        label: "messages translated (→ openai chat)",
        dialect: Dialect::Messages,
        model: "openai/gpt-4o-mini",
        store: None,
        upstream: Dialect::Chat,
    },
    GatewayPath {
        label: "responses native, `store: false`",
        dialect: Dialect::Responses,
        model: "openai/gpt-4o-mini",
        store: Some(false),
        upstream: Dialect::Responses,
    },
    GatewayPath {
        label: "responses translated (→ openai chat), `store: false`",
        dialect: Dialect::Responses,
        model: "openai-chat/gpt-4o-mini",
        store: Some(false),
        upstream: Dialect::Chat,
    },
    GatewayPath {
        label: "responses native, `store` default (kept in the ledger's database)",
        dialect: Dialect::Responses,
        model: "openai/gpt-4o-mini",
        store: None,
        upstream: Dialect::Responses,
    },
    GatewayPath {
        label: "responses translated, `store` default (kept in the ledger's database)",
        dialect: Dialect::Responses,
        model: "openai-chat/gpt-4o-mini",
        store: None,
        upstream: Dialect::Chat,
    },
];

fn endpoint_index(dialect: Dialect) -> usize {
    match dialect {
        Dialect::Chat => 0,
        Dialect::Messages => 1,
        Dialect::Responses => 2,
    }
}

fn end_to_end() {
    let mock_rt = runtime("mock");
    let gateway_rt = runtime("gateway");
    let load_rt = runtime("load");
    let (mock, hits) = start_mock(&mock_rt);
    let dir = std::env::temp_dir().join(format!("wasmgate-bench-dialects-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let gateway = start_gateway(&gateway_rt, mock, &dir.join("ledger.db"));

    println!(
        "\nend to end: 1 KiB prompt, 640-character answer ({DELTAS} deltas when streamed), mock upstream on 127.0.0.1"
    );
    println!(
        "concurrency 1: {SEQUENTIAL} requests after {WARM_UP}; concurrency {CONCURRENCY}: up to {CONCURRENT_REQUESTS} requests or {}s; CPU per request: client + gateway + mock",
        CONCURRENT_LIMIT.as_secs()
    );
    for stream in [false, true] {
        let mut direct = Vec::new();
        println!("\n{}", if stream { "streamed" } else { "whole answers" });
        println!(
            "| path | p50 | p99 | requests/s (c{CONCURRENCY}) | CPU per request | requests/s ÷ direct | p50 added over direct |"
        );
        println!("|---|---|---|---|---|---|---|");
        for dialect in [Dialect::Chat, Dialect::Messages, Dialect::Responses] {
            let call = Call {
                url: format!("http://{mock}{}", dialect.path()),
                body: dialect.request("gpt-4o-mini", 1024, stream, Some(false)),
                headers: dialect.headers(),
                marker: dialect.marker(stream),
            };
            let m = measure(&load_rt, &call);
            println!(
                "| direct to mock, `{}` | {} | {} | {:.0} | {} | 1.00 | |",
                dialect.path(),
                us(m.p50),
                us(m.p99),
                m.rps,
                us(m.cpu)
            );
            direct.push((dialect, m));
        }
        let mut through = Vec::new();
        for path in &PATHS {
            let call = Call {
                url: format!("http://{gateway}{}", path.dialect.path()),
                body: path.dialect.request(path.model, 1024, stream, path.store),
                headers: path.dialect.headers(),
                marker: path.dialect.marker(stream),
            };
            let before: Vec<usize> = hits.iter().map(|h| h.load(Ordering::Relaxed)).collect();
            let m = measure(&load_rt, &call);
            // Each request reached the endpoint the path claims, and only that one.
            let sent = WARM_UP + SEQUENTIAL + m.requests;
            for (index, hit) in hits.iter().enumerate() {
                let got = hit.load(Ordering::Relaxed) - before[index];
                let want = if index == endpoint_index(path.upstream) {
                    sent
                } else {
                    0
                };
                assert_eq!(got, want, "{}: upstream endpoint {index}", path.label);
            }
            let (_, d) = direct
                .iter()
                .find(|(dialect, _)| *dialect == path.dialect)
                .unwrap();
            println!(
                "| {} | {} | {} | {:.0} | {} | {:.2} | {} |",
                path.label,
                us(m.p50),
                us(m.p99),
                m.rps,
                us(m.cpu),
                m.rps / d.rps,
                delta_us(m.p50, d.p50)
            );
            through.push(m);
        }
        println!(
            "\nadded by translation over the native path of the same dialect ({})",
            if stream { "streamed" } else { "whole answers" }
        );
        println!("| dialect | p50 | p99 | CPU per request | requests/s native → translated |");
        println!("|---|---|---|---|---|");
        for (label, native, translated) in [
            ("messages", 1, 2),
            ("responses, `store: false`", 3, 4),
            ("responses, `store` default", 5, 6),
        ] {
            let (n, t) = (through[native], through[translated]);
            println!(
                "| {label} | {} | {} | {} | {:.0} → {:.0} |",
                delta_us(t.p50, n.p50),
                delta_us(t.p99, n.p99),
                delta_us(t.cpu, n.cpu),
                n.rps,
                t.rps
            );
        }
    }
    drop(load_rt);
    drop(gateway_rt);
    drop(mock_rt);
    let _ = std::fs::remove_dir_all(&dir);
}

fn plugin_host() -> PluginHost {
    let limits = PluginLimits {
        cpu_budget: Duration::from_millis(500),
        wall_backstop: Duration::from_secs(5),
        memory_bytes: 64 << 20,
        max_instances: 64,
        max_stream_instances: 48,
        instance_wait: Duration::from_secs(2),
    };
    let cache = std::env::temp_dir().join("wasmgate-bench-cache");
    PluginHost::new(
        limits,
        Some(cache),
        wasmgate::tokenizer::Tokenizer,
        Arc::new(wasmgate::telemetry::Telemetry::without_traces()),
    )
    .unwrap()
}

fn usage() -> Usage {
    Usage {
        input_tokens: 200,
        output_tokens: 50,
        cached_input_tokens: 0,
        cache_write_tokens: 0,
        reasoning_tokens: 0,
        images: 0,
        search_units: 0,
        audio_ms: 0,
        characters: 0,
    }
}

/// Means of the parts of a call on a fresh instance, and its total's mean and p50.
struct Timed {
    mean: Duration,
    p50: Duration,
    instantiate: Duration,
    call: Duration,
    drop: Duration,
}

/// Times `PLUGIN_CALLS` runs (after a tenth as many of warm-up) of: a fresh instance, `f` on it,
/// the drop, as the pipeline calls a dialect plugin.
async fn fresh_calls<F>(plugin: &DialectPlugin, mut f: F) -> Timed
where
    F: AsyncFnMut(&mut wasmgate::plugins::DialectCall),
{
    let mut times = Vec::with_capacity(PLUGIN_CALLS);
    let mut parts = [Duration::ZERO; 3];
    for i in 0..PLUGIN_CALLS + PLUGIN_CALLS / 10 {
        let started = Instant::now();
        let mut call = plugin.start(SlotKind::Call).await.unwrap();
        let instantiated = Instant::now();
        f(&mut call).await;
        let called = Instant::now();
        drop(call);
        let took = started.elapsed();
        if i >= PLUGIN_CALLS / 10 {
            times.push(took);
            parts[0] += instantiated - started;
            parts[1] += called - instantiated;
            parts[2] += took - (called - started);
        }
    }
    let n = times.len() as u32;
    let mean = times.iter().sum::<Duration>() / n;
    times.sort();
    Timed {
        mean,
        p50: percentile(&times, 0.5),
        instantiate: parts[0] / n,
        call: parts[1] / n,
        drop: parts[2] / n,
    }
}

fn print_plugin_calls() {
    println!(
        "\ndialect plugin calls, warm engine, a fresh instance per call as the pipeline makes them ({PLUGIN_CALLS} calls after {})",
        PLUGIN_CALLS / 10
    );
    println!("| plugin | call | body | mean | p50 | instantiate / call / drop (means) |");
    println!("|---|---|---|---|---|---|");
    let rt = runtime("plugin-call");
    rt.block_on(async {
        let host = plugin_host();
        let nowhere = Path::new("/nonexistent");
        for (name, dialect) in [
            ("anthropic-messages", Dialect::Messages),
            ("openai-responses", Dialect::Responses),
        ] {
            let plugin = host.load_dialect(name, nowhere).unwrap();
            for size in [1024, 100 * 1024] {
                let body = dialect.request("openai/gpt-4o-mini", size, false, Some(false));
                let request = dialect.call(&body);
                let mut echo = String::new();
                let decode = fresh_calls(&plugin, async |call| {
                    let decoded = call.decode(&request).await.unwrap().unwrap();
                    assert!(decoded.body.len() > size / 2, "{name}: the prompt survived");
                    echo = decoded.echo;
                })
                .await;
                let info = AnswerInfo {
                    route: dialect.route().into(),
                    model: "openai/gpt-4o-mini".into(),
                    id: "resp_0123456789abcdef0123456789abcdef".into(),
                    created: 1_700_000_000,
                    estimated_input_tokens: 200,
                    echo: echo.clone(),
                };
                let answer = completion(&"x".repeat(size.saturating_sub(350)));
                let encode = fresh_calls(&plugin, async |call| {
                    let encoded = call
                        .encode(&info, &answer, Some(usage()))
                        .await
                        .unwrap()
                        .unwrap();
                    assert!(encoded.len() > size / 2, "{name}: the answer survived");
                })
                .await;
                for (what, t, bytes) in [
                    ("decode", decode, body.len()),
                    ("encode", encode, answer.len()),
                ] {
                    println!(
                        "| `{name}` | {what} | {:.1} KiB | {} | {} | {} / {} / {} |",
                        bytes as f64 / 1024.0,
                        us(t.mean),
                        us(t.p50),
                        us(t.instantiate),
                        us(t.call),
                        us(t.drop)
                    );
                }
            }
        }
        print_encoders(&host).await;
    });
}

/// One `push` of a canonical text-delta chunk into a live stream encoder.
async fn print_encoders(host: &PluginHost) {
    println!(
        "\nstream encoders, one `chat.completion.chunk` (a {}-character text delta) per push, {ENCODER_STREAMS} streams x {ENCODER_CHUNKS} pushes",
        DELTA.len()
    );
    println!("| plugin | chunk bytes | events out per push | mean per push | p50 per push |");
    println!("|---|---|---|---|---|");
    let opening = chat_chunk(json!({"role": "assistant", "content": ""}), None);
    let chunk = chat_chunk(json!({"content": DELTA}), None);
    let closing = chat_chunk(json!({}), Some("stop"));
    for name in ["anthropic-messages", "openai-responses"] {
        let plugin = host.load_dialect(name, Path::new("/nonexistent")).unwrap();
        let dialect = if name == "anthropic-messages" {
            Dialect::Messages
        } else {
            Dialect::Responses
        };
        let body = dialect.request("openai/gpt-4o-mini", 1024, true, Some(false));
        let mut call = plugin.start(SlotKind::Call).await.unwrap();
        let echo = call
            .decode(&dialect.call(&body))
            .await
            .unwrap()
            .unwrap()
            .echo;
        drop(call);
        let info = AnswerInfo {
            route: dialect.route().into(),
            model: "openai/gpt-4o-mini".into(),
            id: "msg_0123456789abcdef0123456789abcdef".into(),
            created: 1_700_000_000,
            estimated_input_tokens: 200,
            echo,
        };
        let mut times = Vec::with_capacity(ENCODER_STREAMS * ENCODER_CHUNKS);
        let mut events_out = 0;
        for stream_no in 0..ENCODER_STREAMS + 2 {
            let call = plugin.start(SlotKind::Stream).await.unwrap();
            let mut stream = call.open_stream(&info).await.unwrap();
            stream
                .push(std::slice::from_ref(&opening))
                .await
                .unwrap()
                .unwrap();
            // The first text delta opens the content block (or output item): untimed.
            let first = stream
                .push(std::slice::from_ref(&chunk))
                .await
                .unwrap()
                .unwrap();
            assert!(!first.is_empty(), "{name}: the first delta yields events");
            for _ in 0..ENCODER_CHUNKS {
                let started = Instant::now();
                let out = stream
                    .push(std::slice::from_ref(&chunk))
                    .await
                    .unwrap()
                    .unwrap();
                let took = started.elapsed();
                assert!(!out.is_empty(), "{name}: each delta yields an event");
                if stream_no >= 2 {
                    times.push(took);
                    events_out += out.len();
                }
            }
            stream
                .push(std::slice::from_ref(&closing))
                .await
                .unwrap()
                .unwrap();
            let end = stream.finish(Some(usage())).await.unwrap().unwrap();
            assert!(!end.is_empty(), "{name}: the stream closes with events");
        }
        let n = times.len();
        let mean = times.iter().sum::<Duration>() / n as u32;
        times.sort();
        println!(
            "| `{name}` | {} | {:.1} | {} | {} |",
            chunk.len(),
            events_out as f64 / n as f64,
            us(mean),
            us(percentile(&times, 0.5))
        );
    }
}

fn main() {
    println!(
        "wasmgate dialects benchmark ({} cores)",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    print_plugin_calls();
    if std::env::var_os("BENCH_PLUGIN_ONLY").is_some() {
        return;
    }
    end_to_end();
}
