//! The `alerts:` section: rules looked at every `interval_ms` (from the ledger: a key's spend
//! against its budget, a provider's error rate and latency over a window; from each replica's
//! own state: a circuit breaker opening, the usage journal or queue nearing its bound) and the
//! sinks an alert goes to (a signed JSON webhook, a Slack incoming webhook, PagerDuty Events v2).

use schemars::JsonSchema;

use super::config_error::ConfigError;
use crate::secret::Secret;

/// Sinks at most; rules' thresholds at most.
const SINKS_MAX: usize = 16;
const THRESHOLDS_MAX: usize = 8;
/// A period of the rules on a replica's own state, at most (seconds).
const PERIOD_MAX_S: u64 = 7 * 86_400;

/// Alerts: when they are looked for, on what, and where they go.
#[derive(Clone, Debug, PartialEq, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AlertsConfig {
    /// Milliseconds between two looks at the ledger for alerts to send.
    #[serde(default = "default_interval_ms")]
    #[schemars(range(min = 100), extend("examples" = [30000]))]
    pub interval_ms: u64,
    /// Where each alert is delivered, every sink each alert.
    #[serde(default)]
    #[schemars(extend("examples" = [[{"name": "ops", "kind": "webhook", "url": "https://hooks.example.com/wasmgate", "secret": "${ALERT_SECRET}"}]]))]
    pub sinks: Vec<SinkEntry>,
    /// A key with a budget: an alert when its spend in the budget's period first reaches each
    /// of these percentages of it.
    #[serde(default)]
    #[schemars(extend("examples" = [[50, 80, 100]]))]
    pub budget_percent: Vec<u32>,
    /// A provider whose requests fail: an alert when, over the window, at least `min_requests`
    /// went to it and more than `above_percent` of them failed (5xx, or no answer).
    #[serde(default)]
    pub error_rate: Option<ErrorRateRule>,
    /// A provider (or model) that answers slowly: an alert when, over the window, at least
    /// `min_requests` were answered and their `percentile` latency is above `above_ms`.
    #[serde(default)]
    pub latency: Option<LatencyRule>,
    /// A routing target's circuit breaker opening: an alert per provider and opening.
    #[serde(default)]
    pub circuit_open: Option<CircuitOpenRule>,
    /// The usage journal (or, without one, the in-memory queue) filling up while the ledger's
    /// database does not take records: an alert when it holds more than `above_percent` of its
    /// bound.
    #[serde(default)]
    pub journal_full: Option<JournalFullRule>,
}

/// One place alerts go.
#[derive(Clone, Debug, PartialEq, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SinkEntry {
    /// A name for logs and the delivery record.
    #[schemars(extend("examples" = ["ops"]))]
    pub name: String,
    /// The sink's format: `webhook`, `slack` or `pagerduty`.
    #[schemars(extend("examples" = ["webhook"]))]
    pub kind: SinkKind,
    /// Where the alert is posted (for PagerDuty, the Events v2 endpoint).
    #[schemars(extend("examples" = ["https://events.pagerduty.com/v2/enqueue"]))]
    pub url: String,
    /// `webhook`: the HMAC-SHA256 key of the `x-wasmgate-signature` header. `pagerduty`: the
    /// integration's routing key.
    #[serde(default)]
    #[schemars(extend("examples" = ["${ALERT_SECRET}"]))]
    pub secret: Option<Secret>,
}

/// How an alert is written for a sink.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SinkKind {
    /// JSON, signed: `x-wasmgate-signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of
    /// "<t>.<body>">`.
    Webhook,
    /// A Slack incoming webhook's `{"text": ...}`.
    Slack,
    /// PagerDuty Events API v2 (`trigger`, deduplicated by the alert's id).
    Pagerduty,
}

/// A provider's error rate over a window.
#[derive(Clone, Debug, PartialEq, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ErrorRateRule {
    /// Seconds of records looked at, ending now; alerts of one provider are at most one per
    /// window.
    #[serde(default = "default_window_s")]
    #[schemars(range(min = 10))]
    pub window_s: u64,
    /// Requests in the window at least, so that one failure of two is not an outage.
    #[serde(default = "default_min_requests")]
    pub min_requests: u64,
    /// Percent of them failed, more than this.
    #[schemars(range(min = 0, max = 100), extend("examples" = [10]))]
    pub above_percent: f64,
}

/// A provider's (or model's) latency over a window.
#[derive(Clone, Debug, PartialEq, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LatencyRule {
    /// Seconds of records looked at, ending now; alerts of one subject are at most one per
    /// window.
    #[serde(default = "default_window_s")]
    #[schemars(range(min = 10))]
    pub window_s: u64,
    /// Answered requests in the window at least, so that one slow answer is not a trend.
    #[serde(default = "default_min_requests")]
    pub min_requests: u64,
    /// The percentile compared (nearest rank): 95 is the latency 95 % of answers beat.
    #[serde(default = "default_percentile")]
    #[schemars(range(min = 50, max = 99.9), extend("examples" = [95]))]
    pub percentile: f64,
    /// Milliseconds: an alert when the percentile is above this.
    #[schemars(range(min = 1), extend("examples" = [5000]))]
    pub above_ms: u64,
    /// `provider` (each provider entry) or `model` (each `provider/model`).
    #[serde(default)]
    pub by: LatencyBy,
}

/// What one latency alert is about.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LatencyBy {
    #[default]
    Provider,
    Model,
}

/// A routing target's circuit breaker opening (`routing.<model>.circuit_breaker`).
#[derive(Clone, Debug, PartialEq, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CircuitOpenRule {
    /// Seconds: openings of one provider's circuits that start in the same period (on any
    /// replica) are one alert.
    #[serde(default = "default_period_s")]
    #[schemars(range(min = 60, max = 604800))]
    pub period_s: u64,
}

/// The usage journal or queue nearing its bound (`ledger.journal.max_bytes`, or
/// `ledger.queue_capacity` without a journal).
#[derive(Clone, Debug, PartialEq, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JournalFullRule {
    /// Percent of the bound held, more than this.
    #[serde(default = "default_journal_percent")]
    #[schemars(range(min = 20, max = 100), extend("examples" = [80]))]
    pub above_percent: u32,
    /// Seconds: alerts of one replica's journal are at most one per period.
    #[serde(default = "default_period_s")]
    #[schemars(range(min = 60, max = 604800))]
    pub period_s: u64,
}

impl Default for AlertsConfig {
    fn default() -> Self {
        Self {
            interval_ms: default_interval_ms(),
            sinks: Vec::new(),
            budget_percent: Vec::new(),
            error_rate: None,
            latency: None,
            circuit_open: None,
            journal_full: None,
        }
    }
}

fn default_interval_ms() -> u64 {
    30_000
}

fn default_window_s() -> u64 {
    300
}

fn default_min_requests() -> u64 {
    20
}

fn default_percentile() -> f64 {
    95.0
}

fn default_period_s() -> u64 {
    3600
}

fn default_journal_percent() -> u32 {
    80
}

impl AlertsConfig {
    pub fn check(&self) -> Result<(), ConfigError> {
        if self.interval_ms < 100 {
            return Err(ConfigError::key(
                "alerts.interval_ms",
                "must be at least 100",
            ));
        }
        if self.sinks.len() > SINKS_MAX {
            return Err(ConfigError::key(
                "alerts.sinks",
                format!("at most {SINKS_MAX} sinks"),
            ));
        }
        for (i, sink) in self.sinks.iter().enumerate() {
            let at = |key: &str| format!("alerts.sinks[{i}].{key}");
            if sink.name.is_empty()
                || sink.name.len() > 64
                || !sink
                    .name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            {
                return Err(ConfigError::key(
                    at("name"),
                    "1 to 64 letters, digits, '-' or '_'",
                ));
            }
            match reqwest::Url::parse(&sink.url) {
                Ok(url) if matches!(url.scheme(), "http" | "https") => {}
                _ => return Err(ConfigError::key(at("url"), "an http or https URL")),
            }
            if sink.kind == SinkKind::Pagerduty && sink.secret.is_none() {
                return Err(ConfigError::key(
                    at("secret"),
                    "a pagerduty sink needs its routing key here",
                ));
            }
        }
        if self.budget_percent.len() > THRESHOLDS_MAX
            || self.budget_percent.iter().any(|p| !(1..=1000).contains(p))
        {
            return Err(ConfigError::key(
                "alerts.budget_percent",
                format!("at most {THRESHOLDS_MAX} percentages, each from 1 to 1000"),
            ));
        }
        self.check_rules()
    }

    /// Each rule's bounds; the first one out names its key.
    fn check_rules(&self) -> Result<(), ConfigError> {
        let windows = [
            ("error_rate", self.error_rate.as_ref().map(|r| r.window_s)),
            ("latency", self.latency.as_ref().map(|r| r.window_s)),
        ];
        for (rule, window_s) in windows {
            require(
                window_s.is_none_or(|w| w >= 10),
                &format!("alerts.{rule}.window_s"),
                "must be at least 10",
            )?;
        }
        let periods = [
            (
                "circuit_open",
                self.circuit_open.as_ref().map(|r| r.period_s),
            ),
            (
                "journal_full",
                self.journal_full.as_ref().map(|r| r.period_s),
            ),
        ];
        for (rule, period_s) in periods {
            require(
                period_s.is_none_or(|p| (60..=PERIOD_MAX_S).contains(&p)),
                &format!("alerts.{rule}.period_s"),
                &format!("from 60 to {PERIOD_MAX_S} (a week)"),
            )?;
        }
        require(
            self.error_rate
                .as_ref()
                .is_none_or(|r| (0.0..=100.0).contains(&r.above_percent)),
            "alerts.error_rate.above_percent",
            "from 0 to 100",
        )?;
        require(
            self.latency
                .as_ref()
                .is_none_or(|r| (50.0..=99.9).contains(&r.percentile)),
            "alerts.latency.percentile",
            "from 50 to 99.9",
        )?;
        require(
            self.latency
                .as_ref()
                .is_none_or(|r| (1..=3_600_000).contains(&r.above_ms)),
            "alerts.latency.above_ms",
            "from 1 to 3600000 (an hour)",
        )?;
        // A segment of confirmed records stays on disk until it closes (an eighth of the
        // bound): below a fifth, a healthy journal could alert.
        require(
            self.journal_full
                .as_ref()
                .is_none_or(|r| (20..=100).contains(&r.above_percent)),
            "alerts.journal_full.above_percent",
            "from 20 to 100",
        )
    }

    /// Whether any rule and any sink are set: otherwise nothing is looked at.
    pub fn active(&self) -> bool {
        !self.sinks.is_empty()
            && (!self.budget_percent.is_empty()
                || self.error_rate.is_some()
                || self.latency.is_some()
                || self.circuit_open.is_some()
                || self.journal_full.is_some())
    }

    pub fn interval(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.interval_ms)
    }
}

/// `Ok` when `ok`, else the error at `path`.
fn require(ok: bool, path: &str, message: &str) -> Result<(), ConfigError> {
    if ok {
        Ok(())
    } else {
        Err(ConfigError::key(path, message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(yaml: &str) -> Result<(), String> {
        let config: AlertsConfig = serde_yaml::from_str(yaml).map_err(|e| e.to_string())?;
        config.check().map_err(|e| e.to_string())
    }

    #[test]
    fn each_rule_is_read_and_checked_with_the_path_of_what_is_wrong() {
        checked(
            "{latency: {window_s: 60, min_requests: 5, percentile: 99, above_ms: 2000, by: model},
              circuit_open: {period_s: 600}, journal_full: {above_percent: 80}}",
        )
        .unwrap();
        for (yaml, path) in [
            ("{latency: {above_ms: 0}}", "alerts.latency.above_ms"),
            (
                "{latency: {above_ms: 9, percentile: 40}}",
                "alerts.latency.percentile",
            ),
            (
                "{latency: {above_ms: 9, window_s: 5}}",
                "alerts.latency.window_s",
            ),
            (
                "{circuit_open: {period_s: 10}}",
                "alerts.circuit_open.period_s",
            ),
            (
                "{journal_full: {above_percent: 10}}",
                "alerts.journal_full.above_percent",
            ),
            (
                "{journal_full: {period_s: 9999999}}",
                "alerts.journal_full.period_s",
            ),
            (
                "{error_rate: {above_percent: 101}}",
                "alerts.error_rate.above_percent",
            ),
        ] {
            let error = checked(yaml).unwrap_err();
            assert!(error.contains(path), "{yaml}: {error}");
        }
        let error = checked("{latency: {above_ms: 9, by: region}}").unwrap_err();
        assert!(error.contains("unknown variant"), "{error}");
    }
}
