//! Rust bindings of the WIT contract in `wit/`, and the host side of its `host` interface.

use wasmtime::component::{HasSelf, Linker};

use super::state::PluginState;

wasmtime::component::bindgen!({
    path: "../wit",
    world: "provider-plugin",
    exports: { default: async },
});

pub use self::wasmgate::plugin::types;
pub use exports::wasmgate::plugin::provider as provider_types;

pub(super) fn add_host_to_linker(linker: &mut Linker<PluginState>) -> anyhow::Result<()> {
    self::wasmgate::plugin::host::add_to_linker::<PluginState, HasSelf<PluginState>>(linker, |s| s)
        .map_err(|e| anyhow::anyhow!("linking the host interface: {e}"))
}

impl types::Host for PluginState {}

impl self::wasmgate::plugin::host::Host for PluginState {
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
