//! The rules read from the ledger: what it says now, as the alerts it calls for. Each alert is
//! named by its rule, subject, threshold and period, which the ledger keeps once (see
//! `ledger::alerts`). The rules on a replica's own state are in `local.rs`.

use super::budgets::{self, ScopedBudget};
use crate::config::alerts::{AlertsConfig, LatencyBy, LatencyRule};
use crate::ledger::Store;
use crate::ledger::alerts::Fired;

/// The alerts the ledger calls for at `now_us`, `scoped` being the project and user budgets of
/// `limits`; those fired before are among them (claiming them again does nothing).
pub fn due(
    config: &AlertsConfig,
    scoped: &[ScopedBudget],
    store: &dyn Store,
    now_us: i64,
) -> anyhow::Result<Vec<Fired>> {
    let mut due = Vec::new();
    if !config.budget_percent.is_empty() {
        budgets::keys(&config.budget_percent, store, now_us, &mut due)?;
        budgets::scoped(&config.budget_percent, scoped, store, now_us, &mut due)?;
    }
    if let Some(rule) = &config.latency {
        latency(rule, store, now_us, &mut due)?;
    }
    if let Some(rule) = &config.error_rate {
        let window_us = i64::try_from(rule.window_s)?.saturating_mul(1_000_000);
        for provider in store.provider_errors(now_us - window_us)? {
            let requests = provider.requests;
            let percent = provider.failed as f64 * 100.0 / requests.max(1) as f64;
            if requests < i64::try_from(rule.min_requests)? || percent <= rule.above_percent {
                continue;
            }
            due.push(Fired {
                rule: "error_rate".to_owned(),
                message: format!(
                    "provider `{}`: {} of {requests} requests failed in the last {} s ({percent:.0} %, \
                     above {} %)",
                    provider.provider, provider.failed, rule.window_s, rule.above_percent
                ),
                subject: provider.provider,
                threshold: rule.above_percent.round() as i64,
                // One alert per provider per window.
                period_us: window_start(now_us, window_us),
                fired_us: now_us,
            });
        }
    }
    Ok(due)
}

/// The start of the window of `window_us` that `now_us` falls in: one alert per subject in it.
fn window_start(now_us: i64, window_us: i64) -> i64 {
    now_us - now_us.rem_euclid(window_us.max(1))
}

/// Each provider (or model) whose latency at the rule's percentile, over its window, is above
/// the rule's bound. The percentile is above `above_ms` exactly when fewer answers than its
/// nearest rank took `above_ms` or less: a count the database makes, without sorting.
fn latency(
    rule: &LatencyRule,
    store: &dyn Store,
    now_us: i64,
    due: &mut Vec<Fired>,
) -> anyhow::Result<()> {
    let window_us = i64::try_from(rule.window_s)?.saturating_mul(1_000_000);
    let above_us = i64::try_from(rule.above_ms)?.saturating_mul(1_000);
    let by_model = rule.by == LatencyBy::Model;
    let what = if by_model { "model" } else { "provider" };
    for subject in store.slow_answers(now_us - window_us, above_us, by_model)? {
        let answered = subject.answered;
        if answered < i64::try_from(rule.min_requests)?
            || !percentile_above(rule.percentile, answered, subject.slower)
        {
            continue;
        }
        due.push(Fired {
            rule: "latency".to_owned(),
            message: format!(
                "{what} `{}`: the p{} latency of its {answered} answers in the last {} s is above \
                 {} ms ({} took longer)",
                subject.subject, rule.percentile, rule.window_s, rule.above_ms, subject.slower
            ),
            subject: subject.subject,
            threshold: i64::try_from(rule.above_ms)?,
            period_us: window_start(now_us, window_us),
            fired_us: now_us,
        });
    }
    Ok(())
}

/// Whether the nearest-rank `percentile` of `answered` values is above a bound that `slower`
/// of them exceed.
fn percentile_above(percentile: f64, answered: i64, slower: i64) -> bool {
    // In tenths of a percent, so that 99.9 % is exact.
    let permille = (percentile * 10.0).round() as i64;
    let rank = (permille * answered).div_euclid(1000)
        + i64::from((permille * answered).rem_euclid(1000) != 0);
    answered - slower < rank.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_percentile_is_above_the_bound_when_fewer_than_its_rank_are_within_it() {
        // p95 of 20 is the 19th value: above the bound once 2 of 20 exceed it.
        assert!(!percentile_above(95.0, 20, 1));
        assert!(percentile_above(95.0, 20, 2));
        // p95 of 21 is the 20th (ceil 19.95).
        assert!(!percentile_above(95.0, 21, 1));
        assert!(percentile_above(95.0, 21, 2));
        // p50 of 4 is the 2nd.
        assert!(!percentile_above(50.0, 4, 2));
        assert!(percentile_above(50.0, 4, 3));
        // p99.9 of 1000 is the 999th.
        assert!(!percentile_above(99.9, 1000, 1));
        assert!(percentile_above(99.9, 1000, 2));
        assert!(!percentile_above(95.0, 20, 0));
        assert!(percentile_above(95.0, 1, 1));
    }
}
