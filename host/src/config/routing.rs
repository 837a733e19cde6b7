//! `routing:`: virtual models, each a router plugin over targets, with retries and breakers.

use schemars::JsonSchema;
use serde::Deserialize;

/// One virtual model of `routing:`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RouteEntry {
    /// The router plugin (`fallback`, `weighted`, `fastest`, `cheapest`, `conditional`, or one
    /// of the operator's own in `plugins.dir`).
    #[schemars(extend("examples" = ["fallback"]))]
    pub policy: String,
    /// The models it routes to, each `provider/model` (a provider of `providers:`).
    #[schemars(extend("examples" = [["openai/gpt-4o-mini", "groq/llama-3.1-8b-instant"]]))]
    pub targets: Vec<TargetEntry>,
    /// Passed to the router plugin, which validates it.
    #[serde(default)]
    #[schemars(extend("examples" = [{"rules": [{"when": {"user_tags_any": ["premium"]}, "targets": ["openai/gpt-4o"]}], "default": ["openai/gpt-4o-mini"]}]))]
    pub options: serde_json::Map<String, serde_json::Value>,
    /// How a failed attempt moves on to the next target.
    #[serde(default)]
    pub retry: RetryConfig,
    /// When a failing target is skipped for a while.
    #[serde(default)]
    pub circuit_breaker: BreakerConfig,
}

/// A target: `provider/model`, or that with a weight and prices.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum TargetEntry {
    Id(String),
    Detailed(TargetDetail),
}

/// A target with its weight or prices.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TargetDetail {
    /// `provider/model`.
    #[schemars(extend("examples" = ["openai/gpt-4o-mini"]))]
    pub id: String,
    /// Its share of requests under the `weighted` policy (1 when left out).
    #[serde(default)]
    #[schemars(extend("examples" = [3]))]
    pub weight: Option<u32>,
    /// USD per million input tokens (until the price catalog knows the model).
    #[serde(default)]
    #[schemars(extend("examples" = [0.15]))]
    pub input_price: Option<f64>,
    /// USD per million output tokens.
    #[serde(default)]
    #[schemars(extend("examples" = [0.6]))]
    pub output_price: Option<f64>,
}

impl TargetEntry {
    pub fn detail(&self) -> TargetDetail {
        match self {
            Self::Id(id) => TargetDetail {
                id: id.clone(),
                weight: None,
                input_price: None,
                output_price: None,
            },
            Self::Detailed(detail) => detail.clone(),
        }
    }
}

/// How a failed attempt moves on to the next target.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RetryConfig {
    /// Attempts in all, across targets; by default one per target.
    #[serde(default)]
    #[schemars(extend("examples" = [3]))]
    #[schemars(range(min = 1))]
    pub max_attempts: Option<u32>,
    /// Backoff before the second attempt; doubled for each further one, with full jitter.
    #[serde(default = "default_backoff_ms")]
    pub backoff_ms: u64,
    /// The longest backoff between two attempts.
    #[serde(default = "default_max_backoff_ms")]
    pub max_backoff_ms: u64,
}

impl Default for RetryConfig {
    fn default() -> Self {
        Self {
            max_attempts: None,
            backoff_ms: default_backoff_ms(),
            max_backoff_ms: default_max_backoff_ms(),
        }
    }
}

fn default_backoff_ms() -> u64 {
    25
}
fn default_max_backoff_ms() -> u64 {
    1_000
}

/// When a target's circuit opens, and for how long.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BreakerConfig {
    /// Consecutive failed attempts that open the circuit.
    #[serde(default = "default_breaker_failures")]
    #[schemars(range(min = 1))]
    pub failures: u32,
    /// How long an open circuit stays open before one trial request is let through.
    #[serde(default = "default_breaker_cooldown_ms")]
    pub cooldown_ms: u64,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        Self {
            failures: default_breaker_failures(),
            cooldown_ms: default_breaker_cooldown_ms(),
        }
    }
}

fn default_breaker_failures() -> u32 {
    5
}
fn default_breaker_cooldown_ms() -> u64 {
    30_000
}
