//! The stand-in for the host's counters when the SDK is built natively, so that a limiter's logic
//! runs in plain unit tests: [`add`](super::add) and [`get`](super::get) land here.
//!
//! Each thread has counters of its own. The test harness runs every test on a thread of its own,
//! so tests neither see nor reset each other's counts; a test that starts threads gives each a
//! fresh set. Windows do not end by themselves: a test ends one with [`end_window`], and decides
//! what `resets_in_ms` reports with [`set_resets_in_ms`] (by default a whole window,
//! [`Period::length_ms`], as if it had just begun).

use std::cell::RefCell;
use std::collections::BTreeMap;

use crate::{Counter, Period};

#[derive(Default)]
struct Store {
    values: BTreeMap<(String, Period), i64>,
    resets_in_ms: BTreeMap<Period, u64>,
}

thread_local! {
    static STORE: RefCell<Store> = RefCell::new(Store::default());
}

pub(super) fn add(key: &str, period: Period, delta: i64) -> Counter {
    STORE.with_borrow_mut(|store| {
        let value = store.values.entry((key.to_owned(), period)).or_insert(0);
        *value = value.saturating_add(delta);
        let resets_in_ms = store.resets_in_ms.get(&period).copied();
        Counter {
            value: *value,
            resets_in_ms: resets_in_ms.unwrap_or_else(|| period.length_ms()),
        }
    })
}

/// Every counter of this thread that is not 0, by key and period: compare two of them to check
/// that a refused request left the counters as they were.
pub fn snapshot() -> BTreeMap<(String, Period), i64> {
    STORE.with_borrow(|store| {
        let values = store.values.iter().filter(|(_, value)| **value != 0);
        values.map(|(at, value)| (at.clone(), *value)).collect()
    })
}

/// Ends the current window of `period`: its counters start again from 0.
pub fn end_window(period: Period) {
    STORE.with_borrow_mut(|store| store.values.retain(|(_, p), _| *p != period));
}

/// Makes counters of `period` report `ms` until their window ends.
pub fn set_resets_in_ms(period: Period, ms: u64) {
    STORE.with_borrow_mut(|store| store.resets_in_ms.insert(period, ms));
}

/// Forgets every counter and `resets_in_ms` setting of this thread.
pub fn clear() {
    STORE.with_borrow_mut(|store| *store = Store::default());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_end_per_period() {
        add("k", Period::Minute, 2);
        add("k", Period::Day, 5);
        end_window(Period::Minute);
        let snapshot = snapshot();
        assert_eq!(snapshot.len(), 1);
        assert_eq!(snapshot.get(&("k".to_owned(), Period::Day)), Some(&5));
    }

    #[test]
    fn resets_in_ms_is_a_whole_window_unless_set() {
        assert_eq!(add("k", Period::Hour, 1).resets_in_ms, 3_600_000);
        assert_eq!(add("k", Period::Total, 1).resets_in_ms, 0);
        set_resets_in_ms(Period::Hour, 12_000);
        assert_eq!(add("k", Period::Hour, 0).resets_in_ms, 12_000);
        clear();
        assert_eq!(
            add("k", Period::Hour, 0),
            Counter {
                value: 0,
                resets_in_ms: 3_600_000
            }
        );
    }

    #[test]
    fn threads_have_their_own_counters() {
        add("k", Period::Minute, 7);
        let elsewhere = std::thread::spawn(|| add("k", Period::Minute, 1).value).join();
        assert_eq!(elsewhere.ok(), Some(1));
        assert_eq!(add("k", Period::Minute, 0).value, 7);
    }
}
