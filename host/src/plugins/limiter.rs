//! Calls into limiter plugins: validate a rule's options, check a request, settle it.

use std::sync::Arc;

use super::bindings::limiter_types::{Decision, LimitRequest, Settlement};
use super::bindings::types::ConfigError;
use super::bindings::{LimiterPlugin as Bindings, LimiterPluginPre};
use super::sandbox::WarmPool;
use super::state::{CounterAccess, PluginState};
use super::{CounterStore, PluginFailure, PluginHost};

/// A loaded limiter plugin. Calls reuse warm instances (see `WarmPool`), each call with the
/// counters of its rule.
#[derive(Clone)]
pub struct LimiterPlugin {
    host: PluginHost,
    name: Arc<str>,
    pre: LimiterPluginPre<PluginState>,
    warm: Arc<WarmPool<Bindings>>,
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
            warm: Arc::default(),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub async fn validate(&self, options: &str) -> Result<Result<(), ConfigError>, PluginFailure> {
        self.call("validate", None, async |b: &Bindings, s| {
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
        self.call("check", Some(access), async |b: &Bindings, s| {
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
        self.call("settle", Some(access), async |b: &Bindings, s| {
            b.wasmgate_plugin_limiter()
                .call_settle(s, options, request, *usage)
                .await
        })
        .await
    }

    async fn call<T>(
        &self,
        call: &'static str,
        counters: Option<CounterAccess>,
        f: impl AsyncFnOnce(&Bindings, &mut wasmtime::Store<PluginState>) -> wasmtime::Result<T>,
    ) -> Result<T, PluginFailure> {
        let instantiate = async |s: &mut wasmtime::Store<_>| self.pre.instantiate_async(s).await;
        self.warm
            .run(&self.host, &self.name, call, instantiate, counters, f)
            .await
    }
}
