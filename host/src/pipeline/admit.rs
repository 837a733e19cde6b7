//! The admit stage: the key's own model list, then the limit rules (the config's and the key's)
//! check the request before anything is sent; an admitted request keeps its admission in the
//! context, and `finish` settles it with the real usage.

use super::context::Context;
use super::finish::usage_cost;
use crate::error::ApiError;
use crate::gateway::Gateway;
use crate::limits::{Facts, Refusal};
use crate::plugins::Usage;

/// Output tokens assumed for a cost estimate when the client sets no `max_tokens`.
const DEFAULT_OUTPUT_ESTIMATE: u32 = 1024;

/// Checks the key's models and the limits (nothing more to do without limit rules).
pub async fn admit(cx: &mut Context) -> Result<(), ApiError> {
    // Before routing, so a refusal says nothing of whether the model exists.
    if !cx.caller.limits.allows_model(&cx.request.model) {
        cx.trace.denied("model_not_allowed");
        return Err(ApiError::ModelNotAllowed(cx.request.model.clone()));
    }
    limits(cx).await
}

/// The limit rules (the config's and the key's) alone: for a request with no model to check
/// against the key's list (a pass-through request, whose `model` is its entry).
pub async fn limits(cx: &mut Context) -> Result<(), ApiError> {
    let gateway = std::sync::Arc::clone(&cx.gateway);
    if gateway.limits.is_empty_for(&cx.caller.limits) {
        return Ok(());
    }
    let span = cx.trace.stage("limits");
    let estimated_input_tokens = cx.prompt_tokens();
    let request = &cx.request;
    let max_output_tokens = request.max_output_tokens();
    let facts = Facts {
        project: &cx.caller.project,
        api_key_id: cx.caller.key_id.as_deref(),
        user_id: request.user.id.as_deref(),
        model: &request.model,
        estimated_input_tokens,
        max_output_tokens,
        estimated_cost_micros: estimate_cost(
            &gateway,
            &request.model,
            estimated_input_tokens,
            max_output_tokens.unwrap_or(DEFAULT_OUTPUT_ESTIMATE),
        ),
        key_limits: &cx.caller.limits,
    };
    let admitted = span.scope(gateway.limits.admit(&facts)).await;
    drop(span);
    match admitted {
        Ok(admission) => {
            cx.admission = Some(admission);
            Ok(())
        }
        Err(refusal) => {
            let error = match refusal {
                Refusal::Denied(denial) => ApiError::LimitExceeded(denial),
                Refusal::Unavailable(failure) => ApiError::limits_unavailable(failure),
            };
            cx.trace.denied(error.detail().code.unwrap_or("limit"));
            Err(error)
        }
    }
}

/// What a request may cost, for budgets to reserve: at the model's prices, or for a virtual
/// model at its dearest target's. `None` when no price is known.
fn estimate_cost(gateway: &Gateway, model: &str, input: u32, output: u32) -> Option<i64> {
    let usage = Usage {
        input_tokens: u64::from(input),
        output_tokens: u64::from(output),
        cached_input_tokens: 0,
        cache_write_tokens: 0,
        reasoning_tokens: 0,
        images: 0,
        search_units: 0,
        audio_ms: 0,
        characters: 0,
    };
    let price = |id: &str| {
        let target = gateway.resolve(id).ok()?;
        target.provider.price(target.model)
    };
    match gateway.routes.get(model) {
        Some(route) => route
            .targets
            .iter()
            .filter_map(|t| price(&t.id))
            .map(|info| usage_cost(&info, usage))
            .max(),
        None => price(model).map(|info| usage_cost(&info, usage)),
    }
}

/// The limit rules for a token count (a dialect's `count-tokens` route), which is limited like
/// any request but spends nothing: admitted as one of `model` with no tokens, and settled at
/// once as costing none.
pub async fn count(
    gateway: &Gateway,
    caller: &crate::auth::Caller,
    model: &str,
    background: &tokio_util::task::TaskTracker,
) -> Result<(), ApiError> {
    if gateway.limits.is_empty_for(&caller.limits) {
        return Ok(());
    }
    let facts = Facts {
        project: &caller.project,
        api_key_id: caller.key_id.as_deref(),
        user_id: None,
        model,
        estimated_input_tokens: 0,
        max_output_tokens: Some(0),
        estimated_cost_micros: Some(0),
        key_limits: &caller.limits,
    };
    match gateway.limits.admit(&facts).await {
        Ok(admission) => {
            background.spawn(admission.settle(crate::plugins::Settlement {
                input_tokens: 0,
                output_tokens: 0,
                cost_micros: Some(0),
                succeeded: true,
            }));
            Ok(())
        }
        Err(Refusal::Denied(denial)) => Err(ApiError::LimitExceeded(denial)),
        Err(Refusal::Unavailable(failure)) => Err(ApiError::limits_unavailable(failure)),
    }
}
