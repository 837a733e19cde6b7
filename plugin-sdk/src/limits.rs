//! What most limiters do: reserve on several counters at once, all or nothing ([`Reservation`]),
//! and tell the client where it stands in OpenAI's `x-ratelimit-*` headers ([`ratelimit_headers`],
//! [`reset_header`]). Also [`validate`], [`check`] and [`settle`], which call a limiter as the host
//! does, for its unit tests.

use core::fmt::Display;

use crate::counters;
pub use crate::limiter::{check, settle, validate};
use crate::{Counter, Period};

/// Additions to several counters that stand or fall together: when one would take its counter
/// over its limit, that one and every one before it are taken back, so a refused request leaves
/// the counters as they were.
///
/// Each addition is atomic in the host, but the set is not: while a request is being refused,
/// others may briefly see its additions (and be refused too, near a limit). Counts are never lost.
#[derive(Debug, Default)]
pub struct Reservation {
    added: Vec<(String, Period, i64)>,
}

/// Why [`Reservation::add`] took everything back: the counter it was adding to would have gone
/// over its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exceeded {
    /// The counter's value without this request: what was already used in the window.
    pub used: i64,
    /// What the request asked for.
    pub requested: i64,
    /// Milliseconds until the counter's window ends (0 for [`Period::Total`]).
    pub resets_in_ms: u64,
}

impl Reservation {
    /// A reservation that has added nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `delta` to the counter `key` in `period` if the result stays within `limit`, and
    /// returns the counter. A counter already at its limit admits nothing, not even a `delta` of
    /// 0. Otherwise takes this addition and all earlier ones back, and says why.
    pub fn add(
        &mut self,
        key: impl Into<String>,
        period: Period,
        delta: i64,
        limit: i64,
    ) -> Result<Counter, Exceeded> {
        let key = key.into();
        let counter = counters::add(&key, period, delta);
        let used = counter.value.saturating_sub(delta);
        if counter.value > limit || used >= limit {
            if delta != 0 {
                counters::add(&key, period, delta.saturating_neg());
            }
            self.undo();
            return Err(Exceeded {
                used,
                requested: delta,
                resets_in_ms: counter.resets_in_ms,
            });
        }
        if delta != 0 {
            self.added.push((key, period, delta));
        }
        Ok(counter)
    }

    /// Takes back every addition made so far, for a limiter that refuses the request for a
    /// reason of its own.
    pub fn undo(&mut self) {
        for (key, period, delta) in self.added.drain(..).rev() {
            counters::add(&key, period, delta.saturating_neg());
        }
    }
}

/// Where one limit stands after a request was admitted: what its `x-ratelimit-*` headers say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Standing {
    /// The limit.
    pub limit: i64,
    /// What is left of it in the window (never below 0).
    pub remaining: i64,
    /// Milliseconds until the window ends (0 for [`Period::Total`]).
    pub resets_in_ms: u64,
}

impl Standing {
    /// Where `limit` stands with its `counter` as [`Reservation::add`] returned it.
    pub fn new(limit: i64, counter: &Counter) -> Self {
        Standing {
            limit,
            remaining: limit.saturating_sub(counter.value).max(0),
            resets_in_ms: counter.resets_in_ms,
        }
    }

    /// The tightest of several limits of one kind: the one with the least left, the first of
    /// equals. The headers report it, as OpenAI's report one limit per kind.
    pub fn tightest(standings: impl IntoIterator<Item = Standing>) -> Option<Standing> {
        standings
            .into_iter()
            .min_by_key(|standing| standing.remaining)
    }
}

/// OpenAI's three headers for a limit of `kind` (`requests`, `tokens`, ...):
/// `x-ratelimit-limit-<kind>`, `x-ratelimit-remaining-<kind>` and, unless `resets_in_ms` is
/// `None` (a limit that never resets), `x-ratelimit-reset-<kind>` as [`reset_header`] writes it.
pub fn ratelimit_headers(
    kind: &str,
    limit: impl Display,
    remaining: impl Display,
    resets_in_ms: Option<u64>,
) -> Vec<(String, String)> {
    let mut headers = vec![
        (format!("x-ratelimit-limit-{kind}"), limit.to_string()),
        (
            format!("x-ratelimit-remaining-{kind}"),
            remaining.to_string(),
        ),
    ];
    if let Some(ms) = resets_in_ms {
        headers.push((format!("x-ratelimit-reset-{kind}"), reset_header(ms)));
    }
    headers
}

/// A duration of `ms` milliseconds as OpenAI's `x-ratelimit-reset-*` headers write it (Go's
/// duration format): `12ms` under a second, else hours, minutes and seconds from the largest
/// unit present down, with the seconds' fraction as needed: `1s`, `2.5s`, `6m0s`, `1h0m0s`.
pub fn reset_header(ms: u64) -> String {
    if ms == 0 {
        return "0s".to_owned();
    }
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let (hours, minutes, seconds, millis) =
        (ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000);
    let seconds = if millis == 0 {
        seconds.to_string()
    } else {
        let fraction = format!("{millis:03}");
        format!("{seconds}.{}", fraction.trim_end_matches('0'))
    };
    match (hours, minutes) {
        (0, 0) => format!("{seconds}s"),
        (0, _) => format!("{minutes}m{seconds}s"),
        _ => format!("{hours}h{minutes}m{seconds}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counters::memory;

    #[test]
    fn reset_header_writes_go_durations() {
        let cases = [
            (0, "0s"),
            (1, "1ms"),
            (12, "12ms"),
            (999, "999ms"),
            (1000, "1s"),
            (1500, "1.5s"),
            (2383, "2.383s"),
            (12_050, "12.05s"),
            (59_999, "59.999s"),
            (60_000, "1m0s"),
            (360_000, "6m0s"),
            (361_000, "6m1s"),
            (3_600_000, "1h0m0s"),
            (3_723_400, "1h2m3.4s"),
            (86_400_000, "24h0m0s"),
        ];
        for (ms, text) in cases {
            assert_eq!(reset_header(ms), text, "{ms} ms");
        }
    }

    #[test]
    fn a_reservation_adds_until_a_limit_is_exceeded_then_undoes_all() {
        memory::set_resets_in_ms(Period::Hour, 5_000);
        counters::add("c", Period::Hour, 9);
        let before = memory::snapshot();

        let mut reservation = Reservation::new();
        assert_eq!(
            reservation.add("a", Period::Minute, 1, 10).map(|c| c.value),
            Ok(1)
        );
        assert_eq!(
            reservation.add("b", Period::Day, 0, 10).map(|c| c.value),
            Ok(0)
        );
        let over = reservation.add("c", Period::Hour, 2, 10).unwrap_err();
        assert_eq!(
            over,
            Exceeded {
                used: 9,
                requested: 2,
                resets_in_ms: 5_000
            }
        );
        assert_eq!(memory::snapshot(), before);

        // Nothing is left to undo twice.
        reservation.undo();
        assert_eq!(memory::snapshot(), before);
    }

    #[test]
    fn a_counter_at_its_limit_admits_nothing() {
        counters::add("a", Period::Day, 10);
        let over = Reservation::new().add("a", Period::Day, 0, 10).unwrap_err();
        assert_eq!((over.used, over.requested), (10, 0));
        assert_eq!(counters::get("a", Period::Day).value, 10);
    }

    #[test]
    fn reaching_the_limit_exactly_is_allowed() {
        let mut reservation = Reservation::new();
        assert_eq!(
            reservation.add("a", Period::Day, 10, 10).map(|c| c.value),
            Ok(10)
        );
        assert!(reservation.add("a", Period::Day, 1, 10).is_err());
        // The failed addition undid the earlier one too.
        assert_eq!(counters::get("a", Period::Day).value, 0);
    }

    #[test]
    fn undo_takes_back_what_was_added() {
        let mut reservation = Reservation::new();
        reservation.add("a", Period::Day, 4, 10).unwrap();
        reservation.add("b", Period::Total, 6, 10).unwrap();
        reservation.undo();
        assert!(memory::snapshot().is_empty());
    }

    #[test]
    fn standings_and_headers() {
        let counter = |value| Counter {
            value,
            resets_in_ms: 1_000,
        };
        let minute = Standing::new(60, &counter(12));
        let day = Standing::new(100, &counter(99));
        let over = Standing::new(5, &counter(7));
        assert_eq!(minute.remaining, 48);
        assert_eq!(over.remaining, 0);
        assert_eq!(Standing::tightest([minute, day]), Some(day));
        assert_eq!(Standing::tightest([]), None);

        let headers = ratelimit_headers("requests", 60, 48, Some(1_000));
        let expected = [
            ("x-ratelimit-limit-requests", "60"),
            ("x-ratelimit-remaining-requests", "48"),
            ("x-ratelimit-reset-requests", "1s"),
        ];
        let expected: Vec<_> = expected
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect();
        assert_eq!(headers, expected);
        assert_eq!(ratelimit_headers("usd", "1.00", "0.50", None).len(), 2);
    }
}
