//! Calls into limiter plugins: validate a rule's options, check a request, settle it.

use std::sync::Arc;

use super::bindings::LimiterPlugin as Bindings;
use super::bindings::limiter_types::{Decision, LimitRequest, Settlement};
use super::bindings::types::ConfigError;
use super::counter_store::CounterStore;
use super::failure::PluginFailure;
use super::loaded::Warm;
use super::state::CounterAccess;

/// A loaded limiter plugin. Calls reuse warm instances (see `WarmPool`), each call with the
/// counters of its rule.
pub type LimiterPlugin = Warm<Bindings>;

impl LimiterPlugin {
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
}
