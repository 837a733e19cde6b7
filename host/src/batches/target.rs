//! Where a batch line's model leads: a provider's model as for a live request, or a virtual
//! model (`routing:`) resolved to one of its targets.
//!
//! A virtual model's batch lines go to the first target, in the order the configuration lists
//! them, whose provider runs a batch API. Not the router's choice of the moment: a batch runs
//! for up to a day, so the circuits and latencies a router weighs now say nothing about it, and
//! a router that draws at random (`weighted`) would scatter a file's lines over providers when
//! a batch goes to one. The listed order is the one `fallback` tries, the primary first.

use super::upstream;
use crate::gateway::{Gateway, ResolveError, Target};

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
        .find(|target| upstream::api(target.provider).is_some())
        .ok_or(Unresolved::NoBatchTarget)
}
