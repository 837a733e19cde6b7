//! Token counts from the model's own tokenizer. A dialect's `count-tokens` request whose model
//! is one entry's goes to that upstream's own counting endpoint:
//! - as the client wrote it, with the model and key swapped, when the entry speaks the dialect
//!   natively (Messages' `count_tokens` to an `anthropic` entry, Google's `:countTokens` to a
//!   `gemini` entry): the upstream's answer is the client's;
//! - translated otherwise: the canonical request goes to the provider plugin's `prepare-count`
//!   (Messages' `count_tokens` to OpenAI's `/responses/input_tokens` or Google's
//!   `:countTokens`, ...), `parse-count` reads the number, and the dialect writes the answer.
//!
//! A virtual model (`routing:`) is counted by the target its router would try first. A target
//! whose plugin has no counting endpoint (a local one, a compatible host without the
//! Responses API) is counted by the gateway. The answer says which (`x-wasmgate-count`).
//! Counting is not billed and writes no ledger record.

use std::time::Instant;

use crate::auth::Caller;
use crate::error::ApiError;
use crate::gateway::{Gateway, Provider, Target};
use crate::pipeline::edge::decode::forwarded;
use crate::pipeline::edge::translation::Edge;
use crate::pipeline::request::ClientRequest;
use crate::pipeline::request::raw_json::Fields;
use crate::pipeline::route::{plan, route_request};
use crate::plugins::{
    CanonicalRequest, Decoded, HttpRequest, HttpResponse, NativeCall, Operation, PluginCall,
    PluginError, PluginFailure, Prepared, RequestInfo, SlotKind,
};
use crate::redact::Redactor;
use crate::state::AppState;
use crate::upstream;

/// Who counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counter {
    /// The target's own counting endpoint.
    Upstream,
    /// The gateway's tokenizer (o200k), for a target without one.
    Estimate,
}

impl Counter {
    pub fn name(self) -> &'static str {
        match self {
            Counter::Upstream => "upstream",
            Counter::Estimate => "estimate",
        }
    }
}

/// What the target's own counter said.
pub enum Counted {
    /// The answer in the client's dialect, from a target that speaks it.
    Answer(String),
    /// The prompt's tokens, for the dialect to write its answer with.
    Tokens(u64),
}

/// Characters of a model name an error repeats.
const MODEL_SHOWN: usize = 64;

/// The upstream's own count for the decoded request's model of `fields` (the client's body),
/// or of its canonical form (`decoded.body`, an `operation` request) for a target of another
/// dialect. A virtual model (`routing:`) is counted by the target its router would try first
/// for this caller and prompt. `None` when the model is no entry's or route's, or the target's
/// upstream has no counter, and the gateway must count.
pub async fn upstream(
    state: &AppState,
    edge: &Edge,
    headers: &http::HeaderMap,
    caller: &Caller,
    decoded: &Decoded,
    operation: Operation,
    fields: &Fields,
) -> Result<Option<Counted>, ApiError> {
    let parse = || ClientRequest::parse(operation, decoded.body.as_bytes());
    let Some(target) = target(state, &edge.gateway, caller, &decoded.model, parse).await? else {
        return Ok(None);
    };
    if target.provider.native.contains(&edge.matched.dialect.name) {
        return native(state, edge, headers, &target, fields)
            .await
            .map(|answer| answer.map(Counted::Answer));
    }
    // The counting endpoints take a conversation; nothing else is counted upstream.
    if operation != Operation::ChatCompletions {
        return Ok(None);
    }
    translated(state, edge, headers, &target, &mut parse()?)
        .await
        .map(|tokens| tokens.map(Counted::Tokens))
}

/// The entry `model` names, or the first target its router would try (as the route stage asks
/// it, for this caller's project and user and the prompt's estimate); `None` for no model.
async fn target<'g>(
    state: &AppState,
    gateway: &'g Gateway,
    caller: &Caller,
    model: &'g str,
    parse: impl FnOnce() -> Result<ClientRequest, ApiError>,
) -> Result<Option<Target<'g>>, ApiError> {
    let Some(route) = gateway.routes.get(model) else {
        return Ok(gateway.resolve(model).ok());
    };
    let request = parse()?;
    let facts = route_request(
        model,
        &caller.project,
        &request.user,
        request.estimate_input_tokens(crate::tokenizer::Tokenizer),
        false,
        uuid::Uuid::new_v4().as_u64_pair().0,
    );
    let observed = route.observed(&state.stats, Instant::now());
    let first = plan(route, model, &facts, &observed).await?[0];
    Ok(gateway.resolve(&route.targets[first].id).ok())
}

/// A provider call started to count a request to `target`, with the redactor its errors are
/// written with: the setup the native and the translated count share.
struct Counting<'t> {
    call: PluginCall,
    provider: &'t Provider,
    info: RequestInfo,
    redactor: Redactor,
}

impl<'t> Counting<'t> {
    async fn start(
        edge: &Edge,
        headers: &http::HeaderMap,
        provider: &'t Provider,
        request: &CanonicalRequest,
    ) -> Result<Self, ApiError> {
        let call = provider
            .plugin
            .start(SlotKind::Call)
            .await
            .map_err(ApiError::plugin)?;
        Ok(Self {
            call,
            provider,
            info: RequestInfo {
                operation: request.operation,
                native: request.native.clone(),
                model: request.model.clone(),
                stream: false,
            },
            redactor: edge.gateway.secrets.for_request(headers),
        })
    }

    /// What the plugin's `prepare` or `prepare-count` for a body of `bytes` gave, or the error
    /// the client sees.
    fn prepared<T>(
        &self,
        called: Result<Result<T, PluginError>, PluginFailure>,
        bytes: usize,
    ) -> Result<T, ApiError> {
        called
            .map_err(|failure| ApiError::prepare_failed(failure, bytes))?
            .map_err(|error| self.refused(error))
    }

    /// What the plugin read from the counting endpoint's answer, or the error the client sees.
    fn parsed<T>(
        &self,
        called: Result<Result<T, PluginError>, PluginFailure>,
    ) -> Result<T, ApiError> {
        called
            .map_err(ApiError::plugin)?
            .map_err(|error| self.refused(error))
    }

    fn refused(&self, error: PluginError) -> ApiError {
        ApiError::provider(&self.provider.name, error, &self.redactor)
    }
}

/// The client's body counted by a target that speaks its dialect.
async fn native(
    state: &AppState,
    edge: &Edge,
    headers: &http::HeaderMap,
    target: &Target<'_>,
    fields: &Fields,
) -> Result<Option<String>, ApiError> {
    let dialect = &edge.matched.dialect;
    let provider = target.provider;
    let mut body = fields.clone();
    if body.contains_key("model")
        && let Ok(raw) = serde_json::value::to_raw_value(target.model)
    {
        body.insert("model".to_owned(), raw);
    }
    let body = serde_json::to_string(&body).map_err(|e| ApiError::InvalidJson(e.to_string()))?;
    let native = NativeCall {
        dialect: dialect.name.clone(),
        route: edge.matched.route().name.clone(),
        params: edge
            .matched
            .params
            .iter()
            .map(|(name, value)| match name.as_str() {
                "model" => (name.clone(), target.model.to_owned()),
                _ => (name.clone(), value.clone()),
            })
            .collect(),
    };
    let request = CanonicalRequest {
        // What a count route's body stands for: a conversation.
        operation: Operation::ChatCompletions,
        native: Some(native),
        model: target.model.to_owned(),
        body,
        stream: false,
        headers: forwarded(headers),
    };
    let mut counting = Counting::start(edge, headers, provider, &request).await?;
    let prepared = counting.call.prepare(&provider.config, &request).await;
    let http = match counting.prepared(prepared, request.body.len())? {
        Prepared::Upstream(http) => http,
        Prepared::Local(completion) => return Ok(Some(completion.body)),
        // A count is JSON both ways: a plugin that would send it as a form or read it as raw
        // bytes has no counting endpoint the gateway can use.
        Prepared::LocalStream(_) | Prepared::UpstreamForm(_) | Prepared::UpstreamRaw(_) => {
            return Ok(None);
        }
    };
    let response = send(state, target, http).await?;
    let parsed = (counting.call)
        .parse_response(&provider.config, &counting.info, &response)
        .await;
    Ok(Some(counting.parsed(parsed)?.body))
}

/// The canonical request counted by the target's plugin's own counter, if it has one.
async fn translated(
    state: &AppState,
    edge: &Edge,
    headers: &http::HeaderMap,
    target: &Target<'_>,
    request: &mut ClientRequest,
) -> Result<Option<u64>, ApiError> {
    let provider = target.provider;
    let request = request.canonical(target.model);
    let mut counting = Counting::start(edge, headers, provider, &request).await?;
    let prepared = counting
        .call
        .prepare_count(&provider.config, &request)
        .await;
    let Some(http) = counting.prepared(prepared, request.body.len())? else {
        return Ok(None);
    };
    let response = send(state, target, http).await?;
    let parsed = (counting.call)
        .parse_count(&provider.config, &counting.info, &response)
        .await;
    counting.parsed(parsed).map(Some)
}

/// Sends a counting request under the entry's URL guard and reads the whole answer.
async fn send(
    state: &AppState,
    target: &Target<'_>,
    http: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let provider = target.provider;
    let admitted = provider
        .scope
        .admit(http)
        .map_err(|reason| ApiError::UnsafeUpstreamUrl {
            provider: provider.name.to_string(),
            model: upstream::shorten(target.model, MODEL_SHOWN),
            reason,
        })?;
    let response = upstream::send(&state.http, admitted, provider.timeout)
        .await
        .map_err(|e| ApiError::upstream(&provider.name, e))?;
    let status = response.status().as_u16();
    let headers = crate::pipeline::attempt::header_pairs(response.headers());
    let body = upstream::read_body(response, provider.timeout)
        .await
        .map_err(|e| ApiError::upstream(&provider.name, e))?;
    Ok(HttpResponse {
        status,
        headers,
        body: body.to_vec(),
    })
}
