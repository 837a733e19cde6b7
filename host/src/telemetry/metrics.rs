//! Metrics in Prometheus' text format (version 0.0.4): a small registry of atomic counters and
//! histograms keyed by label values.
//!
//! Hand-written rather than a crate: what `/metrics` needs is a dozen families, and this way the
//! output is exactly the classic text format `promtool check metrics` reads (prometheus-client
//! writes OpenMetrics), and recording is a read lock and an atomic add. Label values come from
//! the config (providers, models, routes, plugins) or small fixed sets, except the model names
//! a pass-through provider takes from clients: so every value is cut to [`LABEL_MAX`] bytes with
//! unprintable characters escaped ([`crate::clip`]), and each family holds at most
//! [`MAX_SERIES`] series, past which new label sets share one `_other` series.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Series one family keeps at most.
pub const MAX_SERIES: usize = 1000;

/// Bytes of a label value, at most (the cut is marked).
pub const LABEL_MAX: usize = 128;

/// Label value of the series that takes label sets past [`MAX_SERIES`].
const OVERFLOW: &str = "_other";

/// Request and time-to-first-token buckets, in seconds (LLM calls take 0.1 s to minutes).
pub const REQUEST_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];
/// Plugin call buckets, in seconds (most calls take 5-200 µs).
pub const PLUGIN_BUCKETS: &[f64] = &[
    0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.01, 0.05, 0.2,
];

/// What one series of a family holds.
pub trait Series: Send + Sync {
    fn new(bounds: &'static [f64]) -> Self;
}

/// A monotonic count. `scale` of its family divides it when written (micro-USD → USD).
#[derive(Default)]
pub struct Counter(AtomicU64);

impl Series for Counter {
    fn new(_: &'static [f64]) -> Self {
        Self::default()
    }
}

impl Counter {
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A histogram of durations: a count per bucket (not cumulative; summed when written), the
/// total count, and the sum in nanoseconds.
pub struct Histogram {
    bounds_ns: Vec<u64>,
    buckets: Vec<AtomicU64>,
    count: AtomicU64,
    sum_ns: AtomicU64,
}

impl Series for Histogram {
    fn new(bounds: &'static [f64]) -> Self {
        Self {
            bounds_ns: bounds.iter().map(|s| (s * 1e9) as u64).collect(),
            buckets: bounds.iter().map(|_| AtomicU64::new(0)).collect(),
            count: AtomicU64::new(0),
            sum_ns: AtomicU64::new(0),
        }
    }
}

impl Histogram {
    pub fn observe(&self, elapsed: Duration) {
        let ns = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        // Past the last bound the sample counts only in +Inf (the total count).
        if let Some(i) = self.bounds_ns.iter().position(|&b| ns <= b) {
            self.buckets[i].fetch_add(1, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_ns.fetch_add(ns, Ordering::Relaxed);
    }

    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }
}

/// One metric family: a name, its label names, and a series per set of label values.
pub struct Family<const N: usize, S> {
    name: &'static str,
    help: &'static str,
    labels: [&'static str; N],
    bounds: &'static [f64],
    /// Counters are divided by this when written.
    scale: f64,
    /// Series by the hash of their label values; a bucket holds the (rare) collisions.
    series: RwLock<Table<N, S>>,
}

/// One series: its label values and its value.
type Entry<const N: usize, S> = ([Box<str>; N], S);

struct Table<const N: usize, S> {
    by_hash: HashMap<u64, Vec<Entry<N, S>>>,
    len: usize,
}

type Fixed = BuildHasherDefault<DefaultHasher>;

impl<const N: usize, S: Series> Family<N, S> {
    pub fn new(name: &'static str, help: &'static str, labels: [&'static str; N]) -> Self {
        Self {
            name,
            help,
            labels,
            bounds: &[],
            scale: 1.0,
            series: RwLock::new(Table {
                by_hash: HashMap::new(),
                len: 0,
            }),
        }
    }

    pub fn buckets(mut self, bounds: &'static [f64]) -> Self {
        self.bounds = bounds;
        self
    }

    pub fn scaled(mut self, scale: f64) -> Self {
        self.scale = scale;
        self
    }

    /// Runs `f` on the series of `values` (made printable and bounded), creating it if need be.
    pub fn with(&self, values: [&str; N], f: impl FnOnce(&S)) {
        let labels = values.map(label);
        let values = labels.each_ref().map(|v| &**v);
        let hash = Fixed::default().hash_one(values);
        {
            let table = crate::sync::read(&self.series);
            if let Some(series) = find(&table, hash, &values) {
                f(series);
                return;
            }
        }
        let mut table = crate::sync::write(&self.series);
        let (hash, values) = if table.len >= MAX_SERIES && find(&table, hash, &values).is_none() {
            let other = [OVERFLOW; N];
            (Fixed::default().hash_one(other), other)
        } else {
            (hash, values)
        };
        if find(&table, hash, &values).is_none() {
            let owned = values.map(Box::from);
            table
                .by_hash
                .entry(hash)
                .or_default()
                .push((owned, S::new(self.bounds)));
            table.len += 1;
        }
        if let Some(series) = find(&table, hash, &values) {
            f(series);
        }
    }

    /// Every series, sorted by label values, for writing.
    fn sorted(&self, mut each: impl FnMut(&[Box<str>; N], &S)) {
        let table = crate::sync::read(&self.series);
        let mut all: Vec<_> = table.by_hash.values().flatten().collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        for (values, series) in all {
            each(values, series);
        }
    }

    fn header(&self, out: &mut String, kind: &str) {
        let _ = writeln!(out, "# HELP {} {}", self.name, self.help);
        let _ = writeln!(out, "# TYPE {} {kind}", self.name);
    }

    fn label_text(&self, values: &[Box<str>; N], extra: Option<(&str, &str)>) -> String {
        let mut text = String::new();
        let pairs = self
            .labels
            .iter()
            .zip(values.iter().map(|v| &**v))
            .map(|(k, v)| (*k, v))
            .chain(extra);
        for (i, (key, value)) in pairs.enumerate() {
            if i > 0 {
                text.push(',');
            }
            let _ = write!(text, "{key}=\"");
            escape(&mut text, value);
            text.push('"');
        }
        if text.is_empty() {
            text
        } else {
            format!("{{{text}}}")
        }
    }
}

fn find<'t, const N: usize, S>(
    table: &'t Table<N, S>,
    hash: u64,
    values: &[&str; N],
) -> Option<&'t S> {
    table
        .by_hash
        .get(&hash)?
        .iter()
        .find_map(|(labels, series)| {
            labels
                .iter()
                .zip(values)
                .all(|(a, b)| **a == **b)
                .then_some(series)
        })
}

/// A label value as recorded: at most [`LABEL_MAX`] bytes, control and invisible characters
/// escaped.
fn label(value: &str) -> std::borrow::Cow<'_, str> {
    crate::clip::clip(value, LABEL_MAX)
}

/// Label values escape `\`, `"` and newlines.
fn escape(out: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

impl<const N: usize> Family<N, Counter> {
    pub fn inc(&self, values: [&str; N], n: u64) {
        self.with(values, |c| c.add(n));
    }

    /// The count of `values` (scaled), for tests and the benchmark.
    pub fn get(&self, values: [&str; N]) -> f64 {
        let labels = values.map(label);
        let values = labels.each_ref().map(|v| &**v);
        let mut value = 0.0;
        let hash = Fixed::default().hash_one(values);
        if let Ok(table) = self.series.read()
            && let Some(c) = find(&table, hash, &values)
        {
            value = c.get() as f64 / self.scale;
        }
        value
    }

    pub fn write(&self, out: &mut String) {
        self.header(out, "counter");
        self.sorted(|values, counter| {
            let labels = self.label_text(values, None);
            let _ = writeln!(
                out,
                "{}{labels} {}",
                self.name,
                number(counter.get(), self.scale)
            );
        });
    }
}

impl<const N: usize> Family<N, Histogram> {
    pub fn observe(&self, values: [&str; N], elapsed: Duration) {
        self.with(values, |h| h.observe(elapsed));
    }

    pub fn write(&self, out: &mut String) {
        self.header(out, "histogram");
        self.sorted(|values, h| {
            let mut cumulative = 0;
            for (bound, bucket) in self.bounds.iter().zip(&h.buckets) {
                cumulative += bucket.load(Ordering::Relaxed);
                let le = bound.to_string();
                let labels = self.label_text(values, Some(("le", &le)));
                let _ = writeln!(out, "{}_bucket{labels} {cumulative}", self.name);
            }
            // Read the count after the buckets: a sample landing in between then never makes
            // a bucket exceed +Inf.
            let count = h.count.load(Ordering::Relaxed).max(cumulative);
            let labels = self.label_text(values, Some(("le", "+Inf")));
            let _ = writeln!(out, "{}_bucket{labels} {count}", self.name);
            let labels = self.label_text(values, None);
            let sum = h.sum_ns.load(Ordering::Relaxed) as f64 / 1e9;
            let _ = writeln!(out, "{}_sum{labels} {sum}", self.name);
            let _ = writeln!(out, "{}_count{labels} {count}", self.name);
        });
    }
}

fn number(value: u64, scale: f64) -> String {
    if scale == 1.0 {
        value.to_string()
    } else {
        (value as f64 / scale).to_string()
    }
}

/// Writes a gauge family whose values are read at scrape time.
pub fn write_gauge<'a>(
    out: &mut String,
    name: &str,
    help: &str,
    kind: &str,
    series: impl IntoIterator<Item = (Vec<(&'a str, &'a str)>, f64)>,
) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
    for (labels, value) in series {
        let mut text = String::new();
        for (i, (key, v)) in labels.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            let _ = write!(text, "{key}=\"");
            escape(&mut text, v);
            text.push('"');
        }
        if text.is_empty() {
            let _ = writeln!(out, "{name} {value}");
        } else {
            let _ = writeln!(out, "{name}{{{text}}} {value}");
        }
    }
}

/// Every family the gateway records into.
pub struct Metrics {
    pub requests: Family<4, Counter>,
    pub request_duration: Family<2, Histogram>,
    pub time_to_first_token: Family<2, Histogram>,
    pub tokens: Family<3, Counter>,
    pub cost: Family<2, Counter>,
    pub upstream_errors: Family<2, Counter>,
    pub attempts: Family<3, Counter>,
    pub retries: Family<1, Counter>,
    pub limit_denials: Family<1, Counter>,
    pub plugin_duration: Family<2, Histogram>,
    pub plugin_failures: Family<2, Counter>,
    pub guard_verdicts: Family<2, Counter>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self {
            requests: Family::new(
                "wasmgate_requests_total",
                "Requests to /v1, by the provider and model that answered (empty before one was chosen), operation and HTTP status.",
                ["provider", "model", "operation", "status"],
            ),
            request_duration: Family::new(
                "wasmgate_request_duration_seconds",
                "Time from a request's arrival to its end (a stream's last byte).",
                ["provider", "model"],
            )
            .buckets(REQUEST_BUCKETS),
            time_to_first_token: Family::new(
                "wasmgate_time_to_first_token_seconds",
                "Time from a streamed request's arrival to its first chunk of output.",
                ["provider", "model"],
            )
            .buckets(REQUEST_BUCKETS),
            tokens: Family::new(
                "wasmgate_tokens_total",
                "Tokens used, as the upstream reported them (or the gateway counted them).",
                ["provider", "model", "type"],
            ),
            cost: Family::new(
                "wasmgate_cost_usd_total",
                "Cost of requests in USD, at catalog prices.",
                ["provider", "model"],
            )
            .scaled(1e6),
            upstream_errors: Family::new(
                "wasmgate_upstream_errors_total",
                "Failed upstream attempts, by provider and error code.",
                ["provider", "error"],
            ),
            attempts: Family::new(
                "wasmgate_routing_attempts_total",
                "Attempts at the targets of virtual models, by outcome (ok, failed, rejected).",
                ["route", "target", "outcome"],
            ),
            retries: Family::new(
                "wasmgate_routing_retries_total",
                "Attempts after the first one of a request to a virtual model.",
                ["route"],
            ),
            limit_denials: Family::new(
                "wasmgate_limit_denials_total",
                "Requests refused by limits: rate_limit_exceeded, insufficient_quota, or limits_unavailable.",
                ["code"],
            ),
            plugin_duration: Family::new(
                "wasmgate_plugin_call_duration_seconds",
                "Time of one plugin call (the export only: instantiation excluded).",
                ["plugin", "call"],
            )
            .buckets(PLUGIN_BUCKETS),
            plugin_failures: Family::new(
                "wasmgate_plugin_failures_total",
                "Plugin calls that failed: trapped, timeout or out_of_memory.",
                ["plugin", "kind"],
            ),
            guard_verdicts: Family::new(
                "wasmgate_guard_verdicts_total",
                "Guard verdicts, by guard (its config name) and action (allow, rewrite, refuse, stop, error; monitor_* in monitor mode).",
                ["guard", "action"],
            ),
        }
    }
}

impl Metrics {
    /// Writes every family in the text format.
    pub fn write(&self, out: &mut String) {
        self.requests.write(out);
        self.request_duration.write(out);
        self.time_to_first_token.write(out);
        self.tokens.write(out);
        self.cost.write(out);
        self.upstream_errors.write(out);
        self.attempts.write(out);
        self.retries.write(out);
        self.limit_denials.write(out);
        self.plugin_duration.write(out);
        self.plugin_failures.write(out);
        self.guard_verdicts.write(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_are_cumulative_and_counters_scaled() {
        let m = Metrics::default();
        m.request_duration
            .observe(["p", "m"], Duration::from_millis(3));
        m.request_duration
            .observe(["p", "m"], Duration::from_millis(30));
        m.request_duration
            .observe(["p", "m"], Duration::from_secs(999));
        m.cost.inc(["p", "m"], 1_500_000);
        let mut out = String::new();
        m.write(&mut out);
        assert!(out.contains("wasmgate_request_duration_seconds_bucket{provider=\"p\",model=\"m\",le=\"0.005\"} 1\n"), "{out}");
        assert!(out.contains("le=\"0.05\"} 2\n"), "{out}");
        assert!(out.contains("le=\"300\"} 2\n"), "{out}");
        assert!(out.contains("le=\"+Inf\"} 3\n"), "{out}");
        assert!(
            out.contains("wasmgate_request_duration_seconds_count{provider=\"p\",model=\"m\"} 3\n"),
            "{out}"
        );
        assert!(
            out.contains("wasmgate_cost_usd_total{provider=\"p\",model=\"m\"} 1.5\n"),
            "{out}"
        );
    }

    #[test]
    fn label_values_are_escaped_and_series_are_capped() {
        let family: Family<1, Counter> = Family::new("x_total", "x", ["model"]);
        family.inc(["a\"b\\c\nd"], 1);
        for i in 0..MAX_SERIES + 10 {
            family.inc([&format!("m{i}")], 1);
        }
        let mut out = String::new();
        family.write(&mut out);
        assert!(
            // The newline was escaped when recorded, and its backslash when written.
            out.contains("x_total{model=\"a\\\"b\\\\c\\\\u{a}d\"} 1\n"),
            "{out}"
        );
        assert_eq!(family.get([OVERFLOW]), 11.0);
        // Two header lines, the capped series, and the overflow series.
        assert_eq!(out.lines().count(), 2 + MAX_SERIES + 1);
    }

    #[test]
    fn label_values_are_printable_and_bounded() {
        let family: Family<1, Counter> = Family::new("x_total", "x", ["model"]);
        let long = format!("m{}", "x".repeat(100_000));
        family.inc([&long], 1);
        family.inc(["a\u{1b}[31mred\u{202e}\r"], 1);
        let mut out = String::new();
        family.write(&mut out);
        let longest = out.lines().map(str::len).max().unwrap_or(0);
        assert!(longest < LABEL_MAX + 64, "a line of {longest} bytes");
        assert!(out.contains("[cut: 100001 bytes]"), "{out}");
        assert!(
            out.contains("x_total{model=\"a\\\\u{1b}[31mred\\\\u{202e}\\\\u{d}\"} 1\n"),
            "{out}"
        );
        assert!(!out.contains('\u{1b}') && !out.contains('\r'), "{out}");
        // Recording and reading agree on the cleaned value.
        assert_eq!(family.get([&long]), 1.0);
    }
}
