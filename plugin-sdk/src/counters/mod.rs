//! The counters the host keeps for limiter plugins, in its memory or in Redis: [`add`] to one,
//! [`get`] one, each over the current window of a [`Period`] (UTC-aligned minute, hour, day,
//! month, or all time). Every update is atomic, across requests and gateway replicas.
//!
//! The host makes keys private to the limit rule that uses them, so a plugin names its counters
//! freely; including the request's `scope_key` gives each key, user, project... its own count.
//!
//! Built natively (in unit tests) there is no host: the counters live in [`memory`], one set per
//! thread.

#[cfg(not(target_arch = "wasm32"))]
pub mod memory;

pub use crate::{Counter, Period};

/// Adds `delta` (which may be negative) to the counter `key` in the current window of `period`
/// and returns its new value, with the time left in the window.
pub fn add(key: &str, period: Period, delta: i64) -> Counter {
    #[cfg(target_arch = "wasm32")]
    {
        crate::wit::counters::add(key, period, delta)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        memory::add(key, period, delta)
    }
}

/// Reads the counter `key` in the current window of `period`.
pub fn get(key: &str, period: Period) -> Counter {
    #[cfg(target_arch = "wasm32")]
    {
        crate::wit::counters::get(key, period)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        memory::add(key, period, 0)
    }
}

/// Adds `delta` as [`add`] does, but a negative `delta` takes the counter down to 0 at most.
/// For settling: a reservation made in `check` is corrected in `settle`, and when the window
/// ended in between, the reservation went with the old window; giving it back in full would
/// leave the new window with credit that nobody earned.
pub fn adjust(key: &str, period: Period, delta: i64) -> Counter {
    let counter = add(key, period, delta);
    if delta >= 0 || counter.value >= 0 {
        return counter;
    }
    // Lift the counter back to 0, but by no more than this call took: another settlement that
    // went below 0 too lifts its own share. Others' updates in between do not matter, since
    // only what is added is sent.
    let lift = counter.value.saturating_neg().min(delta.saturating_neg());
    add(key, period, lift)
}

impl Period {
    /// The period's WIT name, `minute`, `hour`, `day`, `month` or `total`: the usual middle part
    /// of a counter key (`req:minute:user:u1`).
    pub fn name(self) -> &'static str {
        match self {
            Period::Minute => "minute",
            Period::Hour => "hour",
            Period::Day => "day",
            Period::Month => "month",
            Period::Total => "total",
        }
    }

    /// How long a whole window of the period is, in milliseconds; months count as 30 days and
    /// `total` as 0 (it never resets).
    pub fn length_ms(self) -> u64 {
        match self {
            Period::Minute => 60_000,
            Period::Hour => 3_600_000,
            Period::Day => 86_400_000,
            Period::Month => 30 * 86_400_000,
            Period::Total => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_and_get_share_a_counter_per_key_and_period() {
        assert_eq!(add("k", Period::Minute, 3).value, 3);
        assert_eq!(add("k", Period::Minute, -1).value, 2);
        assert_eq!(get("k", Period::Minute).value, 2);
        assert_eq!(get("k", Period::Hour).value, 0);
        assert_eq!(get("other", Period::Minute).value, 0);
    }

    #[test]
    fn adjust_stops_at_zero() {
        add("k", Period::Day, 10);
        assert_eq!(adjust("k", Period::Day, -4).value, 6);
        assert_eq!(adjust("k", Period::Day, 5).value, 11);
        // A settlement for a reservation the previous window took with it.
        memory::end_window(Period::Day);
        add("k", Period::Day, 3);
        assert_eq!(adjust("k", Period::Day, -10).value, 0);
    }

    #[test]
    fn adjust_lifts_by_no_more_than_it_took() {
        // Another settlement already left the counter below 0.
        add("k", Period::Hour, -5);
        assert_eq!(adjust("k", Period::Hour, -2).value, -5);
    }
}
