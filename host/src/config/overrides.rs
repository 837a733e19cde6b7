//! Command-line options that override the file (`--host`, `--port`, a global limit).

use std::net::IpAddr;
use std::path::PathBuf;

use super::config_file::Config;
use super::limits::{LimitRule, LimitScope};

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

impl Config {
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
}
