//! Loading a plugin of each kind: its component, linked as that kind's world.

use std::path::Path;

use wasmtime::component::Component;

use super::cache_key::CacheKeyPlugin;
use super::dialect::DialectPlugin;
use super::failure::LoadError;
use super::guard::GuardPlugin;
use super::host::PluginHost;
use super::limiter::LimiterPlugin;
use super::provider::ProviderPlugin;
use super::router::RouterPlugin;

impl PluginHost {
    /// Loads the provider plugin `name`: `<dir>/<name>.wasm` if it exists, else the built-in one.
    pub fn load_provider(&self, name: &str, dir: &Path) -> Result<ProviderPlugin, LoadError> {
        self.load_as(name, dir, "provider", ProviderPlugin::new)
    }

    /// Loads the dialect plugin `name`, looked up like a provider plugin.
    pub fn load_dialect(&self, name: &str, dir: &Path) -> Result<DialectPlugin, LoadError> {
        self.load_as(name, dir, "dialect", DialectPlugin::new)
    }

    /// Loads the limiter plugin `name`, looked up like a provider plugin.
    pub fn load_limiter(&self, name: &str, dir: &Path) -> Result<LimiterPlugin, LoadError> {
        self.load_as(name, dir, "limiter", LimiterPlugin::new)
    }

    /// Loads the guard plugin `name`, looked up like a provider plugin.
    pub fn load_guard(&self, name: &str, dir: &Path) -> Result<GuardPlugin, LoadError> {
        self.load_as(name, dir, "guard", GuardPlugin::new)
    }

    /// Loads the cache-key policy plugin `name`, looked up like a provider plugin.
    pub fn load_cache_key(&self, name: &str, dir: &Path) -> Result<CacheKeyPlugin, LoadError> {
        self.load_as(name, dir, "cache-key", CacheKeyPlugin::new)
    }

    /// Loads the router plugin `name`, looked up like a provider plugin.
    pub fn load_router(&self, name: &str, dir: &Path) -> Result<RouterPlugin, LoadError> {
        self.load_as(name, dir, "router", RouterPlugin::new)
    }

    /// Loads `name` and links it as a plugin of the kind `kind` with `link`.
    fn load_as<P>(
        &self,
        name: &str,
        dir: &Path,
        kind: &str,
        link: impl FnOnce(PluginHost, &str, &Component) -> wasmtime::Result<P>,
    ) -> Result<P, LoadError> {
        let component = self.load(name, dir)?;
        link(self.clone(), name, &component).map_err(|e| LoadError::Invalid {
            name: name.to_owned(),
            detail: format!("not a {kind} plugin: {e:#}"),
        })
    }
}
