//! The store shared by replicas: Redis, through the same bounded connection manager the limit
//! counters use. Each answer is one key with its TTL (`SET .. PX`), so Redis expires it.

use std::time::Duration;

use redis::AsyncCommands;

pub struct RedisStore {
    connection: redis::aio::ConnectionManager,
}

/// The prefix of every cache key in Redis (counters have `wasmgate:counter:`).
const PREFIX: &str = "wasmgate:cache:";

/// How long a read may take before it counts as a miss. The connection's own timeouts (a second
/// to connect, a second to answer, two retries) suit the limit counters, which must be right;
/// the cache only saves time, and a Redis that is gone cost every request 1 to 3 s before this.
const READ_DEADLINE: Duration = Duration::from_millis(250);

impl RedisStore {
    pub async fn connect(url: &str) -> Result<Self, String> {
        Ok(Self {
            connection: crate::limits::counters::redis_connection(url).await?,
        })
    }

    /// The connection, for the semantic vectors kept beside the answers.
    pub fn connection(&self) -> redis::aio::ConnectionManager {
        self.connection.clone()
    }

    pub async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, String> {
        let mut connection = self.connection.clone();
        let read = connection.get(format!("{PREFIX}{key}"));
        match tokio::time::timeout(READ_DEADLINE, read).await {
            Ok(answer) => answer.map_err(|e| format!("Redis: {e}")),
            Err(_) => Err(format!(
                "Redis: no answer within {} ms",
                READ_DEADLINE.as_millis()
            )),
        }
    }

    pub async fn put(&self, key: &str, bytes: &[u8], ttl: Duration) -> Result<(), String> {
        let mut connection = self.connection.clone();
        let ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        connection
            .pset_ex::<_, _, ()>(format!("{PREFIX}{key}"), bytes, ms)
            .await
            .map_err(|e| format!("Redis: {e}"))
    }
}
