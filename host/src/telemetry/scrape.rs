//! `GET /metrics`: the recorded families, and the gauges read from the gateway's state when
//! scraped (ledger queue, circuit breakers, span export).

use std::time::Instant;

use super::Telemetry;
use super::metrics::write_gauge;
use crate::plugins::{CircuitState, PluginHost};
use crate::routing::stats::Stats;

/// Prometheus' classic text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// What a scrape reads besides the recorded families (the gateway's state holds each).
pub struct Sources<'a> {
    pub telemetry: &'a Telemetry,
    pub stats: &'a Stats,
    pub plugins: &'a PluginHost,
    pub ledger: &'a crate::ledger::Ledger,
    pub cache: &'a crate::cache::Cache,
    pub sockets: &'a crate::sockets::Sockets,
}

/// The whole scrape.
pub fn render(sources: &Sources<'_>) -> String {
    let mut out = String::with_capacity(16 * 1024);
    let Sources {
        telemetry,
        stats,
        plugins,
        ledger,
        cache,
        sockets,
    } = sources;
    telemetry.metrics.write(&mut out);
    cache.write_metrics(&mut out);
    sockets.write_metrics(&mut out);

    let mut breakers = Vec::new();
    let now = Instant::now();
    stats.each(|id, stats| {
        let value = match stats.circuit(now) {
            CircuitState::Closed => 0.0,
            CircuitState::HalfOpen => 1.0,
            CircuitState::Open => 2.0,
        };
        breakers.push((id.to_owned(), value));
    });
    breakers.sort_by(|a, b| a.0.cmp(&b.0));
    write_gauge(
        &mut out,
        "wasmgate_circuit_breaker_state",
        "Circuit breaker of each routing target: 0 closed, 1 half-open (one trial allowed), 2 open.",
        "gauge",
        breakers
            .iter()
            .map(|(id, value)| (vec![("target", id.as_str())], *value)),
    );
    let instances = plugins.usage();
    write_gauge(
        &mut out,
        "wasmgate_plugin_instances",
        "Plugin instances alive (`all`, warm idle ones included) and held by stream requests (`stream`).",
        "gauge",
        [
            (vec![("use", "all")], f64::from(instances.in_use)),
            (vec![("use", "stream")], f64::from(instances.streams)),
        ],
    );
    write_gauge(
        &mut out,
        "wasmgate_plugin_instances_max",
        "The most plugin instances alive at once (`all`: plugins.max_instances), and the share stream requests may hold (`stream`).",
        "gauge",
        [
            (vec![("use", "all")], f64::from(instances.max)),
            (vec![("use", "stream")], f64::from(instances.max_streams)),
        ],
    );
    write_gauge(
        &mut out,
        "wasmgate_plugin_instance_waiting",
        "Requests and calls waiting for a free plugin instance now.",
        "gauge",
        [(Vec::new(), f64::from(instances.waiting))],
    );
    write_gauge(
        &mut out,
        "wasmgate_plugin_instance_wait_timeouts_total",
        "Waits for a plugin instance that ended without one (the request got 503 gateway_saturated), by what the instance was for.",
        "counter",
        [
            (vec![("use", "call")], instances.timed_out_calls as f64),
            (vec![("use", "stream")], instances.timed_out_streams as f64),
        ],
    );
    let work = plugins.work();
    write_gauge(
        &mut out,
        "wasmgate_plugin_instantiations_total",
        "Plugin instances created (one per provider request or stream; policy plugins reuse warm ones).",
        "counter",
        [(Vec::new(), work.instantiations as f64)],
    );
    write_gauge(
        &mut out,
        "wasmgate_plugin_calls_total",
        "Calls into plugin exports (prepare, parse_response, push, route, check, ...).",
        "counter",
        [(Vec::new(), work.calls as f64)],
    );
    write_gauge(
        &mut out,
        "wasmgate_ledger_queue_depth",
        "Usage records waiting to be written.",
        "gauge",
        [(Vec::new(), ledger.queued() as f64)],
    );
    write_gauge(
        &mut out,
        "wasmgate_ledger_dropped_records_total",
        "Usage records dropped because the ledger queue was full.",
        "counter",
        [(Vec::new(), ledger.dropped() as f64)],
    );
    if let Some(journal) = ledger.journal() {
        write_gauge(
            &mut out,
            "wasmgate_ledger_journal_bytes",
            "Bytes of the usage journal on disk (records not yet confirmed in the ledger database, and the segment being written).",
            "gauge",
            [(Vec::new(), journal.bytes() as f64)],
        );
        write_gauge(
            &mut out,
            "wasmgate_ledger_journal_refusals_total",
            "Requests refused with 503 ledger_full: the usage journal was at ledger.journal.max_bytes or could not be written.",
            "counter",
            [(Vec::new(), journal.refused() as f64)],
        );
        let (records, writes) = journal.appends();
        write_gauge(
            &mut out,
            "wasmgate_ledger_journal_appended_records_total",
            "Usage records appended to the journal by this process.",
            "counter",
            [(Vec::new(), records as f64)],
        );
        write_gauge(
            &mut out,
            "wasmgate_ledger_journal_writes_total",
            "write() calls that appended them: records per write is how well appends are grouped.",
            "counter",
            [(Vec::new(), writes as f64)],
        );
        write_gauge(
            &mut out,
            "wasmgate_ledger_journal_torn_lines_total",
            "Journal lines skipped at replay: cut short by a crash, or damaged.",
            "counter",
            [(Vec::new(), journal.torn() as f64)],
        );
    }
    write_gauge(
        &mut out,
        "wasmgate_spans_dropped_total",
        "Spans not exported: the export queue was full or the collector failed.",
        "counter",
        [(Vec::new(), telemetry.spans_dropped() as f64)],
    );
    out
}
