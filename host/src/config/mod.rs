//! The gateway's configuration: serde structs for `config.yaml`, loading and validation.

pub mod batches;
pub mod cache;
mod catalog;
mod dialects;
pub mod guards;
mod interpolate;
pub mod mcp;
pub mod passthrough;
pub mod presets;
pub mod reference;
mod resources;
pub mod schema;
mod source;

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use dialects::{DialectEntry, DialectsConfig};

use crate::secret::Secret;

pub use catalog::CatalogConfig;
pub use source::ConfigSource;

/// The config used when no file is given and `./config.yaml` does not exist: it runs with no key
/// and no network (the `echo` provider), and shows how the `openai` provider is set up.
pub const DEFAULT_CONFIG: &str = include_str!("default.yaml");

/// Why a config could not be used. Each variant names the key or file at fault.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    // Not `source`: that would make the I/O error the cause as well, printed twice in a chain.
    #[error("cannot read config file {path}: {cause}")]
    Read {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("config is not valid YAML: {0}")]
    Yaml(String),
    #[error("config key `{path}`: {message}")]
    Key { path: String, message: String },
}

impl ConfigError {
    pub(crate) fn key(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Key {
            path: path.into(),
            message: message.into(),
        }
    }
}

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
    /// The plugins that translate the client APIs other than Chat Completions.
    #[serde(default)]
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
}

/// `auth:`: whether `/v1/*` needs one of the gateway's own API keys.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    /// Refuse `/v1/*` requests without a valid key (401) or with another project's (403).
    /// Off by default, as suits a gateway on a developer's machine.
    #[serde(default)]
    pub required: bool,
}

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

/// `server:`: the HTTP listener.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// The address to listen on (`--host` overrides it); `127.0.0.1` for this machine only.
    #[serde(default = "default_host")]
    pub host: IpAddr,
    /// The port to listen on (`--port` overrides it).
    #[serde(default = "default_port")]
    pub port: u16,
    /// Largest request body accepted, in bytes; larger ones get 413.
    #[serde(default = "default_max_body_bytes")]
    #[schemars(range(min = 1))]
    pub max_body_bytes: usize,
    /// Request bodies held at once by all requests together, in bytes: a request whose body
    /// does not fit waits (briefly) for room, then gets 503.
    #[serde(default = "default_max_body_bytes_in_flight")]
    pub max_body_bytes_in_flight: usize,
    /// On SIGTERM or SIGINT, how long requests in flight (streams included) may take to finish
    /// before they are cut.
    #[serde(default = "default_shutdown_timeout_ms")]
    pub shutdown_timeout_ms: u64,
    /// A request head must arrive within this, from the connection's opening or (HTTP/1) from
    /// the first byte after the previous response; else the connection is closed.
    #[serde(default = "resources::default_header_read_timeout_ms")]
    #[schemars(range(min = 1, max = resources::MAX_TIMEOUT_MS))]
    pub header_read_timeout_ms: u64,
    /// A connection with no request in flight is closed after this (HTTP/1 and HTTP/2).
    #[serde(default = "resources::default_idle_timeout_ms")]
    #[schemars(range(min = 1, max = resources::MAX_TIMEOUT_MS))]
    pub idle_timeout_ms: u64,
    /// A request body must arrive within this of its head; else 408.
    #[serde(default = "resources::default_body_read_timeout_ms")]
    #[schemars(range(min = 1, max = resources::MAX_TIMEOUT_MS))]
    pub body_read_timeout_ms: u64,
    /// Connections open at once; past this, new ones wait in the listen backlog.
    #[serde(default = "resources::default_max_connections")]
    #[schemars(range(min = 1, max = resources::MAX_CONNECTIONS))]
    pub max_connections: u32,
}

impl ServerConfig {
    pub fn shutdown_timeout(&self) -> Duration {
        Duration::from_millis(self.shutdown_timeout_ms)
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            host: default_host(),
            port: default_port(),
            max_body_bytes: default_max_body_bytes(),
            max_body_bytes_in_flight: default_max_body_bytes_in_flight(),
            shutdown_timeout_ms: default_shutdown_timeout_ms(),
            header_read_timeout_ms: resources::default_header_read_timeout_ms(),
            idle_timeout_ms: resources::default_idle_timeout_ms(),
            body_read_timeout_ms: resources::default_body_read_timeout_ms(),
            max_connections: resources::default_max_connections(),
        }
    }
}

fn default_host() -> IpAddr {
    IpAddr::from([0, 0, 0, 0])
}
fn default_port() -> u16 {
    8080
}
fn default_shutdown_timeout_ms() -> u64 {
    // Kubernetes sends SIGKILL 30 s after SIGTERM by default; this leaves 5 s of that grace
    // for the background work and the ledger flush that follow the drain.
    25_000
}
fn default_max_body_bytes() -> usize {
    // Vision requests carry base64 images; OpenAI itself accepts bodies of tens of MB.
    32 * 1024 * 1024
}
fn default_max_body_bytes_in_flight() -> usize {
    // Eight bodies of the largest size; thousands of ordinary ones.
    256 * 1024 * 1024
}

/// `plugins:`: where plugins are found, and what each call may use.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PluginsConfig {
    /// Where `<plugin>.wasm` components are looked up before the built-in ones.
    #[serde(default = "default_plugins_dir")]
    pub dir: PathBuf,
    /// Where compiled components are cached; defaults to the user's cache directory.
    #[serde(default)]
    #[schemars(extend("examples" = ["/var/cache/wasmgate"]))]
    pub cache_dir: Option<PathBuf>,
    /// CPU time one plugin call may use, in milliseconds: the plugin's own work, which a host
    /// starved of CPU does not stretch.
    #[serde(default = "default_call_timeout_ms")]
    #[schemars(range(min = 1))]
    pub call_timeout_ms: u64,
    /// Wall-clock time after which a plugin call is stopped whatever CPU time it used, in
    /// milliseconds; a backstop, 10 times `call_timeout_ms` unless given.
    #[serde(default)]
    #[schemars(range(min = 1), extend("examples" = [2000]))]
    pub call_wall_timeout_ms: Option<u64>,
    /// Linear-memory cap of one plugin instance, in MiB.
    #[serde(default = "default_memory_limit_mib")]
    #[schemars(range(min = 1, max = 4096))]
    pub memory_limit_mib: u64,
    /// Plugin instances alive at once (each request or open stream holds one); more wait.
    #[serde(default = "default_max_instances")]
    #[schemars(range(min = 1))]
    pub max_instances: u32,
    /// How long a request waits for a free instance before it fails with 503.
    #[serde(default = "resources::default_instance_wait_ms")]
    #[schemars(range(min = 1, max = resources::MAX_INSTANCE_WAIT_MS))]
    pub instance_wait_ms: u64,
    /// The share of `max_instances`, in percent, that open streams may hold, so that other
    /// requests, routers and limiters always find an instance.
    #[serde(default = "resources::default_stream_share_percent")]
    #[schemars(range(min = 1, max = 100))]
    pub stream_share_percent: u8,
}

impl Default for PluginsConfig {
    fn default() -> Self {
        Self {
            dir: default_plugins_dir(),
            cache_dir: None,
            call_timeout_ms: default_call_timeout_ms(),
            call_wall_timeout_ms: None,
            memory_limit_mib: default_memory_limit_mib(),
            max_instances: default_max_instances(),
            instance_wait_ms: resources::default_instance_wait_ms(),
            stream_share_percent: resources::default_stream_share_percent(),
        }
    }
}

fn default_plugins_dir() -> PathBuf {
    PathBuf::from("./target/plugins")
}
fn default_call_timeout_ms() -> u64 {
    // Translating even a multi-megabyte body takes a few ms; 200 ms only stops runaway plugins.
    200
}
fn default_memory_limit_mib() -> u64 {
    64
}
fn default_max_instances() -> u32 {
    512
}

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
}

impl ProviderEntry {
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }
}

fn default_upstream_timeout_ms() -> u64 {
    // The OpenAI SDKs wait 10 minutes; long generations are normal.
    600_000
}

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

/// Command-line options that override the file.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub host: Option<IpAddr>,
    pub port: Option<u16>,
    pub plugins_dir: Option<PathBuf>,
    pub log_level: Option<String>,
    /// A global requests-per-minute limit, added to `limits.rules`.
    pub requests_per_minute: Option<u64>,
    /// A global daily budget in USD, added to `limits.rules`.
    pub daily_budget_usd: Option<f64>,
}

/// The `catalog:` section alone, its errors named from the config's root.
fn catalog_section(section: serde_yaml::Value) -> Result<CatalogConfig, ConfigError> {
    if section.is_null() {
        return Ok(CatalogConfig::default());
    }
    serde_path_to_error::deserialize(section).map_err(|e| {
        let path = match e.path().to_string() {
            root if root == "." => "catalog".to_owned(),
            path => format!("catalog.{path}"),
        };
        ConfigError::key(path, e.into_inner().to_string())
    })
}

impl Config {
    /// Parses YAML text: `${VAR}` interpolation, then typed deserialisation, then validation.
    pub fn from_yaml(text: &str) -> Result<Self, ConfigError> {
        let mut value: serde_yaml::Value =
            serde_yaml::from_str(text).map_err(|e| ConfigError::Yaml(e.to_string()))?;
        if value.is_null() {
            value = serde_yaml::Value::Mapping(Default::default());
        }
        interpolate::interpolate(&mut value, &mut Vec::new(), &|name| {
            std::env::var(name).ok()
        })?;
        // The catalog first: presets list its models, and it may add some.
        let section = value.get("catalog").cloned().unwrap_or_default();
        let models = Arc::new(catalog_section(section)?.load()?);
        presets::expand(&mut value, &models)?;
        let mut config: Config = serde_path_to_error::deserialize(value).map_err(|e| {
            let path = e.path().to_string();
            ConfigError::key(path, e.into_inner().to_string())
        })?;
        config.models = models;
        config.validate()?;
        Ok(config)
    }

    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|cause| ConfigError::Read {
            path: path.to_owned(),
            cause,
        })?;
        Self::from_yaml(&text)
    }

    pub fn apply(&mut self, overrides: &Overrides) {
        if let Some(host) = overrides.host {
            self.server.host = host;
        }
        if let Some(port) = overrides.port {
            self.server.port = port;
        }
        if let Some(dir) = &overrides.plugins_dir {
            self.plugins.dir.clone_from(dir);
        }
        if let Some(level) = &overrides.log_level {
            self.observability.log_level = Some(level.clone());
        }
        let rule = |policy: &str, key: &str, value: serde_json::Value| LimitRule {
            policy: policy.to_owned(),
            scope: LimitScope::Global,
            options: [(key.to_owned(), value)].into_iter().collect(),
            id: Some(format!("cli-{policy}")),
            models: Vec::new(),
        };
        if let Some(rpm) = overrides.requests_per_minute {
            self.limits
                .rules
                .push(rule("rate-limit", "requests_per_minute", rpm.into()));
        }
        if let Some(usd) = overrides.daily_budget_usd {
            self.limits
                .rules
                .push(rule("budget", "daily_usd", usd.into()));
        }
    }

    fn validate(&self) -> Result<(), ConfigError> {
        if self.plugins.call_timeout_ms == 0 {
            return Err(ConfigError::key(
                "plugins.call_timeout_ms",
                "must be at least 1",
            ));
        }
        if let Some(wall) = self.plugins.call_wall_timeout_ms
            && wall < self.plugins.call_timeout_ms
        {
            return Err(ConfigError::key(
                "plugins.call_wall_timeout_ms",
                "must be at least plugins.call_timeout_ms (a call's CPU time cannot exceed its wall-clock time)",
            ));
        }
        if !(1..=4096).contains(&self.plugins.memory_limit_mib) {
            return Err(ConfigError::key(
                "plugins.memory_limit_mib",
                "must be between 1 and 4096",
            ));
        }
        if self.plugins.max_instances == 0 {
            return Err(ConfigError::key(
                "plugins.max_instances",
                "must be at least 1",
            ));
        }
        resources::validate(self)?;
        guards::validate(self)?;
        mcp::validate(&self.mcp)?;
        if self.server.max_body_bytes == 0 {
            return Err(ConfigError::key(
                "server.max_body_bytes",
                "must be at least 1",
            ));
        }
        // Budgets are counted in KiB in a u32 (see server::body).
        if self.server.max_body_bytes_in_flight < self.server.max_body_bytes
            || self.server.max_body_bytes_in_flight >> 10 >= u32::MAX as usize
        {
            return Err(ConfigError::key(
                "server.max_body_bytes_in_flight",
                "must be at least server.max_body_bytes (one largest body must fit), and below 4 TiB",
            ));
        }
        for (name, entry) in &self.providers {
            let at = |key: &str| format!("providers.{name}.{key}");
            if name.is_empty() || name.contains('/') || name.contains(char::is_whitespace) {
                return Err(ConfigError::key(
                    format!("providers.{name}"),
                    "a provider name must be non-empty, without `/` or spaces",
                ));
            }
            if entry.plugin.is_empty()
                || !entry
                    .plugin
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            {
                return Err(ConfigError::key(
                    at("plugin"),
                    "must be a plugin name (letters, digits, `-`, `_`)",
                ));
            }
            if let Some(url) = &entry.base_url
                && !(url.starts_with("http://") || url.starts_with("https://"))
            {
                return Err(ConfigError::key(
                    at("base_url"),
                    "must start with http:// or https://",
                ));
            }
            if entry.timeout_ms == 0 {
                return Err(ConfigError::key(at("timeout_ms"), "must be at least 1"));
            }
            if let Some(catalog) = &entry.catalog
                && !self.models.has_provider(catalog)
            {
                return Err(ConfigError::key(
                    at("catalog"),
                    format!("no provider `{catalog}` in the model catalog"),
                ));
            }
            if let Some(i) = entry.models.iter().position(|m| m.trim().is_empty()) {
                return Err(ConfigError::key(
                    format!("providers.{name}.models[{i}]"),
                    "is empty",
                ));
            }
        }
        self.cache.check()?;
        self.passthrough.check()?;
        self.batches.check()?;
        if self.limits.store != "memory" && !self.limits.store.starts_with("redis://") {
            return Err(ConfigError::key(
                "limits.store",
                "must be `memory` or a redis:// URL",
            ));
        }
        let mut ids = std::collections::HashSet::new();
        for (i, rule) in self.limits.rules.iter().enumerate() {
            if let Some(id) = &rule.id
                && (id.is_empty() || !ids.insert(id.clone()))
            {
                return Err(ConfigError::key(
                    format!("limits.rules[{i}].id"),
                    "must be non-empty and unique",
                ));
            }
        }
        for (name, route) in &self.routing {
            let at = |key: &str| format!("routing.{name}.{key}");
            if name.is_empty() || name.contains('/') {
                return Err(ConfigError::key(
                    format!("routing.{name}"),
                    "a virtual model name must be non-empty and without `/`",
                ));
            }
            if route.targets.is_empty() {
                return Err(ConfigError::key(
                    at("targets"),
                    "must list at least one target",
                ));
            }
            for (i, target) in route.targets.iter().enumerate() {
                let id = target.detail().id;
                let Some((provider, model)) = id.split_once('/') else {
                    return Err(ConfigError::key(
                        format!("routing.{name}.targets[{i}]"),
                        format!("`{id}` is not of the form provider/model"),
                    ));
                };
                if !self.providers.contains_key(provider) || model.is_empty() {
                    return Err(ConfigError::key(
                        format!("routing.{name}.targets[{i}]"),
                        format!("`{id}`: no provider `{provider}` in `providers:`"),
                    ));
                }
            }
            if route.retry.max_attempts == Some(0) {
                return Err(ConfigError::key(
                    at("retry.max_attempts"),
                    "must be at least 1",
                ));
            }
            if route.circuit_breaker.failures == 0 {
                return Err(ConfigError::key(
                    at("circuit_breaker.failures"),
                    "must be at least 1",
                ));
            }
        }
        let url = &self.ledger.url;
        if !(url.starts_with("sqlite://")
            || url == "sqlite::memory:"
            || url.starts_with("postgres://")
            || url.starts_with("postgresql://"))
        {
            return Err(ConfigError::key(
                "ledger.url",
                "must be sqlite://PATH, sqlite::memory: or postgres://USER:PASSWORD@HOST:PORT/DB",
            ));
        }
        if self.ledger.journal.max_bytes < 1 << 20 {
            return Err(ConfigError::key(
                "ledger.journal.max_bytes",
                "must be at least 1048576 (1 MiB)",
            ));
        }
        if self
            .ledger
            .journal
            .dir
            .as_ref()
            .is_some_and(|d| d.as_os_str().is_empty())
        {
            return Err(ConfigError::key("ledger.journal.dir", "must not be empty"));
        }
        if self.ledger.queue_capacity == 0 {
            return Err(ConfigError::key(
                "ledger.queue_capacity",
                "must be at least 1",
            ));
        }
        if let Some(traces) = &self.observability.traces {
            let at = |key: &str| format!("observability.traces.{key}");
            let url = &traces.otlp_endpoint;
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(ConfigError::key(
                    at("otlp_endpoint"),
                    "must start with http:// or https:// (OTLP over HTTP)",
                ));
            }
            if traces.export_interval_ms == 0 {
                return Err(ConfigError::key(
                    at("export_interval_ms"),
                    "must be at least 1",
                ));
            }
            if traces.queue_capacity == 0 {
                return Err(ConfigError::key(at("queue_capacity"), "must be at least 1"));
            }
            for (name, value) in &traces.headers {
                if http::HeaderName::from_bytes(name.as_bytes()).is_err()
                    || http::HeaderValue::from_str(value.expose()).is_err()
                {
                    return Err(ConfigError::key(
                        format!("observability.traces.headers.{name}"),
                        "is not a valid HTTP header",
                    ));
                }
            }
        }
        if let Some(level) = &self.observability.log_level {
            tracing_subscriber::EnvFilter::try_new(level).map_err(|e| {
                ConfigError::key("observability.log_level", format!("invalid filter: {e}"))
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_config_is_valid() {
        let config = Config::from_yaml(DEFAULT_CONFIG).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(config.server.port, 8080);
        assert!(config.providers.contains_key("echo"));
    }

    #[test]
    fn the_example_config_is_valid() {
        let text = include_str!("../../../config.example.yaml");
        let config = Config::from_yaml(text).unwrap_or_else(|e| panic!("{e}"));
        assert!(config.providers.contains_key("openai"));
    }

    #[test]
    fn the_example_configs_commented_presets_are_valid_once_uncommented() {
        let text = include_str!("../../../config.example.yaml");
        let block = text
            .split("# presets:begin\n")
            .nth(1)
            .and_then(|rest| rest.split("  # presets:end").next())
            .unwrap_or_default();
        let entries: String = block
            .lines()
            .map(|line| format!("{}\n", line.replacen("# ", "", 1)))
            .collect();
        assert_eq!(entries.lines().count(), 13, "{entries}");
        let config = Config::from_yaml(&format!("providers:\n{entries}"))
            .unwrap_or_else(|e| panic!("{e}\n{entries}"));
        assert_eq!(config.providers.len(), 13);
        assert!(config.providers.values().all(|p| p.plugin == "openai"));
    }

    #[test]
    fn unknown_key_is_named_with_its_path() {
        let err = Config::from_yaml("providers:\n  p:\n    plugin: echo\n    modles: [a]\n")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("providers.p"), "{err}");
        assert!(err.contains("modles"), "{err}");
    }

    #[test]
    fn the_journal_is_on_by_default_and_its_keys_are_checked() {
        let ledger = |yaml: &str| Config::from_yaml(yaml).map(|c| c.ledger);
        let on_disk = ledger("ledger: { url: 'sqlite:///var/lib/w/ledger.db' }\n").unwrap();
        let settings = on_disk.journal_settings().expect("on by default");
        assert_eq!(
            settings.dir,
            std::path::PathBuf::from("/var/lib/w/ledger.db.usage-journal")
        );
        assert_eq!((settings.fsync, settings.max_bytes), (false, 1 << 30));
        let shared = ledger("ledger: { url: 'postgres://u:p@db/w' }\n").unwrap();
        let settings = shared.journal_settings().expect("on by default");
        assert_eq!(settings.dir, std::path::PathBuf::from("./wasmgate-journal"));
        let memory = ledger("ledger: { url: 'sqlite::memory:' }\n").unwrap();
        assert!(
            memory.journal_settings().is_none(),
            "nothing to replay into"
        );
        let off = ledger("ledger: { journal: { enabled: false } }\n").unwrap();
        assert!(off.journal_settings().is_none());
        let set = ledger("ledger: { journal: { dir: /j, fsync: true, max_bytes: 2097152 } }\n")
            .unwrap()
            .journal_settings()
            .unwrap();
        assert_eq!(
            (set.dir, set.fsync, set.max_bytes),
            (std::path::PathBuf::from("/j"), true, 2 << 20)
        );
        let err = |yaml: &str| {
            ledger(yaml)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        let small = err("ledger: { journal: { max_bytes: 1000 } }\n");
        assert!(small.contains("ledger.journal.max_bytes"), "{small}");
        let typo = err("ledger: { journal: { fsinc: true } }\n");
        assert!(
            typo.contains("ledger.journal") && typo.contains("fsinc"),
            "{typo}"
        );
    }

    #[test]
    fn mistyped_value_is_named_with_its_path() {
        let err = Config::from_yaml("server:\n  port: eighty\n")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.starts_with("config key `server.port`"), "{err}");
    }

    #[test]
    fn bad_base_url_is_named() {
        let err =
            Config::from_yaml("providers:\n  p:\n    plugin: openai\n    base_url: ftp://x\n")
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
        assert!(err.contains("providers.p.base_url"), "{err}");
    }

    #[test]
    fn overrides_win_over_the_file() {
        let mut config =
            Config::from_yaml("server: { port: 9000 }").unwrap_or_else(|e| panic!("{e}"));
        config.apply(&Overrides {
            port: Some(9100),
            ..Overrides::default()
        });
        assert_eq!(config.server.port, 9100);
    }
}
