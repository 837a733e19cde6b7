//! A dialect's `count-tokens` route (`/v1/messages/count_tokens`, Google's `:countTokens`,
//! OpenAI's `/v1/responses/input_tokens`): a request of its own, beside the model-call path,
//! with the stages it needs (auth, the body budget, admission) and the target's own counter
//! (`upstream.rs`).

use super::upstream::{Counted, Counter};
use crate::error::ApiError;
use crate::pipeline::edge::decode::{canonical_operation, decode_fields};
use crate::pipeline::edge::translation::Edge;
use crate::pipeline::guard::body as body_guards;
use crate::pipeline::request::ClientRequest;
use crate::pipeline::request::raw_json::{self, MAX_FIELDS};
use crate::plugins::{AnswerInfo, SlotKind};

/// A `count-tokens` route (`/v1/messages/count_tokens`, Google's `:countTokens`, OpenAI's
/// `/v1/responses/input_tokens`): the prompt's tokens by the target's own counting endpoint,
/// natively or translated (see `upstream.rs`), else by the gateway's own tokenizer (the one
/// limits and estimates use), the body then written by the dialect's plugin; without a
/// ledger record either way. Auth is that of `/v1/*`, a key limited to some models counts only
/// for those, and the limit rules admit it as a request that spends nothing.
pub async fn count_tokens(
    state: &crate::state::AppState,
    edge: &Edge,
    headers: &http::HeaderMap,
    body: axum::body::Body,
) -> Result<(String, Counter), ApiError> {
    let caller =
        crate::pipeline::caller::caller(state, headers, edge.gateway.config.auth.required).await?;
    let (bytes, _reservation) = crate::pipeline::request::body::read(state, body).await?;
    let bytes = if bytes.is_empty() {
        &b"{}"[..]
    } else {
        &bytes[..]
    };
    let fields =
        raw_json::object(bytes, MAX_FIELDS).map_err(|e| ApiError::InvalidJson(e.to_string()))?;
    let plugin = &edge.matched.dialect.plugin;
    let decoded = decode_fields(plugin, &edge.matched, &fields).await?;
    if !caller.limits.allows_model(&decoded.model) {
        return Err(ApiError::ModelNotAllowed(decoded.model));
    }
    crate::pipeline::admit::count(&edge.gateway, &caller, &decoded.model, &state.background)
        .await?;
    // What a counting endpoint is sent, the request guards see first, as they would the call.
    let rewritten = guarded(state, edge, &caller, &decoded, bytes).await?;
    let (fields, decoded) = match &rewritten {
        None => (fields, decoded),
        Some(bytes) => {
            let fields = raw_json::object(bytes, MAX_FIELDS)
                .map_err(|e| ApiError::InvalidJson(e.to_string()))?;
            let decoded = decode_fields(plugin, &edge.matched, &fields).await?;
            (fields, decoded)
        }
    };
    let operation = canonical_operation(decoded.operation);
    let counted =
        super::upstream::upstream(state, edge, headers, &caller, &decoded, operation, &fields)
            .await?;
    let (tokens, counter) = match counted {
        Some(Counted::Answer(body)) => return Ok((body, Counter::Upstream)),
        // The dialect's answer carries a `u32`; no prompt a model takes comes near it.
        Some(Counted::Tokens(tokens)) => {
            (u32::try_from(tokens).unwrap_or(u32::MAX), Counter::Upstream)
        }
        None => {
            let request = ClientRequest::parse(operation, decoded.body.as_bytes())?;
            let tokens = request.estimate_input_tokens(crate::tokenizer::Tokenizer);
            (tokens, Counter::Estimate)
        }
    };
    let info = AnswerInfo {
        route: edge.matched.route().name.clone(),
        model: decoded.model,
        id: String::new(),
        created: u64::try_from(crate::ledger::time::now_us() / 1_000_000).unwrap_or(0),
        estimated_input_tokens: tokens,
        echo: decoded.echo,
    };
    let mut call = plugin
        .start(SlotKind::Call)
        .await
        .map_err(ApiError::plugin)?;
    let body = call
        .encode_count(&info, tokens)
        .await
        .map_err(ApiError::plugin)?;
    Ok((body, counter))
}

/// The client's body through the request guards that apply to its caller and model: the
/// rewritten body, if one rewrote it.
async fn guarded(
    state: &crate::state::AppState,
    edge: &Edge,
    caller: &crate::auth::Caller,
    decoded: &crate::plugins::Decoded,
    bytes: &[u8],
) -> Result<Option<Vec<u8>>, ApiError> {
    let Some(guards) = body_guards::applying(&edge.gateway, caller, &decoded.model)? else {
        return Ok(None);
    };
    let mut body: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| ApiError::InvalidJson(e.to_string()))?;
    let mut detached = body_guards::Detached::new(&state.telemetry);
    let mut checker = detached.checker(&edge.gateway);
    // `messages.count_tokens`: the dialect's name and its route's.
    let route = format!(
        "{}.{}",
        edge.matched.dialect.name,
        edge.matched.route().name
    );
    let changed = guards
        .check(&mut checker, (&decoded.model, &route), &mut body)
        .await?;
    Ok(changed.then(|| body.to_string().into_bytes()))
}
