//! wasmgate: an OpenAI-compatible LLM gateway whose providers are WebAssembly components.
//!
//! - [`config`]: `config.yaml` and command-line overrides.
//! - [`plugins`]: the wasmtime host, the only module that touches WebAssembly.
//! - [`gateway`]: one loaded config, its providers and model resolution.
//! - [`guards`]: the guards of one loaded config, in order, with the requests each applies to.
//! - [`ledger`]: the usage ledger, written in batches off the request path.
//! - [`auth`]: API keys (stored hashed) and the projects they belong to.
//! - [`credentials`]: provider keys kept by `wasmgate login`, outside the config.
//! - [`cli`]: the commands besides `serve` (`keys`, `login`, `usage`).
//! - [`reload`]: hot reload of the config and plugins (SIGHUP, file changes).
//! - [`pipeline`]: the `/v1/*` request path, stage by stage (auth, parse, admit, route,
//!   attempt, relay, finish) over one context.
//! - [`server`]: the HTTP API (routes, handlers, middleware), and the graceful shutdown.
//! - [`upstream`]: the pooled HTTP client for upstream providers, and the guard that keeps each
//!   plugin's requests under its entry's base URL.
//! - [`mcp`]: the MCP gateway (`/mcp`): upstream MCP servers merged behind gateway keys.
//! - [`redact`]: known secrets, kept out of what is relayed from upstream, logged or stored.
//! - [`clip`]: client input bounded and escaped before it is echoed, logged or labelled.
//! - [`sync`]: locks taken past a poisoning, one way for the whole host.
//! - [`tokenizer`], [`secret`], [`telemetry`], [`state`].

pub mod alerts;
pub mod auth;
pub mod batches;
pub mod cache;
pub mod catalog;
pub mod cli;
pub mod clip;
pub mod config;
pub mod credentials;
pub mod error;
pub mod gateway;
pub mod guards;
pub mod ledger;
pub mod limits;
pub mod mcp;
pub mod pipeline;
pub mod plugins;
pub mod redact;
pub mod reload;
pub mod resident;
pub mod routing;
pub mod secret;
pub mod server;
pub mod sockets;
pub mod state;
pub mod sync;
pub mod telemetry;
pub mod tokenizer;
pub mod upstream;

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use arc_swap::ArcSwap;

use crate::config::Config;
use crate::gateway::Gateway;
use crate::plugins::{PluginHost, PluginLimits};
use crate::state::AppState;

/// Builds the shared state for `config`: the plugin host, every provider's plugin (validated),
/// and the upstream client.
pub async fn build_state(config: Config) -> anyhow::Result<Arc<AppState>> {
    let limits = PluginLimits::from_config(&config.plugins)?;
    let cache_dir = config
        .plugins
        .cache_dir
        .clone()
        .or_else(plugins::default_cache_dir);
    let tokenizer = tokenizer::Tokenizer;
    tokenizer.load().await;
    let http = upstream::client()?;
    let telemetry = Arc::new(telemetry::Telemetry::new(&config.observability, &http));
    let observer: Arc<dyn plugins::CallObserver> = telemetry.clone();
    let host = PluginHost::new(limits, cache_dir, tokenizer, observer)?;
    let max_body_bytes = config.server.max_body_bytes;
    let body_budget = config.server.max_body_bytes_in_flight;
    let ledger = ledger::Ledger::open(&config.ledger)?;
    let cache = cache::Cache::open(&config.cache)
        .await
        .map_err(|e| anyhow::anyhow!("cache.store: {e}"))?;
    let mcp = Arc::new(mcp::Hub::start(&config.mcp, &http));
    let gateway = Gateway::load(config, &host).await?;
    let jwks = auth::jwt::Jwks::new(http.clone());
    Ok(Arc::new(AppState {
        gateway: ArcSwap::from_pointee(gateway),
        plugins: host,
        http,
        max_body_bytes,
        body_budget: state::BodyBudget::new(body_budget),
        started_unix: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        stats: routing::stats::Stats::default(),
        background: tokio_util::task::TaskTracker::new(),
        keys: auth::Keys::new(ledger.store()),
        jwks,
        oidc: auth::oidc::Discovery::default(),
        ledger,
        cache: Arc::new(cache),
        telemetry,
        mcp,
        sockets: sockets::Sockets::default(),
    }))
}
