//! Calls into router plugins: validate a virtual model's options, and order its targets.

use std::sync::Arc;

use super::bindings::router_types::{RouteRequest, Target};
use super::bindings::types::ConfigError;
use super::bindings::{RouterPlugin as Bindings, RouterPluginPre};
use super::sandbox::WarmPool;
use super::{PluginFailure, PluginHost};

/// A loaded router plugin. Calls reuse warm instances (see `WarmPool`).
#[derive(Clone)]
pub struct RouterPlugin {
    host: PluginHost,
    name: Arc<str>,
    pre: RouterPluginPre<super::state::PluginState>,
    warm: Arc<WarmPool<Bindings>>,
}

impl RouterPlugin {
    pub(super) fn new(
        host: PluginHost,
        name: &str,
        component: &wasmtime::component::Component,
    ) -> wasmtime::Result<Self> {
        let pre = host.inner.linker.instantiate_pre(component)?;
        Ok(Self {
            host,
            name: name.into(),
            pre: RouterPluginPre::new(pre)?,
            warm: Arc::default(),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub async fn validate(
        &self,
        options: &str,
        targets: &[String],
    ) -> Result<Result<(), ConfigError>, PluginFailure> {
        self.call("validate", async |b: &Bindings, s| {
            b.wasmgate_plugin_router()
                .call_validate(s, options, targets)
                .await
        })
        .await
    }

    /// The order in which to try `targets` (indices into it).
    pub async fn route(
        &self,
        options: &str,
        request: &RouteRequest,
        targets: &[Target],
    ) -> Result<Result<Vec<u32>, String>, PluginFailure> {
        self.call("route", async |b: &Bindings, s| {
            b.wasmgate_plugin_router()
                .call_route(s, options, request, targets)
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
