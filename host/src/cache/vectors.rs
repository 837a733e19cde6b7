//! The semantic mode's vectors: under each exact scope (everything that shapes an answer but
//! the last user turn), the embeddings of earlier last turns, each pointing at the exact key its
//! answer is kept under. Kept in-process (bounded in bytes, at most `max_per_scope` a scope), or
//! in Redis as plain values (a list a scope) compared here: Debian's Redis has no vector search,
//! and a scope holds few enough vectors to read whole.

use std::sync::Arc;
use std::time::{Duration, Instant};

use moka::Expiry;

use super::clock::now_ms;
use super::key::Key;

/// One earlier last turn: where its answer is, until when, and its embedding.
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    pub key: Key,
    pub expires_ms: u64,
    pub vector: Vec<f32>,
}

/// The nearest earlier turn found, and how near.
#[derive(Clone, Debug, PartialEq)]
pub struct Nearest {
    pub key: Key,
    pub similarity: f32,
}

/// The prefix of every scope's list in Redis (answers have `wasmgate:cache:`).
const PREFIX: &str = "wasmgate:semantic:";

/// The same deadline as the answers' reads: the cache only saves time.
const READ_DEADLINE: Duration = Duration::from_millis(250);

/// A key's length: 64 hex digits (a SHA-256).
const KEY_LEN: usize = 64;

enum Store {
    Memory(moka::sync::Cache<String, Arc<Vec<Item>>>),
    Redis(redis::aio::ConnectionManager),
}

pub struct Vectors {
    store: Store,
    max_per_scope: usize,
}

struct Latest;

impl Expiry<String, Arc<Vec<Item>>> for Latest {
    fn expire_after_create(
        &self,
        _key: &String,
        items: &Arc<Vec<Item>>,
        _now: Instant,
    ) -> Option<Duration> {
        Some(life(items))
    }

    fn expire_after_update(
        &self,
        _key: &String,
        items: &Arc<Vec<Item>>,
        _now: Instant,
        _left: Option<Duration>,
    ) -> Option<Duration> {
        Some(life(items))
    }
}

/// How long a scope's list lives: as long as its longest-lived item.
fn life(items: &[Item]) -> Duration {
    let last = items.iter().map(|i| i.expires_ms).max().unwrap_or(0);
    Duration::from_millis(last.saturating_sub(now_ms()))
}

/// Bytes counted for a scope besides its items (moka's own bookkeeping, roughly).
const SCOPE_OVERHEAD: usize = 96;

impl Vectors {
    /// In-process vectors, `bytes` at most.
    pub fn memory(bytes: u64, max_per_scope: u32) -> Self {
        let cache = moka::sync::Cache::builder()
            .max_capacity(bytes)
            .weigher(|scope: &String, items: &Arc<Vec<Item>>| {
                let held: usize = items
                    .iter()
                    .map(|i| KEY_LEN + 16 + 4 * i.vector.len())
                    .sum();
                u32::try_from(scope.len() + held + SCOPE_OVERHEAD).unwrap_or(u32::MAX)
            })
            .expire_after(Latest)
            .build();
        Self {
            store: Store::Memory(cache),
            max_per_scope: max_per_scope.max(1) as usize,
        }
    }

    /// Vectors in Redis, through the answers' connection.
    pub fn redis(connection: redis::aio::ConnectionManager, max_per_scope: u32) -> Self {
        Self {
            store: Store::Redis(connection),
            max_per_scope: max_per_scope.max(1) as usize,
        }
    }

    /// The earlier turn under `scope` most like `vector` that has not expired, if any.
    pub async fn nearest(&self, scope: &str, vector: &[f32]) -> Result<Option<Nearest>, String> {
        let now = now_ms();
        let best = |items: &mut dyn Iterator<Item = Item>| {
            items
                .filter(|i| i.expires_ms > now)
                .map(|i| Nearest {
                    similarity: cosine(&i.vector, vector),
                    key: i.key,
                })
                .max_by(|a, b| a.similarity.total_cmp(&b.similarity))
        };
        match &self.store {
            Store::Memory(cache) => Ok(cache
                .get(scope)
                .and_then(|items| best(&mut items.iter().cloned()))),
            Store::Redis(connection) => {
                let mut connection = connection.clone();
                let end = isize::try_from(self.max_per_scope).unwrap_or(isize::MAX) - 1;
                let mut command = redis::cmd("LRANGE");
                command.arg(format!("{PREFIX}{scope}")).arg(0).arg(end);
                let read = command.query_async::<Vec<Vec<u8>>>(&mut connection);
                let values = match tokio::time::timeout(READ_DEADLINE, read).await {
                    Ok(values) => values.map_err(|e| format!("Redis: {e}"))?,
                    Err(_) => {
                        return Err(format!(
                            "Redis: no answer within {} ms",
                            READ_DEADLINE.as_millis()
                        ));
                    }
                };
                Ok(best(&mut values.iter().filter_map(|v| decode(v))))
            }
        }
    }

    /// Adds `item` under `scope` (the oldest past `max_per_scope` goes).
    pub async fn add(&self, scope: &str, item: Item) -> Result<(), String> {
        let ttl_ms = item.expires_ms.saturating_sub(now_ms()).max(1);
        match &self.store {
            Store::Memory(cache) => {
                let limit = self.max_per_scope;
                cache.entry(scope.to_owned()).and_upsert_with(|old| {
                    let now = now_ms();
                    let mut items: Vec<Item> = old
                        .map(|e| e.into_value())
                        .into_iter()
                        .flat_map(|items| items.iter().cloned().collect::<Vec<_>>())
                        .filter(|i| i.expires_ms > now && i.key != item.key)
                        .collect();
                    items.insert(0, item);
                    items.truncate(limit);
                    Arc::new(items)
                });
                Ok(())
            }
            Store::Redis(connection) => {
                let mut connection = connection.clone();
                let list = format!("{PREFIX}{scope}");
                let end = isize::try_from(self.max_per_scope).unwrap_or(isize::MAX) - 1;
                // The list lives as long as its longest-lived item: set when it has no expiry
                // (`NX`, a new list), lengthened when this one outlives it (`GT`).
                redis::pipe()
                    .atomic()
                    .cmd("LPUSH")
                    .arg(&list)
                    .arg(encode(&item))
                    .ignore()
                    .cmd("LTRIM")
                    .arg(&list)
                    .arg(0)
                    .arg(end)
                    .ignore()
                    .cmd("PEXPIRE")
                    .arg(&list)
                    .arg(ttl_ms)
                    .arg("NX")
                    .ignore()
                    .cmd("PEXPIRE")
                    .arg(&list)
                    .arg(ttl_ms)
                    .arg("GT")
                    .ignore()
                    .query_async::<()>(&mut connection)
                    .await
                    .map_err(|e| format!("Redis: {e}"))
            }
        }
    }

    /// Bytes and scopes the in-process vectors hold (none for Redis).
    pub fn memory_usage(&self) -> Option<(u64, u64)> {
        match &self.store {
            Store::Memory(cache) => {
                cache.run_pending_tasks();
                Some((cache.weighted_size(), cache.entry_count()))
            }
            Store::Redis(_) => None,
        }
    }
}

/// The cosine similarity of `a` and `b`: 0 when their lengths differ (another embeddings
/// model's vectors) or either is all zeros.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() || a.is_empty() {
        return 0.0;
    }
    let (mut dot, mut aa, mut bb) = (0.0f64, 0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        aa += x * x;
        bb += y * y;
    }
    if aa == 0.0 || bb == 0.0 {
        return 0.0;
    }
    (dot / (aa.sqrt() * bb.sqrt())) as f32
}

/// An item as Redis keeps it: its expiry (8 bytes, little-endian), its key (64 hex digits),
/// then its vector's floats (4 bytes each, little-endian).
fn encode(item: &Item) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + KEY_LEN + 4 * item.vector.len());
    out.extend_from_slice(&item.expires_ms.to_le_bytes());
    out.extend_from_slice(item.key.0.as_bytes());
    for x in &item.vector {
        out.extend_from_slice(&x.to_le_bytes());
    }
    out
}

/// An item Redis gave back; `None` for anything not written by [`encode`].
fn decode(bytes: &[u8]) -> Option<Item> {
    let (expires, rest) = bytes.split_first_chunk::<8>()?;
    let (key, floats) = rest.split_at_checked(KEY_LEN)?;
    if floats.len() % 4 != 0 {
        return None;
    }
    let key = std::str::from_utf8(key).ok()?;
    if !key.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Some(Item {
        key: Key(key.to_owned()),
        expires_ms: u64::from_le_bytes(*expires),
        vector: floats
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn item(n: u8, vector: Vec<f32>) -> Item {
        Item {
            key: Key(format!("{n:064x}")),
            expires_ms: now_ms() + 60_000,
            vector,
        }
    }

    #[test]
    fn cosine_is_the_angle_not_the_length() {
        assert!((cosine(&[1.0, 0.0], &[3.0, 0.0]) - 1.0).abs() < 1e-6);
        assert!(cosine(&[1.0, 0.0], &[0.0, 1.0]).abs() < 1e-6);
        assert_eq!(cosine(&[1.0, 0.0], &[1.0, 0.0, 0.0]), 0.0, "other lengths");
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
    }

    #[test]
    fn an_item_survives_redis_and_nothing_else_passes_for_one() {
        let it = item(7, vec![0.5, -1.25, 3.0]);
        assert_eq!(decode(&encode(&it)), Some(it));
        assert_eq!(decode(b"short"), None);
        assert_eq!(decode(&[0u8; 8 + 64 + 3]), None);
    }

    #[tokio::test]
    async fn the_nearest_live_item_of_a_scope_is_found_and_scopes_are_apart() {
        let vectors = Vectors::memory(1 << 20, 2);
        vectors.add("s", item(1, vec![1.0, 0.0])).await.unwrap();
        vectors.add("s", item(2, vec![0.6, 0.8])).await.unwrap();
        let found = vectors.nearest("s", &[0.7, 0.7]).await.unwrap().unwrap();
        assert_eq!(found.key, item(2, vec![]).key);
        assert!(vectors.nearest("t", &[0.7, 0.7]).await.unwrap().is_none());
        // A third pushes out the oldest.
        vectors.add("s", item(3, vec![0.0, 1.0])).await.unwrap();
        let found = vectors.nearest("s", &[1.0, 0.0]).await.unwrap().unwrap();
        assert_ne!(found.key, item(1, vec![]).key, "the oldest went");
        let mut stale = item(4, vec![1.0, 0.0]);
        stale.expires_ms = now_ms() - 1;
        vectors.add("u", stale).await.unwrap();
        assert!(vectors.nearest("u", &[1.0, 0.0]).await.unwrap().is_none());
    }

    #[test]
    fn the_vectors_stay_within_their_bytes() {
        let vectors = Vectors::memory(256 << 10, 8);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        for n in 0..2000u32 {
            let it = Item {
                key: Key(format!("{n:064x}")),
                expires_ms: now_ms() + 60_000,
                vector: vec![0.1; 256],
            };
            runtime
                .block_on(vectors.add(&format!("scope-{n}"), it))
                .unwrap();
        }
        let (bytes, scopes) = vectors.memory_usage().unwrap();
        assert!(bytes <= 256 << 10, "{bytes}");
        assert!(scopes > 10);
    }
}
