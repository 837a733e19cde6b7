//! Where limiter plugins' counters live: the trait the host's `counters` interface calls, which
//! `limits` implements (in memory, or Redis).

use super::bindings::counter_types::{Counter, Period};

/// Where limiter plugins' counters live (in memory, or Redis); provided by `limits`.
pub trait CounterStore: Send + Sync {
    /// Adds `delta` to `key` in the current window of `period`, atomically.
    fn add<'a>(
        &'a self,
        key: &'a str,
        period: Period,
        delta: i64,
    ) -> futures_util::future::BoxFuture<'a, Result<Counter, String>>;

    /// Reads `key` in the current window of `period`.
    fn get<'a>(
        &'a self,
        key: &'a str,
        period: Period,
    ) -> futures_util::future::BoxFuture<'a, Result<Counter, String>>;
}
