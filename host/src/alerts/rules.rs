//! The rules: what the ledger says now, as the alerts it calls for. Each alert is named by its
//! rule, subject, threshold and period, which the ledger keeps once (see `ledger::alerts`).

use crate::config::alerts::AlertsConfig;
use crate::ledger::Store;
use crate::ledger::alerts::Fired;
use crate::ledger::keys::format_usd;

/// The alerts the ledger calls for at `now_us`; those fired before are among them (claiming
/// them again does nothing).
pub fn due(config: &AlertsConfig, store: &dyn Store, now_us: i64) -> anyhow::Result<Vec<Fired>> {
    let mut due = Vec::new();
    if !config.budget_percent.is_empty() {
        budgets(config, store, now_us, &mut due)?;
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
                period_us: now_us - now_us.rem_euclid(window_us.max(1)),
                fired_us: now_us,
            });
        }
    }
    Ok(due)
}

/// Each key with a budget whose spend in the budget's period reached a threshold.
fn budgets(
    config: &AlertsConfig,
    store: &dyn Store,
    now_us: i64,
    due: &mut Vec<Fired>,
) -> anyhow::Result<()> {
    for key in store.keys(None)? {
        let Some(budget) = key.limits.budget.filter(|_| key.revoked_us.is_none()) else {
            continue;
        };
        if budget.micros <= 0 {
            continue;
        }
        let start = budget.period.start_us(now_us);
        let spent = store.key_spend(&key.id, start)?;
        let percent = i128::from(spent) * 100 / i128::from(budget.micros);
        for &threshold in &config.budget_percent {
            if percent < i128::from(threshold) {
                continue;
            }
            due.push(Fired {
                rule: "budget".to_owned(),
                subject: key.id.clone(),
                threshold: i64::from(threshold),
                period_us: start,
                fired_us: now_us,
                message: format!(
                    "key `{}` of project `{}` has spent ${} of its ${} {} budget ({percent} %, \
                     threshold {threshold} %)",
                    key.id,
                    key.project,
                    format_usd(spent),
                    format_usd(budget.micros),
                    budget.period.name(),
                ),
            });
        }
    }
    Ok(())
}
