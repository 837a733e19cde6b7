//! `wasmgate config`: the JSON Schema of `config.yaml`, the manual's reference page written from
//! it, and a check of a config file exactly as `serve` reads it, without serving.

use crate::config::{Config, ConfigError, ConfigSource};
use crate::gateway::{Gateway, StartupError};
use crate::plugins::{PluginHost, PluginLimits};

/// Why `config check` refused a config.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// A key, a value or the YAML itself.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A plugin that does not load, or rejects its options. Not a `source`: its message
    /// already holds its cause's, which a printed chain would repeat.
    #[error("{0}")]
    Plugins(StartupError),
    #[error("cannot start the plugin host: {0:#}")]
    Host(anyhow::Error),
}

/// What a config that passed holds, for the `ok` line.
#[derive(Debug)]
pub struct Checked {
    pub providers: usize,
    pub routes: usize,
    pub rules: usize,
}

impl std::fmt::Display for Checked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} providers, {} virtual models, {} limit rules",
            self.providers, self.routes, self.rules
        )
    }
}

/// Reads `source` as `serve` does (`prepare` is `serve`'s: command-line overrides and provider
/// keys), then loads every plugin it names and has each validate its options, as a start or a
/// reload does. Nothing is served and nothing goes over the network.
pub async fn check(
    source: &ConfigSource,
    prepare: &dyn Fn(&mut Config),
) -> Result<Checked, CheckError> {
    let mut config = source.load()?;
    prepare(&mut config);
    // The Redis counters are not connected to: a check needs no network, and the URL's form
    // was checked with the rest of the file. The rules' plugins load all the same.
    config.limits.store = "memory".to_owned();
    let limits = PluginLimits::from_config(&config.plugins).map_err(CheckError::Host)?;
    let cache_dir = (config.plugins.cache_dir.clone()).or_else(crate::plugins::default_cache_dir);
    let host = PluginHost::new(
        limits,
        cache_dir,
        crate::tokenizer::Tokenizer,
        std::sync::Arc::new(crate::plugins::Unobserved),
    )
    .map_err(CheckError::Host)?;
    let gateway = Gateway::load(config, &host)
        .await
        .map_err(CheckError::Plugins)?;
    Ok(Checked {
        providers: gateway.providers.len(),
        routes: gateway.routes.len(),
        rules: gateway.config.limits.rules.len(),
    })
}

/// The JSON Schema, pretty-printed, with a final newline.
pub fn schema() -> String {
    let schema = crate::config::schema::schema();
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}

/// The configuration reference page (`docs/src/reference/config.md`).
pub fn reference() -> String {
    crate::config::reference::markdown(&crate::config::schema::schema())
}
