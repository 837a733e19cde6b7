//! The state every request shares.

use arc_swap::ArcSwap;

use crate::gateway::Gateway;
use crate::plugins::PluginHost;

pub struct AppState {
    /// The loaded config; a request takes one snapshot at its start.
    pub gateway: ArcSwap<Gateway>,
    pub plugins: PluginHost,
    /// The pooled upstream client.
    pub http: reqwest::Client,
    pub max_body_bytes: usize,
    /// Request body bytes held at once, by all requests (`server.max_body_bytes_in_flight`).
    pub body_budget: crate::server::BodyBudget,
    /// When the gateway started, as the `created` time of listed models.
    pub started_unix: u64,
    /// Work that outlives its request (settling limits); waited for on shutdown.
    pub background: tokio_util::task::TaskTracker,
    /// Live statistics and circuit breakers of routing targets; they outlive reloads.
    pub stats: crate::routing::stats::Stats,
    /// The usage ledger; flushed on shutdown after the background work.
    pub ledger: crate::ledger::Ledger,
    /// API key lookups (the keys live in the ledger's database).
    pub keys: crate::auth::Keys,
    /// Metrics, and the span exporter (flushed on shutdown after the ledger).
    pub telemetry: std::sync::Arc<crate::telemetry::Telemetry>,
}
