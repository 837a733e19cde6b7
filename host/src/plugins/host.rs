//! The plugin host: one wasmtime `Engine` (epoch interruption, pooling allocator) and `Linker`
//! for every plugin, the instance slots, and the components loaded by name (from the plugin
//! directory, a disk cache of compiled ones, or those built in). Loading each kind of plugin is
//! `load.rs`; running a call, `sandbox.rs`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use super::cache;
use super::failure::LoadError;
use super::host_imports::add_host_to_linker;
use super::limits::PluginLimits;
use super::observer::CallObserver;
use super::slots::{self, InstanceUsage};
use super::state::PluginState;
use super::ticker::Ticker;

/// Plugins compiled into the binary, so that `serve` works with no plugin directory at all.
/// A `<plugins.dir>/<name>.wasm` file takes precedence over these. `build.rs` lists every plugin
/// crate of the `plugins/` and `policies/` workspaces, so this list is kept nowhere by hand.
/// Each is zstd-compressed (see `build.rs`); [`built_in`] gives its component.
const BUILT_IN: &[(&str, &[u8])] = include!(concat!(env!("OUT_DIR"), "/built_in.rs"));

/// A built-in component's size, at most: far above the largest (4 MiB), so that a corrupt
/// frame cannot ask for more.
const BUILT_IN_MAX: usize = 64 << 20;

/// The built-in plugin `name`'s component, decompressed; `None` for a name that is not built in
/// (or, which a test would catch, a frame that does not decompress).
pub(super) fn built_in(name: &str) -> Option<Vec<u8>> {
    let (_, packed) = BUILT_IN.iter().find(|(n, _)| *n == name)?;
    zstd::bulk::decompress(packed, BUILT_IN_MAX).ok()
}
/// The engine, linker and limits shared by every plugin.
#[derive(Clone)]
pub struct PluginHost {
    pub(super) inner: Arc<HostInner>,
}

pub(super) struct HostInner {
    pub(super) engine: Engine,
    /// Advances `engine`'s epoch while a guest call runs.
    pub(super) ticker: Arc<Ticker>,
    pub(super) linker: Linker<PluginState>,
    pub(super) limits: PluginLimits,
    pub(super) cache_dir: Option<PathBuf>,
    /// Back-pressure: one slot per pooled instance, a share of them for streams.
    pub(super) slots: Arc<slots::Slots>,
    pub(super) tokenizer: crate::tokenizer::Tokenizer,
    /// Where call times and failures are counted.
    pub(super) observer: Arc<dyn CallObserver>,
    /// The component last loaded under each plugin name, and what it was loaded from. A reload
    /// that finds the same file (or built-in) takes it from here: reading, hashing and
    /// deserialising again costs 0.3-0.7 s for a Python or JavaScript component. One entry per
    /// name, replaced when the file changes, so old components are not kept.
    loaded: std::sync::Mutex<std::collections::HashMap<String, Loaded>>,
    /// Components compiled or read from the disk cache (not from `loaded`), for tests.
    pub(super) compiled: std::sync::atomic::AtomicU64,
    /// Instances created, and export calls made, since start (see [`PluginWork`]).
    pub(super) instantiations: std::sync::atomic::AtomicU64,
    pub(super) calls: Arc<std::sync::atomic::AtomicU64>,
}

/// What the host has done since it started, as counts: what the counting tests and the
/// benchmark divide by the requests served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PluginWork {
    /// Plugin instances created (a request's provider instance, a policy plugin's warm one).
    pub instantiations: u64,
    /// Calls into a plugin's exports (`prepare`, `push`, `route`, ...).
    pub calls: u64,
}

/// Where a loaded component came from: `None` for a built-in one, else the file's path, length
/// and modification time (a new file is written and renamed into place, which changes them).
type Origin = Option<(PathBuf, u64, Option<std::time::SystemTime>)>;

struct Loaded {
    origin: Origin,
    component: Component,
}

impl PluginHost {
    pub fn new(
        limits: PluginLimits,
        cache_dir: Option<PathBuf>,
        tokenizer: crate::tokenizer::Tokenizer,
        observer: Arc<dyn CallObserver>,
    ) -> anyhow::Result<Self> {
        let mut pool = PoolingAllocationConfig::new();
        pool.total_component_instances(limits.max_instances)
            // A Rust guest for wasm32-wasip2 is a handful of core instances and one memory.
            .max_core_instances_per_component(16)
            .total_core_instances(limits.max_instances.saturating_mul(8))
            .max_memories_per_component(2)
            .total_memories(limits.max_instances.saturating_mul(2))
            .max_tables_per_component(4)
            .total_tables(limits.max_instances.saturating_mul(4))
            .total_stacks(limits.max_instances)
            .max_memory_size(limits.memory_bytes)
            // Measured here: keeping a few MiB of each slot resident halves the page faults of
            // a fresh instance (see shared/notes/wasm-host-facts.md).
            .linear_memory_keep_resident(4 << 20)
            .table_keep_resident(64 << 10)
            // Each async call runs on a fiber stack from the pool; keeping its hot top resident
            // saves the page faults of a fresh stack on every request.
            .async_stack_keep_resident(256 << 10)
            // Linux 6.7+: reset only the pages an instance dirtied, not the whole resident
            // region (a memset of megabytes per request otherwise).
            .pagemap_scan(wasmtime::Enabled::Auto);
        let mut config = Config::new();
        config
            .epoch_interruption(true)
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pool))
            .wasm_component_model(true)
            .max_wasm_stack(512 << 10)
            .async_stack_size(1 << 20)
            .cranelift_opt_level(wasmtime::OptLevel::Speed);
        let engine = Engine::new(&config).map_err(|e| anyhow::anyhow!("wasmtime engine: {e}"))?;
        let ticker = Arc::new(Ticker::spawn(&engine));

        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)
            .map_err(|e| anyhow::anyhow!("linking WASI: {e}"))?;
        add_host_to_linker(&mut linker)?;

        Ok(Self {
            inner: Arc::new(HostInner {
                slots: slots::Slots::new(&limits),
                engine,
                ticker,
                linker,
                limits,
                cache_dir,
                tokenizer,
                observer,
                loaded: std::sync::Mutex::default(),
                compiled: std::sync::atomic::AtomicU64::new(0),
                instantiations: std::sync::atomic::AtomicU64::new(0),
                calls: Arc::default(),
            }),
        })
    }

    pub fn limits(&self) -> &PluginLimits {
        &self.inner.limits
    }

    /// The instance slots in use now, and the waits that timed out.
    pub fn usage(&self) -> InstanceUsage {
        self.inner.slots.usage()
    }

    /// The instances created and calls made since start.
    pub fn work(&self) -> PluginWork {
        use std::sync::atomic::Ordering::Relaxed;
        PluginWork {
            instantiations: self.inner.instantiations.load(Relaxed),
            calls: self.inner.calls.load(Relaxed),
        }
    }

    /// The component `name`: `<dir>/<name>.wasm` if it exists, else the built-in one.
    pub(super) fn load(&self, name: &str, dir: &Path) -> Result<Component, LoadError> {
        let path = dir.join(format!("{name}.wasm"));
        let origin = match std::fs::metadata(&path) {
            Ok(meta) => Some((path.clone(), meta.len(), meta.modified().ok())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(source) => return Err(LoadError::Read { path, source }),
        };
        if let Some(loaded) = self.loaded().get(name)
            && loaded.origin == origin
        {
            return Ok(loaded.component.clone());
        }
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => std::borrow::Cow::Owned(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => built_in(name)
                .map(std::borrow::Cow::<[u8]>::Owned)
                .ok_or_else(|| LoadError::NotFound {
                    name: name.to_owned(),
                    path: path.clone(),
                })?,
            Err(source) => return Err(LoadError::Read { path, source }),
        };
        let component = self.compile(name, &bytes)?;
        let loaded = Loaded {
            origin,
            component: component.clone(),
        };
        self.loaded().insert(name.to_owned(), loaded);
        Ok(component)
    }

    fn loaded(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, Loaded>> {
        crate::sync::lock(&self.inner.loaded)
    }

    fn compile(&self, name: &str, bytes: &[u8]) -> Result<Component, LoadError> {
        self.inner
            .compiled
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let invalid = |e: wasmtime::Error| LoadError::Invalid {
            name: name.to_owned(),
            detail: format!("{e:#}"),
        };
        match &self.inner.cache_dir {
            Some(dir) => cache::load_or_compile(&self.inner.engine, dir, bytes).map_err(invalid),
            None => Component::new(&self.inner.engine, bytes).map_err(invalid),
        }
    }
}

/// The user's cache directory for compiled components, when one can be found.
pub fn default_cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("wasmgate").join("components"))
}

#[cfg(test)]
mod tests;
