//! Counter stores for limiter plugins: in this process, or in Redis so that every replica
//! shares one count. Both are atomic per update; Redis does it in one Lua script (no
//! read-then-write race between replicas).

use std::collections::HashMap;
use std::sync::Mutex;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;

use super::window::{Clock, window};
use crate::plugins::{Counter, CounterStore, Period};

/// Entries kept in memory before stale windows are swept.
const SWEEP_AT: usize = 100_000;

/// Counters in this process's memory.
#[derive(Default)]
pub struct MemoryCounters {
    clock: Clock,
    /// key + period → (window start, value)
    values: Mutex<HashMap<(String, u8), (i64, i64)>>,
}

impl MemoryCounters {
    pub fn new(clock: Clock) -> Self {
        Self {
            clock,
            values: Mutex::default(),
        }
    }

    fn update(&self, key: &str, period: Period, delta: i64) -> Counter {
        let now = self.clock.now_ms();
        let (start, end) = window(period, now);
        let mut values = crate::sync::lock(&self.values);
        if values.len() >= SWEEP_AT {
            values.retain(|(_, p), (s, _)| window(period_of(*p), now).0 == *s);
        }
        let entry = values
            .entry((key.to_owned(), period as u8))
            .or_insert((start, 0));
        if entry.0 != start {
            *entry = (start, 0);
        }
        entry.1 = entry.1.saturating_add(delta);
        Counter {
            value: entry.1,
            resets_in_ms: end.map_or(0, |end| u64::try_from(end - now).unwrap_or(0)),
        }
    }
}

fn period_of(tag: u8) -> Period {
    match tag {
        0 => Period::Minute,
        1 => Period::Hour,
        2 => Period::Day,
        3 => Period::Month,
        _ => Period::Total,
    }
}

impl CounterStore for MemoryCounters {
    fn add<'a>(
        &'a self,
        key: &'a str,
        period: Period,
        delta: i64,
    ) -> BoxFuture<'a, Result<Counter, String>> {
        std::future::ready(Ok(self.update(key, period, delta))).boxed()
    }

    fn get<'a>(&'a self, key: &'a str, period: Period) -> BoxFuture<'a, Result<Counter, String>> {
        std::future::ready(Ok(self.update(key, period, 0))).boxed()
    }
}

/// A connection to the Redis at `url`, as the gateway's Redis stores (counters, the response
/// cache) use it: bounded, so a request waits at most about a second on an unreachable store,
/// and start-up fails fast rather than retrying for minutes.
pub async fn redis_connection(url: &str) -> Result<redis::aio::ConnectionManager, String> {
    let client = redis::Client::open(url).map_err(|e| format!("bad Redis URL: {e}"))?;
    let config = redis::aio::ConnectionManagerConfig::new()
        .set_connection_timeout(std::time::Duration::from_millis(1_000))
        .set_response_timeout(std::time::Duration::from_millis(1_000))
        .set_number_of_retries(2)
        .set_max_delay(200);
    redis::aio::ConnectionManager::new_with_config(client, config)
        .await
        .map_err(|e| format!("cannot connect to Redis: {e}"))
}

/// Counters in Redis, shared by every replica that points at the same server.
pub struct RedisCounters {
    clock: Clock,
    connection: redis::aio::ConnectionManager,
    script: redis::Script,
}

/// INCRBY and, for a windowed key, an expiry shortly after the window ends, in one atomic step.
const ADD_SCRIPT: &str = r"
local value = redis.call('INCRBY', KEYS[1], ARGV[1])
if tonumber(ARGV[2]) > 0 then
  redis.call('PEXPIREAT', KEYS[1], ARGV[2])
end
return value
";

impl RedisCounters {
    pub async fn connect(url: &str) -> Result<Self, String> {
        let connection = redis_connection(url).await?;
        Ok(Self {
            clock: Clock::new(),
            connection,
            script: redis::Script::new(ADD_SCRIPT),
        })
    }

    async fn update(&self, key: &str, period: Period, delta: i64) -> Result<Counter, String> {
        let now = self.clock.now_ms();
        let (start, end) = window(period, now);
        // The window start is part of the key: a new window is a new counter.
        let key = format!("wasmgate:counter:{key}:{start}");
        // Keep a finished window a minute longer, for clocks a little apart between replicas.
        let expire_at = end.map_or(0, |end| end + 60_000);
        let mut connection = self.connection.clone();
        let value: i64 = self
            .script
            .key(key)
            .arg(delta)
            .arg(expire_at)
            .invoke_async(&mut connection)
            .await
            .map_err(|e| format!("Redis: {e}"))?;
        Ok(Counter {
            value,
            resets_in_ms: end.map_or(0, |end| u64::try_from(end - now).unwrap_or(0)),
        })
    }
}

impl CounterStore for RedisCounters {
    fn add<'a>(
        &'a self,
        key: &'a str,
        period: Period,
        delta: i64,
    ) -> BoxFuture<'a, Result<Counter, String>> {
        self.update(key, period, delta).boxed()
    }

    fn get<'a>(&'a self, key: &'a str, period: Period) -> BoxFuture<'a, Result<Counter, String>> {
        self.update(key, period, 0).boxed()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_window_resets_when_time_moves_past_it() {
        // A second before a minute ends, so the test waits for the next one in real time (a
        // margin no stall of a busy test machine reaches).
        let counters = MemoryCounters::new(Clock::at(29_000_000 * 60_000 - 1_000));
        let first = counters
            .add("k", Period::Minute, 3)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(first.value, 3);
        assert!(first.resets_in_ms <= 1_000, "{}", first.resets_in_ms);
        let total = counters
            .add("k", Period::Total, 3)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((total.value, total.resets_in_ms), (3, 0));

        tokio::time::sleep(Duration::from_millis(first.resets_in_ms + 5)).await;
        let next = counters
            .add("k", Period::Minute, 1)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(next.value, 1, "a new minute starts from zero");
        let total = counters
            .get("k", Period::Total)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(total.value, 3, "`total` never resets");
    }

    #[tokio::test]
    async fn keys_and_periods_are_separate_counters() {
        let counters = MemoryCounters::new(Clock::new());
        for (key, period) in [("a", Period::Hour), ("b", Period::Hour), ("a", Period::Day)] {
            let c = counters
                .add(key, period, 2)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(c.value, 2);
        }
    }
}
