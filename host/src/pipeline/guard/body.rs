//! The request guards on what the model-call path does not parse: a pass-through request (its
//! body, query values and forwarded headers), a dialect's count of tokens, a batch file's
//! lines. Their texts are shown to each guard as any body's are (`texts.rs`) and rewritten in
//! place; what no guard can read is refused unless each applying guard's entry exempts the
//! route.

use std::sync::Arc;

use serde_json::Value;

use super::check::{self, Checker, Reading, check};
use super::failure::failed_with;
use super::texts::TextView;
use crate::auth::Caller;
use crate::config::guards::BlindRoute;
use crate::error::ApiError;
use crate::gateway::Gateway;
use crate::pipeline::guard::verdicts::Guarded;
use crate::pipeline::request::ClientRequest;
use crate::plugins::Operation;
use crate::telemetry::{Telemetry, Trace};

/// The request guards that apply to one request (indices into the gateway's guards).
#[derive(Debug)]
pub struct BodyGuards {
    checking: Vec<usize>,
}

/// The request guards that apply to `caller` asking `model`; `None` when none does, so that a
/// route with no guard configured does no more than this lookup.
pub fn applying(
    gateway: &Gateway,
    caller: &Caller,
    model: &str,
) -> Result<Option<BodyGuards>, ApiError> {
    let guards = &gateway.guards;
    let checking: Vec<usize> = (check::applying(gateway, caller, model)?.into_iter())
        .filter(|&i| guards.get(i).is_some_and(|g| g.apply.request()))
        .collect();
    Ok((!checking.is_empty()).then_some(BodyGuards { checking }))
}

/// What a check outside any request's context needs of one (a count, a batch file's lines, a
/// Realtime client's events): a trace that makes no span, and verdicts kept here, for whoever
/// writes a record to take (a count and a batch write none). A body
/// is shown as its texts, so the request a chat's rewrite would go into is never read.
pub struct Detached {
    trace: Trace,
    verdicts: Guarded,
    request: ClientRequest,
}

impl Detached {
    pub fn new(telemetry: &Arc<Telemetry>) -> Self {
        Self {
            trace: Trace::untraced(telemetry),
            verdicts: Guarded::default(),
            request: ClientRequest::unparsed(Operation::ChatCompletions),
        }
    }

    /// The verdicts of the checks made so far (a Realtime session moves them into the record
    /// of its next response).
    pub fn verdicts(&mut self) -> &mut Guarded {
        &mut self.verdicts
    }

    pub fn checker<'a>(&'a mut self, gateway: &'a Gateway) -> Checker<'a> {
        Checker {
            gateway,
            trace: &self.trace,
            guard: &mut self.verdicts,
            request: &mut self.request,
        }
    }
}

impl BodyGuards {
    /// Refuses what no guard can read (`what`, on `route`), unless every applying guard's entry
    /// exempts the route.
    pub fn refuse_blind(
        &self,
        gateway: &Gateway,
        route: BlindRoute,
        what: &'static str,
    ) -> Result<(), ApiError> {
        match (gateway.guards).not_exempting(self.checking.iter().copied(), route) {
            Some(guard) => Err(ApiError::GuardCannotInspect {
                guard: guard.name.to_string(),
                what,
                route: route.name(),
            }),
            None => Ok(()),
        }
    }

    /// Every string of `body` through the guards (told it is `route`'s), a rewrite written back
    /// where each stood; whether one was rewritten.
    pub async fn check(
        &self,
        checker: &mut Checker<'_>,
        (model, route): (&str, &str),
        body: &mut Value,
    ) -> Result<bool, ApiError> {
        let view = TextView::of_body(body);
        if view.is_empty() {
            return Ok(false);
        }
        let shown = view.request(model, route);
        let reading = Reading::Texts(view);
        let Some(after) = check(checker, &self.checking, &shown, &reading, true).await? else {
            return Ok(false);
        };
        let Reading::Texts(view) = &reading else {
            return Ok(false);
        };
        let texts = view
            .read(&after)
            .map_err(|_| failed_with("request", "a rewrite did not read back"))?;
        Ok(view.write(&texts, body) > 0)
    }
}
