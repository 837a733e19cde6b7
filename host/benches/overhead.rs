//! What the gateway adds over calling an upstream directly, and what one plugin call costs.
//!
//! `cargo bench --bench overhead` prints:
//! - latency at concurrency 1 (p50, p99): a direct call to a mock OpenAI upstream, the same call
//!   through the gateway (`openai` plugin), and the difference;
//! - throughput at concurrency 64, direct and through the gateway, and their ratio;
//! - one provider-plugin call (fresh instance + prepare + parse-response) for 1 KiB and 100 KiB
//!   bodies;
//! - what tracing and metrics cost per request, with metrics only and with spans exported to an
//!   OTLP/HTTP collector on 127.0.0.1 (`BENCH_TELEMETRY_ONLY=1` runs only this part);
//! - one `push` into each provider's stream decoder (openai, anthropic, gemini, cohere,
//!   azure-openai, bedrock), per chunk of one text-delta event in that provider's wire format.
//!
//! `BENCH_PLUGIN_ONLY=1` prints only the plugin calls and decoders, `BENCH_DECODERS=1` only the
//! decoders.
//!
//! The mock, the gateway and the load generator each run on a one-thread runtime of their own, so
//! the gateway has one core's worth of CPU, as when the peers were measured. Bounded in count and
//! time; 127.0.0.1 only.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing;
use serde_json::json;
use wasmgate::config::Config;
use wasmgate::plugins::{
    CanonicalRequest, HttpResponse, Operation, PluginHost, PluginLimits, Prepared, RequestInfo,
};

const SEQUENTIAL: usize = 3_000;
const CONCURRENCY: usize = 64;
const CONCURRENT_REQUESTS: usize = 20_000;
const CONCURRENT_LIMIT: Duration = Duration::from_secs(20);
const PLUGIN_CALLS: usize = 2_000;

fn runtime(name: &str) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name(name)
        .enable_all()
        .build()
        .unwrap()
}

/// A chat request of about `size` bytes.
fn chat_body(model: &str, size: usize) -> String {
    let filler = "lorem ipsum dolor sit amet ".repeat(size / 27 + 1);
    json!({"model": model, "messages": [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": &filler[..size.saturating_sub(150)]}
    ]})
    .to_string()
}

/// An OpenAI chat completion of about `size` bytes, with usage.
fn completion_body(size: usize) -> String {
    let content = "x".repeat(size.saturating_sub(350));
    json!({"id": "chatcmpl-bench", "object": "chat.completion", "created": 1_700_000_000,
           "model": "gpt-4o-mini", "system_fingerprint": "fp_bench",
           "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                        "logprobs": null, "finish_reason": "stop"}],
           "usage": {"prompt_tokens": 200, "completion_tokens": 50, "total_tokens": 250,
                     "prompt_tokens_details": {"cached_tokens": 0}}})
    .to_string()
}

fn start_mock(rt: &tokio::runtime::Runtime) -> SocketAddr {
    let reply = Arc::new(completion_body(1024));
    rt.block_on(async move {
        let app = Router::new().route(
            "/v1/chat/completions",
            routing::post(move |_body: axum::body::Bytes| {
                let reply = Arc::clone(&reply);
                async move { ([("content-type", "application/json")], (*reply).clone()) }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        addr
    })
}

fn start_gateway(rt: &tokio::runtime::Runtime, upstream: SocketAddr) -> SocketAddr {
    let yaml = format!(
        "observability: {{ log_level: error }}\nledger: {{ url: 'sqlite::memory:' }}\nproviders:\n  openai:\n    plugin: openai\n    base_url: http://{upstream}/v1\n    api_key: sk-bench\n    models: [gpt-4o-mini]\n"
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

async fn post(client: &reqwest::Client, url: &str, body: &str) {
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    response.bytes().await.unwrap();
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

/// p50 and p99 of `SEQUENTIAL` one-at-a-time requests.
fn sequential(load: &tokio::runtime::Runtime, url: &str, body: &str) -> (Duration, Duration) {
    load.block_on(async {
        let client = client();
        for _ in 0..200 {
            post(&client, url, body).await;
        }
        let mut times = Vec::with_capacity(SEQUENTIAL);
        for _ in 0..SEQUENTIAL {
            let started = Instant::now();
            post(&client, url, body).await;
            times.push(started.elapsed());
        }
        times.sort();
        (percentile(&times, 0.50), percentile(&times, 0.99))
    })
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

/// Requests per second with `CONCURRENCY` requests in flight, and the CPU time per request of
/// the whole process (client, gateway and mock together).
fn concurrent(load: &tokio::runtime::Runtime, url: &str, body: &str) -> (f64, Duration) {
    let cpu_before = process_cpu();
    let result = load.block_on(async {
        let client = client();
        let started = Instant::now();
        let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let workers: Vec<_> = (0..CONCURRENCY)
            .map(|_| {
                let (client, next, url, body) = (
                    client.clone(),
                    Arc::clone(&next),
                    url.to_owned(),
                    body.to_owned(),
                );
                tokio::spawn(async move {
                    let mut done = 0usize;
                    while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                        < CONCURRENT_REQUESTS
                        && started.elapsed() < CONCURRENT_LIMIT
                    {
                        post(&client, &url, &body).await;
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
    let cpu = process_cpu() - cpu_before;
    (
        result.1,
        cpu / u32::try_from(result.0.max(1)).unwrap_or(u32::MAX),
    )
}

/// Mean and p50 of a fresh instance + prepare + parse-response.
fn plugin_call(size: usize) -> (Duration, Duration) {
    let rt = runtime("plugin-call");
    rt.block_on(async {
        let limits = PluginLimits {
            cpu_budget: Duration::from_millis(200),
            wall_backstop: Duration::from_secs(2),
            memory_bytes: 64 << 20,
            max_instances: 64,
            max_stream_instances: 48,
            instance_wait: Duration::from_secs(2),
        };
        let cache = std::env::temp_dir().join("wasmgate-bench-cache");
        let host = PluginHost::new(
            limits,
            Some(cache),
            wasmgate::tokenizer::Tokenizer,
            std::sync::Arc::new(wasmgate::telemetry::Telemetry::without_traces()),
        )
        .unwrap();
        let plugin = host
            .load_provider("openai", std::path::Path::new("/nonexistent"))
            .unwrap();
        let config = wasmgate::plugins::ProviderConfig {
            name: "openai".into(),
            base_url: Some("http://127.0.0.1:9/v1".into()),
            api_key: Some("sk-bench".into()),
            models: vec!["gpt-4o-mini".into()],
            options: "{}".into(),
        };
        let request = CanonicalRequest {
            native: None,
            operation: Operation::ChatCompletions,
            model: "gpt-4o-mini".into(),
            body: chat_body("gpt-4o-mini", size),
            stream: false,
            headers: Vec::new(),
        };
        let info = RequestInfo {
            native: None,
            operation: Operation::ChatCompletions,
            model: "gpt-4o-mini".into(),
            stream: false,
        };
        let response = HttpResponse {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: completion_body(size).into_bytes(),
        };
        let mut times = Vec::with_capacity(PLUGIN_CALLS);
        let mut parts = [Duration::ZERO; 4];
        for i in 0..PLUGIN_CALLS + 200 {
            let started = Instant::now();
            let mut call = plugin
                .start(wasmgate::plugins::SlotKind::Call)
                .await
                .unwrap();
            let instantiated = Instant::now();
            let prepared = call.prepare(&config, &request).await.unwrap().unwrap();
            assert!(matches!(prepared, Prepared::Upstream(_)));
            let prepared_at = Instant::now();
            let completion = call
                .parse_response(&config, &info, &response)
                .await
                .unwrap()
                .unwrap();
            assert!(completion.usage.is_some());
            let parsed = Instant::now();
            drop(call);
            if i >= 200 {
                times.push(started.elapsed());
                parts[0] += instantiated - started;
                parts[1] += prepared_at - instantiated;
                parts[2] += parsed - prepared_at;
                parts[3] += started.elapsed() - (parsed - started);
            }
        }
        let n = times.len() as u32;
        println!(
            "  {} KiB: instantiate {}, prepare {}, parse-response {}, drop {} (means)",
            size / 1024,
            us(parts[0] / n),
            us(parts[1] / n),
            us(parts[2] / n),
            us(parts[3] / n)
        );
        let mean = times.iter().sum::<Duration>() / n;
        times.sort();
        (mean, percentile(&times, 0.5))
    })
}

/// Mean and p50 of `calls` runs of `f`, after a warm-up.
async fn time_calls<F: AsyncFnMut()>(calls: usize, mut f: F) -> (Duration, Duration) {
    for _ in 0..200 {
        f().await;
    }
    let mut times = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        f().await;
        times.push(started.elapsed());
    }
    let mean = times.iter().sum::<Duration>() / times.len() as u32;
    times.sort();
    (mean, percentile(&times, 0.5))
}

/// A router call (fallback over three targets) and a limiter check (rate-limit, in-memory
/// counters): what each adds to a request that uses it.
fn policy_calls() -> [(String, Duration, Duration); 2] {
    use wasmgate::plugins::{CircuitState, LimitRequest, RouteRequest, RouteTarget};
    let rt = runtime("policy-call");
    rt.block_on(async {
        let limits = PluginLimits {
            cpu_budget: Duration::from_millis(200),
            wall_backstop: Duration::from_secs(2),
            memory_bytes: 64 << 20,
            max_instances: 64,
            max_stream_instances: 48,
            instance_wait: Duration::from_secs(2),
        };
        let cache = std::env::temp_dir().join("wasmgate-bench-cache");
        let host = PluginHost::new(
            limits,
            Some(cache),
            wasmgate::tokenizer::Tokenizer,
            std::sync::Arc::new(wasmgate::telemetry::Telemetry::without_traces()),
        )
        .unwrap();
        let nowhere = std::path::Path::new("/nonexistent");
        let router = host.load_router("fallback", nowhere).unwrap();
        let targets: Vec<RouteTarget> = ["a/m", "b/m", "c/m"]
            .iter()
            .map(|id| RouteTarget {
                id: (*id).into(),
                provider: id[..1].into(),
                model: "m".into(),
                weight: 1,
                input_price: Some(0.15),
                output_price: Some(0.6),
                in_flight: 0,
                latency_ms: Some(120.0),
                ttft_ms: None,
                tokens_per_second: None,
                error_rate: 0.0,
                circuit: CircuitState::Closed,
            })
            .collect();
        let request = RouteRequest {
            model: "smart".into(),
            project: "default".into(),
            user_id: Some("u1".into()),
            user_name: None,
            user_tags: vec!["beta".into()],
            estimated_input_tokens: 200,
            stream: false,
            metadata: Vec::new(),
            random: 42,
        };
        let route = time_calls(PLUGIN_CALLS, async || {
            let order = router
                .route("{}", &request, &targets)
                .await
                .unwrap()
                .unwrap();
            assert_eq!(order.len(), 3);
        })
        .await;

        let limiter = host.load_limiter("rate-limit", nowhere).unwrap();
        let store: std::sync::Arc<dyn wasmgate::plugins::CounterStore> = std::sync::Arc::new(
            wasmgate::limits::counters::MemoryCounters::new(wasmgate::limits::window::Clock::new()),
        );
        let rule: std::sync::Arc<str> = "bench".into();
        let options = r#"{"requests_per_minute": 1000000000}"#;
        let limit_request = LimitRequest {
            scope_key: "user:u1".into(),
            project: "default".into(),
            api_key_id: None,
            user_id: Some("u1".into()),
            model: "smart".into(),
            estimated_input_tokens: 200,
            max_output_tokens: Some(100),
            estimated_cost_micros: None,
        };
        let check = time_calls(PLUGIN_CALLS, async || {
            let decision = limiter
                .check(&store, &rule, options, &limit_request)
                .await
                .unwrap();
            assert!(matches!(decision, wasmgate::plugins::Decision::Allow(_)));
        })
        .await;
        [
            (
                "router call (fallback, 3 targets)".to_owned(),
                route.0,
                route.1,
            ),
            (
                "limiter check (rate-limit, memory counters)".to_owned(),
                check.0,
                check.1,
            ),
        ]
    })
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

/// Requests instrumented in the telemetry benchmark, after as many of warm-up.
const TELEMETRY_REQUESTS: usize = 20_000;

/// An OTLP/HTTP collector on its own runtime that reads and discards what it is sent; returns
/// its address and the count of requests it got.
fn start_collector(
    rt: &tokio::runtime::Runtime,
) -> (SocketAddr, Arc<std::sync::atomic::AtomicUsize>) {
    let posts = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = Arc::clone(&posts);
    let addr = rt.block_on(async move {
        let app = Router::new().route(
            "/v1/traces",
            routing::post(move |body: axum::body::Bytes| {
                counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                async move {
                    drop(body);
                    ""
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        addr
    });
    (addr, posts)
}

/// Everything the request path asks of telemetry for one routed request with a limit: the
/// request span (from an incoming traceparent), the limits and route stages with one plugin call
/// each, one upstream attempt with two plugin calls, and the end (metrics, span attributes, log
/// line filtered out at the `error` level). Eight spans when traces are on.
async fn instrumented_request(
    telemetry: &Arc<wasmgate::telemetry::Telemetry>,
    headers: &http::HeaderMap,
    completion: &str,
) {
    use wasmgate::telemetry::{PluginTimer, RequestEnd};
    let mut request = telemetry.request(headers, "/v1/chat/completions", "chat", "req-bench");
    request.request("smart", Some(256), String::new);
    let trace = request.trace().clone();
    let metrics = trace.metrics();
    let limits = trace.stage("limits");
    limits
        .scope(async {
            PluginTimer::start("rate-limit", "check").end(metrics, "rate-limit", "check", None);
        })
        .await;
    drop(limits);
    let route = trace.stage("route");
    route
        .scope(async {
            PluginTimer::start("fallback", "route").end(metrics, "fallback", "route", None);
        })
        .await;
    drop(route);
    let mut attempt = trace.attempt("chat", "openai", "openai", "gpt-4o-mini");
    let scope = attempt.span().scope_handle();
    scope
        .run(async {
            PluginTimer::start("openai", "prepare").end(metrics, "openai", "prepare", None);
            let traceparent = attempt.traceparent();
            assert!(traceparent.is_some());
            attempt.status(200);
            let usage = wasmgate::plugins::Usage {
                input_tokens: 200,
                output_tokens: 50,
                cached_input_tokens: 0,
                cache_write_tokens: 0,
                reasoning_tokens: 0,
                images: 0,
                search_units: 0,
                audio_ms: 0,
                characters: 0,
            };
            PluginTimer::start("openai", "parse_response").end(
                metrics,
                "openai",
                "parse_response",
                None,
            );
            attempt.completion(completion, Some(usage));
        })
        .await;
    trace.routed("smart", "openai/gpt-4o-mini", 0, "ok");
    drop(attempt);
    let record = wasmgate::ledger::UsageRecord {
        request_id: "req-bench".into(),
        provider: Some("openai".into()),
        model: Some("gpt-4o-mini".into()),
        input_tokens: 200,
        output_tokens: 50,
        cost_micros: Some(60),
        latency_us: 350,
        status: 200,
        ..Default::default()
    };
    request.finish(&RequestEnd {
        record: &record,
        system: Some("openai"),
        error: None,
    });
}

/// Mean and p50 on the request's thread, and CPU per request of the whole process (exporter and
/// collector included), of `TELEMETRY_REQUESTS` instrumented requests.
fn telemetry_cost(traces: Option<SocketAddr>) -> (Duration, Duration, Duration) {
    let rt = runtime("telemetry");
    rt.block_on(async {
        let yaml = match traces {
            Some(addr) => format!(
                "observability: {{ log_level: error, traces: {{ otlp_endpoint: 'http://{addr}' }} }}"
            ),
            None => "observability: { log_level: error }".to_owned(),
        };
        let config = Config::from_yaml(&yaml).unwrap();
        wasmgate::telemetry::init(&config.observability);
        let http = wasmgate::upstream::client().unwrap();
        let telemetry = Arc::new(wasmgate::telemetry::Telemetry::new(
            &config.observability,
            &http,
        ));
        let mut headers = http::HeaderMap::new();
        headers.insert(
            "traceparent",
            http::HeaderValue::from_static(
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            ),
        );
        let completion = completion_body(1024);
        for _ in 0..TELEMETRY_REQUESTS {
            instrumented_request(&telemetry, &headers, &completion).await;
        }
        let cpu_before = process_cpu();
        let mut times = Vec::with_capacity(TELEMETRY_REQUESTS);
        for _ in 0..TELEMETRY_REQUESTS {
            let started = Instant::now();
            instrumented_request(&telemetry, &headers, &completion).await;
            times.push(started.elapsed());
        }
        // Everything queued is sent before the CPU is read, so the export is counted in full.
        telemetry.shutdown(Duration::from_secs(30)).await;
        let cpu = process_cpu() - cpu_before;
        assert_eq!(telemetry.spans_dropped(), 0, "the queue kept up");
        let n = times.len() as u32;
        let mean = times.iter().sum::<Duration>() / n;
        times.sort();
        (mean, percentile(&times, 0.5), cpu / n)
    })
}

fn print_telemetry_cost() {
    let collector_rt = runtime("collector");
    let (collector, posts) = start_collector(&collector_rt);
    println!(
        "
telemetry per request (request span + 2 stages + 1 attempt + 4 plugin calls), {TELEMETRY_REQUESTS} requests"
    );
    println!("| | mean on the request path | p50 | CPU per request, export included |");
    println!("|---|---|---|---|");
    for (name, traces) in [
        ("metrics only (no `observability.traces`)", None),
        ("metrics + 8 spans exported over OTLP/HTTP", Some(collector)),
    ] {
        let (mean, p50, cpu) = telemetry_cost(traces);
        println!("| {name} | {} | {} | {} |", us(mean), us(p50), us(cpu));
    }
    println!(
        "({} export requests received by the collector)",
        posts.load(std::sync::atomic::Ordering::Relaxed)
    );
    println!(
        "of which OTLP protobuf encoding, per request of 8 spans: {}",
        us(encode_cost())
    );
}

/// The exporter's encoding alone: batches of 512 spans shaped like a request's, encoded.
fn encode_cost() -> Duration {
    use wasmgate::telemetry::trace::{SpanKind, Tracer};
    let tracer = Arc::new(Tracer::new(1 << 20));
    for _ in 0..64 {
        let mut root = tracer.start(None, "POST /v1/chat/completions", SpanKind::Server);
        for (key, value) in [
            ("gen_ai.operation.name", "chat"),
            ("gen_ai.request.model", "smart"),
            ("gen_ai.response.model", "gpt-4o-mini"),
            ("gen_ai.provider.name", "openai"),
        ] {
            root.set(key, value);
        }
        root.set("gen_ai.usage.input_tokens", 200u32);
        for name in [
            "auth",
            "limits",
            "route",
            "chat gpt-4o-mini",
            "plugin openai.prepare",
        ] {
            let mut child = root.child(name, SpanKind::Internal);
            child.set("wasmgate.plugin", "openai");
            child.set("http.response.status_code", 200u16);
        }
        drop(root.child("plugin openai.parse_response", SpanKind::Internal));
        drop(root.child("plugin rate-limit.check", SpanKind::Internal));
    }
    let spans = tracer.take();
    let rounds = 200;
    let started = Instant::now();
    for _ in 0..rounds {
        std::hint::black_box(wasmgate::telemetry::otlp::encode("wasmgate", &spans));
    }
    started.elapsed() / (rounds * spans.len() as u32 / 8)
}

fn main() {
    if std::env::var_os("BENCH_TELEMETRY_ONLY").is_some() {
        print_telemetry_cost();
        return;
    }
    if std::env::var_os("BENCH_DECODERS").is_some() {
        print_decoders();
        return;
    }
    if std::env::var_os("BENCH_PLUGIN_ONLY").is_some() {
        for size in [1024, 100 * 1024] {
            let (mean, p50) = plugin_call(size);
            println!("| {} KiB | {} | {} |", size / 1024, us(mean), us(p50));
        }
        print_policy_calls();
        print_decoders();
        return;
    }
    // Named threads, so that a profile (`perf report --sort comm`) tells the three apart.
    let mock_rt = runtime("mock");
    let gateway_rt = runtime("gateway");
    let load_rt = runtime("load");
    let mock = start_mock(&mock_rt);
    let gateway = start_gateway(&gateway_rt, mock);
    let direct_url = format!("http://{mock}/v1/chat/completions");
    let gateway_url = format!("http://{gateway}/v1/chat/completions");
    let direct_body = chat_body("gpt-4o-mini", 1024);
    let gateway_body = chat_body("openai/gpt-4o-mini", 1024);

    println!(
        "wasmgate overhead benchmark ({} cores)",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!("1 KiB chat request, 1 KiB completion, openai plugin, mock upstream on 127.0.0.1\n");

    let (d50, d99) = sequential(&load_rt, &direct_url, &direct_body);
    let (g50, g99) = sequential(&load_rt, &gateway_url, &gateway_body);
    println!("concurrency 1, {SEQUENTIAL} requests");
    println!("| | p50 | p99 |");
    println!("|---|---|---|");
    println!("| direct to mock | {} | {} |", us(d50), us(d99));
    println!("| through wasmgate | {} | {} |", us(g50), us(g99));
    println!(
        "| added by wasmgate | {} | {} |",
        us(g50.saturating_sub(d50)),
        us(g99.saturating_sub(d99))
    );

    let (direct_rps, direct_cpu) = concurrent(&load_rt, &direct_url, &direct_body);
    let (gateway_rps, gateway_cpu) = concurrent(&load_rt, &gateway_url, &gateway_body);
    println!("\nconcurrency {CONCURRENCY}, up to {CONCURRENT_REQUESTS} requests");
    println!("| | requests/s | CPU per request (client + gateway + mock) |");
    println!("|---|---|---|");
    println!("| direct to mock | {direct_rps:.0} | {} |", us(direct_cpu));
    println!(
        "| through wasmgate | {gateway_rps:.0} | {} |",
        us(gateway_cpu)
    );
    println!(
        "| ratio (gateway / direct) | {:.2} | +{} CPU per request in the gateway |",
        gateway_rps / direct_rps,
        us(gateway_cpu.saturating_sub(direct_cpu))
    );

    println!(
        "\nprovider plugin call (fresh instance + prepare + parse-response), {PLUGIN_CALLS} calls"
    );
    println!("| body | mean | p50 |");
    println!("|---|---|---|");
    for size in [1024, 100 * 1024] {
        let (mean, p50) = plugin_call(size);
        println!("| {} KiB | {} | {} |", size / 1024, us(mean), us(p50));
    }
    print_policy_calls();
    print_decoders();
    print_telemetry_cost();
}

fn print_policy_calls() {
    println!("\npolicy plugin calls (warm instance + call), {PLUGIN_CALLS} calls");
    println!("| call | mean | p50 |");
    println!("|---|---|---|");
    for (name, mean, p50) in policy_calls() {
        println!("| {name} | {} | {} |", us(mean), us(p50));
    }
}

/// Stream decoders measured per pushed chunk: each pushes `DECODER_CHUNKS` one-event chunks
/// into each of `DECODER_STREAMS` streams (after two streams of warm-up).
const DECODER_STREAMS: usize = 20;
const DECODER_CHUNKS: usize = 100;

/// One provider's stream: the bytes that open it (pushed untimed), and one text-delta event in
/// its wire format, pushed again and again.
struct DecoderCase {
    plugin: &'static str,
    model: &'static str,
    api_key: &'static str,
    options: &'static str,
    preamble: Vec<u8>,
    chunk: Vec<u8>,
}

/// Twenty characters of text, as a delta of a typical token or few.
const DELTA: &str = "the quick brown fox ";

fn sse(event: Option<&str>, data: &serde_json::Value, crlf: bool) -> Vec<u8> {
    let nl = if crlf { "\r\n" } else { "\n" };
    let mut text = String::new();
    if let Some(event) = event {
        text.push_str(&format!("event: {event}{nl}"));
    }
    text.push_str(&format!("data: {data}{nl}{nl}"));
    text.into_bytes()
}

/// CRC-32 (IEEE), bit by bit; frames are built before any timing.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = u32::MAX;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = (crc >> 1) ^ (0xEDB8_8320 & (crc & 1).wrapping_neg());
        }
    }
    !crc
}

/// One `application/vnd.amazon.eventstream` event message with JSON `payload`.
fn eventstream(event: &str, payload: &serde_json::Value) -> Vec<u8> {
    let payload = payload.to_string();
    let mut headers = Vec::new();
    for (name, value) in [
        (":event-type", event),
        (":content-type", "application/json"),
        (":message-type", "event"),
    ] {
        headers.push(name.len() as u8);
        headers.extend_from_slice(name.as_bytes());
        headers.push(7);
        headers.extend_from_slice(&(value.len() as u16).to_be_bytes());
        headers.extend_from_slice(value.as_bytes());
    }
    let total = (16 + headers.len() + payload.len()) as u32;
    let mut out = total.to_be_bytes().to_vec();
    out.extend_from_slice(&(headers.len() as u32).to_be_bytes());
    out.extend_from_slice(&crc32(&out).to_be_bytes());
    out.extend_from_slice(&headers);
    out.extend_from_slice(payload.as_bytes());
    out.extend_from_slice(&crc32(&out).to_be_bytes());
    out
}

fn decoder_cases() -> Vec<DecoderCase> {
    let openai_chunk = |filters: bool| {
        let mut chunk = json!({"id": "chatcmpl-bench", "object": "chat.completion.chunk",
            "created": 1_700_000_000, "model": "gpt-4o-mini", "system_fingerprint": "fp_bench",
            "choices": [{"index": 0, "delta": {"content": DELTA}, "logprobs": null,
                         "finish_reason": null}]});
        if filters {
            chunk["choices"][0]["content_filter_results"] =
                json!({"hate": {"filtered": false, "severity": "safe"}});
        }
        sse(None, &chunk, false)
    };
    let anthropic_delta = sse(
        Some("content_block_delta"),
        &json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": DELTA}}),
        false,
    );
    let gemini_chunk = sse(
        None,
        &json!({"candidates": [{"content": {"parts": [{"text": DELTA}], "role": "model"},
                                "index": 0}],
                "usageMetadata": {"promptTokenCount": 8, "candidatesTokenCount": 12,
                                  "totalTokenCount": 20},
                "modelVersion": "gemini-2.0-flash", "responseId": "bench"}),
        true,
    );
    let cohere_delta = sse(
        Some("content-delta"),
        &json!({"type": "content-delta", "index": 0,
                "delta": {"message": {"content": {"text": DELTA}}}}),
        false,
    );
    let bedrock_delta = eventstream(
        "contentBlockDelta",
        &json!({"contentBlockIndex": 0, "delta": {"text": DELTA}, "p": "abcdefghijkl"}),
    );
    let cat = |parts: Vec<Vec<u8>>| parts.concat();
    vec![
        DecoderCase {
            plugin: "openai",
            model: "gpt-4o-mini",
            api_key: "sk-bench",
            options: "{}",
            preamble: openai_chunk(false),
            chunk: openai_chunk(false),
        },
        DecoderCase {
            plugin: "anthropic",
            model: "claude-sonnet-4-5",
            api_key: "sk-ant-bench",
            options: "{}",
            preamble: cat(vec![
                sse(
                    Some("message_start"),
                    &json!({"type": "message_start", "message": {"id": "msg_bench",
                        "type": "message", "role": "assistant", "content": [],
                        "model": "claude-sonnet-4-5", "stop_reason": null, "stop_sequence": null,
                        "usage": {"input_tokens": 8, "output_tokens": 1}}}),
                    false,
                ),
                sse(
                    Some("content_block_start"),
                    &json!({"type": "content_block_start", "index": 0,
                            "content_block": {"type": "text", "text": ""}}),
                    false,
                ),
                anthropic_delta.clone(),
            ]),
            chunk: anthropic_delta,
        },
        DecoderCase {
            plugin: "gemini",
            model: "gemini-2.0-flash",
            api_key: "bench",
            options: "{}",
            preamble: gemini_chunk.clone(),
            chunk: gemini_chunk,
        },
        DecoderCase {
            plugin: "cohere",
            model: "command-a-03-2025",
            api_key: "bench",
            options: "{}",
            preamble: cat(vec![
                sse(
                    Some("message-start"),
                    &json!({"id": "bench", "type": "message-start", "delta": {"message":
                        {"role": "assistant", "content": [], "tool_plan": "", "tool_calls": [],
                         "citations": []}}}),
                    false,
                ),
                sse(
                    Some("content-start"),
                    &json!({"type": "content-start", "index": 0,
                            "delta": {"message": {"content": {"type": "text", "text": ""}}}}),
                    false,
                ),
                cohere_delta.clone(),
            ]),
            chunk: cohere_delta,
        },
        DecoderCase {
            plugin: "azure-openai",
            model: "gpt-4o",
            api_key: "bench",
            options: "{}",
            preamble: openai_chunk(true),
            chunk: openai_chunk(true),
        },
        DecoderCase {
            plugin: "bedrock",
            model: "anthropic.claude-sonnet-4-5-20250929-v1:0",
            api_key: "AKIDBENCH:secret",
            options: r#"{"region": "us-east-1"}"#,
            preamble: cat(vec![
                eventstream("messageStart", &json!({"role": "assistant", "p": "abcd"})),
                bedrock_delta.clone(),
            ]),
            chunk: bedrock_delta,
        },
    ]
}

/// Mean and p50 of one `push` of `case.chunk` into a live decoder, through the plugin host: the
/// bytes copied into the sandbox, the plugin's decoding, the chunks copied out.
async fn decoder_push(host: &PluginHost, case: &DecoderCase) -> (Duration, Duration) {
    let plugin = host
        .load_provider(case.plugin, std::path::Path::new("/nonexistent"))
        .unwrap();
    let config = wasmgate::plugins::ProviderConfig {
        name: case.plugin.into(),
        base_url: Some("http://127.0.0.1:9/v1".into()),
        api_key: Some(case.api_key.into()),
        models: vec![case.model.into()],
        options: case.options.into(),
    };
    let info = RequestInfo {
        native: None,
        operation: Operation::ChatCompletions,
        model: case.model.into(),
        stream: true,
    };
    let content_type = if case.plugin == "bedrock" {
        "application/vnd.amazon.eventstream"
    } else {
        "text/event-stream"
    };
    let headers = vec![("content-type".to_owned(), content_type.to_owned())];
    let mut times = Vec::with_capacity(DECODER_STREAMS * DECODER_CHUNKS);
    for stream_no in 0..DECODER_STREAMS + 2 {
        let call = plugin
            .start(wasmgate::plugins::SlotKind::Stream)
            .await
            .unwrap();
        let mut stream = call.open_stream(&config, &info, &headers).await.unwrap();
        let opened = stream.push(&case.preamble).await.unwrap().unwrap();
        assert!(!opened.events.is_empty(), "{}: no chunk", case.plugin);
        for _ in 0..DECODER_CHUNKS {
            let started = Instant::now();
            let out = stream.push(&case.chunk).await.unwrap().unwrap();
            let took = started.elapsed();
            assert_eq!(out.events.len(), 1, "{}: one chunk per event", case.plugin);
            if stream_no >= 2 {
                times.push(took);
            }
        }
    }
    let mean = times.iter().sum::<Duration>() / times.len() as u32;
    times.sort();
    (mean, percentile(&times, 0.5))
}

fn print_decoders() {
    println!(
        "\nstream decoders, one text-delta event per push, {DECODER_STREAMS} streams x {DECODER_CHUNKS} pushes"
    );
    println!("| decoder | event bytes | mean per chunk | p50 per chunk |");
    println!("|---|---|---|---|");
    runtime("decoder").block_on(async {
        let limits = PluginLimits {
            cpu_budget: Duration::from_millis(200),
            wall_backstop: Duration::from_secs(2),
            memory_bytes: 64 << 20,
            max_instances: 64,
            max_stream_instances: 48,
            instance_wait: Duration::from_secs(2),
        };
        let cache = std::env::temp_dir().join("wasmgate-bench-cache");
        let host = PluginHost::new(
            limits,
            Some(cache),
            wasmgate::tokenizer::Tokenizer,
            std::sync::Arc::new(wasmgate::telemetry::Telemetry::without_traces()),
        )
        .unwrap();
        for case in decoder_cases() {
            let (mean, p50) = decoder_push(&host, &case).await;
            println!(
                "| `{}` | {} | {} | {} |",
                case.plugin,
                case.chunk.len(),
                us(mean),
                us(p50)
            );
        }
    });
}
