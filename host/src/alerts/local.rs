//! The rules on a replica's own state, which no other replica sees: its circuit breakers and
//! its usage journal (or queue). Each replica looks at its own; the ledger's claim still makes
//! an alert once, since its name says which opening or which journal it is about.

use crate::config::alerts::AlertsConfig;
use crate::ledger::Fill;
use crate::ledger::alerts::Fired;

/// What this replica holds now.
pub struct Seen {
    /// Each target (`provider/model`) whose circuit is open, and when it opened (µs).
    pub circuits: Vec<(String, i64)>,
    pub fill: Fill,
    /// Names this replica's journal or queue among the replicas (its host and slot).
    pub holder: String,
}

/// The alerts this replica's state calls for at `now_us`.
pub fn due(config: &AlertsConfig, seen: &Seen, now_us: i64) -> Vec<Fired> {
    let mut due = Vec::new();
    if let Some(rule) = &config.circuit_open {
        let period_us = seconds_us(rule.period_s);
        // One alert per provider: its first target to open names the opening.
        let mut providers: Vec<(&str, i64, Vec<&str>)> = Vec::new();
        for (target, opened_us) in &seen.circuits {
            let provider = target.split_once('/').map_or(target.as_str(), |(p, _)| p);
            match providers.iter_mut().find(|(p, ..)| *p == provider) {
                Some((_, first, targets)) => {
                    *first = (*first).min(*opened_us);
                    targets.push(target);
                }
                None => providers.push((provider, *opened_us, vec![target])),
            }
        }
        for (provider, opened_us, targets) in providers {
            due.push(Fired {
                rule: "circuit_open".to_owned(),
                subject: provider.to_owned(),
                threshold: 0,
                period_us: opened_us - opened_us.rem_euclid(period_us),
                fired_us: now_us,
                message: format!(
                    "provider `{provider}`: the circuit breaker opened for {} (requests skip it \
                     until a trial succeeds)",
                    targets.join(", ")
                ),
            });
        }
    }
    if let Some(rule) = &config.journal_full {
        let Fill {
            what,
            held,
            bound,
            unit,
        } = seen.fill;
        if u128::from(held) * 100 > u128::from(rule.above_percent) * u128::from(bound) {
            let percent = u128::from(held) * 100 / u128::from(bound.max(1));
            due.push(Fired {
                rule: "journal_full".to_owned(),
                subject: seen.holder.clone(),
                threshold: i64::from(rule.above_percent),
                period_us: now_us - now_us.rem_euclid(seconds_us(rule.period_s)),
                fired_us: now_us,
                message: format!(
                    "{what} of {}: {held} of {bound} {unit} ({percent} %, above {} %): the \
                     ledger's database is not taking records; at the bound new requests are \
                     refused (journal) or records dropped (queue)",
                    seen.holder, rule.above_percent
                ),
            });
        }
    }
    due
}

fn seconds_us(s: u64) -> i64 {
    i64::try_from(s)
        .unwrap_or(i64::MAX / 1_000_000)
        .saturating_mul(1_000_000)
        .max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::alerts::{CircuitOpenRule, JournalFullRule};

    fn config() -> AlertsConfig {
        AlertsConfig {
            circuit_open: Some(CircuitOpenRule { period_s: 60 }),
            journal_full: Some(JournalFullRule {
                above_percent: 50,
                period_s: 600,
            }),
            ..AlertsConfig::default()
        }
    }

    fn seen(circuits: &[(&str, i64)], held: u64) -> Seen {
        Seen {
            circuits: circuits
                .iter()
                .map(|(t, at)| ((*t).to_owned(), *at))
                .collect(),
            fill: Fill {
                what: "usage journal",
                held,
                bound: 1000,
                unit: "bytes",
            },
            holder: "host /j/0".to_owned(),
        }
    }

    #[test]
    fn a_provider_is_one_alert_in_the_period_its_first_circuit_opened() {
        let due = due(
            &config(),
            &seen(
                &[("a/m1", 130_000_000), ("a/m2", 119_000_000), ("b/m", 5)],
                0,
            ),
            200_000_000,
        );
        let got: Vec<_> = due
            .iter()
            .map(|f| (f.subject.as_str(), f.period_us))
            .collect();
        assert_eq!(got, [("a", 60_000_000), ("b", 0)]);
        assert!(due[0].message.contains("a/m1, a/m2"), "{}", due[0].message);
    }

    #[test]
    fn the_journal_alerts_above_its_percent_once_per_period() {
        assert!(due(&config(), &seen(&[], 500), 1).is_empty());
        let due = due(&config(), &seen(&[], 501), 700_000_000);
        assert_eq!(due.len(), 1);
        assert_eq!(
            (
                due[0].rule.as_str(),
                due[0].subject.as_str(),
                due[0].threshold,
                due[0].period_us
            ),
            ("journal_full", "host /j/0", 50, 600_000_000)
        );
    }
}
