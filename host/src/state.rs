//! The state every request shares.

use std::sync::Arc;

use arc_swap::ArcSwap;
use tokio::sync::Semaphore;

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
    pub body_budget: BodyBudget,
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
    /// The signing keys of `auth.jwt`'s issuers, fetched and cached (they outlive reloads).
    pub jwks: crate::auth::jwt::Jwks,
    /// The discovery document of `console.oidc`'s provider, fetched and cached.
    pub oidc: crate::auth::oidc::Discovery,
    /// The response cache's store (it outlives reloads: `cache.store` is read at start-up).
    pub cache: Arc<crate::cache::Cache>,
    /// Metrics, and the span exporter (flushed on shutdown after the ledger).
    pub telemetry: std::sync::Arc<crate::telemetry::Telemetry>,
    /// The MCP servers behind `/mcp`, connected (read at start-up; a reload keeps them).
    pub mcp: Arc<crate::mcp::Hub>,
    /// The Responses API's WebSocket sessions open, counted per key; closed on shutdown.
    pub sockets: crate::sockets::Sockets,
}

/// Request body bytes the gateway may hold at once, counted in KiB (see the pipeline's body
/// reading, which reserves from it).
pub struct BodyBudget {
    kib: Arc<Semaphore>,
}

impl BodyBudget {
    /// A budget of `bytes` (the config checks that it fits a u32 of KiB).
    pub fn new(bytes: usize) -> Self {
        Self {
            kib: Arc::new(Semaphore::new(Self::kib(bytes) as usize)),
        }
    }

    /// KiB free now (for tests and the hostile-load measurement).
    pub fn available_kib(&self) -> usize {
        self.kib.available_permits()
    }

    /// The permits, one per KiB.
    pub fn semaphore(&self) -> &Arc<Semaphore> {
        &self.kib
    }

    /// `bytes` in KiB, rounded up (the config keeps every budget and body below 4 TiB).
    pub fn kib(bytes: usize) -> u32 {
        u32::try_from(bytes.div_ceil(1024)).unwrap_or(u32::MAX)
    }
}
