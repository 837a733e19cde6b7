//! One plugin call's sandbox: a fresh `Store` with a memory cap, time bounds checked at every
//! epoch tick (the call's own CPU time against its budget, and wall-clock time against a much
//! longer backstop), and a slot of the instance pool held until it is dropped.
//!
//! The budget is CPU time rather than wall-clock time because a host starved of CPU (a
//! container at its quota, or cores shared with other work) stretches every call's wall-clock
//! time: measured that way, valid requests failed with `plugin_timeout` under load.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use wasmtime::{Store, StoreContextMut, Trap, UpdateDeadline};

use super::cpu::metered;
use super::failure::{PluginFailure, TimeBound};
use super::host::PluginHost;
use super::observer::CallObserver;
use super::slots::{Slot, SlotKind, WarmTicket};
use super::state::{CounterAccess, DeadlineExceeded, PluginState};
use super::ticker::{TICK, Ticker};

pub(super) struct Sandbox {
    pub(super) store: Store<PluginState>,
    plugin: Arc<str>,
    /// The host's count of export calls.
    calls: Arc<std::sync::atomic::AtomicU64>,
    observer: Arc<dyn CallObserver>,
    ticker: Arc<Ticker>,
    _slot: Slot,
}

impl PluginHost {
    /// Waits (for a bounded time) for a free instance slot of `kind`, then prepares a store for
    /// the plugin `plugin`.
    pub(super) async fn sandbox(
        &self,
        plugin: &Arc<str>,
        kind: SlotKind,
    ) -> Result<Sandbox, PluginFailure> {
        let inner = &self.inner;
        let slot = inner
            .slots
            .take(kind)
            .await
            .map_err(|no| PluginFailure::Saturated {
                plugin: Arc::clone(plugin),
                waited_ms: no.waited_ms,
            })?;
        let state = PluginState::new(Arc::clone(plugin), inner.tokenizer, inner.limits);
        let mut store = Store::new(&inner.engine, state);
        store.limiter(|s| &mut s.memory);
        store.epoch_deadline_callback(on_tick);
        inner.instantiations.fetch_add(1, Ordering::Relaxed);
        let mut sandbox = Sandbox {
            store,
            plugin: Arc::clone(plugin),
            calls: Arc::clone(&inner.calls),
            observer: Arc::clone(&inner.observer),
            ticker: Arc::clone(&inner.ticker),
            _slot: slot,
        };
        sandbox.arm();
        Ok(sandbox)
    }
}

/// The epoch callback: stops a call past its CPU budget or its wall-clock backstop, else lets
/// it run one more tick.
fn on_tick(ctx: StoreContextMut<'_, PluginState>) -> wasmtime::Result<UpdateDeadline> {
    let state = ctx.data();
    let elapsed = state.started.elapsed();
    if elapsed >= state.limits.wall_backstop {
        return Err(DeadlineExceeded(TimeBound::WallClock).into());
    }
    // The first tick comes about one tick of wall-clock time after the call started, so the
    // call used at most that much CPU time before it was metered.
    if state.cpu.used(elapsed.min(TICK)) >= state.limits.cpu_budget {
        return Err(DeadlineExceeded(TimeBound::Cpu).into());
    }
    // Yielding every tick lets a long call share its worker thread with other requests.
    Ok(UpdateDeadline::Yield(1))
}

impl Sandbox {
    /// Instantiates with the CPU time of the component's start functions metered.
    pub(super) async fn instantiate<B>(
        &mut self,
        f: impl AsyncFnOnce(&mut Store<PluginState>) -> wasmtime::Result<B>,
    ) -> Result<B, PluginFailure> {
        let meter = Arc::clone(&self.store.data().cpu);
        let _running = self.ticker.running();
        match metered(&meter, f(&mut self.store)).await {
            Ok(bindings) => Ok(bindings),
            Err(e) => Err(self.classify(e)),
        }
    }

    /// Gives the next call its whole budget and backstop.
    pub(super) fn arm(&mut self) {
        let state = self.store.data_mut();
        state.started = Instant::now();
        state.cpu.reset();
        self.store.set_epoch_deadline(1);
    }

    /// Tells a trap from a timeout from an exhausted memory cap.
    pub(super) fn classify(&self, error: wasmtime::Error) -> PluginFailure {
        let plugin = Arc::clone(&self.plugin);
        let state = self.store.data();
        let bound = match (
            error.downcast_ref::<DeadlineExceeded>(),
            error.downcast_ref::<Trap>(),
        ) {
            (Some(DeadlineExceeded(bound)), _) => Some(*bound),
            // An epoch deadline reached with no callback to extend it: only the backstop does.
            (None, Some(Trap::Interrupt)) => Some(TimeBound::WallClock),
            _ => None,
        };
        if let Some(bound) = bound {
            let limit = match bound {
                TimeBound::Cpu => state.limits.cpu_budget,
                TimeBound::WallClock => state.limits.wall_backstop,
            };
            let ms = u64::try_from(limit.as_millis()).unwrap_or(u64::MAX);
            return PluginFailure::TimedOut { plugin, ms, bound };
        }
        if state.memory.exceeded {
            let mib = (state.limits.memory_bytes >> 20) as u64;
            return PluginFailure::OutOfMemory { plugin, mib };
        }
        let detail = match error.downcast_ref::<Trap>() {
            Some(trap) => trap.to_string(),
            None => format!("{error:#}"),
        };
        PluginFailure::Trapped { plugin, detail }
    }

    /// Runs one export (named `call`, for metrics and traces) with a fresh deadline, turning a
    /// trap into a `PluginFailure`.
    pub(super) async fn run<B, T>(
        &mut self,
        call: &'static str,
        bindings: &B,
        f: impl AsyncFnOnce(&B, &mut Store<PluginState>) -> wasmtime::Result<T>,
    ) -> Result<T, PluginFailure> {
        self.arm();
        self.calls.fetch_add(1, Ordering::Relaxed);
        let observed = self.observer.start(&self.plugin, call);
        let meter = Arc::clone(&self.store.data().cpu);
        let running = self.ticker.running();
        let result = match metered(&meter, f(bindings, &mut self.store)).await {
            Ok(value) => Ok(value),
            Err(e) => Err(self.classify(e)),
        };
        drop(running);
        let failure = result.as_ref().err().map(PluginFailure::kind);
        observed.end(failure);
        result
    }
}

/// Warm instances of a policy plugin (router or limiter), reused across calls. Policy plugins
/// keep no state by contract, and their calls are short and frequent, so a warm instance saves
/// the instantiation that would otherwise be most of a call's cost. An instance that failed
/// in any way is dropped, never returned. An idle instance holds its slot, so the host caps how
/// many are kept across all pools (see `Slots::keep_warm`).
pub(super) struct WarmPool<B> {
    idle: std::sync::Mutex<Vec<Idle<B>>>,
}

type Idle<B> = (Sandbox, B, WarmTicket);

/// Warm instances kept per policy plugin: enough for the calls two cores run at once.
const WARM_PER_PLUGIN: usize = 4;

impl<B> Default for WarmPool<B> {
    fn default() -> Self {
        Self {
            idle: std::sync::Mutex::new(Vec::new()),
        }
    }
}

impl<B> WarmPool<B> {
    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Idle<B>>> {
        crate::sync::lock(&self.idle)
    }

    /// Runs `f` on a warm instance of `plugin`, or on a new one from `instantiate`, with
    /// `counters` (limiters) for this call only; keeps the instance warm if the call succeeded.
    pub(super) async fn run<T>(
        &self,
        host: &PluginHost,
        plugin: &Arc<str>,
        call: &'static str,
        instantiate: impl AsyncFnOnce(&mut Store<PluginState>) -> wasmtime::Result<B>,
        counters: Option<CounterAccess>,
        f: impl AsyncFnOnce(&B, &mut Store<PluginState>) -> wasmtime::Result<T>,
    ) -> Result<T, PluginFailure> {
        let warm = self.idle().pop();
        let (mut sandbox, bindings) = match warm {
            Some((sandbox, bindings, _ticket)) => (sandbox, bindings),
            None => {
                let mut sandbox = host.sandbox(plugin, SlotKind::Call).await?;
                let bindings = sandbox.instantiate(instantiate).await?;
                (sandbox, bindings)
            }
        };
        sandbox.store.data_mut().counters = counters;
        let result = sandbox.run(call, &bindings, f).await;
        // A warm instance must not keep this call's counters.
        sandbox.store.data_mut().counters = None;
        if result.is_ok() {
            let mut idle = self.idle();
            if idle.len() < WARM_PER_PLUGIN
                && let Some(ticket) = host.inner.slots.keep_warm()
            {
                idle.push((sandbox, bindings, ticket));
            }
        }
        result
    }
}
