//! One entry of `providers:`: the plugin that speaks an upstream, its URL, key, models and options.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use super::schema_transforms as schema;
use crate::secret::Secret;

/// One entry of `providers:`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = schema::provider_entry)]
pub struct ProviderEntry {
    /// A built-in preset for an OpenAI-compatible host (`presets.yaml`): it fills in every key
    /// the entry leaves out (`options` key by key), so `plugin` may be left out too.
    #[serde(default)]
    pub preset: Option<String>,
    /// The plugin that speaks this provider's wire format: a built-in one, or
    /// `<plugins.dir>/<plugin>.wasm`. Required unless `preset` gives it.
    #[schemars(extend("examples" = ["openai"]))]
    pub plugin: String,
    /// The upstream's API root; each plugin has its own default (`https://api.openai.com/v1`
    /// for `openai`). Its requests may go nowhere else.
    #[serde(default)]
    #[schemars(extend("examples" = ["https://api.openai.com/v1"]))]
    pub base_url: Option<String>,
    /// The upstream's API key. Unset: `$<NAME>_API_KEY`, else the key `wasmgate login <name>`
    /// stored. Never logged.
    #[serde(default)]
    #[schemars(extend("examples" = ["${OPENAI_API_KEY}"]))]
    pub api_key: Option<Secret>,
    /// Models served; empty means any model name is passed through.
    #[serde(default)]
    #[schemars(extend("examples" = [["gpt-4o-mini", "gpt-4o"]]))]
    pub models: Vec<String>,
    /// Passed to the plugin, which validates it (each provider's page lists its options).
    #[serde(default)]
    #[schemars(extend("examples" = [{"organization": "org-123"}]))]
    pub options: serde_json::Map<String, serde_json::Value>,
    /// How long to wait for the upstream's response headers, and between two streamed chunks.
    #[serde(default = "default_upstream_timeout_ms")]
    #[schemars(range(min = 1))]
    pub timeout_ms: u64,
    /// The catalog provider whose prices apply (`wasmgate models` lists them). Defaults to the
    /// entry's name when the catalog knows it, else the plugin's name.
    #[serde(default)]
    #[schemars(extend("examples" = ["openai"]))]
    pub catalog: Option<String>,
    /// Whether the gateway may send the requests the plugin declares plain itself (OpenAI's
    /// chat completions, embeddings and completions), without running the plugin: the same
    /// bytes go upstream, at a fraction of the CPU. `false` runs the plugin for every request.
    #[serde(default = "default_plain_path")]
    pub plain_path: bool,
}

impl ProviderEntry {
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }
}

fn default_plain_path() -> bool {
    true
}

fn default_upstream_timeout_ms() -> u64 {
    // The OpenAI SDKs wait 10 minutes; long generations are normal.
    600_000
}
