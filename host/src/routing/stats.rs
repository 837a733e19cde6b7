//! Live statistics and a circuit breaker per target (`provider/model`), kept by the host for the
//! router plugins. They outlive config reloads: a target's history does not depend on which
//! virtual models name it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use crate::config::BreakerConfig;
use crate::plugins::CircuitState;

/// Weight of the newest observation in the moving averages.
const ALPHA: f64 = 0.2;

#[derive(Default)]
pub struct Stats {
    targets: RwLock<HashMap<String, Arc<TargetStats>>>,
}

impl Stats {
    pub fn get(&self, id: &str) -> Arc<TargetStats> {
        if let Some(stats) = crate::sync::read(&self.targets).get(id).cloned() {
            return stats;
        }
        let mut map = crate::sync::write(&self.targets);
        Arc::clone(map.entry(id.to_owned()).or_default())
    }

    /// Each target whose circuit opened and has not closed since (open, or half-open and not yet
    /// tried again), with when it first opened, in µs since the epoch (for the alerts).
    pub fn open_circuits(&self) -> Vec<(String, i64)> {
        let map = crate::sync::read(&self.targets);
        let mut open: Vec<(String, i64)> = map
            .iter()
            .filter_map(|(id, stats)| Some((id.clone(), stats.observed().opened_us?)))
            .collect();
        open.sort();
        open
    }

    /// Every target seen so far, with its statistics (for `/metrics`).
    pub fn each(&self, mut f: impl FnMut(&str, &TargetStats)) {
        let map = crate::sync::read(&self.targets);
        for (id, stats) in map.iter() {
            f(id, stats);
        }
    }
}

#[derive(Default)]
pub struct TargetStats {
    in_flight: AtomicU32,
    observed: Mutex<Observed>,
}

/// What the router sees of a target.
#[derive(Clone, Copy, Debug, Default)]
pub struct Snapshot {
    pub in_flight: u32,
    pub latency_ms: Option<f64>,
    pub ttft_ms: Option<f64>,
    pub tokens_per_second: Option<f64>,
    pub error_rate: f64,
}

#[derive(Default)]
struct Observed {
    latency_ms: Option<f64>,
    ttft_ms: Option<f64>,
    tokens_per_second: Option<f64>,
    error_rate: f64,
    consecutive_failures: u32,
    open_until: Option<Instant>,
    /// When the circuit opened, until a success closes it: a failed trial that opens it again
    /// is the same outage.
    opened_us: Option<i64>,
}

fn ewma(old: Option<f64>, new: f64) -> f64 {
    old.map_or(new, |old| old + ALPHA * (new - old))
}

impl TargetStats {
    fn observed(&self) -> std::sync::MutexGuard<'_, Observed> {
        crate::sync::lock(&self.observed)
    }

    pub fn snapshot(&self) -> Snapshot {
        let o = self.observed();
        Snapshot {
            in_flight: self.in_flight.load(Ordering::Relaxed),
            latency_ms: o.latency_ms,
            ttft_ms: o.ttft_ms,
            tokens_per_second: o.tokens_per_second,
            error_rate: o.error_rate,
        }
    }

    pub fn circuit(&self, now: Instant) -> CircuitState {
        match self.observed().open_until {
            None => CircuitState::Closed,
            Some(until) if now < until => CircuitState::Open,
            Some(_) => CircuitState::HalfOpen,
        }
    }

    /// Counts an attempt in flight until the returned guard settles it.
    pub fn begin(self: &Arc<Self>, breaker: BreakerConfig) -> Attempt {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        Attempt {
            stats: Arc::clone(self),
            breaker,
            started: Instant::now(),
        }
    }
}

/// One attempt at a target. Dropped unsettled (the client went away), it counts as neither a
/// success nor a failure.
pub struct Attempt {
    stats: Arc<TargetStats>,
    breaker: BreakerConfig,
    started: Instant,
}

impl Attempt {
    /// The upstream answered. `streamed`: the time so far is the time to the first byte.
    pub fn succeeded(self, streamed: bool, output_tokens: Option<u64>) {
        let elapsed = self.started.elapsed();
        let ms = elapsed.as_secs_f64() * 1e3;
        let mut o = self.stats.observed();
        if streamed {
            o.ttft_ms = Some(ewma(o.ttft_ms, ms));
        } else {
            o.latency_ms = Some(ewma(o.latency_ms, ms));
            if let Some(tokens) = output_tokens.filter(|t| *t > 0)
                && elapsed > Duration::ZERO
            {
                let tps = tokens as f64 / elapsed.as_secs_f64();
                o.tokens_per_second = Some(ewma(o.tokens_per_second, tps));
            }
        }
        o.error_rate = ewma(Some(o.error_rate), 0.0);
        o.consecutive_failures = 0;
        o.open_until = None;
        o.opened_us = None;
    }

    /// The attempt failed in a way that says something about the target (connect error,
    /// timeout, 429, 5xx).
    pub fn failed(self) {
        let mut o = self.stats.observed();
        o.error_rate = ewma(Some(o.error_rate), 1.0);
        o.consecutive_failures += 1;
        let half_open = o.open_until.is_some();
        if half_open || o.consecutive_failures >= self.breaker.failures {
            o.open_until = Some(Instant::now() + Duration::from_millis(self.breaker.cooldown_ms));
            o.opened_us = o.opened_us.or_else(|| Some(crate::ledger::time::now_us()));
        }
    }
}

impl Drop for Attempt {
    fn drop(&mut self) {
        self.stats.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn breaker() -> BreakerConfig {
        BreakerConfig {
            failures: 2,
            cooldown_ms: 50,
        }
    }

    #[test]
    fn the_circuit_opens_after_consecutive_failures_and_half_opens_after_the_cooldown() {
        let stats = Stats::default().get("p/m");
        let now = Instant::now();
        stats.begin(breaker()).failed();
        assert_eq!(stats.circuit(now), CircuitState::Closed);
        stats.begin(breaker()).failed();
        assert_eq!(stats.circuit(Instant::now()), CircuitState::Open);
        let later = Instant::now() + Duration::from_millis(60);
        assert_eq!(stats.circuit(later), CircuitState::HalfOpen);
        stats.begin(breaker()).succeeded(false, Some(10));
        assert_eq!(stats.circuit(later), CircuitState::Closed);
    }

    #[test]
    fn a_failed_trial_reopens_at_once() {
        let stats = Stats::default().get("p/m");
        stats.begin(breaker()).failed();
        stats.begin(breaker()).failed();
        let later = Instant::now() + Duration::from_millis(60);
        assert_eq!(stats.circuit(later), CircuitState::HalfOpen);
        stats.begin(breaker()).failed();
        assert_eq!(stats.circuit(Instant::now()), CircuitState::Open);
    }

    #[test]
    fn an_opening_lasts_until_a_success_closes_the_circuit() {
        let all = Stats::default();
        let stats = all.get("p/m");
        stats.begin(breaker()).failed();
        assert!(all.open_circuits().is_empty());
        stats.begin(breaker()).failed();
        let opened = all.open_circuits();
        assert_eq!(opened.len(), 1);
        assert_eq!(opened[0].0, "p/m");
        // A failed trial reopens it: the same opening.
        stats.begin(breaker()).failed();
        assert_eq!(all.open_circuits(), opened);
        stats.begin(breaker()).succeeded(false, None);
        assert!(all.open_circuits().is_empty());
    }

    #[test]
    fn in_flight_counts_attempts_until_they_settle_or_drop() {
        let stats = Stats::default().get("p/m");
        let a = stats.begin(breaker());
        let b = stats.begin(breaker());
        assert_eq!(stats.snapshot().in_flight, 2);
        a.succeeded(false, None);
        drop(b);
        assert_eq!(stats.snapshot().in_flight, 0);
        assert!(stats.snapshot().latency_ms.is_some());
    }
}
