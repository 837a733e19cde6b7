//! Observability end to end: spans received by a real OTLP/HTTP receiver (decoded with the
//! protocol's own types), `/metrics` scraped after real requests (and checked by `promtool`
//! when it is installed), and the log lines of the real binary, which never carry a key.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use common::gateway::{Gateway, GatewayBuilder, Guard, Provider, Route};
use common::mock_openai::{COMPLETION_TOKENS, MockOpenAi, PROMPT_TOKENS};
use common::{TestGateway, http, test_plugins_dir};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::{Value, json};

/// An OTLP/HTTP receiver on 127.0.0.1:0 keeping every span it is sent.
struct Collector {
    addr: SocketAddr,
    spans: Arc<Mutex<Vec<Span>>>,
    service_names: Arc<Mutex<Vec<String>>>,
}

type Received = (Arc<Mutex<Vec<Span>>>, Arc<Mutex<Vec<String>>>);

impl Collector {
    async fn start() -> Self {
        async fn traces(State((spans, services)): State<Received>, body: Bytes) -> &'static str {
            let request = ExportTraceServiceRequest::decode(body).expect("an OTLP request");
            for resource in request.resource_spans {
                for kv in resource.resource.map(|r| r.attributes).unwrap_or_default() {
                    if let Some(Any::StringValue(s)) = kv.value.and_then(|v| v.value) {
                        services.lock().unwrap().push(format!("{}={s}", kv.key));
                    }
                }
                for scope in resource.scope_spans {
                    spans.lock().unwrap().extend(scope.spans);
                }
            }
            ""
        }
        let received: Received = Default::default();
        let app = axum::Router::new()
            .route("/v1/traces", axum::routing::post(traces))
            .with_state(received.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.ok() });
        Self {
            addr,
            spans: received.0,
            service_names: received.1,
        }
    }

    /// Waits until a span named `name` has arrived, then returns every span so far.
    async fn wait_for(&self, name: &str) -> Vec<Span> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let spans = self.spans.lock().unwrap().clone();
            if spans.iter().any(|s| s.name == name) {
                return spans;
            }
            assert!(Instant::now() < deadline, "no span {name:?} in {spans:#?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn attrs(span: &Span) -> HashMap<String, Value> {
    span.attributes
        .iter()
        .map(|kv| {
            let value = match kv.value.clone().and_then(|v| v.value) {
                Some(Any::StringValue(s)) => json!(s),
                Some(Any::IntValue(n)) => json!(n),
                Some(Any::BoolValue(b)) => json!(b),
                Some(Any::ArrayValue(a)) => a
                    .values
                    .into_iter()
                    .map(|v| match v.value {
                        Some(Any::StringValue(s)) => json!(s),
                        other => json!(format!("{other:?}")),
                    })
                    .collect(),
                other => json!(format!("{other:?}")),
            };
            (kv.key.clone(), value)
        })
        .collect()
}

fn named<'a>(spans: &'a [Span], name: &str) -> Vec<&'a Span> {
    spans.iter().filter(|s| s.name == name).collect()
}

fn one<'a>(spans: &'a [Span], name: &str) -> &'a Span {
    let found = named(spans, name);
    assert_eq!(found.len(), 1, "{name}: {spans:#?}");
    found[0]
}

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID: &str = "00f067aa0ba902b7";

fn traced_config(mock: &MockOpenAi, collector: &Collector) -> GatewayBuilder {
    // The provider's plugin is called for every request, so that its calls are traced and
    // counted (a plain request, issue 38, makes none).
    let openai = Provider::openai(&mock.base_url())
        .models(["gpt-4o-mini", "error-500"])
        .set("plain_path", false);
    Gateway::builder()
        .test_plugins()
        .provider("openai", openai)
        .route(
            "smart",
            Route::new("fallback", ["openai/error-500", "openai/gpt-4o-mini"])
                .yaml("retry", "{ backoff_ms: 0 }"),
        )
        .limit("rate-limit", "global", "{ requests_per_minute: 1000 }")
        .set(
            "observability.traces.otlp_endpoint",
            format!("http://{}", collector.addr),
        )
        .set("observability.traces.service_name", "gateway-under-test")
        .set("observability.traces.export_interval_ms", 20)
}

#[tokio::test]
async fn a_request_is_one_trace_of_stages_attempts_and_plugin_calls_with_genai_attributes() {
    let mock = MockOpenAi::start().await;
    let collector = Collector::start().await;
    let gateway = traced_config(&mock, &collector).start().await;

    let response = http()
        .post(gateway.url("/v1/chat/completions"))
        .header("traceparent", format!("00-{TRACE_ID}-{PARENT_ID}-01"))
        .json(&json!({"model": "smart", "max_tokens": 50,
                      "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-wasmgate-attempts"], "2");
    let spans = collector.wait_for("POST /v1/chat/completions").await;

    let root = one(&spans, "POST /v1/chat/completions");
    assert_eq!(hex::encode(&root.trace_id), TRACE_ID, "the incoming trace");
    assert_eq!(
        hex::encode(&root.parent_span_id),
        PARENT_ID,
        "a child of the caller"
    );
    assert_eq!(root.kind, 2, "server span");
    let a = attrs(root);
    assert_eq!(a["gen_ai.operation.name"], "chat");
    assert_eq!(a["gen_ai.request.model"], "smart");
    assert_eq!(a["gen_ai.request.max_tokens"], 50);
    assert_eq!(a["gen_ai.response.model"], "gpt-4o-mini");
    assert_eq!(a["gen_ai.provider.name"], "openai");
    assert_eq!(a["gen_ai.system"], "openai");
    assert_eq!(a["gen_ai.usage.input_tokens"], PROMPT_TOKENS);
    assert_eq!(a["gen_ai.usage.output_tokens"], COMPLETION_TOKENS);
    assert_eq!(a["http.response.status_code"], 200);

    // Every span is of the one trace; the stages and attempts hang off the request span.
    assert!(spans.iter().all(|s| hex::encode(&s.trace_id) == TRACE_ID));
    let children_of = |parent: &Span| -> Vec<String> {
        let mut names: Vec<String> = spans
            .iter()
            .filter(|s| s.parent_span_id == parent.span_id)
            .map(|s| s.name.clone())
            .collect();
        names.sort();
        names
    };
    assert_eq!(
        children_of(root),
        [
            "auth",
            "chat error-500",
            "chat gpt-4o-mini",
            "limits",
            "route"
        ]
    );
    assert_eq!(
        children_of(one(&spans, "limits")),
        ["plugin rate-limit.check"]
    );
    assert_eq!(children_of(one(&spans, "route")), ["plugin fallback.route"]);

    let failed = one(&spans, "chat error-500");
    let f = attrs(failed);
    assert_eq!(failed.kind, 3, "client span");
    assert_eq!(f["error.type"], "http_500");
    assert_eq!(f["http.response.status_code"], 500);
    assert_eq!(
        failed.status.as_ref().map(|s| s.code),
        Some(2),
        "status ERROR"
    );
    assert_eq!(
        children_of(failed),
        ["plugin openai.parse_response", "plugin openai.prepare"]
    );

    let answered = one(&spans, "chat gpt-4o-mini");
    let ok = attrs(answered);
    assert_eq!(ok["gen_ai.provider.name"], "openai");
    assert_eq!(ok["gen_ai.request.model"], "gpt-4o-mini");
    assert_eq!(ok["gen_ai.response.model"], "gpt-4o-mini");
    assert_eq!(ok["gen_ai.response.finish_reasons"], json!(["stop"]));
    assert_eq!(ok["gen_ai.usage.output_tokens"], COMPLETION_TOKENS);
    assert_eq!(ok["http.response.status_code"], 200);
    assert!(answered.start_time_unix_nano >= failed.end_time_unix_nano);
    assert!(root.end_time_unix_nano >= answered.end_time_unix_nano);

    // The upstream got the trace, with the attempt that sent it as the parent.
    let requests = mock.requests().await;
    let sent: Vec<&str> = requests
        .iter()
        .map(|r| r.headers["traceparent"].to_str().unwrap())
        .collect();
    assert_eq!(
        sent,
        [
            format!("00-{TRACE_ID}-{}-01", hex::encode(&failed.span_id)),
            format!("00-{TRACE_ID}-{}-01", hex::encode(&answered.span_id)),
        ]
    );
    assert!(
        collector
            .service_names
            .lock()
            .unwrap()
            .contains(&"service.name=gateway-under-test".to_owned())
    );
    gateway.stop().await;
}

#[tokio::test]
async fn a_stream_is_one_span_that_ends_with_the_stream_and_a_new_trace_without_traceparent() {
    let mock = MockOpenAi::start().await;
    let collector = Collector::start().await;
    let gateway = traced_config(&mock, &collector).start().await;

    let response = http()
        .post(gateway.url("/v1/chat/completions"))
        .json(&json!({"model": "gpt-4o-mini", "stream": true,
                      "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    // The headers are here but the stream is not read yet: the request span must not be over.
    tokio::time::sleep(Duration::from_millis(150)).await;
    let early = collector.spans.lock().unwrap().clone();
    assert!(
        named(&early, "POST /v1/chat/completions").is_empty(),
        "{early:#?}"
    );
    let body = response.text().await.unwrap();
    assert!(body.ends_with("data: [DONE]\n\n"));

    let spans = collector.wait_for("POST /v1/chat/completions").await;
    let root = one(&spans, "POST /v1/chat/completions");
    assert!(root.parent_span_id.is_empty(), "a root span");
    assert_ne!(hex::encode(&root.trace_id), TRACE_ID);
    let a = attrs(root);
    // Known only once the last chunk (with the usage) went through.
    assert_eq!(a["gen_ai.usage.output_tokens"], COMPLETION_TOKENS);
    let attempt = one(&spans, "chat gpt-4o-mini");
    let names: Vec<&str> = spans
        .iter()
        .filter(|s| s.parent_span_id == attempt.span_id)
        .map(|s| s.name.as_str())
        .collect();
    assert!(names.contains(&"plugin openai.open_stream"), "{names:?}");
    let sent = mock.last_request().await;
    let traceparent = sent.headers["traceparent"].to_str().unwrap().to_owned();
    assert_eq!(
        traceparent,
        format!(
            "00-{}-{}-01",
            hex::encode(&root.trace_id),
            hex::encode(&attempt.span_id)
        )
    );
    gateway.stop().await;
}

#[tokio::test]
async fn without_an_exporter_the_incoming_traceparent_still_reaches_the_upstream() {
    let mock = MockOpenAi::start().await;
    let gateway = Gateway::standard(&mock.base_url()).start().await;
    let incoming = format!("00-{TRACE_ID}-{PARENT_ID}-01");
    let response = http()
        .post(gateway.url("/v1/chat/completions"))
        .header("traceparent", &incoming)
        .json(&json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        mock.last_request().await.headers["traceparent"],
        incoming.as_str()
    );
    gateway.stop().await;
}

/// The value of the sample `series` (name and labels, exactly as written) in a scrape.
fn sample(scrape: &str, series: &str) -> Option<f64> {
    scrape
        .lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

async fn scrape(gateway: &TestGateway) -> String {
    let response = http().get(gateway.url("/metrics")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    response.text().await.unwrap()
}

/// Some traffic of every kind: answered, streamed, failed upstream, retried on another
/// target, refused by a limit, unknown model.
async fn traffic(mock: &MockOpenAi) -> TestGateway {
    // The provider's plugin is called for every request, so that its calls are traced and
    // counted (a plain request, issue 38, makes none).
    let openai = Provider::openai(&mock.base_url())
        .models(["gpt-4o-mini", "error-500"])
        .set("plain_path", false);
    let config = r#"
routing:
  smart:
    policy: fallback
    targets: [openai/error-500, openai/gpt-4o-mini]
    retry: { backoff_ms: 0 }
    circuit_breaker: { failures: 1, cooldown_ms: 600000 }
limits:
  rules:
    - { policy: rate-limit, scope: model, models: [echo-1], options: { requests_per_minute: 1 } }
"#;
    let gateway = Gateway::builder()
        .test_plugins()
        .provider("openai", openai)
        .provider("echo", Provider::echo().models(["echo-1"]))
        .yaml(config)
        .start()
        .await;
    let ask = |model: &'static str, stream: bool| {
        let url = gateway.url("/v1/chat/completions");
        async move {
            let response = http()
                .post(url)
                .json(&json!({"model": model, "stream": stream,
                              "messages": [{"role": "user", "content": "hi"}]}))
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            response.text().await.unwrap();
            status
        }
    };
    assert_eq!(ask("gpt-4o-mini", false).await, 200);
    assert_eq!(ask("gpt-4o-mini", true).await, 200);
    assert_eq!(ask("smart", false).await, 200);
    assert_eq!(ask("error-500", false).await, 502);
    assert_eq!(ask("echo-1", false).await, 200);
    assert_eq!(ask("echo-1", false).await, 429);
    assert_eq!(ask("no-such-model", false).await, 404);
    gateway
}

#[tokio::test]
async fn metrics_count_requests_tokens_errors_retries_denials_breakers_and_plugin_calls() {
    let mock = MockOpenAi::start().await;
    let gateway = traffic(&mock).await;
    // A stream's metrics are recorded when its body has been read to the end, which the
    // client did; the ledger's writer may still hold records, which does not matter here.
    let text = scrape(&gateway).await;
    let get = |series: &str| sample(&text, series).unwrap_or_else(|| panic!("{series}\n{text}"));

    let ok = r#"wasmgate_requests_total{provider="openai",model="gpt-4o-mini",operation="chat",status="200"}"#;
    assert_eq!(get(ok), 3.0, "plain, streamed, and via the virtual model");
    assert_eq!(
        get(
            r#"wasmgate_requests_total{provider="openai",model="error-500",operation="chat",status="502"}"#
        ),
        1.0
    );
    assert_eq!(
        get(r#"wasmgate_requests_total{provider="",model="",operation="chat",status="429"}"#),
        1.0
    );
    assert_eq!(
        get(r#"wasmgate_requests_total{provider="",model="",operation="chat",status="404"}"#),
        1.0
    );
    assert_eq!(
        get(r#"wasmgate_tokens_total{provider="openai",model="gpt-4o-mini",type="input"}"#),
        (3 * PROMPT_TOKENS) as f64
    );
    assert_eq!(
        get(r#"wasmgate_tokens_total{provider="openai",model="gpt-4o-mini",type="output"}"#),
        (3 * COMPLETION_TOKENS) as f64
    );
    assert!(get(r#"wasmgate_cost_usd_total{provider="openai",model="gpt-4o-mini"}"#) > 0.0);
    assert_eq!(
        get(r#"wasmgate_request_duration_seconds_count{provider="openai",model="gpt-4o-mini"}"#),
        3.0
    );
    assert_eq!(
        get(r#"wasmgate_time_to_first_token_seconds_count{provider="openai",model="gpt-4o-mini"}"#),
        1.0,
        "only the stream has a first token"
    );
    assert_eq!(
        get(r#"wasmgate_upstream_errors_total{provider="openai",error="http_500"}"#),
        2.0,
        "the direct error-500 and the virtual model's first attempt"
    );
    assert_eq!(
        get(
            r#"wasmgate_routing_attempts_total{route="smart",target="openai/error-500",outcome="failed"}"#
        ),
        1.0
    );
    assert_eq!(
        get(
            r#"wasmgate_routing_attempts_total{route="smart",target="openai/gpt-4o-mini",outcome="ok"}"#
        ),
        1.0
    );
    assert_eq!(get(r#"wasmgate_routing_retries_total{route="smart"}"#), 1.0);
    assert_eq!(
        get(r#"wasmgate_limit_denials_total{code="rate_limit_exceeded"}"#),
        1.0
    );
    assert_eq!(
        get(r#"wasmgate_circuit_breaker_state{target="openai/error-500"}"#),
        2.0,
        "open"
    );
    assert_eq!(
        get(r#"wasmgate_circuit_breaker_state{target="openai/gpt-4o-mini"}"#),
        0.0
    );
    // prepare: plain, stream, two attempts of the virtual model, error-500.
    assert_eq!(
        get(r#"wasmgate_plugin_call_duration_seconds_count{plugin="openai",call="prepare"}"#),
        5.0
    );
    assert_eq!(
        get(r#"wasmgate_plugin_call_duration_seconds_count{plugin="rate-limit",call="check"}"#),
        2.0
    );
    assert_eq!(get("wasmgate_ledger_dropped_records_total"), 0.0);
    assert!(sample(&text, "wasmgate_ledger_queue_depth").is_some());
    assert_eq!(get("wasmgate_spans_dropped_total"), 0.0);
    assert!(!text.contains("sk-upstream-secret"));
    gateway.stop().await;
}

#[tokio::test]
async fn plugin_traps_are_counted_by_kind() {
    let plugins = format!(
        "plugins: {{ dir: '{}', max_instances: 8, call_timeout_ms: 500, memory_limit_mib: 32 }}",
        test_plugins_dir().display()
    );
    let gateway = Gateway::builder()
        .yaml(&plugins)
        .provider("faulty", Provider::plugin("faulty"))
        .start()
        .await;
    for (model, status) in [("trap", 502), ("loop", 502), ("hog", 502)] {
        let response = http()
            .post(gateway.url("/v1/chat/completions"))
            .json(&json!({"model": format!("faulty/{model}"),
                          "messages": [{"role": "user", "content": "hi"}]}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), status, "{model}");
    }
    let text = scrape(&gateway).await;
    for kind in ["trapped", "timeout", "out_of_memory"] {
        let series = format!(r#"wasmgate_plugin_failures_total{{plugin="faulty",kind="{kind}"}}"#);
        assert_eq!(sample(&text, &series), Some(1.0), "{series}\n{text}");
    }
    gateway.stop().await;
}

#[tokio::test]
async fn the_scrape_passes_promtool() {
    // A check that cannot run fails rather than passing unseen (scripts/test.sh installs it).
    let promtool = which("promtool")
        .expect("promtool is not on PATH: apt-get install prometheus (scripts/test.sh does)");
    let mock = MockOpenAi::start().await;
    let gateway = traffic(&mock).await;
    let text = scrape(&gateway).await;
    let mut child = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "promtool: {}{}\n{text}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    gateway.stop().await;
}

fn which(name: &str) -> Result<std::path::PathBuf, ()> {
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join(name))
                .find(|path| path.is_file())
        })
        .ok_or(())
}

const CLIENT_KEY: &str = "sk-client-key-0123456789abcdef";
const PROVIDER_KEY: &str = "sk-provider-key-fedcba9876543210";
const PROMPT: &str = "the prompt text that must stay private";

/// Runs the real binary against the mock with `observability`, sends an answered request, a
/// stream and a failed one (all with a client key), and returns its stderr once it has exited.
async fn binary_logs(mock: &MockOpenAi, observability: &str) -> Vec<String> {
    let dir = std::env::temp_dir().join(format!(
        "wasmgate-observability-{}-{}",
        std::process::id(),
        fastrand_suffix()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = dir.join("config.yaml");
    std::fs::write(
        &config,
        format!(
            r#"
server: {{ host: 127.0.0.1, port: {port} }}
plugins: {{ dir: {plugins} }}
ledger: {{ url: "sqlite::memory:" }}
providers:
  openai:
    plugin: openai
    base_url: {base}
    api_key: {PROVIDER_KEY}
    models: [gpt-4o-mini, error-401]
observability:
{observability}
"#,
            plugins = test_plugins_dir().display(),
            base = mock.base_url(),
        ),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_wasmgate"))
        .args(["serve", "--config"])
        .arg(&config)
        .env("XDG_CACHE_HOME", common::plugin_cache_dir())
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut lines = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !lines.iter().any(|l: &String| l.contains("listening on")) {
        assert!(Instant::now() < deadline, "did not start: {lines:#?}");
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(100)) {
            lines.push(line);
        }
    }
    let url = format!("http://127.0.0.1:{port}/v1/chat/completions");
    for (model, stream, status) in [
        ("gpt-4o-mini", false, 200),
        ("gpt-4o-mini", true, 200),
        ("error-401", false, 401),
    ] {
        let response = http()
            .post(&url)
            .bearer_auth(CLIENT_KEY)
            .header("x-request-id", format!("req-{model}-{stream}"))
            .json(&json!({"model": model, "stream": stream,
                          "messages": [{"role": "user", "content": PROMPT}]}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), status);
        response.text().await.unwrap();
    }
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: sending a signal to our own child process.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::kill(pid, libc::SIGTERM) };
    assert_eq!(rc, 0);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
    lines.extend(rx.iter());
    let _ = std::fs::remove_dir_all(&dir);
    lines
}

fn fastrand_suffix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

fn assert_no_secrets(lines: &[String]) {
    let all = lines.join("\n");
    for secret in [
        CLIENT_KEY,
        PROVIDER_KEY,
        "0123456789abcdef",
        "fedcba9876543210",
    ] {
        assert!(!all.contains(secret), "{secret} leaked:\n{all}");
    }
}

#[tokio::test]
async fn text_logs_have_one_line_per_request_with_tokens_and_never_a_key_or_the_prompt() {
    let mock = MockOpenAi::start().await;
    // At `trace`, every dependency's logs are on too: none of them may print a key either.
    let lines = binary_logs(&mock, "  log_level: trace\n  log_format: text").await;
    assert_no_secrets(&lines);
    assert!(!lines.join("\n").contains(PROMPT), "the prompt was logged");
    let line = |id: &str| -> &String {
        let found: Vec<&String> = lines
            .iter()
            .filter(|l| {
                l.contains(&format!("request_id=\"{id}\""))
                    || l.contains(&format!("request_id={id}"))
            })
            .filter(|l| l.contains("status="))
            .collect();
        assert_eq!(found.len(), 1, "{id}: {lines:#?}");
        found[0]
    };
    for id in ["req-gpt-4o-mini-false", "req-gpt-4o-mini-true"] {
        let l = line(id);
        for field in [
            "method=\"POST\"",
            "path=\"/v1/chat/completions\"",
            "status=200",
            "model=\"gpt-4o-mini\"",
            "provider=\"openai\"",
            "latency_us=",
            &format!("input_tokens={PROMPT_TOKENS}"),
            &format!("output_tokens={COMPLETION_TOKENS}"),
        ] {
            assert!(l.contains(field), "{field} missing: {l}");
        }
    }
    let failed = line("req-error-401-false");
    assert!(
        failed.contains("WARN") && failed.contains("status=401"),
        "{failed}"
    );
}

#[tokio::test]
async fn json_logs_carry_the_prompt_only_when_turned_on() {
    let mock = MockOpenAi::start().await;
    let lines = binary_logs(
        &mock,
        "  log_level: info\n  log_format: json\n  log_prompts: true",
    )
    .await;
    assert_no_secrets(&lines);
    let requests: Vec<Value> = lines
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["fields"]["request_id"].is_string() && v["fields"]["status"].is_number())
        .collect();
    assert_eq!(requests.len(), 3, "{lines:#?}");
    let stream = requests
        .iter()
        .find(|v| v["fields"]["request_id"] == "req-gpt-4o-mini-true")
        .unwrap();
    let f = &stream["fields"];
    assert_eq!(f["model"], "gpt-4o-mini");
    assert_eq!(f["provider"], "openai");
    assert_eq!(f["input_tokens"], PROMPT_TOKENS);
    assert_eq!(f["output_tokens"], COMPLETION_TOKENS);
    assert!(f["prompt"].as_str().unwrap().contains(PROMPT), "{f}");
}

/// A span per guard and side: the request check's, and the answer guard's, which lasts as long
/// as the stream it guards, with its plugin calls as children and its strongest action.
#[tokio::test]
async fn each_guard_has_a_span_on_the_request_and_on_the_streamed_answer() {
    let mock = MockOpenAi::start().await;
    let collector = Collector::start().await;
    let gateway = traced_config(&mock, &collector)
        .guard(Guard::plugin("redact").name("cards"))
        .start()
        .await;
    let response = http()
        .post(gateway.url("/v1/chat/completions"))
        .json(&json!({"model": "gpt-4o-mini", "stream": true,
                      "messages": [{"role": "user", "content": "card 4111 1111 1111 1111"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body = response.text().await.unwrap();
    assert!(body.ends_with("data: [DONE]\n\n"), "{body}");

    let spans = collector.wait_for("POST /v1/chat/completions").await;
    let root = one(&spans, "POST /v1/chat/completions");
    let guards = named(&spans, "guard");
    let side = |s: &str| {
        guards
            .iter()
            .find(|g| attrs(g)["wasmgate.guard.side"] == s)
            .unwrap_or_else(|| panic!("no {s} guard span: {guards:#?}"))
    };
    let (request, answer) = (side("request"), side("answer"));
    for span in [request, answer] {
        assert_eq!(span.parent_span_id, root.span_id, "a stage of the request");
        assert_eq!(attrs(span)["wasmgate.guard"], "cards");
    }
    assert_eq!(attrs(request)["wasmgate.guard.action"], "rewrite");
    assert_eq!(attrs(answer)["wasmgate.guard.action"], "allow");
    let calls: Vec<&str> = spans
        .iter()
        .filter(|s| s.parent_span_id == answer.span_id)
        .map(|s| s.name.as_str())
        .collect();
    // Pushes, one per upstream read, have no span of their own (see `PluginTimer`).
    assert_eq!(
        calls,
        ["plugin redact.open_answer", "plugin redact.finish"],
        "{calls:?}"
    );
    // The answer guard's span covers every call of the stream it guards.
    for call in spans.iter().filter(|s| s.parent_span_id == answer.span_id) {
        assert!(
            call.start_time_unix_nano >= answer.start_time_unix_nano
                && call.end_time_unix_nano <= answer.end_time_unix_nano,
            "{call:#?} outside {answer:#?}"
        );
    }
    gateway.stop().await;
}
