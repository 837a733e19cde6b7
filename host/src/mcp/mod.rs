//! The MCP gateway: `/mcp` (Streamable HTTP), one authenticated endpoint in front of the
//! configured MCP servers, their tools, prompts and resources merged into one view.
//!
//! A request passes, in order: the router's `/mcp` handler (`server::mcp`: the transport, the
//! key, the session, the JSON-RPC envelope) → [`dispatch`] (the method) → [`catalog`] (listings, merged and filtered by [`permit`]) or
//! [`call`] (one tool call: permission, limit, guards on its arguments, the upstream, guards on
//! its result, its record) → [`upstream`] (the server's connection, kept up by a supervisor).
//! The chat pipeline knows nothing of this module; it takes from below it only what any request
//! takes (auth, limits, guards, ledger, telemetry).

pub mod call;
pub mod catalog;
pub mod dispatch;
pub mod error;
pub mod guard;
pub mod legacy;
pub mod permit;
pub mod progress;
pub mod session;
pub mod sse;
pub mod upstream;

use std::sync::Arc;

use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::mcp::McpConfig;
use upstream::{Changed, Upstream};

/// The protocol versions `/mcp` speaks (those with the `initialize` handshake), newest first.
pub const PROTOCOL_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The MCP servers of the config, connected, and what `/mcp` needs to serve them. It lives as
/// long as the process (a reload keeps it: the `mcp:` section is read at start-up).
pub struct Hub {
    servers: Vec<Arc<Upstream>>,
    signer: session::Signer,
    pub config: McpConfig,
    changes: broadcast::Sender<Changed>,
    stop: CancellationToken,
    /// Tool calls in flight on this replica, for clients' cancellations.
    pub in_flight: Arc<progress::InFlight>,
    /// The older transport's event streams open on this replica.
    pub sse: Arc<legacy::Streams>,
    /// Ends the clients' notification streams (when the gateway starts draining).
    streams: CancellationToken,
    tasks: TaskTracker,
}

impl Hub {
    /// Starts a supervisor for each server of `config` (connections are made in the
    /// background: start-up never waits on an MCP server). Must be called inside a runtime.
    pub fn start(config: &McpConfig, http: &reqwest::Client) -> Self {
        let (changes, _) = broadcast::channel(64);
        let stop = CancellationToken::new();
        let tasks = TaskTracker::new();
        let servers: Vec<Arc<Upstream>> = config
            .servers
            .iter()
            .map(|(name, server)| Arc::new(Upstream::new(name, server.clone(), changes.clone())))
            .collect();
        for server in &servers {
            tasks.spawn(Arc::clone(server).supervise(http.clone(), stop.clone()));
        }
        tasks.close();
        if config.session_secret.is_none() && !servers.is_empty() {
            tracing::info!(
                "mcp.session_secret is not set: MCP sessions are valid on this replica only"
            );
        }
        Self {
            servers,
            signer: session::Signer::new(
                config
                    .session_secret
                    .as_ref()
                    .map(|s| s.expose().as_bytes()),
            ),
            config: config.clone(),
            changes,
            stop,
            in_flight: Arc::default(),
            sse: Arc::default(),
            streams: CancellationToken::new(),
            tasks,
        }
    }

    /// Whether `/mcp` is served (some server is configured).
    pub fn enabled(&self) -> bool {
        !self.servers.is_empty()
    }

    pub fn servers(&self) -> &[Arc<Upstream>] {
        &self.servers
    }

    /// The server whose prefix `name` starts with, and the name as that server knows it.
    /// Prefixes are checked at load never to begin one another, so at most one matches.
    pub fn route<'a>(&self, name: &'a str) -> Option<(&Arc<Upstream>, &'a str)> {
        self.servers.iter().find_map(|server| {
            name.strip_prefix(server.prefix.as_str())
                .filter(|rest| !rest.is_empty())
                .map(|rest| (server, rest))
        })
    }

    /// The server a merged resource URI (`<server>+<uri>`) belongs to, and its own URI.
    pub fn route_uri<'a>(&self, uri: &'a str) -> Option<(&Arc<Upstream>, &'a str)> {
        let (name, rest) = uri.split_once('+')?;
        let server = self.servers.iter().find(|s| &*s.name == name)?;
        Some((server, rest))
    }

    /// List changes the servers announce, from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Changed> {
        self.changes.subscribe()
    }

    /// Cancelled when the gateway starts draining: the clients' notification streams end then,
    /// rather than hold the drain until its deadline.
    pub fn draining(&self) -> CancellationToken {
        self.streams.clone()
    }

    /// Ends the clients' notification streams.
    pub fn end_streams(&self) {
        self.streams.cancel();
    }

    pub fn signer(&self) -> &session::Signer {
        &self.signer
    }

    /// Closes every connection (stdio servers are stopped) and waits for the supervisors.
    pub async fn shutdown(&self) {
        self.stop.cancel();
        if tokio::time::timeout(std::time::Duration::from_secs(5), self.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!("MCP server connections still closing after 5 s: not waiting");
        }
    }
}
