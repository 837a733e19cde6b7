//! API keys and projects: making keys, storing only their hashes, and finding who a request's
//! `Authorization: Bearer <key>` belongs to.
//!
//! Keys are 256-bit random strings, so a single SHA-256 is enough to store them: nobody can
//! guess one from its hash, and a slow password hash would cost every request milliseconds.
//! Lookups go to the ledger database (where `wasmgate keys` writes them) through a small cache:
//! a key created or revoked by another process is seen within [`CACHE_TTL`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use crate::ledger::{AdminKey, ApiKey, KeyLimits, Store};

pub mod jwt;
pub mod oidc;

/// How long a lookup (found or not) is trusted before the database is asked again.
pub const CACHE_TTL: Duration = Duration::from_secs(5);
/// Cached lookups at most; past that the cache starts over (a flood of made-up keys cannot grow
/// it without bound).
const CACHE_MAX: usize = 10_000;
/// Every key starts with this, so that a leaked one is recognisable (secret scanners, logs).
pub const KEY_PREFIX: &str = "wg-";
/// How much of a key `keys list` shows.
const SHOWN_CHARS: usize = 10;

/// Who a request comes from, once checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    /// The project its usage goes to.
    pub project: String,
    /// The API key's id (never the key), or a JWT caller's `jwt:` id derived from its issuer
    /// and subject; `None` for an anonymous request to an open gateway.
    pub key_id: Option<String>,
    /// What the key may do on its own (nothing of its own for an anonymous caller).
    pub limits: KeyLimits,
    /// The user a JWT's claims name: its usage is recorded under it, whatever the body says.
    pub user: Option<String>,
}

pub use crate::ledger::keys::{PROJECT_MAX, check_project};

/// The lower-case hex SHA-256 of `key`: all the database ever holds of it.
pub fn hash(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

/// A new key for `project`: the key itself (shown once) and what is stored of it.
pub fn generate(project: &str, name: Option<&str>, now_us: i64) -> (String, ApiKey) {
    let random = |n: usize| -> String {
        (0..n)
            .map(|_| uuid::Uuid::new_v4().simple().to_string())
            .collect()
    };
    // Two v4 UUIDs carry 244 random bits.
    let key = format!("{KEY_PREFIX}{}", random(2));
    let id = format!("key_{}", &random(1)[..16]);
    let stored = ApiKey {
        id,
        project: project.to_owned(),
        name: name.map(str::to_owned),
        hash: hash(&key),
        prefix: key.chars().take(SHOWN_CHARS).collect(),
        created_us: now_us,
        revoked_us: None,
        limits: KeyLimits::default(),
    };
    (key, stored)
}

/// Every admin key starts with this: unlike a project key's `wg-`, so neither passes for the
/// other even before a lookup.
pub const ADMIN_KEY_PREFIX: &str = "wgadm_";

/// A new admin key: the secret itself (shown once) and what is stored of it.
pub fn generate_admin(name: Option<&str>, now_us: i64) -> (String, AdminKey) {
    let random = || uuid::Uuid::new_v4().simple().to_string();
    let secret = format!("{ADMIN_KEY_PREFIX}{}{}", random(), random());
    let stored = AdminKey {
        id: format!("adm_{}", &random()[..16]),
        name: name.map(str::to_owned),
        hash: hash(&secret),
        prefix: secret.chars().take(ADMIN_KEY_PREFIX.len() + 4).collect(),
        created_us: now_us,
        revoked_us: None,
    };
    (secret, stored)
}

/// The key lookups of a running gateway.
pub struct Keys {
    store: Arc<dyn Store>,
    cache: Mutex<HashMap<String, (Instant, Option<ApiKey>)>>,
}

impl Keys {
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self {
            store,
            cache: Mutex::default(),
        }
    }

    /// The stored key matching `key` (revoked or not), or `None` for a key nobody issued.
    pub async fn find(&self, key: &str) -> anyhow::Result<Option<ApiKey>> {
        let hash = hash(key);
        if let Ok(cache) = self.cache.lock()
            && let Some((at, found)) = cache.get(&hash)
            && at.elapsed() < CACHE_TTL
        {
            return Ok(found.clone());
        }
        let store = Arc::clone(&self.store);
        let lookup = hash.clone();
        let found = tokio::task::spawn_blocking(move || store.key_by_hash(&lookup)).await??;
        if let Ok(mut cache) = self.cache.lock() {
            if cache.len() >= CACHE_MAX {
                cache.clear();
            }
            cache.insert(hash, (Instant::now(), found.clone()));
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::ledger::KeyStore;
    use crate::ledger::sqlite::SqliteStore;

    #[test]
    fn keys_are_random_and_only_their_hash_is_kept() {
        let (a, stored) = generate("acme", Some("ci"), 7);
        let (b, _) = generate("acme", None, 7);
        assert_ne!(a, b);
        assert!(a.starts_with(KEY_PREFIX) && a.len() == KEY_PREFIX.len() + 64);
        assert_eq!(stored.hash, hash(&a));
        assert_eq!(stored.hash.len(), 64);
        assert!(!stored.hash.contains(&a[KEY_PREFIX.len()..]));
        assert_eq!(stored.prefix, a[..SHOWN_CHARS]);
        assert!(stored.id.starts_with("key_") && stored.id.len() == 20);
        assert_eq!((stored.project.as_str(), stored.created_us), ("acme", 7));
    }

    #[tokio::test]
    async fn lookups_find_issued_keys_only() {
        let store = Arc::new(SqliteStore::in_memory().unwrap());
        let (key, stored) = generate("acme", None, 1);
        store.insert_key(&stored).unwrap();
        let keys = Keys::new(store);
        assert_eq!(keys.find(&key).await.unwrap(), Some(stored));
        assert_eq!(keys.find("wg-made-up").await.unwrap(), None);
    }
}
