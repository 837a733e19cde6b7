//! Calls into cache-key policy plugins: validate the options, and decide what of a request
//! goes into its cache key.

use std::sync::Arc;

use super::bindings::cache_key_types::{KeyDecision, KeyRequest};
use super::bindings::types::ConfigError;
use super::bindings::{CacheKeyPlugin as Bindings, CacheKeyPluginPre};
use super::sandbox::WarmPool;
use super::{PluginFailure, PluginHost};

/// A loaded cache-key plugin. Calls reuse warm instances (see `WarmPool`).
#[derive(Clone)]
pub struct CacheKeyPlugin {
    host: PluginHost,
    name: Arc<str>,
    pre: CacheKeyPluginPre<super::state::PluginState>,
    warm: Arc<WarmPool<Bindings>>,
}

impl CacheKeyPlugin {
    pub(super) fn new(
        host: PluginHost,
        name: &str,
        component: &wasmtime::component::Component,
    ) -> wasmtime::Result<Self> {
        let pre = host.inner.linker.instantiate_pre(component)?;
        Ok(Self {
            host,
            name: name.into(),
            pre: CacheKeyPluginPre::new(pre)?,
            warm: Arc::default(),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub async fn validate(&self, options: &str) -> Result<Result<(), ConfigError>, PluginFailure> {
        self.call("validate", async |b: &Bindings, s| {
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
        self.call("key", async |b: &Bindings, s| {
            b.wasmgate_plugin_cache_key()
                .call_key(s, options, request)
                .await
        })
        .await
    }

    async fn call<T>(
        &self,
        call: &'static str,
        f: impl AsyncFnOnce(
            &Bindings,
            &mut wasmtime::Store<super::state::PluginState>,
        ) -> wasmtime::Result<T>,
    ) -> Result<T, PluginFailure> {
        let instantiate = async |s: &mut wasmtime::Store<_>| self.pre.instantiate_async(s).await;
        self.warm
            .run(&self.host, &self.name, call, instantiate, None, f)
            .await
    }
}
