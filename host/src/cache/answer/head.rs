//! The fields a completion and each chunk of its stream both carry.

/// The fields a completion shares with each chunk of its stream (besides `object`).
pub(super) const HEAD: [&str; 5] = [
    "id",
    "created",
    "model",
    "system_fingerprint",
    "service_tier",
];
