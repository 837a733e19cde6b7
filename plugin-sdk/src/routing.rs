//! The choices most routers make: which targets are healthy, ranking them by a measure, and
//! picking one by weight. Each returns indices into `targets`, as [`Router::route`] does. Also
//! [`validate`] and [`route`], which call a router as the host does, for its unit tests.
//!
//! [`Router::route`]: crate::Router::route

use crate::Target;
pub use crate::router::{route, validate};

/// Every target with its index, in config order.
pub fn indexed(
    targets: &[Target],
) -> impl DoubleEndedIterator<Item = (u32, &Target)> + ExactSizeIterator {
    // A WIT list has fewer than 2^32 items, so the index fits.
    targets
        .iter()
        .enumerate()
        .map(|(i, target)| (i as u32, target))
}

/// The indices of all targets, in config order.
pub fn config_order(
    targets: &[Target],
) -> impl DoubleEndedIterator<Item = u32> + ExactSizeIterator {
    indexed(targets).map(|(i, _)| i)
}

/// The targets whose circuit is not open, with their indices, in config order. Half-open targets
/// are kept: the host lets one trial request through to them.
pub fn healthy(targets: &[Target]) -> impl DoubleEndedIterator<Item = (u32, &Target)> {
    indexed(targets).filter(|(_, target)| !target.is_open())
}

/// Moves the targets whose circuit is open after the others, keeping the order within each group.
/// Routers move open targets rather than drop them: when every other attempt failed, the host may
/// still try one as a last resort.
pub fn open_last(order: impl IntoIterator<Item = u32>, targets: &[Target]) -> Vec<u32> {
    let is_open = |i: &u32| {
        usize::try_from(*i)
            .ok()
            .and_then(|i| targets.get(i))
            .is_some_and(Target::is_open)
    };
    let (mut order, open): (Vec<u32>, Vec<u32>) = order.into_iter().partition(|i| !is_open(i));
    order.extend(open);
    order
}

/// Where [`rank`] puts the healthy targets it has no measure for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unmeasured {
    /// Before the measured ones, so that they get measured (latency, say).
    First,
    /// After the measured ones, as unknowns (price, say).
    Last,
}

/// The healthy targets by ascending `measure` (ties in config order), those without one (`None`
/// or NaN) first or last in config order, then the open ones in config order. For "higher is
/// better", measure the negation.
pub fn rank(
    targets: &[Target],
    unmeasured: Unmeasured,
    measure: impl Fn(&Target) -> Option<f64>,
) -> Vec<u32> {
    let mut measured = Vec::new();
    let mut unknown = Vec::new();
    for (i, target) in healthy(targets) {
        match measure(target).filter(|value| !value.is_nan()) {
            Some(value) => measured.push((value, i)),
            None => unknown.push(i),
        }
    }
    // A stable sort: equal measures keep their config order.
    measured.sort_by(|a, b| a.0.total_cmp(&b.0));
    let measured = measured.into_iter().map(|(_, i)| i);
    let mut order: Vec<u32> = match unmeasured {
        Unmeasured::First => unknown.into_iter().chain(measured).collect(),
        Unmeasured::Last => measured.chain(unknown).collect(),
    };
    order.extend(
        indexed(targets)
            .filter(|(_, t)| t.is_open())
            .map(|(i, _)| i),
    );
    order
}

/// Picks an index into `weights` with a probability proportional to its weight, from `random`
/// taken as uniform over `u64` (the host's [`RouteRequest::random`](crate::RouteRequest)). The
/// same `random` gives the same pick. Weights that are negative, NaN or infinite count as 0;
/// `None` when none is positive.
pub fn weighted_pick(weights: &[f64], random: u64) -> Option<usize> {
    let usable = |w: f64| if w.is_finite() && w > 0.0 { w } else { 0.0 };
    let total: f64 = weights.iter().map(|w| usable(*w)).sum();
    if !(total > 0.0 && total.is_finite()) {
        return None;
    }
    // The top 53 bits of `random` as a fraction in [0, 1): an f64 holds them exactly.
    let fraction = (random >> 11) as f64 / (1u64 << 53) as f64;
    let point = fraction * total;
    let mut sum = 0.0;
    let mut last = None;
    for (i, weight) in weights.iter().enumerate() {
        let weight = usable(*weight);
        if weight > 0.0 {
            sum += weight;
            last = Some(i);
            if point < sum {
                return Some(i);
            }
        }
    }
    // Rounding left `point` at or above the summed total: the last weighted index it is.
    last
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CircuitState::{self, Closed, HalfOpen, Open};

    fn targets(circuits: &[CircuitState]) -> Vec<Target> {
        let ids = ["a/1", "b/2", "c/3", "d/4", "e/5"];
        ids.iter()
            .zip(circuits)
            .map(|(id, circuit)| Target {
                circuit: *circuit,
                ..Target::new(id)
            })
            .collect()
    }

    #[test]
    fn config_order_counts_every_target() {
        let targets = targets(&[Open, HalfOpen, Closed]);
        assert_eq!(config_order(&targets).rev().collect::<Vec<_>>(), [2, 1, 0]);
    }

    #[test]
    fn healthy_skips_open_and_keeps_half_open() {
        let targets = targets(&[Open, HalfOpen, Closed, Open]);
        let ids: Vec<u32> = healthy(&targets).map(|(i, _)| i).collect();
        assert_eq!(ids, [1, 2]);
    }

    #[test]
    fn open_last_keeps_each_groups_order() {
        let targets = targets(&[Open, Closed, Open, HalfOpen]);
        assert_eq!(open_last([3, 2, 1, 0], &targets), [3, 1, 2, 0]);
        assert_eq!(open_last([9, 0, 1], &targets), [9, 1, 0]);
    }

    #[test]
    fn rank_orders_by_measure_with_unmeasured_first_or_last() {
        let mut targets = targets(&[Closed, Closed, Open, Closed, HalfOpen]);
        let measures = [Some(30.0), None, Some(1.0), Some(10.0), Some(30.0)];
        for (target, measure) in targets.iter_mut().zip(measures) {
            target.latency_ms = measure;
        }
        let by_latency = |t: &Target| t.latency_ms;
        // Ties (0 and 4) keep config order; the open target (2) is last whatever its measure.
        assert_eq!(
            rank(&targets, Unmeasured::First, by_latency),
            [1, 3, 0, 4, 2]
        );
        assert_eq!(
            rank(&targets, Unmeasured::Last, by_latency),
            [3, 0, 4, 1, 2]
        );
        targets[3].latency_ms = Some(f64::NAN);
        assert_eq!(
            rank(&targets, Unmeasured::Last, by_latency),
            [0, 4, 1, 3, 2]
        );
    }

    #[test]
    fn weighted_pick_ends_and_zero_weights() {
        assert_eq!(weighted_pick(&[], 5), None);
        assert_eq!(weighted_pick(&[0.0, -1.0, f64::NAN], 5), None);
        assert_eq!(weighted_pick(&[0.0, 1.0, 0.0, 1.0, 0.0], 0), Some(1));
        assert_eq!(weighted_pick(&[0.0, 1.0, 0.0, 1.0, 0.0], u64::MAX), Some(3));
        assert_eq!(weighted_pick(&[f64::INFINITY, 2.0], 0), Some(1));
    }

    #[test]
    fn weighted_pick_follows_the_weights() {
        let weights = [70.0, 0.0, 20.0, 10.0];
        let mut counts = [0u32; 4];
        // The midpoints of 10,000 equal slices of [0, 2^64): the pick is a function of where
        // `random` falls, so each slice goes to the weight that covers it.
        let draws = 10_000u64;
        let slice = u64::MAX / draws;
        for k in 0..draws {
            let random = k * slice + slice / 2;
            if let Some(i) = weighted_pick(&weights, random) {
                counts[i] += 1;
            }
        }
        assert_eq!(counts, [7000, 0, 2000, 1000]);
    }
}
