//! Virtual models: a router plugin orders a virtual model's targets for each request, and the
//! host tries them in that order with backoff, skipping targets whose circuit is open.

pub mod stats;

use std::time::{Duration, Instant};

use crate::config::{BreakerConfig, RetryConfig, RouteEntry};
use crate::plugins::{CircuitState, RouteTarget, RouterPlugin};

/// A virtual model, loaded.
pub struct Route {
    pub router: RouterPlugin,
    /// The options as the plugin receives them (a JSON object).
    pub options: String,
    pub targets: Vec<RouteTargetConfig>,
    pub retry: RetryConfig,
    pub breaker: BreakerConfig,
}

/// One configured target of a virtual model.
pub struct RouteTargetConfig {
    pub id: String,
    pub provider: String,
    pub model: String,
    pub weight: u32,
    pub input_price: Option<f64>,
    pub output_price: Option<f64>,
}

impl Route {
    pub fn from_config(router: RouterPlugin, entry: &RouteEntry) -> Self {
        let targets = entry
            .targets
            .iter()
            .map(|t| {
                let t = t.detail();
                let (provider, model) = t.id.split_once('/').unwrap_or((&t.id, ""));
                RouteTargetConfig {
                    provider: provider.to_owned(),
                    model: model.to_owned(),
                    weight: t.weight.unwrap_or(1),
                    input_price: t.input_price,
                    output_price: t.output_price,
                    id: t.id,
                }
            })
            .collect();
        Self {
            router,
            options: serde_json::Value::Object(entry.options.clone()).to_string(),
            targets,
            retry: entry.retry,
            breaker: entry.circuit_breaker,
        }
    }

    /// What the router plugin sees of each target now.
    pub fn observed(&self, stats: &stats::Stats, now: Instant) -> Vec<RouteTarget> {
        self.targets
            .iter()
            .map(|t| {
                let target = stats.get(&t.id);
                let seen = target.snapshot();
                RouteTarget {
                    id: t.id.clone(),
                    provider: t.provider.clone(),
                    model: t.model.clone(),
                    weight: t.weight,
                    input_price: t.input_price,
                    output_price: t.output_price,
                    in_flight: seen.in_flight,
                    latency_ms: seen.latency_ms,
                    ttft_ms: seen.ttft_ms,
                    tokens_per_second: seen.tokens_per_second,
                    error_rate: seen.error_rate,
                    circuit: target.circuit(now),
                }
            })
            .collect()
    }

    /// The targets to try, in order: the router's order, open circuits left out unless every
    /// target's circuit is open, cut or extended to `retry.max_attempts`.
    pub fn plan(&self, order: &[u32], observed: &[RouteTarget]) -> Vec<usize> {
        let ordered: Vec<usize> = order
            .iter()
            .filter_map(|&i| usize::try_from(i).ok())
            .filter(|&i| i < self.targets.len())
            .fold(Vec::new(), |mut seen, i| {
                if !seen.contains(&i) {
                    seen.push(i);
                }
                seen
            });
        let usable: Vec<usize> = ordered
            .iter()
            .copied()
            .filter(|&i| observed[i].circuit != CircuitState::Open)
            .collect();
        let plan = if usable.is_empty() { ordered } else { usable };
        let max = self.retry.max_attempts.map_or(plan.len(), |m| m as usize);
        attempts(&plan, max)
    }

    /// The pause before attempt number `attempt` (1 for the second attempt): exponential, with
    /// full jitter so that retries from many clients do not arrive together.
    pub fn backoff(&self, attempt: u32, random: u64) -> Duration {
        let ceiling = self
            .retry
            .backoff_ms
            .saturating_mul(1 << attempt.saturating_sub(1).min(16))
            .min(self.retry.max_backoff_ms);
        Duration::from_millis(if ceiling == 0 {
            0
        } else {
            random % (ceiling + 1)
        })
    }
}

/// `max` attempts over `targets` in turn: cut short, or round again from the first when there
/// are more attempts than targets, so that `max_attempts: 3` on a one-target route means three
/// tries (a transient 5xx is worth retrying on the same target).
fn attempts(targets: &[usize], max: usize) -> Vec<usize> {
    targets.iter().copied().cycle().take(max).collect()
}

#[cfg(test)]
mod tests {
    use super::attempts;

    #[test]
    fn attempts_are_cut_or_go_round_again_to_max_attempts() {
        assert_eq!(attempts(&[2, 0, 1], 2), [2, 0]);
        assert_eq!(attempts(&[2, 0, 1], 3), [2, 0, 1]);
        assert_eq!(attempts(&[4], 3), [4, 4, 4]);
        assert_eq!(attempts(&[1, 0], 5), [1, 0, 1, 0, 1]);
        assert!(attempts(&[], 3).is_empty());
    }
}
