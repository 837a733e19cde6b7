//! One upstream MCP server: its connection, kept up by a supervisor task that connects, waits for
//! the connection to end (a stdio server that exits, a transport that breaks) and connects again
//! with a growing pause. Calls go to the connection of the moment; while there is none the server
//! is "down": listings leave it out and calls to it fail at once, without waiting.
//!
//! The connection is rmcp's client, on rmcp's transports (the older HTTP+SSE one is ours, in
//! [`super::sse`]). Its Streamable HTTP transport re-establishes an upstream session that
//! expired (a 404 on its session id) and retries the request once, so the gateway's client never
//! notices. One connection per server and replica serves every client
//! session: an MCP server answers each request on its own, and the gateway's sessions live in
//! their ids, not in upstream state.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use arc_swap::ArcSwapOption;
use rmcp::model::ClientCapabilities;
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ServiceExt};
use tokio::sync::{Notify, broadcast};
use tokio_util::sync::CancellationToken;

use crate::config::mcp::{McpServer, McpTransport};

/// A change an upstream announced, passed on to every client session's stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Changed {
    Tools,
    Prompts,
    Resources,
}

impl Changed {
    /// The notification's method.
    pub fn method(self) -> &'static str {
        match self {
            Self::Tools => "notifications/tools/list_changed",
            Self::Prompts => "notifications/prompts/list_changed",
            Self::Resources => "notifications/resources/list_changed",
        }
    }
}

/// The pause before the first reconnection, doubled after each failure up to [`BACKOFF_MAX`].
const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// A connection that lasted this long resets the pause.
const STABLE: Duration = Duration::from_secs(10);

/// One configured server and its connection of the moment.
pub struct Upstream {
    pub name: Arc<str>,
    /// What its names start with in the merged view.
    pub prefix: String,
    pub timeout: Duration,
    config: McpServer,
    peer: ArcSwapOption<Peer<RoleClient>>,
    /// Wakes the supervisor to drop a connection that failed a call.
    broken: Notify,
    /// Connections made since start (the first one included).
    connections: AtomicU64,
    changes: broadcast::Sender<Changed>,
    /// The progress of calls in flight on the connection of the moment.
    pub progress: Arc<super::progress::Progress>,
    /// Ends its supervisor: when the gateway stops, or a reload removes it.
    stop: CancellationToken,
}

/// rmcp's handler of what the server sends: list changes, passed on.
struct Listener {
    server: Arc<str>,
    changes: broadcast::Sender<Changed>,
    progress: Arc<super::progress::Progress>,
}

impl Listener {
    fn changed(&self, what: Changed) -> std::future::Ready<()> {
        tracing::debug!(server = &*self.server, "{}", what.method());
        // No receiver (no client stream open) is fine.
        let _ = self.changes.send(what);
        std::future::ready(())
    }
}

impl ClientHandler for Listener {
    fn on_tool_list_changed(
        &self,
        _: rmcp::service::NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.changed(Changed::Tools)
    }

    fn on_prompt_list_changed(
        &self,
        _: rmcp::service::NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.changed(Changed::Prompts)
    }

    fn on_resource_list_changed(
        &self,
        _: rmcp::service::NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.changed(Changed::Resources)
    }

    fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _: rmcp::service::NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.progress.deliver(params);
        std::future::ready(())
    }

    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut info = rmcp::model::Implementation::default();
        info.name = "wasmgate".to_owned();
        info.version = env!("CARGO_PKG_VERSION").to_owned();
        rmcp::model::ClientConfig::new(ClientCapabilities::default(), info)
            .with_protocol_version(rmcp::model::ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}

impl Upstream {
    pub fn new(
        name: &str,
        config: McpServer,
        changes: broadcast::Sender<Changed>,
        stop: CancellationToken,
    ) -> Self {
        Self {
            name: name.into(),
            prefix: config.prefix_for(name),
            timeout: config.timeout(),
            config,
            peer: ArcSwapOption::empty(),
            broken: Notify::new(),
            connections: AtomicU64::new(0),
            changes,
            progress: Arc::default(),
            stop,
        }
    }

    /// The connection of the moment, or `None` while the server is down.
    pub fn peer(&self) -> Option<Arc<Peer<RoleClient>>> {
        self.peer.load_full()
    }

    /// Connections made since start: 2 and more means it was reconnected (or restarted).
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::Relaxed)
    }

    /// A call on `peer` failed in a way that says its connection is gone: drop it and connect
    /// again. Only if it is still the connection of the moment: a call that failed on an older
    /// one must not cut the new one.
    pub fn mark_broken(&self, peer: &Arc<Peer<RoleClient>>) {
        let current = self.peer.load();
        if current.as_ref().is_some_and(|c| Arc::ptr_eq(c, peer)) {
            let previous = self.peer.compare_and_swap(&current, None);
            if previous.as_ref().is_some_and(|p| Arc::ptr_eq(p, peer)) {
                self.broken.notify_one();
            }
        }
    }

    /// Its entry in the config.
    pub fn config(&self) -> &McpServer {
        &self.config
    }

    /// Closes its connection for good (a reload removed it).
    pub fn retire(&self) {
        self.stop.cancel();
    }

    /// Keeps the server connected until it is stopped: connects, waits for the connection to
    /// end, pauses, connects again. A stdio server's process is killed when its connection ends.
    pub async fn supervise(self: Arc<Self>, http: reqwest::Client) {
        let stop = self.stop.clone();
        let mut backoff = BACKOFF_MIN;
        while !stop.is_cancelled() {
            let started = Instant::now();
            let connect = tokio::time::timeout(self.timeout, self.connect(&http));
            let running = tokio::select! {
                () = stop.cancelled() => return,
                connected = connect => connected,
            };
            match running {
                Ok(Ok(running)) => {
                    let n = self.connections.fetch_add(1, Ordering::Relaxed) + 1;
                    tracing::info!(server = &*self.name, connection = n, "MCP server connected");
                    // Tokens start again with each connection: routes of the last one go.
                    self.progress.clear();
                    self.peer.store(Some(Arc::new(running.peer().clone())));
                    if n > 1 {
                        // What it offers may have changed while it was away.
                        for what in [Changed::Tools, Changed::Prompts, Changed::Resources] {
                            let _ = self.changes.send(what);
                        }
                    }
                    let cancel = running.cancellation_token();
                    let ended = running.waiting();
                    tokio::pin!(ended);
                    tokio::select! {
                        () = stop.cancelled() => {
                            cancel.cancel();
                            let _ = ended.await;
                            self.peer.store(None);
                            return;
                        }
                        () = self.broken.notified() => cancel.cancel(),
                        reason = &mut ended => {
                            tracing::warn!(server = &*self.name, "MCP server connection ended: {reason:?}");
                        }
                    }
                    self.peer.store(None);
                    if started.elapsed() >= STABLE {
                        backoff = BACKOFF_MIN;
                    }
                }
                Ok(Err(e)) => tracing::warn!(
                    server = &*self.name,
                    "cannot connect to the MCP server: {e:#}"
                ),
                Err(_) => tracing::warn!(
                    server = &*self.name,
                    "the MCP server did not complete its handshake within {} ms",
                    self.timeout.as_millis()
                ),
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(BACKOFF_MAX);
        }
    }

    async fn connect(
        &self,
        http: &reqwest::Client,
    ) -> anyhow::Result<RunningService<RoleClient, Listener>> {
        let listener = Listener {
            server: Arc::clone(&self.name),
            changes: self.changes.clone(),
            progress: Arc::clone(&self.progress),
        };
        let url = self.config.url.clone().unwrap_or_default();
        Ok(match self.config.transport {
            McpTransport::Http => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(url);
                if let Some(token) = &self.config.token {
                    config = config.auth_header(token.expose().to_owned());
                }
                let transport = StreamableHttpClientTransport::with_client(http.clone(), config);
                listener.serve(transport).await?
            }
            McpTransport::Stdio => {
                listener
                    .serve(TokioChildProcess::new(self.command())?)
                    .await?
            }
            McpTransport::Sse => {
                let token = self.config.token.as_ref().map(|t| t.expose().to_owned());
                let transport =
                    super::sse::SseTransport::connect(http.clone(), &url, token).await?;
                listener.serve(transport).await?
            }
        })
    }

    /// The stdio server's command: its own environment only (and `PATH`, `HOME`, `LANG`), so
    /// the gateway's keys stay with the gateway.
    fn command(&self) -> tokio::process::Command {
        let mut command =
            tokio::process::Command::new(self.config.command.as_deref().unwrap_or(""));
        command
            .args(&self.config.args)
            .env_clear()
            .kill_on_drop(true);
        for var in ["PATH", "HOME", "LANG"] {
            if let Some(value) = std::env::var_os(var) {
                command.env(var, value);
            }
        }
        for (name, value) in &self.config.env {
            command.env(name, value.expose());
        }
        if let Some(dir) = &self.config.cwd {
            command.current_dir(dir);
        }
        command
    }
}
