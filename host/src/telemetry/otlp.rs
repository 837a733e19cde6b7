//! The OTLP/HTTP exporter: batches finished spans off the request path and POSTs them as an
//! `ExportTraceServiceRequest` in protobuf to the collector.
//!
//! The protobuf is written by hand: the few messages a span needs are a hundred lines, and it
//! spares the binary the OpenTelemetry SDK and a second HTTP client (its exporter pins another
//! reqwest). The tests decode what it writes with the official `opentelemetry-proto` types.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::trace::{BATCH as MAX_BATCH, SpanData, Tracer, Value};
/// How long one export may take before the batch is given up.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where and how often spans are sent.
pub struct ExportConfig {
    /// The full traces URL (`.../v1/traces`).
    pub url: String,
    pub service_name: String,
    /// How long spans wait for company before a batch is sent.
    pub interval: Duration,
    pub queue_capacity: usize,
    pub headers: Vec<(String, String)>,
}

/// Starts the exporter task. It ends when `stop` is cancelled, after sending what is queued.
pub fn spawn(
    config: ExportConfig,
    http: reqwest::Client,
    stop: CancellationToken,
) -> (Arc<Tracer>, tokio::task::JoinHandle<()>) {
    let tracer = Arc::new(Tracer::new(config.queue_capacity));
    let task = tokio::spawn(run(config, http, Arc::clone(&tracer), stop));
    (tracer, task)
}

/// Sends what is waiting every `interval`, or as soon as a whole batch is, until stopped.
async fn run(
    config: ExportConfig,
    http: reqwest::Client,
    tracer: Arc<Tracer>,
    stop: CancellationToken,
) {
    loop {
        let stopping = tokio::select! {
            () = tokio::time::sleep(config.interval) => false,
            () = tracer.batch_ready() => false,
            () = stop.cancelled() => true,
        };
        let spans = tracer.take();
        for chunk in spans.chunks(MAX_BATCH) {
            export(&config, &http, &tracer, chunk).await;
        }
        if stopping {
            break;
        }
    }
}

async fn export(
    config: &ExportConfig,
    http: &reqwest::Client,
    tracer: &Tracer,
    spans: &[SpanData],
) {
    if spans.is_empty() {
        return;
    }
    let body = encode(&config.service_name, spans);
    let mut request = http
        .post(&config.url)
        .header("content-type", "application/x-protobuf")
        .timeout(EXPORT_TIMEOUT)
        .body(body);
    for (name, value) in &config.headers {
        request = request.header(name, value);
    }
    let failure = match request.send().await {
        Ok(response) if response.status().is_success() => return,
        Ok(response) => format!("the collector answered {}", response.status()),
        // Without the URL: a collector URL may carry a token.
        Err(e) => e.without_url().to_string(),
    };
    tracer.count_dropped(spans.len() as u64);
    tracing::warn!(spans = spans.len(), "exporting spans failed: {failure}");
}

/// An `ExportTraceServiceRequest` holding `spans`, all of one resource and scope.
pub fn encode(service_name: &str, spans: &[SpanData]) -> Vec<u8> {
    let mut scope_spans = Vec::with_capacity(spans.len() * 256);
    message(&mut scope_spans, 1, |scope| {
        string(scope, 1, "wasmgate");
        string(scope, 2, env!("CARGO_PKG_VERSION"));
    });
    for span in spans {
        message(&mut scope_spans, 2, |out| encode_span(out, span));
    }
    let mut resource_spans = Vec::with_capacity(scope_spans.len() + 64);
    message(&mut resource_spans, 1, |resource| {
        let service = Value::Str(service_name.to_owned().into());
        key_value(resource, 1, "service.name", &service);
    });
    bytes(&mut resource_spans, 2, &scope_spans);
    let mut request = Vec::with_capacity(resource_spans.len() + 8);
    bytes(&mut request, 1, &resource_spans);
    request
}

fn encode_span(out: &mut Vec<u8>, span: &SpanData) {
    bytes(out, 1, &span.trace_id);
    bytes(out, 2, &span.span_id);
    if let Some(parent) = &span.parent_span_id {
        bytes(out, 4, parent);
    }
    string(out, 5, &span.name);
    varint_field(out, 6, span.kind as u64);
    fixed64(out, 7, span.start_unix_ns);
    fixed64(out, 8, span.end_unix_ns);
    for (key, value) in &span.attributes {
        key_value(out, 9, key, value);
    }
    if let Some(message_text) = &span.error {
        message(out, 15, |status| {
            string(status, 2, message_text);
            varint_field(status, 3, 2); // STATUS_CODE_ERROR
        });
    }
    // Flags: the W3C trace flags (sampled).
    tag(out, 16, 5);
    out.extend_from_slice(&1u32.to_le_bytes());
}

fn key_value(out: &mut Vec<u8>, field: u32, key: &str, value: &Value) {
    message(out, field, |kv| {
        string(kv, 1, key);
        message(kv, 2, |any| any_value(any, value));
    });
}

fn any_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Str(s) => string(out, 1, s),
        Value::Bool(b) => varint_field(out, 2, u64::from(*b)),
        // int64 is a plain varint of the two's complement.
        Value::Int(n) => varint_field(out, 3, *n as u64),
        Value::StrList(items) => message(out, 5, |array| {
            for item in items {
                message(array, 1, |any| string(any, 1, item));
            }
        }),
    }
}

fn tag(out: &mut Vec<u8>, field: u32, wire_type: u8) {
    varint(out, u64::from(field) << 3 | u64::from(wire_type));
}

fn varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn varint_field(out: &mut Vec<u8>, field: u32, n: u64) {
    tag(out, field, 0);
    varint(out, n);
}

fn fixed64(out: &mut Vec<u8>, field: u32, n: u64) {
    tag(out, field, 1);
    out.extend_from_slice(&n.to_le_bytes());
}

fn bytes(out: &mut Vec<u8>, field: u32, data: &[u8]) {
    tag(out, field, 2);
    varint(out, data.len() as u64);
    out.extend_from_slice(data);
}

fn string(out: &mut Vec<u8>, field: u32, text: &str) {
    bytes(out, field, text.as_bytes());
}

/// A nested message: written in place, then its length prefix is inserted before it (a short
/// move of the bytes just written, cheaper than a scratch buffer per attribute).
fn message(out: &mut Vec<u8>, field: u32, write: impl FnOnce(&mut Vec<u8>)) {
    tag(out, field, 2);
    let start = out.len();
    write(out);
    let (mut prefix, mut n, mut len) = ([0u8; 10], 0, (out.len() - start) as u64);
    while len >= 0x80 {
        prefix[n] = (len as u8) | 0x80;
        len >>= 7;
        n += 1;
    }
    prefix[n] = len as u8;
    out.splice(start..start, prefix[..=n].iter().copied());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_are_little_endian_base_128() {
        let mut out = Vec::new();
        varint(&mut out, 300);
        assert_eq!(out, [0xac, 0x02]);
        out.clear();
        varint(&mut out, -1i64 as u64);
        assert_eq!(out.len(), 10);
    }
}
