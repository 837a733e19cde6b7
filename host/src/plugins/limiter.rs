//! Calls into limiter plugins: validate a rule's options, check a request, settle it.

use std::sync::Arc;

use super::bindings::limiter_types::{Decision, LimitRequest, Settlement};
use super::bindings::types::ConfigError;
use super::bindings::{LimiterPlugin as Bindings, LimiterPluginPre};
use super::state::{CounterAccess, PluginState};
use super::{CounterStore, PluginFailure, PluginHost};

/// A loaded limiter plugin. Each call runs on a fresh instance with the rule's counters.
#[derive(Clone)]
pub struct LimiterPlugin {
    host: PluginHost,
    name: Arc<str>,
    pre: LimiterPluginPre<PluginState>,
}

impl LimiterPlugin {
    pub(super) fn new(
        host: PluginHost,
        name: &str,
        component: &wasmtime::component::Component,
    ) -> wasmtime::Result<Self> {
        let pre = host.inner.linker.instantiate_pre(component)?;
        Ok(Self {
            host,
            name: name.into(),
            pre: LimiterPluginPre::new(pre)?,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub async fn validate(&self, options: &str) -> Result<Result<(), ConfigError>, PluginFailure> {
        self.call(None, async |b: &Bindings, s| {
            b.wasmgate_plugin_limiter().call_validate(s, options).await
        })
        .await
    }

    /// Decides on `request`, with the counters of the rule `rule` in `store`.
    pub async fn check(
        &self,
        store: &Arc<dyn CounterStore>,
        rule: &Arc<str>,
        options: &str,
        request: &LimitRequest,
    ) -> Result<Decision, PluginFailure> {
        let access = CounterAccess {
            store: Arc::clone(store),
            prefix: Arc::clone(rule),
        };
        self.call(Some(access), async |b: &Bindings, s| {
            b.wasmgate_plugin_limiter()
                .call_check(s, options, request)
                .await
        })
        .await
    }

    pub async fn settle(
        &self,
        store: &Arc<dyn CounterStore>,
        rule: &Arc<str>,
        options: &str,
        request: &LimitRequest,
        usage: &Settlement,
    ) -> Result<(), PluginFailure> {
        let access = CounterAccess {
            store: Arc::clone(store),
            prefix: Arc::clone(rule),
        };
        self.call(Some(access), async |b: &Bindings, s| {
            b.wasmgate_plugin_limiter()
                .call_settle(s, options, request, *usage)
                .await
        })
        .await
    }

    async fn call<T>(
        &self,
        counters: Option<CounterAccess>,
        f: impl AsyncFnOnce(&Bindings, &mut wasmtime::Store<PluginState>) -> wasmtime::Result<T>,
    ) -> Result<T, PluginFailure> {
        let mut sandbox = self.host.sandbox(&self.name).await?;
        sandbox.store.data_mut().counters = counters;
        let bindings = match self.pre.instantiate_async(&mut sandbox.store).await {
            Ok(bindings) => bindings,
            Err(e) => return Err(sandbox.classify(e)),
        };
        sandbox.run(&bindings, f).await
    }
}
