//! `limits:`: where the counters live, and the rules (limiter plugins per scope) that use them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `limits:`: where the counters live, and the rules that use them.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    /// `memory` (this process only) or `redis://host:port` (shared by every replica).
    #[serde(default = "default_limits_store")]
    #[schemars(extend("examples" = ["redis://127.0.0.1:6379"]))]
    pub store: String,
    /// The limits, each checked before a request is routed and settled when it ends.
    #[serde(default)]
    #[schemars(extend("examples" = [[{"policy": "rate-limit", "scope": "key", "options": {"requests_per_minute": 60}}]]))]
    pub rules: Vec<LimitRule>,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self {
            store: default_limits_store(),
            rules: Vec::new(),
        }
    }
}

fn default_limits_store() -> String {
    "memory".to_owned()
}

/// One limit: a limiter plugin applied per scope.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LimitRule {
    /// The limiter plugin: `rate-limit`, `budget`, or one of the operator's own.
    #[schemars(extend("examples" = ["budget"]))]
    pub policy: String,
    /// What one counter covers: every request (`global`), or each API key, project, user or
    /// model separately.
    #[serde(default)]
    pub scope: LimitScope,
    /// Passed to the plugin, which validates it: `requests_per_minute`, `tokens_per_minute`
    /// for `rate-limit`; `daily_usd`, `monthly_usd` for `budget`.
    #[serde(default)]
    #[schemars(extend("examples" = [{"daily_usd": 5.0}]))]
    pub options: serde_json::Map<String, serde_json::Value>,
    /// Names the rule's counters; keep it when editing a rule to keep its counts. Defaults to
    /// the policy, scope and position.
    #[serde(default)]
    #[schemars(extend("examples" = ["team-budget"]))]
    pub id: Option<String>,
    /// Only requests for these models (as clients name them); all when empty.
    #[serde(default)]
    #[schemars(extend("examples" = [["openai/gpt-4o"]]))]
    pub models: Vec<String>,
}

/// What one counter of a limit covers.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LimitScope {
    #[default]
    Global,
    Key,
    Project,
    User,
    Model,
}

impl LimitScope {
    pub fn name(self) -> &'static str {
        match self {
            Self::Global => "global",
            Self::Key => "key",
            Self::Project => "project",
            Self::User => "user",
            Self::Model => "model",
        }
    }
}
