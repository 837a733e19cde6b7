//! The response cache's stores and key: answers kept compressed under a key of everything that
//! shapes them (see [`key`]), in memory or in Redis, each for its TTL. The pipeline's `cache`
//! stage decides when to read and write; this module knows nothing of requests.

pub mod answer;
mod clock;
pub mod key;
pub mod memory;
pub mod policy;
mod response_cache;
pub mod shared;
pub mod vectors;

pub use crate::config::cache::CacheConfig;
pub use answer::Entry;
pub use clock::now_ms;
pub use key::Key;
pub use response_cache::{Cache, Counts};
