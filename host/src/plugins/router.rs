//! Calls into router plugins: validate a virtual model's options, and order its targets.

use super::bindings::RouterPlugin as Bindings;
use super::bindings::router_types::{RouteRequest, Target};
use super::bindings::types::ConfigError;
use super::failure::PluginFailure;
use super::loaded::Warm;

/// A loaded router plugin. Calls reuse warm instances (see `WarmPool`).
pub type RouterPlugin = Warm<Bindings>;

impl RouterPlugin {
    pub async fn validate(
        &self,
        options: &str,
        targets: &[String],
    ) -> Result<Result<(), ConfigError>, PluginFailure> {
        self.call("validate", None, async |b: &Bindings, s| {
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
        self.call("route", None, async |b: &Bindings, s| {
            b.wasmgate_plugin_router()
                .call_route(s, options, request, targets)
                .await
        })
        .await
    }
}
