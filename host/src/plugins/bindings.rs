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

pub use provider_world::exports::wasmgate::plugin::provider as provider_types;
pub use provider_world::wasmgate::plugin::types;
pub use provider_world::{ProviderPlugin, ProviderPluginPre};
pub use router_world::exports::wasmgate::plugin::router as router_types;
pub use router_world::{RouterPlugin, RouterPluginPre};

use provider_world::wasmgate::plugin::host;

/// Defines the `host` interface, which every world imports, once for all of them.
pub(super) fn add_host_to_linker(linker: &mut Linker<PluginState>) -> anyhow::Result<()> {
    host::add_to_linker::<PluginState, HasSelf<PluginState>>(linker, |s| s)
        .map_err(|e| anyhow::anyhow!("linking the host interface: {e}"))
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
