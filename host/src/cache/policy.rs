//! The cache-key policy of one loaded config: the operator's plugin, with its validated
//! options, deciding what of a request goes into its key (see `wit/cache-key.wit`).

use crate::config::cache::KeyPluginConfig;
use crate::plugins::{CacheKeyPlugin, KeyDecision, KeyRequest, PluginHost};

pub struct KeyPolicy {
    plugin: CacheKeyPlugin,
    /// The entry's `options` as JSON.
    options: String,
}

/// What the policy decided for a request.
#[derive(Debug)]
pub enum Decided {
    /// Key it by its fields as they are.
    Keep,
    /// Key it by these fields (a JSON object's top-level fields).
    Replace(indexmap::IndexMap<String, Box<serde_json::value::RawValue>>),
    /// Do not cache it: the plugin said so, or failed (trapped, timed out, answered what is not
    /// a JSON object).
    Bypass,
}

impl KeyPolicy {
    /// Loads the plugin and has it validate its options; an error names the key at fault.
    pub async fn load(
        config: &KeyPluginConfig,
        host: &PluginHost,
        dir: &std::path::Path,
    ) -> Result<Self, String> {
        let at = |key: &str, message: String| format!("cache.key_plugin.{key}: {message}");
        let plugin = host
            .load_cache_key(&config.plugin, dir)
            .map_err(|e| at("plugin", e.to_string()))?;
        let options = serde_json::Value::Object(config.options.clone()).to_string();
        match plugin.validate(&options).await {
            Ok(Ok(())) => Ok(Self { plugin, options }),
            Ok(Err(e)) => {
                let key = e
                    .key
                    .map(|k| format!("options.{k}"))
                    .unwrap_or("options".into());
                Err(at(&key, e.message))
            }
            Err(failure) => Err(at("plugin", failure.to_string())),
        }
    }

    pub fn name(&self) -> &str {
        self.plugin.name()
    }

    /// What of `request` goes into its key. A plugin that fails is a bypass, logged.
    pub async fn decide(&self, request: &KeyRequest) -> Decided {
        match self.plugin.key(&self.options, request).await {
            Ok(KeyDecision::Keep) => Decided::Keep,
            Ok(KeyDecision::Bypass) => Decided::Bypass,
            Ok(KeyDecision::Replace(json)) => match serde_json::from_str(&json) {
                Ok(fields) => Decided::Replace(fields),
                Err(e) => {
                    tracing::warn!(
                        plugin = self.name(),
                        "a cache-key plugin answered fields that are not a JSON object ({e}): the request bypasses the cache"
                    );
                    Decided::Bypass
                }
            },
            Err(failure) => {
                tracing::warn!("{failure}: the request bypasses the cache");
                Decided::Bypass
            }
        }
    }
}
