//! The CPU time a plugin call itself used, measured on the threads that ran it.
//!
//! A call runs on a wasmtime fiber inside the future that polls it, so while it runs, its CPU
//! time is the polling thread's. Between polls it may move to another worker thread, so the time
//! is summed over polls: each poll reads the thread's CPU clock as it starts and again if it
//! ends unfinished. Reading that clock is a system call (about 0.55 µs here, against 0.03 µs for
//! the monotonic clock), so a call pays for it only once it has run past its first epoch tick:
//! most calls end well within one and are never metered.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// One call's CPU time so far. Shared between the future that polls the call (which starts and
/// ends each metered stretch) and the store's epoch callback (which reads it mid-poll).
#[derive(Default)]
pub(super) struct CpuMeter {
    /// Whether the call has run past its first tick and is now metered.
    metering: AtomicBool,
    /// CPU time of the stretches that have ended, in ns.
    used_ns: AtomicU64,
    /// The polling thread's CPU clock when the current stretch started, in ns.
    stretch_start_ns: AtomicU64,
}

impl CpuMeter {
    /// Forgets the previous call.
    pub(super) fn reset(&self) {
        self.metering.store(false, Ordering::Relaxed);
        self.used_ns.store(0, Ordering::Relaxed);
    }

    /// The call's CPU time so far. Called from the epoch callback, so on the thread that is
    /// running the call. The first call starts metering, crediting `before` for the time the
    /// call ran unmetered (at most about a tick, which the caller bounds).
    pub(super) fn used(&self, before: Duration) -> Duration {
        let now = thread_cpu_ns();
        if !self.metering.load(Ordering::Relaxed) {
            let before = u64::try_from(before.as_nanos()).unwrap_or(u64::MAX);
            self.used_ns.store(before, Ordering::Relaxed);
            self.stretch_start_ns.store(now, Ordering::Relaxed);
            self.metering.store(true, Ordering::Relaxed);
            return Duration::from_nanos(before);
        }
        let stretch = now.saturating_sub(self.stretch_start_ns.load(Ordering::Relaxed));
        Duration::from_nanos(self.used_ns.load(Ordering::Relaxed).saturating_add(stretch))
    }

    fn poll_starts(&self) {
        if self.metering.load(Ordering::Relaxed) {
            self.stretch_start_ns
                .store(thread_cpu_ns(), Ordering::Relaxed);
        }
    }

    fn poll_paused(&self) {
        if self.metering.load(Ordering::Relaxed) {
            let stretch =
                thread_cpu_ns().saturating_sub(self.stretch_start_ns.load(Ordering::Relaxed));
            self.used_ns.fetch_add(stretch, Ordering::Relaxed);
        }
    }
}

/// Runs `call` (a future over a store whose meter is `meter`), keeping the meter's stretches in
/// step with its polls.
pub(super) async fn metered<T>(meter: &CpuMeter, call: impl Future<Output = T>) -> T {
    let mut call = std::pin::pin!(call);
    std::future::poll_fn(|cx| {
        meter.poll_starts();
        let polled = call.as_mut().poll(cx);
        if polled.is_pending() {
            meter.poll_paused();
        }
        polled
    })
    .await
}

/// The calling thread's CPU time (user and system), in ns.
fn thread_cpu_ns() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // Cannot fail for this clock on Linux; were it to, the zero read would only make the call
    // look cheaper, and the wall-clock backstop still bounds it.
    #[expect(
        unsafe_code,
        reason = "clock_gettime writes only the timespec it is given"
    )]
    unsafe {
        libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &raw mut now);
    }
    let secs = u64::try_from(now.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(now.tv_nsec).unwrap_or(0);
    secs.saturating_mul(1_000_000_000).saturating_add(nanos)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::task::{Context, Poll};

    use super::*;

    fn spin(for_cpu: Duration) {
        let start = thread_cpu_ns();
        while thread_cpu_ns() - start < u64::try_from(for_cpu.as_nanos()).unwrap() {
            std::hint::black_box(0u64);
        }
    }

    #[test]
    fn a_meter_counts_cpu_time_only_while_the_call_is_polled() {
        let meter = Arc::new(CpuMeter::default());
        let waker = futures_util::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        let reader = Arc::clone(&meter);
        let mut polls = 0;
        // Spins 5 ms per poll, reading the meter as the epoch callback would; pending twice.
        let mut call = Box::pin(metered(
            &meter,
            std::future::poll_fn(move |_| {
                spin(Duration::from_millis(5));
                let used = reader.used(Duration::ZERO);
                polls += 1;
                if polls < 3 {
                    Poll::Pending
                } else {
                    Poll::Ready(used)
                }
            }),
        ));
        assert!(call.as_mut().poll(&mut cx).is_pending());
        // Time between polls is not the call's.
        std::thread::sleep(Duration::from_millis(30));
        spin(Duration::from_millis(20));
        assert!(call.as_mut().poll(&mut cx).is_pending());
        let Poll::Ready(used) = call.as_mut().poll(&mut cx) else {
            panic!("the call ends at its third poll");
        };
        // The first poll ran unmetered (metering started at its end); the next two are counted.
        assert!(
            used >= Duration::from_millis(10) && used < Duration::from_millis(19),
            "{used:?}"
        );
        meter.reset();
        assert!(meter.used(Duration::from_millis(1)) < Duration::from_millis(2));
    }
}
