//! Why a guard gave no verdict, for whoever runs it.

use crate::plugins::PluginFailure;

/// Why a guard gave no verdict.
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    /// Its plugin trapped, ran out of time or memory, or found no free instance.
    #[error("{0}")]
    Plugin(PluginFailure),
    /// It broke its contract.
    #[error("{0}")]
    Contract(&'static str),
    /// Its outside verdict did not come, and its entry says that refuses.
    #[error("its endpoint failed: {0}")]
    Unavailable(String),
}
