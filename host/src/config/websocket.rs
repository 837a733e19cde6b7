//! `server.websocket:`: the bounds of the Responses API's WebSocket mode (`GET /v1/responses`
//! upgraded), with defaults: how many sessions a key and the gateway may hold, how long one may
//! idle and live, how large a client message may be, how many `response.create` may wait behind
//! the one in flight, and how long the client may take to read an event.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use super::config_error::ConfigError;

/// The most sessions that may be allowed (`server.max_connections`'s own bound).
const MAX_CONNECTIONS: u32 = 1_000_000;
/// The longest idle time and send timeout: an hour.
const MAX_TIMEOUT_MS: u64 = 3_600_000;

/// The longest a session may last: a day.
const MAX_DURATION_MS: u64 = 86_400_000;
/// The largest client message accepted: 256 MiB.
const MAX_MESSAGE_BYTES: usize = 256 * 1024 * 1024;
/// The most `response.create` events that may wait behind the one in flight.
const MAX_QUEUED_TURNS: u32 = 1_024;

/// `server.websocket:`: the Responses API's WebSocket mode.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebsocketConfig {
    /// Sessions one key (or, on an open gateway, one anonymous project) may hold open at once;
    /// the upgrade of one more is refused with 429.
    #[serde(default = "default_max_sessions_per_key")]
    #[schemars(range(min = 1, max = MAX_CONNECTIONS))]
    pub max_sessions_per_key: u32,
    /// Sessions open at once, all keys together (an upgraded connection no longer counts
    /// against `server.max_connections`); past this, the upgrade is refused with 503.
    #[serde(default = "default_max_sessions")]
    #[schemars(range(min = 1, max = MAX_CONNECTIONS))]
    pub max_sessions: u32,
    /// A session with no turn in flight and no client message for this long is closed.
    #[serde(default = "default_idle_timeout_ms")]
    #[schemars(range(min = 1, max = MAX_TIMEOUT_MS))]
    pub idle_timeout_ms: u64,
    /// A session is closed this long after it opened, after the turn in flight.
    #[serde(default = "default_max_duration_ms")]
    #[schemars(range(min = 1, max = MAX_DURATION_MS))]
    pub max_duration_ms: u64,
    /// The largest client message, in bytes; a larger one closes the session (code 1009).
    #[serde(default = "default_max_message_bytes")]
    #[schemars(range(min = 1024, max = MAX_MESSAGE_BYTES))]
    pub max_message_bytes: usize,
    /// `response.create` events that may wait behind the one in flight; one more closes the
    /// session (code 1008).
    #[serde(default = "default_max_queued_turns")]
    #[schemars(range(min = 0, max = MAX_QUEUED_TURNS))]
    pub max_queued_turns: u32,
    /// How long the client may take to read one event: a client that stops reading is closed
    /// after this, and the turn it stalled ends there (its upstream stream is not read ahead
    /// meanwhile).
    #[serde(default = "default_send_timeout_ms")]
    #[schemars(range(min = 1, max = MAX_TIMEOUT_MS))]
    pub send_timeout_ms: u64,
}

impl Default for WebsocketConfig {
    fn default() -> Self {
        Self {
            max_sessions_per_key: default_max_sessions_per_key(),
            max_sessions: default_max_sessions(),
            idle_timeout_ms: default_idle_timeout_ms(),
            max_duration_ms: default_max_duration_ms(),
            max_message_bytes: default_max_message_bytes(),
            max_queued_turns: default_max_queued_turns(),
            send_timeout_ms: default_send_timeout_ms(),
        }
    }
}

impl WebsocketConfig {
    pub fn idle_timeout(&self) -> Duration {
        Duration::from_millis(self.idle_timeout_ms)
    }

    pub fn max_duration(&self) -> Duration {
        Duration::from_millis(self.max_duration_ms)
    }

    pub fn send_timeout(&self) -> Duration {
        Duration::from_millis(self.send_timeout_ms)
    }
}

fn default_max_sessions_per_key() -> u32 {
    // An agent runs a socket per worker; a few dozen covers a busy developer's fan-out.
    32
}
fn default_max_sessions() -> u32 {
    // Half the default connection cap: sockets never starve the HTTP routes of descriptors.
    2_048
}
fn default_idle_timeout_ms() -> u64 {
    // An agent runs its tools between turns; ten minutes outlasts a long test suite.
    600_000
}
fn default_max_duration_ms() -> u64 {
    // OpenAI's own limit on one WebSocket-mode connection: sixty minutes.
    3_600_000
}
fn default_max_message_bytes() -> usize {
    // Images and files arrive inline as base64, as in a POST body.
    16 * 1024 * 1024
}
fn default_max_queued_turns() -> u32 {
    8
}
fn default_send_timeout_ms() -> u64 {
    30_000
}

/// Checks `server.websocket`, naming the key at fault.
pub(super) fn validate(ws: &WebsocketConfig) -> Result<(), ConfigError> {
    let between = |key: &str, value: u64, min: u64, max: u64| {
        if (min..=max).contains(&value) {
            Ok(())
        } else {
            Err(ConfigError::key(
                format!("server.websocket.{key}"),
                format!("must be between {min} and {max}"),
            ))
        }
    };
    let connections = u64::from(MAX_CONNECTIONS);
    between(
        "max_sessions_per_key",
        ws.max_sessions_per_key.into(),
        1,
        connections,
    )?;
    between("max_sessions", ws.max_sessions.into(), 1, connections)?;
    between("idle_timeout_ms", ws.idle_timeout_ms, 1, MAX_TIMEOUT_MS)?;
    between("max_duration_ms", ws.max_duration_ms, 1, MAX_DURATION_MS)?;
    between(
        "max_message_bytes",
        ws.max_message_bytes as u64,
        1024,
        MAX_MESSAGE_BYTES as u64,
    )?;
    between(
        "max_queued_turns",
        ws.max_queued_turns.into(),
        0,
        MAX_QUEUED_TURNS.into(),
    )?;
    between("send_timeout_ms", ws.send_timeout_ms, 1, MAX_TIMEOUT_MS)
}

#[cfg(test)]
mod tests {
    use super::super::config_file::Config;

    fn error(yaml: &str) -> String {
        Config::from_yaml(yaml)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn defaults_hold_and_bad_values_name_their_key() {
        let Ok(config) = Config::from_yaml("") else {
            panic!("the empty config loads");
        };
        assert_eq!(config.server.websocket.max_sessions_per_key, 32);
        assert_eq!(config.server.websocket.max_duration_ms, 3_600_000);
        for (yaml, key) in [
            (
                "server: { websocket: { max_sessions_per_key: 0 } }",
                "server.websocket.max_sessions_per_key",
            ),
            (
                "server: { websocket: { idle_timeout_ms: 0 } }",
                "server.websocket.idle_timeout_ms",
            ),
            (
                "server: { websocket: { max_message_bytes: 10 } }",
                "server.websocket.max_message_bytes",
            ),
            (
                "server: { websocket: { max_queued_turns: 5000 } }",
                "server.websocket.max_queued_turns",
            ),
        ] {
            let message = error(yaml);
            assert!(message.contains(key), "{yaml}: {message}");
        }
        assert!(
            error("server: { websocket: { max_sesions: 3 } }").contains("max_sesions"),
            "an unknown key is named"
        );
    }
}
