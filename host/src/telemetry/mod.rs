//! Observability: the per-request log line, Prometheus metrics and OpenTelemetry traces.
//!
//! The request path calls in here once per stage: [`Telemetry::request`] when a `/v1` request
//! arrives, [`Trace::stage`] around limits and routing, [`Trace::attempt`] per upstream attempt,
//! [`PluginTimer`] in the plugin host, and [`RequestTelemetry::finish`] when the request is over
//! (for a stream, when it ends), which records the metrics, ends the request span and writes the
//! log line from the request's usage record.
//!
//! - [`logging`]: the `tracing` subscriber (level, text or JSON).
//! - [`metrics`]: the registry behind `GET /metrics`.
//! - [`scrape`]: `GET /metrics`, the families and the gauges read when scraped.
//! - [`trace`]: spans and W3C trace context; [`otlp`]: their exporter.

pub mod logging;
pub mod metrics;
pub mod otlp;
pub mod scrape;
pub mod trace;

use std::borrow::Cow;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::config::{ObservabilityConfig, TracesConfig};
use crate::ledger::UsageRecord;
pub use metrics::Metrics;
use trace::{Span, SpanKind, TraceContext, Tracer};

pub use logging::init;

/// The gateway's metrics, its tracer (when traces are exported) and the exporter task.
pub struct Telemetry {
    pub metrics: Metrics,
    tracer: Option<Arc<Tracer>>,
    exporter: Mutex<Option<(CancellationToken, tokio::task::JoinHandle<()>)>>,
    log_prompts: bool,
}

impl Telemetry {
    /// Metrics only: no spans are recorded.
    pub fn without_traces() -> Self {
        Self {
            metrics: Metrics::default(),
            tracer: None,
            exporter: Mutex::new(None),
            log_prompts: false,
        }
    }

    /// Telemetry as `config` asks; starts the span exporter (on the current tokio runtime)
    /// when `traces` is set.
    pub fn new(config: &ObservabilityConfig, http: &reqwest::Client) -> Self {
        let mut telemetry = Self::without_traces();
        telemetry.log_prompts = config.log_prompts;
        if let Some(traces) = &config.traces {
            let stop = CancellationToken::new();
            let (tracer, task) = otlp::spawn(export_config(traces), http.clone(), stop.clone());
            telemetry.tracer = Some(tracer);
            telemetry.exporter = Mutex::new(Some((stop, task)));
        }
        telemetry
    }

    /// Spans the exporter had no room for, or failed to send.
    pub fn spans_dropped(&self) -> u64 {
        self.tracer.as_ref().map_or(0, |t| t.dropped())
    }

    /// Sends the spans still queued, waiting up to `deadline`.
    pub async fn shutdown(&self, deadline: Duration) {
        let exporter = match self.exporter.lock() {
            Ok(mut exporter) => exporter.take(),
            Err(_) => None,
        };
        if let Some((stop, task)) = exporter {
            stop.cancel();
            if tokio::time::timeout(deadline, task).await.is_err() {
                tracing::warn!("the span exporter did not finish within {deadline:?}");
            }
        }
    }

    /// The telemetry of one `/v1` request to `path`, arriving with `headers` (its
    /// `traceparent`, if any).
    pub fn request(
        self: &Arc<Self>,
        headers: &http::HeaderMap,
        path: impl Into<Cow<'static, str>>,
        operation: impl Into<Cow<'static, str>>,
        request_id: &str,
    ) -> RequestTelemetry {
        let (path, operation) = (path.into(), operation.into());
        let incoming = headers
            .get("traceparent")
            .and_then(|v| v.to_str().ok())
            .and_then(TraceContext::parse);
        let mut span = match &self.tracer {
            Some(tracer) => tracer.start(incoming, format!("POST {path}"), SpanKind::Server),
            None => Span::none(),
        };
        span.set("http.request.method", "POST");
        span.set("http.route", path.clone());
        span.set("gen_ai.operation.name", operation.clone());
        if span.is_recording() {
            span.set("wasmgate.request_id", request_id.to_owned());
        }
        RequestTelemetry {
            trace: Trace {
                telemetry: Arc::clone(self),
                parent: span.context(),
                incoming,
            },
            span,
            path,
            operation,
            prompt: None,
        }
    }
}

fn export_config(traces: &TracesConfig) -> otlp::ExportConfig {
    let endpoint = traces.otlp_endpoint.trim_end_matches('/');
    // A base URL gets the OTLP/HTTP traces path, as OTEL_EXPORTER_OTLP_ENDPOINT does.
    let url = if endpoint.ends_with("/v1/traces") {
        endpoint.to_owned()
    } else {
        format!("{endpoint}/v1/traces")
    };
    otlp::ExportConfig {
        url,
        service_name: traces.service_name.clone(),
        interval: Duration::from_millis(traces.export_interval_ms),
        queue_capacity: traces.queue_capacity,
        headers: traces
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.expose().to_owned()))
            .collect(),
    }
}

/// Bytes of a prompt a log line carries, at most (`observability.log_prompts`): one request
/// must not write a log line as large as its body.
pub const PROMPT_LOG_MAX: usize = 64 * 1024;

/// One request's span and log line, ended by [`RequestTelemetry::finish`].
pub struct RequestTelemetry {
    trace: Trace,
    span: Span,
    path: Cow<'static, str>,
    operation: Cow<'static, str>,
    /// The prompt, kept for the log line only when `observability.log_prompts` is on.
    prompt: Option<String>,
}

/// What stages need to parent their spans on the request's: cheap to clone, kept by the proxy
/// while the request span itself travels with the response.
#[derive(Clone)]
pub struct Trace {
    telemetry: Arc<Telemetry>,
    parent: Option<TraceContext>,
    /// The incoming `traceparent`, passed upstream as it came when this gateway records nothing.
    incoming: Option<TraceContext>,
}

/// How a request ended: its usage record, and what the record does not hold.
pub struct RequestEnd<'a> {
    pub record: &'a UsageRecord,
    /// The OpenTelemetry `gen_ai.provider.name` of the provider that answered.
    pub system: Option<&'a str>,
    /// The error's message (for the client) and internal detail (for the log only).
    pub error: Option<(&'a str, Option<&'a str>)>,
}

impl RequestTelemetry {
    pub fn trace(&self) -> &Trace {
        &self.trace
    }

    /// What the client asked for: the model, the output cap, and (read only if prompts are
    /// logged) the prompt.
    pub fn request(
        &mut self,
        model: &str,
        max_tokens: Option<u32>,
        prompt: impl FnOnce() -> String,
    ) {
        if self.span.is_recording() {
            self.span.set("gen_ai.request.model", model.to_owned());
            if let Some(max) = max_tokens {
                self.span.set("gen_ai.request.max_tokens", max);
            }
        }
        if self.trace.telemetry.log_prompts {
            self.prompt = Some(crate::clip::clip(&prompt(), PROMPT_LOG_MAX).into_owned());
        }
    }

    /// The prompt after the guards rewrote it (read only if prompts are logged): the log line
    /// never holds what a guard took out.
    pub fn prompt_rewritten(&mut self, prompt: impl FnOnce() -> String) {
        if self.trace.telemetry.log_prompts {
            self.prompt = Some(crate::clip::clip(&prompt(), PROMPT_LOG_MAX).into_owned());
        }
    }

    /// Records the request's metrics, ends its span, and writes its log line.
    pub fn finish(mut self, end: &RequestEnd<'_>) {
        let r = end.record;
        let metrics = &self.trace.telemetry.metrics;
        let provider = r.provider.as_deref().unwrap_or("");
        let model = r.model.as_deref().unwrap_or("");
        let latency = Duration::from_micros(u64::try_from(r.latency_us).unwrap_or(0));
        metrics
            .requests
            .inc([provider, model, &self.operation, status_text(r.status)], 1);
        metrics.request_duration.observe([provider, model], latency);
        if let Some(ttft) = r.ttft_us {
            let ttft = Duration::from_micros(u64::try_from(ttft).unwrap_or(0));
            metrics.time_to_first_token.observe([provider, model], ttft);
        }
        if r.input_tokens > 0 {
            metrics
                .tokens
                .inc([provider, model, "input"], r.input_tokens);
        }
        if r.output_tokens > 0 {
            metrics
                .tokens
                .inc([provider, model, "output"], r.output_tokens);
        }
        if let Some(cost) = r.cost_micros.and_then(|c| u64::try_from(c).ok()) {
            metrics.cost.inc([provider, model], cost);
        }

        let span = &mut self.span;
        if span.is_recording() {
            span.set("http.response.status_code", r.status);
            if let Some(system) = end.system {
                span.set("gen_ai.provider.name", system.to_owned());
                span.set("gen_ai.system", system.to_owned());
            }
            if let Some(provider) = &r.provider {
                span.set("wasmgate.provider", provider.clone());
            }
            if let Some(model) = &r.model {
                span.set("gen_ai.response.model", model.clone());
            }
            if r.status < 400 && (r.input_tokens > 0 || r.output_tokens > 0) {
                span.set("gen_ai.usage.input_tokens", r.input_tokens);
                span.set("gen_ai.usage.output_tokens", r.output_tokens);
            }
            if let Some(error) = &r.error_type {
                let message = end.error.map_or(error.as_str(), |(m, _)| m);
                span.fail(error, message);
            }
        }

        let latency_us = r.latency_us;
        let (status, request_id, path) = (r.status, r.request_id.as_str(), &*self.path);
        let (input_tokens, output_tokens) = (r.input_tokens, r.output_tokens);
        let prompt = self.prompt.as_deref();
        match (&r.error_type, end.error) {
            (Some(code), error) => tracing::warn!(
                request_id,
                method = "POST",
                path,
                status,
                model,
                provider,
                latency_us,
                input_tokens,
                output_tokens,
                error = code.as_str(),
                message = error.map_or("", |e| e.0),
                detail = error.and_then(|e| e.1).unwrap_or(""),
                prompt,
                "request failed"
            ),
            (None, _) => tracing::info!(
                request_id,
                method = "POST",
                path,
                status,
                model,
                provider,
                latency_us,
                input_tokens,
                output_tokens,
                prompt,
                "request"
            ),
        }
    }
}

fn status_text(status: u16) -> &'static str {
    // Statuses are few; a table spares formatting a number on every request.
    match status {
        200 => "200",
        400 => "400",
        401 => "401",
        403 => "403",
        404 => "404",
        408 => "408",
        413 => "413",
        429 => "429",
        500 => "500",
        502 => "502",
        503 => "503",
        504 => "504",
        s if s < 300 => "2xx",
        s if s < 500 => "4xx",
        _ => "5xx",
    }
}

impl Trace {
    /// A trace for work no request span covers (a count of tokens): its stages are measured
    /// but make no span.
    pub fn untraced(telemetry: &Arc<Telemetry>) -> Self {
        Self {
            telemetry: Arc::clone(telemetry),
            parent: None,
            incoming: None,
        }
    }

    pub fn metrics(&self) -> &Metrics {
        &self.telemetry.metrics
    }

    fn child(&self, name: impl Into<Cow<'static, str>>, kind: SpanKind) -> Span {
        match (&self.telemetry.tracer, self.parent) {
            (Some(tracer), Some(parent)) => tracer.start(Some(parent), name, kind),
            _ => Span::none(),
        }
    }

    /// A span for one stage (`limits`, `route`); run the stage in its [`Span::scope`] so that
    /// its plugin calls become children.
    pub fn stage(&self, name: &'static str) -> Span {
        self.child(name, SpanKind::Internal)
    }

    /// A limit refused the request (`rate_limit_exceeded`, `insufficient_quota`,
    /// `limits_unavailable`).
    pub fn denied(&self, code: &str) {
        self.telemetry.metrics.limit_denials.inc([code], 1);
    }

    /// One attempt of a request to the virtual model `route` at `target` ended with `outcome`
    /// (`ok`, `failed`, `rejected`); attempt `n` counts from 0.
    pub fn routed(&self, route: &str, target: &str, n: usize, outcome: &'static str) {
        let metrics = &self.telemetry.metrics;
        metrics.attempts.inc([route, target, outcome], 1);
        if n > 0 {
            metrics.retries.inc([route], 1);
        }
    }

    /// The span of one upstream attempt: `{operation} {model}`, a client span carrying the
    /// GenAI attributes.
    pub fn attempt(
        &self,
        operation: &'static str,
        provider: &str,
        system: &str,
        model: &str,
    ) -> Attempt {
        let mut span = match &self.telemetry.tracer {
            Some(_) => self.child(format!("{operation} {model}"), SpanKind::Client),
            None => Span::none(),
        };
        if span.is_recording() {
            span.set("gen_ai.operation.name", operation);
            span.set("gen_ai.provider.name", system.to_owned());
            span.set("gen_ai.system", system.to_owned());
            span.set("gen_ai.request.model", model.to_owned());
            span.set("wasmgate.provider", provider.to_owned());
        }
        Attempt {
            metrics_provider: provider.to_owned(),
            span,
            incoming: self.incoming,
        }
    }
}

/// One upstream attempt's span; the proxy reports what happened to it.
pub struct Attempt {
    metrics_provider: String,
    span: Span,
    incoming: Option<TraceContext>,
}

impl Attempt {
    pub fn span(&self) -> &Span {
        &self.span
    }

    /// The `traceparent` to send upstream: this attempt's span, or the incoming header as it
    /// came when this gateway records nothing.
    pub fn traceparent(&self) -> Option<String> {
        self.span
            .context()
            .or(self.incoming)
            .map(|ctx| ctx.header())
    }

    /// The upstream answered with `status`.
    pub fn status(&mut self, status: u16) {
        self.span.set("http.response.status_code", status);
    }

    /// What a whole (not streamed) answer says: its model, finish reasons and usage. Read only
    /// when the span records, since it parses the body.
    pub fn completion(&mut self, body: &str, usage: Option<crate::plugins::Usage>) {
        if !self.span.is_recording() {
            return;
        }
        #[derive(serde::Deserialize)]
        struct Peek {
            #[serde(default)]
            id: Option<String>,
            #[serde(default)]
            model: Option<String>,
            #[serde(default)]
            choices: Vec<Choice>,
        }
        #[derive(serde::Deserialize)]
        struct Choice {
            #[serde(default)]
            finish_reason: Option<String>,
        }
        if let Ok(peek) = serde_json::from_str::<Peek>(body) {
            if let Some(model) = peek.model {
                self.span.set("gen_ai.response.model", model);
            }
            if let Some(id) = peek.id {
                self.span.set("gen_ai.response.id", id);
            }
            let reasons: Vec<String> = peek
                .choices
                .into_iter()
                .filter_map(|c| c.finish_reason)
                .collect();
            if !reasons.is_empty() {
                self.span.set("gen_ai.response.finish_reasons", reasons);
            }
        }
        if let Some(usage) = usage {
            self.span
                .set("gen_ai.usage.input_tokens", usage.input_tokens);
            self.span
                .set("gen_ai.usage.output_tokens", usage.output_tokens);
        }
    }

    /// The attempt failed with the error code `code` (and the client will see `message`);
    /// `target_failure`: the failure says something about the upstream (counted as an
    /// upstream error).
    pub fn failed(&mut self, metrics: &Metrics, code: &str, message: &str, target_failure: bool) {
        if target_failure {
            metrics
                .upstream_errors
                .inc([&self.metrics_provider, code], 1);
        }
        self.span.fail(code, message);
    }
}

/// The plugin host's calls, timed into the metrics and (but for stream chunks) traced.
impl crate::plugins::CallObserver for Telemetry {
    fn start<'a>(
        &'a self,
        plugin: &'a str,
        call: &'static str,
    ) -> Box<dyn crate::plugins::CallEnd + 'a> {
        Box::new(ObservedCall {
            timer: PluginTimer::start(plugin, call),
            metrics: &self.metrics,
            plugin,
            call,
        })
    }
}

struct ObservedCall<'a> {
    timer: PluginTimer,
    metrics: &'a Metrics,
    plugin: &'a str,
    call: &'static str,
}

impl crate::plugins::CallEnd for ObservedCall<'_> {
    fn end(self: Box<Self>, failure: Option<&'static str>) {
        self.timer
            .end(self.metrics, self.plugin, self.call, failure);
    }
}

/// Times one plugin call: its duration and failures go to the metrics, and (except for the
/// per-chunk stream calls) a span under the task's current one.
pub struct PluginTimer {
    started: Instant,
    span: Span,
}

impl PluginTimer {
    pub fn start(plugin: &str, call: &'static str) -> Self {
        let span = if call == "push" {
            // One per streamed chunk: too many to be worth a span each.
            Span::none()
        } else {
            let mut span =
                trace::current_child(|| format!("plugin {plugin}.{call}"), SpanKind::Internal);
            if span.is_recording() {
                span.set("wasmgate.plugin", plugin.to_owned());
                span.set("wasmgate.plugin.call", call);
            }
            span
        };
        Self {
            started: Instant::now(),
            span,
        }
    }

    /// `failure`: `trapped`, `timeout` or `out_of_memory`.
    pub fn end(
        mut self,
        metrics: &Metrics,
        plugin: &str,
        call: &'static str,
        failure: Option<&'static str>,
    ) {
        metrics
            .plugin_duration
            .observe([plugin, call], self.started.elapsed());
        if let Some(kind) = failure {
            metrics.plugin_failures.inc([plugin, kind], 1);
            self.span.fail(kind, kind);
        }
    }
}
