//! Rust bindings of the WIT contract in `wit/`, and the host side of its `host` interface.

use wasmtime::component::{HasSelf, Linker};

use super::state::PluginState;

/// The provider world; it also owns the Rust types of the shared `types` and `host` interfaces.
pub mod provider_world {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "provider-plugin",
        exports: { default: async },
    });
}

/// The router world, reusing the provider world's shared interfaces.
pub mod router_world {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "router-plugin",
        exports: { default: async },
        with: {
            "wasmgate:plugin/types": super::provider_world::wasmgate::plugin::types,
            "wasmgate:plugin/host": super::provider_world::wasmgate::plugin::host,
        },
    });
}

/// The limiter world: the host also provides `counters`, async (Redis) and trappable (a store
/// that cannot be reached fails the call rather than answering a guess).
pub mod limiter_world {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "limiter-plugin",
        exports: { default: async },
        imports: { "wasmgate:plugin/counters": async | trappable },
        with: {
            "wasmgate:plugin/types": super::provider_world::wasmgate::plugin::types,
            "wasmgate:plugin/host": super::provider_world::wasmgate::plugin::host,
        },
    });
}

/// The dialect world, reusing the provider world's shared interfaces.
pub mod dialect_world {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "dialect-plugin",
        exports: { default: async },
        with: {
            "wasmgate:plugin/types": super::provider_world::wasmgate::plugin::types,
            "wasmgate:plugin/host": super::provider_world::wasmgate::plugin::host,
        },
    });
}

/// The guard world, reusing the provider world's shared interfaces.
pub mod guard_world {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "guard-plugin",
        exports: { default: async },
        with: {
            "wasmgate:plugin/types": super::provider_world::wasmgate::plugin::types,
            "wasmgate:plugin/host": super::provider_world::wasmgate::plugin::host,
        },
    });
}

/// The cache-key policy world, reusing the provider world's shared interfaces.
pub mod cache_key_world {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "cache-key-plugin",
        exports: { default: async },
        with: {
            "wasmgate:plugin/types": super::provider_world::wasmgate::plugin::types,
            "wasmgate:plugin/host": super::provider_world::wasmgate::plugin::host,
        },
    });
}

pub use cache_key_world::exports::wasmgate::plugin::cache_key as cache_key_types;
pub use cache_key_world::{CacheKeyPlugin, CacheKeyPluginPre};
pub use dialect_world::exports::wasmgate::plugin::dialect as dialect_types;
pub use dialect_world::{DialectPlugin, DialectPluginPre};
pub use guard_world::exports::wasmgate::plugin::guard as guard_types;
pub use guard_world::{GuardPlugin, GuardPluginPre};
pub use limiter_world::exports::wasmgate::plugin::limiter as limiter_types;
pub use limiter_world::wasmgate::plugin::counters as counter_types;
pub use limiter_world::{LimiterPlugin, LimiterPluginPre};
pub use provider_world::exports::wasmgate::plugin::provider as provider_types;
pub use provider_world::wasmgate::plugin::types;
pub use provider_world::{ProviderPlugin, ProviderPluginPre};
pub use router_world::exports::wasmgate::plugin::router as router_types;
pub use router_world::{RouterPlugin, RouterPluginPre};

use provider_world::wasmgate::plugin::host;

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
