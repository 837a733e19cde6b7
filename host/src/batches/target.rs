//! Which batch API a provider entry runs, and where a batch line's model leads: a provider's
//! model as for a live request, or a virtual model (`routing:`) resolved to one of its targets.
//! (A leaf of `batches/`: the upload, the line checks and the calls all ask it.)
//!
//! A virtual model's batch lines go to the first target, in the order the configuration lists
//! them, whose provider runs a batch API. Not the router's choice of the moment: a batch runs
//! for up to a day, so the circuits and latencies a router weighs now say nothing about it, and
//! a router that draws at random (`weighted`) would scatter a file's lines over providers when
//! a batch goes to one. The listed order is the one `fallback` tries, the primary first.

use crate::gateway::{Gateway, Provider, ResolveError, Target};

/// The name a provider lists in `native-dialects` to run the Files and Batch APIs.
pub const DIALECT: &str = "openai-batches";

/// Which batch API an entry's upstream runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    /// OpenAI's Files and Batch APIs ([`DIALECT`]).
    OpenAi,
    /// Anthropic's Message Batches ([`ANTHROPIC_DIALECT`]): files held by the gateway.
    Anthropic,
}

/// The batch API `provider` runs, if any.
pub fn api(provider: &Provider) -> Option<Api> {
    if provider.native.iter().any(|d| d == DIALECT) {
        Some(Api::OpenAi)
    } else if provider.native.iter().any(|d| d == ANTHROPIC_DIALECT) {
        Some(Api::Anthropic)
    } else {
        None
    }
}

/// The name the `anthropic` plugin lists in `native-dialects` for Message Batches.
pub const ANTHROPIC_DIALECT: &str = "anthropic-message-batches";

/// Why a batch line's model leads nowhere a batch can go.
#[derive(Debug)]
pub enum Unresolved {
    NotFound,
    /// Several providers serve this bare name; these are the ids that would pick one.
    Ambiguous(Vec<String>),
    /// A virtual model none of whose targets' providers runs a batch API.
    NoBatchTarget,
}

/// The target a batch line naming `model` goes to. A provider's model is resolved as for a
/// live request (whether its provider runs batches is checked when the file goes upstream).
pub fn resolve<'a>(gateway: &'a Gateway, model: &'a str) -> Result<Target<'a>, Unresolved> {
    let Some(route) = gateway.routes.get(model) else {
        return gateway.resolve(model).map_err(|e| match e {
            ResolveError::NotFound => Unresolved::NotFound,
            ResolveError::Ambiguous(ids) => Unresolved::Ambiguous(ids),
        });
    };
    route
        .targets
        .iter()
        .filter_map(|t| gateway.resolve(&t.id).ok())
        .find(|target| api(target.provider).is_some())
        .ok_or(Unresolved::NoBatchTarget)
}
