//! How a guard's failure reaches the client: no free instance is the gateway's capacity (503),
//! an outside verdict that did not come is 503, anything else fails the request closed; and the
//! status a refusal is given.

use crate::error::ApiError;
use crate::guards::GuardError;
use crate::plugins::{PluginFailure, Refusal};

/// The refusal's status as the client gets it: 4xx or 5xx, else 400.
pub(in crate::pipeline) fn status(refusal: &Refusal) -> u16 {
    if (400..=599).contains(&refusal.status) {
        refusal.status
    } else {
        400
    }
}

/// A guard's failure: no free instance is the gateway's capacity (503, retried by clients), an
/// outside verdict that did not come the guard's endpoint (503), anything else the guard's own
/// fault, which fails the request closed.
pub(in crate::pipeline) fn failed(guard: &str, failure: &GuardError) -> ApiError {
    match failure {
        GuardError::Plugin(PluginFailure::Saturated { waited_ms, .. }) => {
            ApiError::Saturated(*waited_ms)
        }
        GuardError::Unavailable(detail) => ApiError::GuardUnavailable {
            guard: guard.to_owned(),
            detail: detail.clone(),
        },
        GuardError::Plugin(
            PluginFailure::Trapped { .. }
            | PluginFailure::TimedOut { .. }
            | PluginFailure::OutOfMemory { .. },
        )
        | GuardError::Contract(_) => failed_with(guard, &failure.to_string()),
    }
}

pub(in crate::pipeline) fn failed_with(guard: &str, detail: &str) -> ApiError {
    ApiError::GuardFailed {
        guard: guard.to_owned(),
        detail: detail.to_owned(),
    }
}
