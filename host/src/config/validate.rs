//! The checks a config passes before it is used, each naming the key at fault.

use super::config_error::ConfigError;
use super::config_file::Config;
use super::{auth, guards, mcp, resources, websocket};

impl Config {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if self.plugins.call_timeout_ms == 0 {
            return Err(ConfigError::key(
                "plugins.call_timeout_ms",
                "must be at least 1",
            ));
        }
        if let Some(wall) = self.plugins.call_wall_timeout_ms
            && wall < self.plugins.call_timeout_ms
        {
            return Err(ConfigError::key(
                "plugins.call_wall_timeout_ms",
                "must be at least plugins.call_timeout_ms (a call's CPU time cannot exceed its wall-clock time)",
            ));
        }
        if !(1..=4096).contains(&self.plugins.memory_limit_mib) {
            return Err(ConfigError::key(
                "plugins.memory_limit_mib",
                "must be between 1 and 4096",
            ));
        }
        if self.plugins.max_instances == 0 {
            return Err(ConfigError::key(
                "plugins.max_instances",
                "must be at least 1",
            ));
        }
        resources::validate(self)?;
        websocket::validate(&self.server.websocket)?;
        guards::validate(&self.guards)?;
        mcp::validate(&self.mcp)?;
        auth::validate(&self.auth)?;
        if self.server.max_body_bytes == 0 {
            return Err(ConfigError::key(
                "server.max_body_bytes",
                "must be at least 1",
            ));
        }
        // Budgets are counted in KiB in a u32 (see server::body).
        if self.server.max_body_bytes_in_flight < self.server.max_body_bytes
            || self.server.max_body_bytes_in_flight >> 10 >= u32::MAX as usize
        {
            return Err(ConfigError::key(
                "server.max_body_bytes_in_flight",
                "must be at least server.max_body_bytes (one largest body must fit), and below 4 TiB",
            ));
        }
        for (name, entry) in &self.providers {
            let at = |key: &str| format!("providers.{name}.{key}");
            if name.is_empty() || name.contains('/') || name.contains(char::is_whitespace) {
                return Err(ConfigError::key(
                    format!("providers.{name}"),
                    "a provider name must be non-empty, without `/` or spaces",
                ));
            }
            if entry.plugin.is_empty()
                || !entry
                    .plugin
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            {
                return Err(ConfigError::key(
                    at("plugin"),
                    "must be a plugin name (letters, digits, `-`, `_`)",
                ));
            }
            if let Some(url) = &entry.base_url
                && !(url.starts_with("http://") || url.starts_with("https://"))
            {
                return Err(ConfigError::key(
                    at("base_url"),
                    "must start with http:// or https://",
                ));
            }
            if entry.timeout_ms == 0 {
                return Err(ConfigError::key(at("timeout_ms"), "must be at least 1"));
            }
            if let Some(catalog) = &entry.catalog
                && !self.models.has_provider(catalog)
            {
                return Err(ConfigError::key(
                    at("catalog"),
                    format!("no provider `{catalog}` in the model catalog"),
                ));
            }
            if let Some(i) = entry.models.iter().position(|m| m.trim().is_empty()) {
                return Err(ConfigError::key(
                    format!("providers.{name}.models[{i}]"),
                    "is empty",
                ));
            }
        }
        self.cache.check()?;
        self.passthrough.check()?;
        self.batches.check()?;
        self.alerts.check()?;
        self.console.check()?;
        if self.limits.store != "memory" && !self.limits.store.starts_with("redis://") {
            return Err(ConfigError::key(
                "limits.store",
                "must be `memory` or a redis:// URL",
            ));
        }
        let mut ids = std::collections::HashSet::new();
        for (i, rule) in self.limits.rules.iter().enumerate() {
            if let Some(id) = &rule.id
                && (id.is_empty() || !ids.insert(id.clone()))
            {
                return Err(ConfigError::key(
                    format!("limits.rules[{i}].id"),
                    "must be non-empty and unique",
                ));
            }
        }
        for (name, route) in &self.routing {
            let at = |key: &str| format!("routing.{name}.{key}");
            if name.is_empty() || name.contains('/') {
                return Err(ConfigError::key(
                    format!("routing.{name}"),
                    "a virtual model name must be non-empty and without `/`",
                ));
            }
            if route.targets.is_empty() {
                return Err(ConfigError::key(
                    at("targets"),
                    "must list at least one target",
                ));
            }
            for (i, target) in route.targets.iter().enumerate() {
                let id = target.detail().id;
                let Some((provider, model)) = id.split_once('/') else {
                    return Err(ConfigError::key(
                        format!("routing.{name}.targets[{i}]"),
                        format!("`{id}` is not of the form provider/model"),
                    ));
                };
                if !self.providers.contains_key(provider) || model.is_empty() {
                    return Err(ConfigError::key(
                        format!("routing.{name}.targets[{i}]"),
                        format!("`{id}`: no provider `{provider}` in `providers:`"),
                    ));
                }
            }
            if route.retry.max_attempts == Some(0) {
                return Err(ConfigError::key(
                    at("retry.max_attempts"),
                    "must be at least 1",
                ));
            }
            if route.circuit_breaker.failures == 0 {
                return Err(ConfigError::key(
                    at("circuit_breaker.failures"),
                    "must be at least 1",
                ));
            }
        }
        let url = &self.ledger.url;
        if !(url.starts_with("sqlite://")
            || url == "sqlite::memory:"
            || url.starts_with("postgres://")
            || url.starts_with("postgresql://"))
        {
            return Err(ConfigError::key(
                "ledger.url",
                "must be sqlite://PATH, sqlite::memory: or postgres://USER:PASSWORD@HOST:PORT/DB",
            ));
        }
        if self.ledger.journal.max_bytes < 1 << 20 {
            return Err(ConfigError::key(
                "ledger.journal.max_bytes",
                "must be at least 1048576 (1 MiB)",
            ));
        }
        if self
            .ledger
            .journal
            .dir
            .as_ref()
            .is_some_and(|d| d.as_os_str().is_empty())
        {
            return Err(ConfigError::key("ledger.journal.dir", "must not be empty"));
        }
        if self.ledger.queue_capacity == 0 {
            return Err(ConfigError::key(
                "ledger.queue_capacity",
                "must be at least 1",
            ));
        }
        if let Some(traces) = &self.observability.traces {
            let at = |key: &str| format!("observability.traces.{key}");
            let url = &traces.otlp_endpoint;
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(ConfigError::key(
                    at("otlp_endpoint"),
                    "must start with http:// or https:// (OTLP over HTTP)",
                ));
            }
            if traces.export_interval_ms == 0 {
                return Err(ConfigError::key(
                    at("export_interval_ms"),
                    "must be at least 1",
                ));
            }
            if traces.queue_capacity == 0 {
                return Err(ConfigError::key(at("queue_capacity"), "must be at least 1"));
            }
            for (name, value) in &traces.headers {
                if http::HeaderName::from_bytes(name.as_bytes()).is_err()
                    || http::HeaderValue::from_str(value.expose()).is_err()
                {
                    return Err(ConfigError::key(
                        format!("observability.traces.headers.{name}"),
                        "is not a valid HTTP header",
                    ));
                }
            }
        }
        if let Some(level) = &self.observability.log_level {
            tracing_subscriber::EnvFilter::try_new(level).map_err(|e| {
                ConfigError::key("observability.log_level", format!("invalid filter: {e}"))
            })?;
        }
        Ok(())
    }
}
