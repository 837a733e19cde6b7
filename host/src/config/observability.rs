//! `observability:`: the log filter and format, and where traces are exported.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::secret::Secret;

/// `observability:`: logs and traces.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ObservabilityConfig {
    /// The log filter, e.g. `info` or `wasmgate=debug,info` (`--log-level` overrides it);
    /// `RUST_LOG` when unset, else `info`.
    #[serde(default)]
    #[schemars(extend("examples" = ["wasmgate=debug,info"]))]
    pub log_level: Option<String>,
    /// `text` for people, `json` (one object a line) for log collectors.
    #[serde(default)]
    pub log_format: LogFormat,
    /// Puts each request's prompt on its log line. Off by default: prompts are user data.
    #[serde(default)]
    pub log_prompts: bool,
    /// OpenTelemetry traces over OTLP/HTTP; none are recorded without this.
    #[serde(default)]
    #[schemars(extend("examples" = [{"otlp_endpoint": "http://127.0.0.1:4318"}]))]
    pub traces: Option<TracesConfig>,
}

/// Where spans are exported (`observability.traces`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TracesConfig {
    /// The collector's OTLP/HTTP endpoint, e.g. `http://127.0.0.1:4318` (`/v1/traces` is
    /// appended unless the URL ends with it).
    #[schemars(extend("examples" = ["http://127.0.0.1:4318"]))]
    pub otlp_endpoint: String,
    /// The `service.name` resource attribute.
    #[serde(default = "default_service_name")]
    pub service_name: String,
    /// How long finished spans wait to be sent together, in milliseconds.
    #[serde(default = "default_export_interval_ms")]
    #[schemars(range(min = 1))]
    pub export_interval_ms: u64,
    /// Spans waiting to be sent at most; past that, new spans are dropped and counted.
    #[serde(default = "default_span_queue")]
    #[schemars(range(min = 1))]
    pub queue_capacity: usize,
    /// Headers sent to the collector (e.g. its API key).
    #[serde(default)]
    #[schemars(extend("examples" = [{"x-api-key": "${COLLECTOR_KEY}"}]))]
    pub headers: IndexMap<String, Secret>,
}

fn default_service_name() -> String {
    "wasmgate".to_owned()
}
fn default_export_interval_ms() -> u64 {
    1_000
}
fn default_span_queue() -> usize {
    65_536
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}
