//! What a plugin written in Python or JavaScript costs next to the same plugin in Rust: the
//! templates of `wasmgate plugin new` (one router, one limiter and one provider per language,
//! the same logic in each), built by `plugin build` into `BENCH_POLYGLOT_DIR` (default
//! `target/polyglot/templates/out`, which /BENCHMARKS.md says how to fill).
//!
//! Per plugin: load time (compile with no cache, then from the disk cache), a call on a warm
//! instance (routers and limiters reuse them) and on a cold one (the first call after a load,
//! instantiation included), a provider's fresh instance + prepare + parse-response with a 1 KiB
//! body, and the process's resident memory before and after.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmgate::plugins::{
    CanonicalRequest, CircuitState, CounterStore, HttpResponse, LimitRequest, Operation,
    PluginHost, PluginLimits, ProviderConfig, RequestInfo, RouteRequest, RouteTarget,
};

const WARM_CALLS: usize = 1_000;
const COLD_CALLS: usize = 15;
const PROVIDER_CALLS: usize = 200;
const LANGS: [&str; 3] = ["rust", "python", "js"];

fn host(cache: Option<PathBuf>) -> PluginHost {
    let limits = PluginLimits {
        cpu_budget: Duration::from_millis(1000),
        wall_backstop: Duration::from_secs(10),
        memory_bytes: 64 << 20,
        max_instances: 64,
        max_stream_instances: 48,
        instance_wait: Duration::from_secs(2),
    };
    PluginHost::new(
        limits,
        cache,
        wasmgate::tokenizer::Tokenizer,
        Arc::new(wasmgate::telemetry::Telemetry::without_traces()),
    )
    .unwrap()
}

fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0);
    kib / 1024.0
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

/// Mean and p50 of `times`.
fn stats(mut times: Vec<Duration>) -> (Duration, Duration) {
    let mean = times.iter().sum::<Duration>() / times.len().max(1) as u32;
    times.sort();
    (mean, times[times.len() / 2])
}

fn targets() -> Vec<RouteTarget> {
    [("a/big", 5.0), ("b/mid", 1.0), ("c/small", 0.1)]
        .iter()
        .map(|(id, price)| RouteTarget {
            id: (*id).into(),
            provider: id[..1].into(),
            model: id[2..].into(),
            weight: 1,
            input_price: Some(*price),
            output_price: Some(*price * 4.0),
            in_flight: 0,
            latency_ms: Some(120.0),
            ttft_ms: None,
            tokens_per_second: None,
            error_rate: 0.0,
            circuit: CircuitState::Closed,
        })
        .collect()
}

fn route_request() -> RouteRequest {
    RouteRequest {
        model: "smart".into(),
        project: "default".into(),
        user_id: Some("u1".into()),
        user_name: None,
        user_tags: vec!["beta".into()],
        estimated_input_tokens: 200,
        stream: false,
        metadata: Vec::new(),
        random: 42,
    }
}

fn limit_request() -> LimitRequest {
    LimitRequest {
        scope_key: "user:u1".into(),
        project: "default".into(),
        api_key_id: None,
        user_id: Some("u1".into()),
        model: "smart".into(),
        estimated_input_tokens: 200,
        max_output_tokens: Some(100),
        estimated_cost_micros: None,
    }
}

async fn router(dir: &Path, name: &str, cache: &Path) {
    let before = rss_mib();
    let started = Instant::now();
    host(None).load_router(name, dir).unwrap();
    let compile = started.elapsed();
    let h = host(Some(cache.to_path_buf()));
    h.load_router(name, dir).unwrap(); // fills the cache
    let (targets, request) = (targets(), route_request());
    let mut loads = Vec::new();
    let mut cold = Vec::new();
    for _ in 0..COLD_CALLS {
        let started = Instant::now();
        let router = h.load_router(name, dir).unwrap();
        loads.push(started.elapsed());
        let started = Instant::now();
        router
            .route("{}", &request, &targets)
            .await
            .unwrap()
            .unwrap();
        cold.push(started.elapsed());
    }
    let router = h.load_router(name, dir).unwrap();
    let mut warm = Vec::new();
    for i in 0..WARM_CALLS + 100 {
        let started = Instant::now();
        let order = router
            .route("{}", &request, &targets)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(order.len(), 3);
        if i >= 100 {
            warm.push(started.elapsed());
        }
    }
    report(name, compile, loads, cold, warm, before);
}

async fn limiter(dir: &Path, name: &str, cache: &Path) {
    let store: Arc<dyn CounterStore> = Arc::new(wasmgate::limits::counters::MemoryCounters::new(
        wasmgate::limits::window::Clock::new(),
    ));
    let rule: Arc<str> = "bench".into();
    let options = r#"{"per_minute": 1000000000}"#;
    let before = rss_mib();
    let started = Instant::now();
    host(None).load_limiter(name, dir).unwrap();
    let compile = started.elapsed();
    let h = host(Some(cache.to_path_buf()));
    h.load_limiter(name, dir).unwrap();
    let request = limit_request();
    let mut loads = Vec::new();
    let mut cold = Vec::new();
    for _ in 0..COLD_CALLS {
        let started = Instant::now();
        let limiter = h.load_limiter(name, dir).unwrap();
        loads.push(started.elapsed());
        let started = Instant::now();
        limiter
            .check(&store, &rule, options, &request)
            .await
            .unwrap();
        cold.push(started.elapsed());
    }
    let limiter = h.load_limiter(name, dir).unwrap();
    let mut warm = Vec::new();
    for i in 0..WARM_CALLS + 100 {
        let started = Instant::now();
        let decision = limiter
            .check(&store, &rule, options, &request)
            .await
            .unwrap();
        assert!(
            matches!(decision, wasmgate::plugins::Decision::Allow(_)),
            "{name}: {decision:?}"
        );
        if i >= 100 {
            warm.push(started.elapsed());
        }
    }
    report(name, compile, loads, cold, warm, before);
}

async fn provider(dir: &Path, name: &str, cache: &Path) {
    let before = rss_mib();
    let started = Instant::now();
    host(None).load_provider(name, dir).unwrap();
    let compile = started.elapsed();
    let h = host(Some(cache.to_path_buf()));
    h.load_provider(name, dir).unwrap();
    let mut loads = Vec::new();
    for _ in 0..COLD_CALLS {
        let started = Instant::now();
        h.load_provider(name, dir).unwrap();
        loads.push(started.elapsed());
    }
    let plugin = h.load_provider(name, dir).unwrap();
    let config = ProviderConfig {
        name: "p".into(),
        base_url: Some("http://127.0.0.1:9/v1".into()),
        api_key: Some("sk-bench".into()),
        models: vec!["m".into()],
        options: "{}".into(),
    };
    let body = serde_json::json!({"model": "m", "messages": [{"role": "user", "content": "x".repeat(900)}]});
    let request = CanonicalRequest {
        native: None,
        operation: Operation::ChatCompletions,
        model: "m".into(),
        body: body.to_string(),
        stream: false,
        headers: Vec::new(),
    };
    let info = RequestInfo {
        native: None,
        operation: Operation::ChatCompletions,
        model: "m".into(),
        stream: false,
    };
    let reply = serde_json::json!({"id": "c", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "y".repeat(700)}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 200, "completion_tokens": 50}});
    let response = HttpResponse {
        status: 200,
        headers: vec![],
        body: reply.to_string().into_bytes(),
    };
    let (mut fresh, mut instantiate) = (Vec::new(), Vec::new());
    for i in 0..PROVIDER_CALLS + 20 {
        let started = Instant::now();
        let mut call = plugin
            .start(wasmgate::plugins::SlotKind::Call)
            .await
            .unwrap();
        let ready = started.elapsed();
        call.prepare(&config, &request).await.unwrap().unwrap();
        let completion = call
            .parse_response(&config, &info, &response)
            .await
            .unwrap()
            .unwrap();
        assert!(completion.usage.is_some(), "{name}");
        drop(call);
        if i >= 20 {
            fresh.push(started.elapsed());
            instantiate.push(ready);
        }
    }
    let (mean, p50) = stats(fresh);
    let (inst, _) = stats(instantiate);
    let (load, _) = stats(loads);
    println!(
        "| {name} | {} | {} | fresh instance + prepare + parse: {} mean, {} p50 (instantiation {}) | {:.0} MiB |",
        ms(compile),
        ms(load),
        us(mean),
        us(p50),
        us(inst),
        rss_mib() - before
    );
}

fn report(
    name: &str,
    compile: Duration,
    loads: Vec<Duration>,
    cold: Vec<Duration>,
    warm: Vec<Duration>,
    before: f64,
) {
    let (load, _) = stats(loads);
    let (cold_mean, _) = stats(cold);
    let (warm_mean, warm_p50) = stats(warm);
    println!(
        "| {name} | {} | {} | cold {} / warm {} mean, {} p50 | {:.0} MiB |",
        ms(compile),
        ms(load),
        us(cold_mean),
        us(warm_mean),
        us(warm_p50),
        rss_mib() - before
    );
}

fn main() {
    let dir = std::env::var_os("BENCH_POLYGLOT_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/polyglot/templates/out"),
        PathBuf::from,
    );
    let cache = std::env::temp_dir().join("wasmgate-bench-polyglot-cache");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    println!("| plugin | compile (no cache) | load from cache | per call | RSS added |");
    println!("|---|---|---|---|---|");
    rt.block_on(async {
        for lang in LANGS {
            router(&dir, &format!("t-{lang}-router"), &cache).await;
        }
        for lang in LANGS {
            limiter(&dir, &format!("t-{lang}-limiter"), &cache).await;
        }
        for lang in LANGS {
            provider(&dir, &format!("t-{lang}-provider"), &cache).await;
        }
    });
}
