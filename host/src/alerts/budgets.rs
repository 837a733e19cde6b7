//! The budget rule: an alert the first time a budget's spend in its period reaches each of
//! `alerts.budget_percent`. Budgets are a key's own (`wasmgate keys create --budget`) and the
//! `budget` limits over projects or users (`limits.rules`); the spend is the ledger's.

use crate::config::{LimitScope, LimitsConfig};
use crate::ledger::alerts::{Fired, SpendScope};
use crate::ledger::keys::format_usd;
use crate::ledger::{BudgetPeriod, Store};

/// One budget of a `budget` limit over projects or users: each project (user) has its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopedBudget {
    pub scope: SpendScope,
    pub period: BudgetPeriod,
    pub micros: i64,
}

/// The project and user budgets of `limits`. A limit for some models only is left out: the
/// ledger records the model that answered, not the name the client asked for.
pub fn of_limits(limits: &LimitsConfig) -> Vec<ScopedBudget> {
    let mut all = Vec::new();
    for rule in &limits.rules {
        let scope = match rule.scope {
            LimitScope::Project => SpendScope::Project,
            LimitScope::User => SpendScope::User,
            LimitScope::Global | LimitScope::Key | LimitScope::Model => continue,
        };
        if rule.policy != "budget" || !rule.models.is_empty() {
            continue;
        }
        for period in [BudgetPeriod::Day, BudgetPeriod::Month, BudgetPeriod::Total] {
            let usd = rule.options.get(period.option()).and_then(|v| v.as_f64());
            // The limiter refuses a budget outside these bounds: the config would not load.
            if let Some(usd) = usd.filter(|usd| *usd > 0.0 && *usd <= 1e12) {
                all.push(ScopedBudget {
                    scope,
                    period,
                    micros: (usd * 1e6).round() as i64,
                });
            }
        }
    }
    all
}

/// What a budget's alert says of whose budget it is.
struct Whose<'a> {
    /// The alert's subject.
    subject: String,
    /// How the message names the budget's holder.
    named: String,
    period: BudgetPeriod,
    thresholds: &'a [u32],
}

impl Whose<'_> {
    fn push(&self, spent: i64, budget: i64, start: i64, now_us: i64, due: &mut Vec<Fired>) {
        let percent = i128::from(spent) * 100 / i128::from(budget.max(1));
        for &threshold in self.thresholds {
            if percent < i128::from(threshold) {
                continue;
            }
            due.push(Fired {
                rule: "budget".to_owned(),
                subject: self.subject.clone(),
                threshold: i64::from(threshold),
                period_us: start,
                fired_us: now_us,
                message: format!(
                    "{} has spent ${} of its ${} {} budget ({percent} %, threshold {threshold} %)",
                    self.named,
                    format_usd(spent),
                    format_usd(budget),
                    self.period.name(),
                ),
            });
        }
    }
}

/// Each key with a budget whose spend in the budget's period reached a threshold.
pub fn keys(
    thresholds: &[u32],
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
        let whose = Whose {
            subject: key.id.clone(),
            named: format!("key `{}` of project `{}`", key.id, key.project),
            period: budget.period,
            thresholds,
        };
        whose.push(spent, budget.micros, start, now_us, due);
    }
    Ok(())
}

/// Each project or user whose spend in a scoped budget's period reached a threshold. The
/// subject names the scope and the period (`project:<name>:day`), so that a project's daily
/// and monthly budgets, whose periods start together on the 1st, are alerts of their own.
pub fn scoped(
    thresholds: &[u32],
    budgets: &[ScopedBudget],
    store: &dyn Store,
    now_us: i64,
    due: &mut Vec<Fired>,
) -> anyhow::Result<()> {
    for budget in budgets {
        let start = budget.period.start_us(now_us);
        let scope = match budget.scope {
            SpendScope::Project => "project",
            SpendScope::User => "user",
        };
        for (holder, spent) in store.spend_by(budget.scope, start)? {
            let whose = Whose {
                subject: format!("{scope}:{holder}:{}", budget.period.name()),
                named: format!("{scope} `{holder}`"),
                period: budget.period,
                thresholds,
            };
            whose.push(spent, budget.micros, start, now_us, due);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budgets_of_project_and_user_limits_are_read_and_others_left_out() {
        let limits: LimitsConfig = serde_yaml::from_str(
            "{rules: [
               {policy: budget, scope: project, options: {daily_usd: 5, monthly_usd: 100.5}},
               {policy: budget, scope: user, options: {total_usd: 0.25}},
               {policy: budget, scope: key, options: {daily_usd: 1}},
               {policy: budget, scope: project, models: [gpt-4o], options: {daily_usd: 1}},
               {policy: rate-limit, scope: project, options: {requests_per_minute: 5}}]}",
        )
        .unwrap();
        let budget = |scope, period, micros| ScopedBudget {
            scope,
            period,
            micros,
        };
        assert_eq!(
            of_limits(&limits),
            [
                budget(SpendScope::Project, BudgetPeriod::Day, 5_000_000),
                budget(SpendScope::Project, BudgetPeriod::Month, 100_500_000),
                budget(SpendScope::User, BudgetPeriod::Total, 250_000),
            ]
        );
    }
}
