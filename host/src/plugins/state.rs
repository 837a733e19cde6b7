//! What one plugin `Store` holds: an empty WASI context, the memory cap and the call's time
//! bounds (its CPU budget and wall-clock backstop).

use std::sync::Arc;

use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::limits::PluginLimits;
use crate::tokenizer::Tokenizer;

/// `pub` (in a private module) only so that `loaded::World`, a public trait, may name it.
pub struct PluginState {
    pub(super) plugin: Arc<str>,
    pub(super) tokenizer: Tokenizer,
    wasi: WasiCtx,
    table: ResourceTable,
    pub(super) memory: MemoryCap,
    /// When the current call started (for the wall-clock backstop).
    pub(super) started: std::time::Instant,
    /// The current call's own CPU time.
    pub(super) cpu: Arc<super::cpu::CpuMeter>,
    pub(super) limits: PluginLimits,
    /// The counters a limiter call may use; `None` for every other plugin.
    pub(super) counters: Option<CounterAccess>,
}

/// A limiter rule's view of the counter store: its keys are prefixed with the rule's id, so two
/// rules never share a counter.
#[derive(Clone)]
pub(super) struct CounterAccess {
    pub(super) store: std::sync::Arc<dyn super::counter_store::CounterStore>,
    pub(super) prefix: std::sync::Arc<str>,
}

impl CounterAccess {
    pub(super) fn scoped(&self, key: &str) -> String {
        format!("{}:{key}", self.prefix)
    }
}

impl PluginState {
    pub(super) fn counters(&self) -> wasmtime::Result<CounterAccess> {
        self.counters
            .clone()
            .ok_or_else(|| wasmtime::Error::msg("counters are only available to limiter plugins"))
    }
}

impl PluginState {
    pub(super) fn new(plugin: Arc<str>, tokenizer: Tokenizer, limits: PluginLimits) -> Self {
        Self {
            plugin,
            tokenizer,
            // No preopened directories, no environment, no arguments, no sockets, stdio closed:
            // a plugin reaches the outside world only through the `host` interface.
            wasi: WasiCtx::builder().build(),
            table: ResourceTable::new(),
            memory: MemoryCap {
                limit: limits.memory_bytes,
                exceeded: false,
            },
            started: std::time::Instant::now(),
            cpu: Arc::default(),
            limits,
            counters: None,
        }
    }
}

impl WasiView for PluginState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// Caps linear memory, and remembers that the cap was hit so a trap can be reported as such.
pub(super) struct MemoryCap {
    limit: usize,
    pub(super) exceeded: bool,
}

impl wasmtime::ResourceLimiter for MemoryCap {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.limit {
            self.exceeded = true;
            return Ok(false);
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 100_000)
    }
}

/// The error an epoch callback returns when a call has used up one of its time bounds.
#[derive(Debug, Clone, Copy)]
pub(super) struct DeadlineExceeded(pub(super) super::failure::TimeBound);

impl std::fmt::Display for DeadlineExceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "plugin call exceeded its {}", self.0)
    }
}

impl std::error::Error for DeadlineExceeded {}
