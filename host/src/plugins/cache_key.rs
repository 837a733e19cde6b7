//! Calls into cache-key policy plugins: validate the options, and decide what of a request
//! goes into its cache key.

use super::bindings::CacheKeyPlugin as Bindings;
use super::bindings::cache_key_types::{KeyDecision, KeyRequest};
use super::bindings::types::ConfigError;
use super::failure::PluginFailure;
use super::loaded::Warm;

/// A loaded cache-key plugin. Calls reuse warm instances (see `WarmPool`).
pub type CacheKeyPlugin = Warm<Bindings>;

impl CacheKeyPlugin {
    pub async fn validate(&self, options: &str) -> Result<Result<(), ConfigError>, PluginFailure> {
        self.call("validate", None, async |b: &Bindings, s| {
            b.wasmgate_plugin_cache_key()
                .call_validate(s, options)
                .await
        })
        .await
    }

    /// What of `request` goes into its key.
    pub async fn key(
        &self,
        options: &str,
        request: &KeyRequest,
    ) -> Result<KeyDecision, PluginFailure> {
        self.call("key", None, async |b: &Bindings, s| {
            b.wasmgate_plugin_cache_key()
                .call_key(s, options, request)
                .await
        })
        .await
    }
}
