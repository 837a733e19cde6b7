//! The epoch ticker: advances the engine's epoch every [`TICK`] while a guest may be running,
//! and sleeps while none is.
//!
//! A thread of its own, since a looping guest never yields and a ticker on the async runtime
//! could starve. It ticked every millisecond whether or not a plugin ran: a thousand wake-ups
//! a second of an idle gateway (2 % of a core), each one, under load, a switch on the core
//! serving the requests, on the plain path too, where no plugin runs at all (issue 38).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use wasmtime::Engine;

/// How often the epoch advances while a call runs. Deadlines are counted in these ticks.
pub(super) const TICK: Duration = Duration::from_millis(1);

/// The handle on the ticker's thread; dropped, the thread ends.
pub(super) struct Ticker {
    shared: Arc<Shared>,
    /// `None` if the thread could not be started (logged): the epoch then never advances, and
    /// no call is stopped at its time bounds, as when the thread failed to start before.
    thread: Option<std::thread::Thread>,
}

/// What the ticker's thread and the calls share.
#[derive(Default)]
struct Shared {
    /// Guest calls in progress (started and not ended: a call that yielded is counted).
    running: AtomicUsize,
    /// Set when the [`Ticker`] is dropped.
    stop: AtomicBool,
    /// Epochs advanced since start, for tests.
    ticks: AtomicU64,
}

impl Ticker {
    /// Starts the thread, which holds only a weak reference to `engine` and ends with it.
    pub(super) fn spawn(engine: &Engine) -> Self {
        let shared = Arc::new(Shared::default());
        let weak = engine.weak();
        let theirs = Arc::clone(&shared);
        let spawned = std::thread::Builder::new()
            .name("wasm-epoch".into())
            .spawn(move || {
                loop {
                    if theirs.stop.load(Ordering::Acquire) {
                        return;
                    }
                    if theirs.running.load(Ordering::Acquire) == 0 {
                        // Woken by the next call's start (or the drop); a wake-up that came
                        // before this park makes it return at once.
                        std::thread::park();
                        continue;
                    }
                    // The sleep first: a call's first tick comes about a tick after it started
                    // (what `on_tick` assumes of its first stretch), not at once, which would
                    // make every call after a quiet spell yield at its start.
                    std::thread::sleep(TICK);
                    if theirs.running.load(Ordering::Acquire) == 0 {
                        continue;
                    }
                    let Some(engine) = weak.upgrade() else {
                        return;
                    };
                    engine.increment_epoch();
                    theirs.ticks.fetch_add(1, Ordering::Relaxed);
                }
            });
        let thread = match spawned {
            Ok(handle) => Some(handle.thread().clone()),
            Err(e) => {
                tracing::error!("cannot start the plugin deadline ticker: {e}");
                None
            }
        };
        Self { shared, thread }
    }

    /// Held while a guest call may run: the epoch advances until the last such guard drops.
    pub(super) fn running(&self) -> Running<'_> {
        if self.shared.running.fetch_add(1, Ordering::AcqRel) == 0
            && let Some(thread) = &self.thread
        {
            thread.unpark();
        }
        Running(self)
    }

    /// Epochs advanced since start.
    #[cfg(test)]
    pub(super) fn ticks(&self) -> u64 {
        self.shared.ticks.load(Ordering::Relaxed)
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(thread) = &self.thread {
            thread.unpark();
        }
    }
}

/// A guest call in progress (see [`Ticker::running`]).
pub(super) struct Running<'a>(&'a Ticker);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.shared.running.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Waits up to a second for `done`, polling every tick.
    fn wait_for(done: impl Fn() -> bool) -> bool {
        let deadline = std::time::Instant::now() + Duration::from_secs(1);
        while std::time::Instant::now() < deadline {
            if done() {
                return true;
            }
            std::thread::sleep(TICK);
        }
        done()
    }

    #[test]
    fn the_epoch_advances_only_while_a_call_runs() {
        let engine = Engine::new(wasmtime::Config::new().epoch_interruption(true)).unwrap();
        let ticker = Ticker::spawn(&engine);
        std::thread::sleep(TICK * 20);
        assert_eq!(ticker.ticks(), 0, "ticked with no call running");

        let running = ticker.running();
        assert!(
            wait_for(|| ticker.ticks() >= 5),
            "{} ticks while a call ran",
            ticker.ticks()
        );
        // Two at once: the first one's end does not stop the second one's ticks.
        let second = ticker.running();
        drop(running);
        let now = ticker.ticks();
        assert!(wait_for(|| ticker.ticks() >= now + 3));
        drop(second);

        // None after the last call ended (but one already past its check then).
        std::thread::sleep(TICK * 2);
        let settled = ticker.ticks();
        std::thread::sleep(TICK * 20);
        assert_eq!(ticker.ticks(), settled, "ticked after the last call ended");

        // And it wakes for the next one.
        let _again = ticker.running();
        assert!(wait_for(|| ticker.ticks() > settled));
    }
}
