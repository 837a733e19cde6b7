//! The cache itself: its store (memory or Redis), the compressed entries it keeps under their
//! keys with their TTL, and the counts of how lookups and writes went.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::answer::Entry;
use super::clock::now_ms;
use super::key::Key;
use super::{memory, shared, vectors};
use crate::config::cache::CacheConfig;

/// The zstd level answers are compressed at: the fastest, since JSON text compresses well at
/// any level and a write is on the answer's way out.
const ZSTD_LEVEL: i32 = 1;

/// Where answers are kept.
enum Store {
    Memory(memory::MemoryStore),
    Redis(shared::RedisStore),
}

/// The cache's store and counters, shared by every request (it outlives reloads).
pub struct Cache {
    store: Store,
    /// Bytes of an entry (uncompressed), at most.
    max_entry_bytes: usize,
    /// The semantic mode's vectors, where `cache.semantic` is configured.
    pub vectors: Option<vectors::Vectors>,
    pub counts: Counts,
}

/// How lookups and writes went, for `/metrics`.
#[derive(Default)]
pub struct Counts {
    /// Keys computed (the hashing of a request: the cache's main cost on a request's path).
    pub keys: AtomicU64,
    pub hits: AtomicU64,
    pub misses: AtomicU64,
    pub bypasses: AtomicU64,
    pub stored: AtomicU64,
    /// Answers not kept: too large, or the store failed.
    pub not_stored: AtomicU64,
    /// Reads that failed (the store was unreachable, or an entry unreadable): served as misses.
    pub errors: AtomicU64,
    /// Semantic lookups that found an earlier answer near enough, and those that did not.
    pub semantic_hits: AtomicU64,
    pub semantic_misses: AtomicU64,
    /// Semantic lookups not made: tool results, no last user turn of text, a turn too long, an
    /// embedding that failed or a vector store that did not answer.
    pub semantic_skipped: AtomicU64,
}

impl Counts {
    /// Every key computed, lookup and write so far: what the cache did at all.
    pub fn work(&self) -> u64 {
        [
            &self.keys,
            &self.hits,
            &self.misses,
            &self.bypasses,
            &self.stored,
            &self.not_stored,
            &self.errors,
            &self.semantic_hits,
            &self.semantic_misses,
            &self.semantic_skipped,
        ]
        .iter()
        .map(|c| c.load(Ordering::Relaxed))
        .sum()
    }
}

impl Cache {
    /// The store `config` names; Redis is connected to now, so a wrong URL stops start-up.
    pub async fn open(config: &CacheConfig) -> Result<Self, String> {
        let store = if config.store.starts_with("redis://") && config.in_use() {
            Store::Redis(shared::RedisStore::connect(&config.store).await?)
        } else {
            Store::Memory(memory::MemoryStore::new(config.memory_bytes))
        };
        let vectors = config.semantic.as_ref().map(|semantic| match &store {
            Store::Redis(redis) => {
                vectors::Vectors::redis(redis.connection(), semantic.max_per_scope)
            }
            Store::Memory(_) => {
                vectors::Vectors::memory(semantic.memory_bytes, semantic.max_per_scope)
            }
        });
        Ok(Self {
            store,
            vectors,
            max_entry_bytes: usize::try_from(config.max_entry_bytes).unwrap_or(usize::MAX),
            counts: Counts::default(),
        })
    }

    pub fn max_entry_bytes(&self) -> usize {
        self.max_entry_bytes
    }

    /// The entry under `key`, if there is one that has not expired. A store that fails is a
    /// miss (logged and counted), never an error for the client.
    pub async fn get(&self, key: &Key) -> Option<Entry> {
        let bytes = match &self.store {
            Store::Memory(store) => store.get(&key.0).map(|b| b.to_vec()),
            Store::Redis(store) => match store.get(&key.0).await {
                Ok(bytes) => bytes,
                Err(e) => {
                    tracing::warn!("cache read failed: {e}");
                    self.counts.errors.fetch_add(1, Ordering::Relaxed);
                    None
                }
            },
        }?;
        let entry = zstd::bulk::decompress(&bytes, self.max_entry_bytes.saturating_mul(2))
            .ok()
            .and_then(|json| serde_json::from_slice::<Entry>(&json).ok());
        let Some(entry) = entry else {
            tracing::warn!("an unreadable cache entry was ignored");
            self.counts.errors.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        // Checked again here: a store's own expiry may run late, and Redis replicas' clocks.
        (entry.expires_ms > now_ms()).then_some(entry)
    }

    /// Keeps `entry` under `key` until its expiry; an entry larger than the limit is not kept.
    /// Says whether it was.
    pub async fn put(&self, key: &Key, entry: &Entry) -> bool {
        let kept = self.write(key, entry).await;
        let count = if kept {
            &self.counts.stored
        } else {
            &self.counts.not_stored
        };
        count.fetch_add(1, Ordering::Relaxed);
        kept
    }

    async fn write(&self, key: &Key, entry: &Entry) -> bool {
        let Ok(json) = serde_json::to_vec(entry) else {
            return false;
        };
        if json.len() > self.max_entry_bytes {
            return false;
        }
        let ttl = Duration::from_millis(entry.expires_ms.saturating_sub(now_ms()));
        if ttl.is_zero() {
            return false;
        }
        let Ok(bytes) = zstd::bulk::compress(&json, ZSTD_LEVEL) else {
            return false;
        };
        match &self.store {
            Store::Memory(store) => {
                store.put(key.0.clone(), bytes, ttl);
                true
            }
            Store::Redis(store) => match store.put(&key.0, &bytes, ttl).await {
                Ok(()) => true,
                Err(e) => {
                    tracing::warn!("cache write failed: {e}");
                    false
                }
            },
        }
    }

    /// Bytes and entries the in-memory store holds (none for Redis).
    pub fn memory_usage(&self) -> Option<(u64, u64)> {
        match &self.store {
            Store::Memory(store) => Some((store.weighted_bytes(), store.entries())),
            Store::Redis(_) => None,
        }
    }

    /// The counters in Prometheus' text format.
    pub fn write_metrics(&self, out: &mut String) {
        use std::fmt::Write;
        let _ = writeln!(
            out,
            "# HELP wasmgate_cache_lookups_total Response cache lookups, by outcome."
        );
        let _ = writeln!(out, "# TYPE wasmgate_cache_lookups_total counter");
        for (outcome, count) in [
            ("hit", &self.counts.hits),
            ("miss", &self.counts.misses),
            ("bypass", &self.counts.bypasses),
        ] {
            let _ = writeln!(
                out,
                "wasmgate_cache_lookups_total{{outcome=\"{outcome}\"}} {}",
                count.load(Ordering::Relaxed)
            );
        }
        let _ = writeln!(
            out,
            "# HELP wasmgate_cache_writes_total Answers offered to the response cache, by outcome."
        );
        let _ = writeln!(out, "# TYPE wasmgate_cache_writes_total counter");
        for (outcome, count) in [
            ("stored", &self.counts.stored),
            ("not_stored", &self.counts.not_stored),
        ] {
            let _ = writeln!(
                out,
                "wasmgate_cache_writes_total{{outcome=\"{outcome}\"}} {}",
                count.load(Ordering::Relaxed)
            );
        }
        let _ = writeln!(
            out,
            "# HELP wasmgate_cache_errors_total Cache reads that failed and were served as misses."
        );
        let _ = writeln!(out, "# TYPE wasmgate_cache_errors_total counter");
        let _ = writeln!(
            out,
            "wasmgate_cache_errors_total {}",
            self.counts.errors.load(Ordering::Relaxed)
        );
        if self.vectors.is_some() {
            let _ = writeln!(
                out,
                "# HELP wasmgate_cache_semantic_lookups_total Semantic lookups after an exact miss, by outcome (skipped: not looked up)."
            );
            let _ = writeln!(out, "# TYPE wasmgate_cache_semantic_lookups_total counter");
            for (outcome, count) in [
                ("hit", &self.counts.semantic_hits),
                ("miss", &self.counts.semantic_misses),
                ("skipped", &self.counts.semantic_skipped),
            ] {
                let _ = writeln!(
                    out,
                    "wasmgate_cache_semantic_lookups_total{{outcome=\"{outcome}\"}} {}",
                    count.load(Ordering::Relaxed)
                );
            }
        }
        if let Some((bytes, scopes)) = self.vectors.as_ref().and_then(|v| v.memory_usage()) {
            let _ = writeln!(
                out,
                "# HELP wasmgate_cache_vector_bytes Bytes the in-process semantic vectors hold, by their own count."
            );
            let _ = writeln!(out, "# TYPE wasmgate_cache_vector_bytes gauge");
            let _ = writeln!(out, "wasmgate_cache_vector_bytes {bytes}");
            let _ = writeln!(
                out,
                "# HELP wasmgate_cache_vector_scopes Scopes the in-process semantic vectors hold."
            );
            let _ = writeln!(out, "# TYPE wasmgate_cache_vector_scopes gauge");
            let _ = writeln!(out, "wasmgate_cache_vector_scopes {scopes}");
        }
        if let Some((bytes, entries)) = self.memory_usage() {
            let _ = writeln!(
                out,
                "# HELP wasmgate_cache_memory_bytes Bytes the in-memory cache holds, by its own count."
            );
            let _ = writeln!(out, "# TYPE wasmgate_cache_memory_bytes gauge");
            let _ = writeln!(out, "wasmgate_cache_memory_bytes {bytes}");
            let _ = writeln!(
                out,
                "# HELP wasmgate_cache_entries Answers the in-memory cache holds."
            );
            let _ = writeln!(out, "# TYPE wasmgate_cache_entries gauge");
            let _ = writeln!(out, "wasmgate_cache_entries {entries}");
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::cache::answer::Form;
    use crate::cache::clock::now_ms;

    fn entry(completion: String, ttl_ms: u64) -> Entry {
        let now = now_ms();
        Entry {
            form: Form::Canonical,
            completion,
            events: Vec::new(),
            answer_id: None,
            usage: None,
            provider: "p".to_owned(),
            model: "m".to_owned(),
            stored_ms: now,
            expires_ms: now + ttl_ms,
        }
    }

    async fn cache(yaml: &str) -> Cache {
        Cache::open(&serde_yaml::from_str(yaml).unwrap())
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn keeps_compressed_within_the_entry_limit() {
        let cache = cache("{ max_entry_bytes: 4096 }").await;
        let small = entry("x".repeat(1000), 60_000);
        cache.put(&Key("a".to_owned()), &small).await;
        assert_eq!(cache.get(&Key("a".to_owned())).await, Some(small));
        let (bytes, _) = cache.memory_usage().unwrap();
        assert!(bytes < 600, "compressed: {bytes} bytes");
        cache
            .put(&Key("b".to_owned()), &entry("y".repeat(5000), 60_000))
            .await;
        assert_eq!(
            cache.get(&Key("b".to_owned())).await,
            None,
            "over the limit"
        );
        assert_eq!(cache.counts.not_stored.load(Ordering::Relaxed), 1);
    }

    #[tokio::test]
    async fn an_expired_entry_is_not_served() {
        let cache = cache("{}").await;
        let mut stale = entry("z".to_owned(), 60_000);
        // Kept for a minute by the store, but its own expiry is past (another replica's
        // clock, or a store's expiry running late).
        cache.put(&Key("s".to_owned()), &stale).await;
        stale.expires_ms = now_ms() - 1;
        let bytes = zstd::bulk::compress(&serde_json::to_vec(&stale).unwrap(), 1).unwrap();
        if let Store::Memory(store) = &cache.store {
            store.put("s".to_owned(), bytes, Duration::from_secs(60));
        }
        assert_eq!(cache.get(&Key("s".to_owned())).await, None);
    }
}
