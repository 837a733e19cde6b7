//! `server:`: the HTTP listener, its body sizes, deadlines and connection cap, with defaults.

use std::net::IpAddr;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

/// The longest connection deadline accepted: an hour.
pub(super) const MAX_TIMEOUT_MS: u64 = 3_600_000;
/// The most connections accepted as a cap: a million file descriptors.
pub(super) const MAX_CONNECTIONS: u32 = 1_000_000;

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
    #[serde(default = "default_header_read_timeout_ms")]
    #[schemars(range(min = 1, max = MAX_TIMEOUT_MS))]
    pub header_read_timeout_ms: u64,
    /// A connection with no request in flight is closed after this (HTTP/1 and HTTP/2).
    #[serde(default = "default_idle_timeout_ms")]
    #[schemars(range(min = 1, max = MAX_TIMEOUT_MS))]
    pub idle_timeout_ms: u64,
    /// A request body must arrive within this of its head; else 408.
    #[serde(default = "default_body_read_timeout_ms")]
    #[schemars(range(min = 1, max = MAX_TIMEOUT_MS))]
    pub body_read_timeout_ms: u64,
    /// Connections open at once; past this, new ones wait in the listen backlog.
    #[serde(default = "default_max_connections")]
    #[schemars(range(min = 1, max = MAX_CONNECTIONS))]
    pub max_connections: u32,
    /// The Responses API's WebSocket mode (`GET /v1/responses` upgraded): its bounds.
    #[serde(default)]
    pub websocket: super::websocket::WebsocketConfig,
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
            header_read_timeout_ms: default_header_read_timeout_ms(),
            idle_timeout_ms: default_idle_timeout_ms(),
            body_read_timeout_ms: default_body_read_timeout_ms(),
            max_connections: default_max_connections(),
            websocket: super::websocket::WebsocketConfig::default(),
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

pub(super) fn default_header_read_timeout_ms() -> u64 {
    // A client sends its request head in one or two packets; ten seconds is generous even on a
    // bad mobile link, and short enough that a slowloris client holds a socket for little.
    10_000
}
pub(super) fn default_idle_timeout_ms() -> u64 {
    // Longer than the 60 s idle timeout of the common load balancers (AWS ALB, GCP): the side
    // that closes an idle connection must be the balancer, or it may reuse one just closed here.
    75_000
}
pub(super) fn default_body_read_timeout_ms() -> u64 {
    // A 32 MiB body (the default `max_body_bytes`) at about 0.5 MiB/s.
    60_000
}
pub(super) fn default_max_connections() -> u32 {
    // Below the usual open-file limits of a service (`LimitNOFILE`, container defaults), leaving
    // room for upstream connections and the ledger.
    4_096
}
