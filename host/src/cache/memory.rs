//! The in-process store: compressed answers bounded in bytes, the least used evicted first
//! (moka's TinyLFU), each expiring at its own TTL.

use std::sync::Arc;
use std::time::{Duration, Instant};

use moka::Expiry;

/// A compressed answer and how long it may live.
#[derive(Clone)]
struct Stored {
    bytes: Arc<[u8]>,
    ttl: Duration,
}

struct PerEntry;

impl Expiry<String, Stored> for PerEntry {
    fn expire_after_create(
        &self,
        _key: &String,
        value: &Stored,
        _now: Instant,
    ) -> Option<Duration> {
        Some(value.ttl)
    }

    fn expire_after_update(
        &self,
        _key: &String,
        value: &Stored,
        _now: Instant,
        _left: Option<Duration>,
    ) -> Option<Duration> {
        Some(value.ttl)
    }
}

/// Bytes counted for an entry besides its key and value (moka's own bookkeeping, roughly).
const ENTRY_OVERHEAD: usize = 96;

pub struct MemoryStore {
    entries: moka::sync::Cache<String, Stored>,
}

impl MemoryStore {
    /// A store of at most `bytes` (keys, values and bookkeeping).
    pub fn new(bytes: u64) -> Self {
        let entries = moka::sync::Cache::builder()
            .max_capacity(bytes)
            .weigher(|key: &String, value: &Stored| {
                u32::try_from(key.len() + value.bytes.len() + ENTRY_OVERHEAD).unwrap_or(u32::MAX)
            })
            .expire_after(PerEntry)
            .build();
        Self { entries }
    }

    pub fn get(&self, key: &str) -> Option<Arc<[u8]>> {
        self.entries.get(key).map(|stored| stored.bytes)
    }

    pub fn put(&self, key: String, bytes: Vec<u8>, ttl: Duration) {
        self.entries.insert(
            key,
            Stored {
                bytes: bytes.into(),
                ttl,
            },
        );
    }

    /// Bytes held now, by the weigher's count (after pending evictions ran).
    pub fn weighted_bytes(&self) -> u64 {
        self.entries.run_pending_tasks();
        self.entries.weighted_size()
    }

    pub fn entries(&self) -> u64 {
        self.entries.run_pending_tasks();
        self.entries.entry_count()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn stays_within_its_bytes() {
        let store = MemoryStore::new(64 << 10);
        for i in 0..1000 {
            store.put(format!("k{i}"), vec![7; 1000], Duration::from_secs(60));
        }
        assert!(
            store.weighted_bytes() <= 64 << 10,
            "{}",
            store.weighted_bytes()
        );
        assert!(store.entries() > 10);
    }

    #[test]
    fn an_entry_expires_at_its_ttl() {
        let store = MemoryStore::new(1 << 20);
        store.put("short".to_owned(), vec![1], Duration::from_millis(30));
        store.put("long".to_owned(), vec![2], Duration::from_secs(60));
        assert!(store.get("short").is_some());
        std::thread::sleep(Duration::from_millis(60));
        assert!(store.get("short").is_none());
        assert!(store.get("long").is_some());
    }
}
