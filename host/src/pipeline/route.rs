//! The route stage: the model the client named leads to one target, or (a virtual model under
//! `routing:`) the router orders the route's targets and each is tried in turn while attempts
//! fail in a way another target may not (connect errors, timeouts, 429, 5xx). Nothing is
//! retried once a response has started: a stream's first byte ends the choosing.

use std::sync::Arc;
use std::time::Instant;

use super::attempt::{self, Sent};
use super::context::Context;
use super::request::end_user::UserInfo;
use crate::error::ApiError;
use crate::gateway::{ResolveError, Target};
use crate::plugins::RouteRequest;
use crate::routing::Route;
use crate::state::AppState;

/// The answer of the target that answered, and how many attempts it took.
pub struct Answered {
    pub sent: Sent,
    pub provider: Arc<str>,
    pub model: String,
    pub attempts: usize,
}

pub async fn route(state: &AppState, cx: &mut Context) -> Result<Answered, ApiError> {
    let gateway = Arc::clone(&cx.gateway);
    let model = cx.request.model.clone();
    if let Some(route) = gateway.routes.get(&model) {
        return routed(state, cx, route, &model).await;
    }
    let target = match gateway.resolve(&model) {
        Ok(target) => target,
        Err(ResolveError::NotFound) => return Err(ApiError::ModelNotFound(model)),
        Err(ResolveError::Ambiguous(candidates)) => {
            return Err(ApiError::AmbiguousModel { model, candidates });
        }
    };
    let sent = attempt::attempt(state, cx, &target).await?;
    Ok(answered(sent, &target, 1))
}

/// A request to the virtual model `model`.
async fn routed(
    state: &AppState,
    cx: &mut Context,
    route: &Route,
    model: &str,
) -> Result<Answered, ApiError> {
    let gateway = Arc::clone(&cx.gateway);
    let observed = route.observed(&state.stats, Instant::now());
    let random = uuid::Uuid::new_v4().as_u64_pair();
    let prompt_tokens = cx.prompt_tokens();
    let facts = route_request(
        model,
        &cx.caller.project,
        &cx.request.user,
        prompt_tokens,
        cx.request.stream,
        random.0,
    );
    let mut span = cx.trace.stage("route");
    span.set("wasmgate.route", model.to_owned());
    let plan = span.scope(plan(route, model, &facts, &observed)).await?;
    drop(span);
    let last = plan.len();
    for (n, &i) in plan.iter().enumerate() {
        if n > 0 {
            tokio::time::sleep(route.backoff(n as u32, random.1.rotate_left(n as u32 * 8))).await;
        }
        let id = &route.targets[i].id;
        let target = gateway
            .resolve(id)
            .map_err(|_| ApiError::ModelNotFound(id.clone()))?;
        let stats = state.stats.get(id).begin(route.breaker);
        match attempt::attempt(state, cx, &target).await {
            Ok(sent) => {
                cx.trace.routed(model, id, n, "ok");
                let usage = match &sent {
                    Sent::Whole { usage, .. } | Sent::Events { usage, .. } => *usage,
                    Sent::Raw(raw) => raw.usage,
                    Sent::Stream(_) => None,
                };
                stats.succeeded(cx.request.stream, usage.map(|u| u.output_tokens));
                return Ok(answered(sent, &target, n + 1));
            }
            Err(error) if error.is_target_failure() => {
                cx.trace.routed(model, id, n, "failed");
                stats.failed();
                if n + 1 == last {
                    return Err(error);
                }
                tracing::info!(
                    model,
                    target = id.as_str(),
                    "attempt failed, trying the next target: {}",
                    error.detail().message
                );
            }
            // The client's own mistake: another target would refuse it too.
            Err(error) => {
                cx.trace.routed(model, id, n, "rejected");
                return Err(error);
            }
        }
    }
    Err(ApiError::NoRoute {
        model: model.to_owned(),
        message: "every target failed".to_owned(),
    })
}

/// The targets of `route` (indices into its `targets`) in the order its router chose for
/// `facts`, without those whose circuit is open; never empty.
pub(crate) async fn plan(
    route: &Route,
    model: &str,
    facts: &RouteRequest,
    observed: &[crate::plugins::RouteTarget],
) -> Result<Vec<usize>, ApiError> {
    let no_route = |message: String| ApiError::NoRoute {
        model: model.to_owned(),
        message,
    };
    let order = route
        .router
        .route(&route.options, facts, observed)
        .await
        .map_err(ApiError::plugin)?
        .map_err(no_route)?;
    let plan = route.plan(&order, observed);
    if plan.is_empty() {
        return Err(no_route("the router chose no target".to_owned()));
    }
    Ok(plan)
}

fn answered(sent: Sent, target: &Target<'_>, attempts: usize) -> Answered {
    Answered {
        sent,
        provider: Arc::clone(&target.provider.name),
        model: target.model.to_owned(),
        attempts,
    }
}

/// The facts a router decides on.
pub(crate) fn route_request(
    model: &str,
    project: &str,
    user: &UserInfo,
    estimated_input_tokens: u32,
    stream: bool,
    random: u64,
) -> RouteRequest {
    RouteRequest {
        model: model.to_owned(),
        project: project.to_owned(),
        user_id: user.id.clone(),
        user_name: user.name.clone(),
        user_tags: user.tags.clone(),
        estimated_input_tokens,
        stream,
        metadata: user.metadata.clone(),
        random,
    }
}
