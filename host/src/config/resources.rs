//! What one client may hold: connection deadlines and the connection cap (`server:`), and how
//! long a request waits for a plugin instance and how many of them open streams may hold
//! (`plugins:`). Accessors and validation; the defaults are with their sections.

use std::time::Duration;

use super::config_error::ConfigError;
use super::config_file::Config;
use super::plugins::{MAX_INSTANCE_WAIT_MS, PluginsConfig};
use super::server::{MAX_CONNECTIONS, MAX_TIMEOUT_MS, ServerConfig};

impl ServerConfig {
    /// How long a connection may take to send a request head: from its opening, or (HTTP/1)
    /// from the first byte after its previous response.
    pub fn header_read_timeout(&self) -> Duration {
        Duration::from_millis(self.header_read_timeout_ms)
    }

    /// How long a connection with no request in flight is kept open.
    pub fn idle_timeout(&self) -> Duration {
        Duration::from_millis(self.idle_timeout_ms)
    }

    /// How long a request body may take to arrive, from the end of its head.
    pub fn body_read_timeout(&self) -> Duration {
        Duration::from_millis(self.body_read_timeout_ms)
    }
}

impl PluginsConfig {
    /// The CPU time one plugin call may use.
    pub fn call_cpu_budget(&self) -> Duration {
        Duration::from_millis(self.call_timeout_ms)
    }

    /// The wall-clock backstop of one plugin call: as configured, else 10 times its CPU budget
    /// (long enough that only a call stuck without using CPU, or a host starved tenfold, meets
    /// it).
    pub fn call_wall_backstop(&self) -> Duration {
        let ms = self
            .call_wall_timeout_ms
            .unwrap_or_else(|| self.call_timeout_ms.saturating_mul(10));
        Duration::from_millis(ms)
    }

    /// How long a call waits for a free plugin instance before its request fails.
    pub fn instance_wait(&self) -> Duration {
        Duration::from_millis(self.instance_wait_ms)
    }

    /// The instances open streams may hold at once: `stream_share_percent` of
    /// `max_instances`, at least one.
    pub fn max_stream_instances(&self) -> u32 {
        let share = u64::from(self.max_instances) * u64::from(self.stream_share_percent) / 100;
        u32::try_from(share).unwrap_or(self.max_instances).max(1)
    }
}

/// Checks the keys of this module, naming the one at fault.
pub(super) fn validate(config: &Config) -> Result<(), ConfigError> {
    let server = &config.server;
    for (key, value) in [
        (
            "server.header_read_timeout_ms",
            server.header_read_timeout_ms,
        ),
        ("server.idle_timeout_ms", server.idle_timeout_ms),
        ("server.body_read_timeout_ms", server.body_read_timeout_ms),
    ] {
        if !(1..=MAX_TIMEOUT_MS).contains(&value) {
            return Err(ConfigError::key(
                key,
                format!("must be between 1 and {MAX_TIMEOUT_MS} (an hour)"),
            ));
        }
    }
    if !(1..=MAX_CONNECTIONS).contains(&server.max_connections) {
        return Err(ConfigError::key(
            "server.max_connections",
            format!("must be between 1 and {MAX_CONNECTIONS}"),
        ));
    }
    let plugins = &config.plugins;
    if !(1..=MAX_INSTANCE_WAIT_MS).contains(&plugins.instance_wait_ms) {
        return Err(ConfigError::key(
            "plugins.instance_wait_ms",
            format!("must be between 1 and {MAX_INSTANCE_WAIT_MS} (ten minutes)"),
        ));
    }
    if !(1..=100).contains(&plugins.stream_share_percent) {
        return Err(ConfigError::key(
            "plugins.stream_share_percent",
            "must be between 1 and 100",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(yaml: &str) -> String {
        Config::from_yaml(yaml)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn defaults_hold() {
        let config = Config::from_yaml("").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(config.server.header_read_timeout(), Duration::from_secs(10));
        assert_eq!(config.server.idle_timeout(), Duration::from_secs(75));
        assert_eq!(config.server.body_read_timeout(), Duration::from_secs(60));
        assert_eq!(config.server.max_connections, 4_096);
        assert_eq!(config.plugins.instance_wait(), Duration::from_secs(2));
        assert_eq!(config.plugins.max_stream_instances(), 384);
        assert_eq!(config.plugins.call_cpu_budget(), Duration::from_millis(200));
        assert_eq!(config.plugins.call_wall_backstop(), Duration::from_secs(2));
    }

    #[test]
    fn a_plugin_call_has_a_cpu_budget_and_a_longer_wall_clock_backstop() {
        let config = Config::from_yaml("plugins: { call_timeout_ms: 30 }").unwrap();
        assert_eq!(
            config.plugins.call_wall_backstop(),
            Duration::from_millis(300)
        );
        let config =
            Config::from_yaml("plugins: { call_timeout_ms: 30, call_wall_timeout_ms: 45 }")
                .unwrap();
        assert_eq!(
            config.plugins.call_wall_backstop(),
            Duration::from_millis(45)
        );
        let shorter = error("plugins: { call_timeout_ms: 30, call_wall_timeout_ms: 29 }");
        assert!(
            shorter.contains("plugins.call_wall_timeout_ms"),
            "{shorter}"
        );
    }

    #[test]
    fn out_of_range_values_are_named_with_their_path() {
        for (yaml, key) in [
            (
                "server: { header_read_timeout_ms: 0 }",
                "server.header_read_timeout_ms",
            ),
            (
                "server: { idle_timeout_ms: 3600001 }",
                "server.idle_timeout_ms",
            ),
            (
                "server: { body_read_timeout_ms: 0 }",
                "server.body_read_timeout_ms",
            ),
            ("server: { max_connections: 0 }", "server.max_connections"),
            (
                "plugins: { instance_wait_ms: 0 }",
                "plugins.instance_wait_ms",
            ),
            (
                "plugins: { stream_share_percent: 0 }",
                "plugins.stream_share_percent",
            ),
            (
                "plugins: { stream_share_percent: 101 }",
                "plugins.stream_share_percent",
            ),
        ] {
            let err = error(yaml);
            assert!(
                err.starts_with(&format!("config key `{key}`")),
                "{yaml}: {err}"
            );
        }
    }

    #[test]
    fn the_stream_share_leaves_at_least_one_instance_to_streams() {
        let config = Config::from_yaml("plugins: { max_instances: 1, stream_share_percent: 10 }")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(config.plugins.max_stream_instances(), 1);
        let config = Config::from_yaml("plugins: { max_instances: 8, stream_share_percent: 50 }")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(config.plugins.max_stream_instances(), 4);
    }
}
