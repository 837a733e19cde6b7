//! The `alerts:` section: rules read from the ledger every `interval_ms` (a key's spend against
//! its budget, a provider's error rate over a window) and the sinks an alert goes to (a signed
//! JSON webhook, a Slack incoming webhook, PagerDuty Events v2).

use schemars::JsonSchema;

use super::config_error::ConfigError;
use crate::secret::Secret;

/// Sinks at most; rules' thresholds at most.
const SINKS_MAX: usize = 16;
const THRESHOLDS_MAX: usize = 8;

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

impl Default for AlertsConfig {
    fn default() -> Self {
        Self {
            interval_ms: default_interval_ms(),
            sinks: Vec::new(),
            budget_percent: Vec::new(),
            error_rate: None,
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
        if let Some(rule) = &self.error_rate {
            if rule.window_s < 10 {
                return Err(ConfigError::key(
                    "alerts.error_rate.window_s",
                    "must be at least 10",
                ));
            }
            if !(0.0..=100.0).contains(&rule.above_percent) {
                return Err(ConfigError::key(
                    "alerts.error_rate.above_percent",
                    "from 0 to 100",
                ));
            }
        }
        Ok(())
    }

    /// Whether any rule and any sink are set: otherwise nothing is looked at.
    pub fn active(&self) -> bool {
        !self.sinks.is_empty() && (!self.budget_percent.is_empty() || self.error_rate.is_some())
    }

    pub fn interval(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.interval_ms)
    }
}
