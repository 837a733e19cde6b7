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

use arc_swap::ArcSwap;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::mcp::McpConfig;
use upstream::{Changed, Upstream};

/// The protocol versions `/mcp` speaks (those with the `initialize` handshake), newest first.
pub const PROTOCOL_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The MCP servers of the config, connected, and what `/mcp` needs to serve them. It lives as
/// long as the process; a config reload swaps its servers and settings ([`Hub::reload`]), all
/// but the session secret, which takes effect at a restart.
pub struct Hub {
    servers: ArcSwap<Vec<Arc<Upstream>>>,
    signer: session::Signer,
    config: ArcSwap<McpConfig>,
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
            .map(|(name, server)| {
                Arc::new(Upstream::new(
                    name,
                    server.clone(),
                    changes.clone(),
                    stop.child_token(),
                ))
            })
            .collect();
        for server in &servers {
            tasks.spawn(Arc::clone(server).supervise(http.clone()));
        }
        tasks.close();
        if config.session_secret.is_none() && !servers.is_empty() {
            tracing::info!(
                "mcp.session_secret is not set: MCP sessions are valid on this replica only"
            );
        }
        Self {
            servers: ArcSwap::from_pointee(servers),
            signer: session::Signer::new(
                config
                    .session_secret
                    .as_ref()
                    .map(|s| s.expose().as_bytes()),
            ),
            config: ArcSwap::from_pointee(config.clone()),
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
        !self.servers.load().is_empty()
    }

    /// The servers of the running config.
    pub fn servers(&self) -> Arc<Vec<Arc<Upstream>>> {
        self.servers.load_full()
    }

    /// The `mcp:` section of the running config.
    pub fn config(&self) -> Arc<McpConfig> {
        self.config.load_full()
    }

    /// The server whose prefix `name` starts with, and the name as that server knows it.
    /// Prefixes are checked at load never to begin one another, so at most one matches.
    pub fn route<'a>(&self, name: &'a str) -> Option<(Arc<Upstream>, &'a str)> {
        self.servers.load().iter().find_map(|server| {
            name.strip_prefix(server.prefix.as_str())
                .filter(|rest| !rest.is_empty())
                .map(|rest| (Arc::clone(server), rest))
        })
    }

    /// The server a merged resource URI (`<server>+<uri>`) belongs to, and its own URI.
    pub fn route_uri<'a>(&self, uri: &'a str) -> Option<(Arc<Upstream>, &'a str)> {
        let (name, rest) = uri.split_once('+')?;
        let server = self
            .servers
            .load()
            .iter()
            .find(|s| &*s.name == name)
            .cloned()?;
        Some((server, rest))
    }

    /// Takes the `mcp:` section of a reloaded config: a server whose entry is unchanged keeps
    /// its connection (calls in flight on it are untouched); a new or changed one is connected
    /// in the background; one removed or replaced leaves the view at once, and its connection
    /// is closed once calls that were in flight on it have had their `timeout_ms` to end.
    /// Clients are told the lists changed. Returns the servers started and retired.
    pub fn reload(&self, config: &McpConfig, http: &reqwest::Client) -> (usize, usize) {
        let current = self.servers.load_full();
        let mut next = Vec::with_capacity(config.servers.len());
        let mut started = 0;
        for (name, entry) in &config.servers {
            if let Some(kept) = current
                .iter()
                .find(|s| &*s.name == name && s.config() == entry)
            {
                next.push(Arc::clone(kept));
                continue;
            }
            let server = Arc::new(Upstream::new(
                name,
                entry.clone(),
                self.changes.clone(),
                self.stop.child_token(),
            ));
            self.tasks
                .spawn(Arc::clone(&server).supervise(http.clone()));
            next.push(server);
            started += 1;
        }
        let retired: Vec<Arc<Upstream>> = current
            .iter()
            .filter(|s| !next.iter().any(|n| Arc::ptr_eq(n, s)))
            .cloned()
            .collect();
        self.servers.store(Arc::new(next));
        self.config.store(Arc::new(config.clone()));
        for server in &retired {
            let (grace, stop) = (server.timeout, self.stop.clone());
            let server = Arc::clone(server);
            self.tasks.spawn(async move {
                tokio::select! {
                    () = tokio::time::sleep(grace) => {}
                    () = stop.cancelled() => {}
                }
                server.retire();
            });
        }
        if started + retired.len() > 0 {
            for what in [Changed::Tools, Changed::Prompts, Changed::Resources] {
                let _ = self.changes.send(what);
            }
        }
        (started, retired.len())
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
