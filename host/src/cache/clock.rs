//! The cache's clock: wall-clock milliseconds, the same on every replica.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch: entries carry wall-clock times so that every replica
/// reads the same age and expiry.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
