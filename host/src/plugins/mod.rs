//! The WebAssembly plugin host: the only module that touches wasmtime.
//!
//! One `Engine` (epoch interruption, pooling allocator) serves every plugin. Each component is
//! compiled once (cached precompiled on disk, and kept in memory by name while its file stays the
//! same, so a reload does not load it again), turned into an `InstancePre`, and every call
//! gets a fresh `Store` with a CPU-time budget (and a much longer wall-clock backstop) and a
//! memory cap, so a plugin that traps, loops or eats memory fails only the request it was serving,
//! while a host starved of CPU (a container at its quota) fails none.

mod bindings;
mod cache;
mod cache_key;
mod cpu;
mod dialect;
mod guard;
mod limiter;
mod loaded;
mod operation_names;
mod provider;
mod registry;
mod router;
mod sandbox;
mod slots;
mod state;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

pub use bindings::cache_key_types::{KeyDecision, KeyRequest};
pub use bindings::counter_types::{Counter, Period};
pub use bindings::dialect_types::{
    AnswerInfo, Call as DialectCallRequest, Canonical, Declaration, Decoded, Event as DialectEvent,
    Failure, Framing, KeySource, Route as DialectRoute, RouteKind,
};
pub use bindings::guard_types::{
    AnswerEvent, Consult, ConsultReply, Finding, GuardInfo, Refusal, Release, RequestVerdict,
    Rewrite, Stop, StreamVerdict, TextDelta, ToolCallDelta,
};
pub use bindings::limiter_types::{Decision, Denial, DenialCode, LimitRequest, Settlement};
pub use bindings::provider_types::{
    CanonicalRequest, Completion, Metered, NativeCall, Operation, PassthroughAuth, PassthroughCall,
    ProviderConfig, RequestInfo, StreamOutput,
};
pub use bindings::router_types::{CircuitState, RouteRequest, Target as RouteTarget};
pub use bindings::types::{
    ConfigError as PluginConfigError, ErrorKind, HttpRequest, HttpResponse, PluginError, Usage,
};
pub use cache_key::CacheKeyPlugin;
pub use dialect::{DialectCall, DialectPlugin, DialectStream};
pub use guard::{AnswerGuardCall, GuardPlugin};
pub use limiter::LimiterPlugin;
pub use operation_names::{OperationNames, names as operation_names};
pub use provider::{PluginCall, Prepared, ProviderPlugin, ProviderStream};
pub use registry::{DialectRegistry, Matched, Mounted, MountedRoute, RegistryError, Unmatched};
pub use router::RouterPlugin;
pub use slots::{InstanceUsage, SlotKind};

/// Where limiter plugins' counters live (in memory, or Redis); provided by `limits`.
pub trait CounterStore: Send + Sync {
    /// Adds `delta` to `key` in the current window of `period`, atomically.
    fn add<'a>(
        &'a self,
        key: &'a str,
        period: Period,
        delta: i64,
    ) -> futures_util::future::BoxFuture<'a, Result<Counter, String>>;

    /// Reads `key` in the current window of `period`.
    fn get<'a>(
        &'a self,
        key: &'a str,
        period: Period,
    ) -> futures_util::future::BoxFuture<'a, Result<Counter, String>>;
}
use state::PluginState;

/// How often the epoch advances. Deadlines are counted in these ticks.
const TICK: Duration = Duration::from_millis(1);

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
fn built_in(name: &str) -> Option<Vec<u8>> {
    let (_, packed) = BUILT_IN.iter().find(|(n, _)| *n == name)?;
    zstd::bulk::decompress(packed, BUILT_IN_MAX).ok()
}

/// Limits applied to every plugin call.
#[derive(Debug, Clone, Copy)]
pub struct PluginLimits {
    /// CPU time one call may use: its own work, on whichever threads ran it.
    pub cpu_budget: Duration,
    /// Wall-clock time after which a call is stopped whatever CPU time it used (a backstop for
    /// a call whose CPU time is not what grows, and for a host that cannot measure it).
    pub wall_backstop: Duration,
    /// Linear-memory cap of one instance.
    pub memory_bytes: usize,
    /// Instances alive at once; callers wait for a free one.
    pub max_instances: u32,
    /// Of those, the instances stream requests may hold.
    pub max_stream_instances: u32,
    /// How long a caller waits for a free instance before giving up.
    pub instance_wait: Duration,
}

impl PluginLimits {
    /// The limits `plugins:` sets.
    pub fn from_config(config: &crate::config::PluginsConfig) -> anyhow::Result<Self> {
        Ok(Self {
            cpu_budget: config.call_cpu_budget(),
            wall_backstop: config.call_wall_backstop(),
            memory_bytes: usize::try_from(config.memory_limit_mib << 20)?,
            max_instances: config.max_instances,
            max_stream_instances: config.max_stream_instances(),
            instance_wait: config.instance_wait(),
        })
    }
}

/// Why a plugin call failed without the plugin reporting an error of its own.
#[derive(Debug, thiserror::Error)]
pub enum PluginFailure {
    #[error("plugin `{plugin}` trapped: {detail}")]
    Trapped { plugin: Arc<str>, detail: String },
    #[error("plugin `{plugin}` ran past its {ms} ms {bound}")]
    TimedOut {
        plugin: Arc<str>,
        ms: u64,
        bound: TimeBound,
    },
    #[error("plugin `{plugin}` exceeded its {mib} MiB memory limit")]
    OutOfMemory { plugin: Arc<str>, mib: u64 },
    #[error("no instance of plugin `{plugin}` came free within {waited_ms} ms")]
    Saturated { plugin: Arc<str>, waited_ms: u64 },
}

impl PluginFailure {
    /// The failure's kind, as metrics label it.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Trapped { .. } => "trapped",
            Self::TimedOut { .. } => "timeout",
            Self::OutOfMemory { .. } => "out_of_memory",
            Self::Saturated { .. } => "saturated",
        }
    }

    pub fn plugin(&self) -> &str {
        match self {
            Self::Trapped { plugin, .. }
            | Self::TimedOut { plugin, .. }
            | Self::OutOfMemory { plugin, .. }
            | Self::Saturated { plugin, .. } => plugin,
        }
    }
}

/// Which of a call's time bounds it ran past.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeBound {
    /// Its own CPU time (`plugins.call_timeout_ms`).
    Cpu,
    /// The wall-clock backstop (`plugins.call_wall_timeout_ms`).
    WallClock,
}

impl std::fmt::Display for TimeBound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Cpu => "CPU-time budget",
            Self::WallClock => "wall-clock deadline",
        })
    }
}

/// Why a plugin could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("no plugin `{name}`: {path} does not exist and no built-in plugin has that name")]
    NotFound { name: String, path: PathBuf },
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("plugin `{name}` cannot be used: {detail}")]
    Invalid { name: String, detail: String },
}

/// Watches the host's plugin calls (their duration and failures). The host reports to it rather
/// than to telemetry, which sits above the plugins and is passed in by whoever builds the host.
pub trait CallObserver: Send + Sync {
    /// The export `call` of `plugin` starts; the returned value is told how it ended.
    fn start<'a>(&'a self, plugin: &'a str, call: &'static str) -> Box<dyn CallEnd + 'a>;
}

/// The end of one observed call.
pub trait CallEnd: Send {
    /// `failure`: `trapped`, `timeout` or `out_of_memory` (see [`PluginFailure::kind`]).
    fn end(self: Box<Self>, failure: Option<&'static str>);
}

/// Observes nothing (for tests that have no telemetry).
pub struct Unobserved;

impl CallObserver for Unobserved {
    fn start<'a>(&'a self, _: &'a str, _: &'static str) -> Box<dyn CallEnd + 'a> {
        Box::new(Unobserved)
    }
}

impl CallEnd for Unobserved {
    fn end(self: Box<Self>, _: Option<&'static str>) {}
}

/// The engine, linker and limits shared by every plugin.
#[derive(Clone)]
pub struct PluginHost {
    inner: Arc<HostInner>,
}

struct HostInner {
    engine: Engine,
    linker: Linker<PluginState>,
    limits: PluginLimits,
    cache_dir: Option<PathBuf>,
    /// Back-pressure: one slot per pooled instance, a share of them for streams.
    slots: Arc<slots::Slots>,
    tokenizer: crate::tokenizer::Tokenizer,
    /// Where call times and failures are counted.
    observer: Arc<dyn CallObserver>,
    /// The component last loaded under each plugin name, and what it was loaded from. A reload
    /// that finds the same file (or built-in) takes it from here: reading, hashing and
    /// deserialising again costs 0.3-0.7 s for a Python or JavaScript component. One entry per
    /// name, replaced when the file changes, so old components are not kept.
    loaded: std::sync::Mutex<std::collections::HashMap<String, Loaded>>,
    /// Components compiled or read from the disk cache (not from `loaded`), for tests.
    compiled: std::sync::atomic::AtomicU64,
    /// Instances created, and export calls made, since start (see [`PluginWork`]).
    instantiations: std::sync::atomic::AtomicU64,
    calls: Arc<std::sync::atomic::AtomicU64>,
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
        spawn_epoch_ticker(&engine);

        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)
            .map_err(|e| anyhow::anyhow!("linking WASI: {e}"))?;
        bindings::add_host_to_linker(&mut linker)?;

        Ok(Self {
            inner: Arc::new(HostInner {
                slots: slots::Slots::new(&limits),
                engine,
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

    fn load(&self, name: &str, dir: &Path) -> Result<Component, LoadError> {
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

/// Advances the engine's epoch every tick, from a thread of its own: a looping guest never
/// yields, so a ticker on the async runtime could starve. The thread holds only a weak reference
/// and ends when the engine is dropped.
fn spawn_epoch_ticker(engine: &Engine) {
    let weak = engine.weak();
    let spawned = std::thread::Builder::new()
        .name("wasm-epoch".into())
        .spawn(move || {
            while let Some(engine) = weak.upgrade() {
                engine.increment_epoch();
                drop(engine);
                std::thread::sleep(TICK);
            }
        });
    if let Err(e) = spawned {
        tracing::error!("cannot start the plugin deadline ticker: {e}");
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
mod tests {
    use std::sync::atomic::Ordering;

    use super::*;

    fn host() -> PluginHost {
        host_with_deadline(Duration::from_millis(200))
    }

    fn host_with_deadline(cpu_budget: Duration) -> PluginHost {
        let limits = PluginLimits {
            cpu_budget,
            wall_backstop: cpu_budget * 10,
            memory_bytes: 64 << 20,
            max_instances: 4,
            max_stream_instances: 3,
            instance_wait: Duration::from_secs(2),
        };
        PluginHost::new(
            limits,
            None,
            crate::tokenizer::Tokenizer,
            Arc::new(Unobserved),
        )
        .unwrap()
    }

    #[test]
    fn an_unchanged_plugin_is_not_loaded_again() {
        let host = host();
        let compiled = || host.inner.compiled.load(Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("wasmgate-loaded-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();

        host.load_router("fallback", &dir).unwrap();
        host.load_router("fallback", &dir).unwrap();
        assert_eq!(compiled(), 1, "the built-in is reused");

        // A file of that name takes precedence, and is reused while it stays the same.
        let bytes = built_in("fallback").unwrap();
        let file = dir.join("fallback.wasm");
        std::fs::write(&file, bytes).unwrap();
        host.load_router("fallback", &dir).unwrap();
        host.load_router("fallback", &dir).unwrap();
        assert_eq!(compiled(), 2);

        // A new file (as `plugin build` renames one into place) is loaded again.
        let other = built_in("weighted").unwrap();
        let partial = dir.join(".fallback.wasm.partial");
        std::fs::write(&partial, other).unwrap();
        std::fs::rename(&partial, &file).unwrap();
        host.load_router("fallback", &dir).unwrap();
        assert_eq!(compiled(), 3);
        assert_eq!(host.loaded().len(), 1, "one entry per plugin name");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Every embedded plugin decompresses into a WebAssembly component (its preamble: the
    /// magic, then the component layer), and packed smaller than it is.
    #[test]
    fn every_built_in_is_a_compressed_component() {
        assert!(BUILT_IN.len() >= 10, "{} built-ins", BUILT_IN.len());
        for (name, packed) in BUILT_IN {
            let component = built_in(name).unwrap_or_else(|| panic!("{name} does not unpack"));
            assert_eq!(&component[..8], b"\0asm\x0d\0\x01\0", "{name}");
            assert!(packed.len() < component.len(), "{name}");
        }
    }

    /// The built-in dialect plugins load as dialects and translate through the host's bindings:
    /// a Messages request decodes into chat JSON, a whole answer and a stream encode back.
    #[tokio::test]
    async fn a_dialect_plugin_decodes_and_encodes_through_the_host() {
        // A deadline that a loaded test machine cannot miss: the calls are checked, not timed.
        let host = host_with_deadline(Duration::from_secs(10));
        let dir = std::env::temp_dir();
        assert!(host.load_provider("anthropic-messages", &dir).is_err());
        let plugin = host.load_dialect("anthropic-messages", &dir).unwrap();
        let mut call = plugin.start(SlotKind::Call).await.unwrap();
        let body = r#"{"model":"m","max_tokens":9,"system":"be brief",
            "messages":[{"role":"user","content":[{"type":"text","text":"hi",
            "cache_control":{"type":"ephemeral"}}]}]}"#;
        let request = DialectCallRequest {
            route: "messages".into(),
            params: Vec::new(),
            body: body.into(),
        };
        let decoded = call.decode(&request).await.unwrap().unwrap();
        assert_eq!((decoded.model.as_str(), decoded.stream), ("m", false));
        let chat: serde_json::Value = serde_json::from_str(&decoded.body).unwrap();
        assert_eq!(chat["messages"][0]["role"], "system");
        let content = &chat["messages"][1]["content"];
        assert!(content == "hi" || content[0]["text"] == "hi", "{content}");
        assert!(decoded.dropped.iter().any(|d| d.contains("cache_control")));

        let info = AnswerInfo {
            route: "messages".into(),
            model: "m".into(),
            id: "msg_1".into(),
            created: 1,
            estimated_input_tokens: 5,
            echo: decoded.echo.clone(),
        };
        let completion = r#"{"id":"c","object":"chat.completion","model":"up","choices":[{"index":0,
            "message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}]}"#;
        let answer = call.encode(&info, completion, None).await.unwrap().unwrap();
        let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(answer["type"], "message");
        assert_eq!(answer["content"][0]["text"], "hello");
        assert_eq!(answer["stop_reason"], "end_turn");

        let mut stream = plugin
            .start(SlotKind::Stream)
            .await
            .unwrap()
            .open_stream(&info)
            .await
            .unwrap();
        let chunk = r#"{"id":"c","object":"chat.completion.chunk","model":"up","choices":[{"index":0,
            "delta":{"role":"assistant","content":"he"},"finish_reason":null}]}"#;
        let mut names: Vec<String> = Vec::new();
        for event in stream.push(&[chunk.to_owned()]).await.unwrap().unwrap() {
            names.push(event.name);
        }
        for event in stream.finish(None).await.unwrap().unwrap() {
            names.push(event.name);
        }
        assert_eq!(names.first().map(String::as_str), Some("message_start"));
        assert!(names.iter().any(|n| n == "content_block_delta"));
        assert_eq!(names.last().map(String::as_str), Some("message_stop"));
    }
}
