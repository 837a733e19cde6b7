//! The whole `config.yaml`: one field per section, each section's type in its own file.

use std::sync::Arc;

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::Deserialize;

use super::auth::AuthConfig;
use super::catalog::{self, CatalogConfig};
use super::dialects::DialectsConfig;
use super::limits::LimitsConfig;
use super::observability::ObservabilityConfig;
use super::plugins::PluginsConfig;
use super::provider_entry::ProviderEntry;
use super::routing::RouteEntry;
use super::schema_transforms as schema;
use super::server::ServerConfig;
use super::{alerts, batches, cache, console, guards, mcp, passthrough};

/// The whole `config.yaml`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The HTTP listener: address, body sizes, timeouts, connections.
    #[serde(default)]
    pub server: ServerConfig,
    /// Where plugins are found, and the budget each plugin call gets.
    #[serde(default)]
    pub plugins: PluginsConfig,
    /// The upstream providers, by name: clients ask for `<name>/<model>`.
    #[serde(default)]
    #[schemars(transform = schema::named_map("openai"))]
    pub providers: IndexMap<String, ProviderEntry>,
    /// Rate limits and budgets: limiter plugins, and where their counters live.
    #[serde(default)]
    pub limits: LimitsConfig,
    /// Virtual models: a policy (router plugin) spreading requests over targets.
    #[serde(default)]
    #[schemars(transform = schema::named_map("smart"))]
    pub routing: IndexMap<String, RouteEntry>,
    /// Logs and OpenTelemetry traces.
    #[serde(default)]
    pub observability: ObservabilityConfig,
    /// Where usage records are kept.
    #[serde(default)]
    pub ledger: crate::ledger::LedgerConfig,
    /// Models that extend or replace the built-in catalog.
    #[serde(default)]
    pub catalog: CatalogConfig,
    /// The built-in catalog with `catalog:` merged over it: every price the gateway uses.
    #[serde(skip, default = "catalog::builtin")]
    pub models: Arc<crate::catalog::Catalog>,
    /// API keys on `/v1/*` (the `/usage/*` endpoints always need one).
    #[serde(default)]
    pub auth: AuthConfig,
    /// The plugins that translate the client APIs other than Chat Completions. `messages` and
    /// `responses` are always served; any other key turns on one more dialect, served by the
    /// plugin it names: `gemini: { plugin: gemini-genai }` serves Google's GenAI API
    /// (`/v1beta/models/{model}:generateContent` and the rest, for the `google-genai` SDKs).
    #[serde(default)]
    #[schemars(extend("examples" = [{"gemini": {"plugin": "gemini-genai"}}]))]
    pub dialects: DialectsConfig,
    /// Content policies on requests and answers (guard plugins), in order.
    #[serde(default)]
    #[schemars(extend("examples" = [[{"plugin": "redact", "options": {"kinds": {"card": "placeholder"}}}]]))]
    pub guards: Vec<guards::GuardEntry>,
    /// The response cache: exact answers kept by a key of everything that shapes them.
    #[serde(default)]
    pub cache: cache::CacheConfig,
    /// The MCP gateway: upstream MCP servers merged behind `/mcp`.
    #[serde(default)]
    pub mcp: mcp::McpConfig,
    /// Pass-through routes to what the gateway does not model: `<prefix>/<entry>/<path>`.
    #[serde(default)]
    pub passthrough: passthrough::PassthroughConfig,
    /// OpenAI's Files and Batch APIs (`/v1/files`, `/v1/batches`).
    #[serde(default)]
    pub batches: batches::BatchesConfig,
    /// Alerts: a key nearing its budget, a provider failing; sent to webhooks, Slack,
    /// PagerDuty.
    #[serde(default)]
    pub alerts: alerts::AlertsConfig,
    /// Signing in to the console and the admin API through the company's identity provider
    /// (OpenID Connect), with roles; admin keys keep working for automation.
    #[serde(default)]
    pub console: console::ConsoleConfig,
}
