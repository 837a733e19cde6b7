//! The host side of the contract's `host` and `counters` interfaces: what a plugin may call.

use wasmtime::component::{HasSelf, Linker};

use super::bindings::counter_types;
use super::bindings::provider_world::wasmgate::plugin::host;
use super::bindings::types;
use super::state::PluginState;

/// Defines the `host` and `counters` interfaces once for every world that imports them.
pub(super) fn add_host_to_linker(linker: &mut Linker<PluginState>) -> anyhow::Result<()> {
    host::add_to_linker::<PluginState, HasSelf<PluginState>>(linker, |s| s)
        .map_err(|e| anyhow::anyhow!("linking the host interface: {e}"))?;
    counter_types::add_to_linker::<PluginState, HasSelf<PluginState>>(linker, |s| s)
        .map_err(|e| anyhow::anyhow!("linking the counters interface: {e}"))
}

impl counter_types::Host for PluginState {
    async fn add(
        &mut self,
        key: String,
        period: counter_types::Period,
        delta: i64,
    ) -> wasmtime::Result<counter_types::Counter> {
        let counters = self.counters()?;
        let key = counters.scoped(&key);
        counters
            .store
            .add(&key, period, delta)
            .await
            .map_err(|e| wasmtime::Error::msg(format!("counter store: {e}")))
    }

    async fn get(
        &mut self,
        key: String,
        period: counter_types::Period,
    ) -> wasmtime::Result<counter_types::Counter> {
        let counters = self.counters()?;
        let key = counters.scoped(&key);
        counters
            .store
            .get(&key, period)
            .await
            .map_err(|e| wasmtime::Error::msg(format!("counter store: {e}")))
    }
}

impl types::Host for PluginState {}

impl host::Host for PluginState {
    fn log(&mut self, level: types::LogLevel, message: String) {
        let plugin = &*self.plugin;
        match level {
            types::LogLevel::Debug => tracing::debug!(plugin, "{message}"),
            types::LogLevel::Info => tracing::info!(plugin, "{message}"),
            types::LogLevel::Warn => tracing::warn!(plugin, "{message}"),
            types::LogLevel::Error => tracing::error!(plugin, "{message}"),
        }
    }

    fn count_tokens(&mut self, text: String) -> u32 {
        self.tokenizer.count(&text)
    }
}
