//! Token counts from the model's own tokenizer. A dialect's `count-tokens` request whose model
//! is one entry's goes to that upstream's own counting endpoint:
//! - as the client wrote it, with the model and key swapped, when the entry speaks the dialect
//!   natively (Messages' `count_tokens` to an `anthropic` entry, Google's `:countTokens` to a
//!   `gemini` entry): the upstream's answer is the client's;
//! - translated otherwise: the canonical request goes to the provider plugin's `prepare-count`
//!   (Messages' `count_tokens` to OpenAI's `/responses/input_tokens` or Google's
//!   `:countTokens`, ...), `parse-count` reads the number, and the dialect writes the answer.
//!
//! A target whose plugin has no counting endpoint (a local one, a compatible host without the
//! Responses API) is counted by the gateway. The answer says which (`x-wasmgate-count`).
//! Counting is not billed and writes no ledger record.

use super::edge::{Edge, forwarded, operation_of};
use super::error::ApiError;
use super::raw_json::Fields;
use super::request::ClientRequest;
use crate::gateway::Target;
use crate::plugins::{
    CanonicalRequest, Decoded, HttpRequest, HttpResponse, NativeCall, Operation, Prepared,
    RequestInfo, SlotKind,
};
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
/// dialect; `None` when the model is no entry's or the
/// entry's upstream has no counter, and the gateway must count.
pub async fn upstream(
    state: &AppState,
    edge: &Edge,
    headers: &http::HeaderMap,
    decoded: &Decoded,
    operation: Operation,
    fields: &Fields,
) -> Result<Option<Counted>, ApiError> {
    let Ok(target) = edge.gateway.resolve(&decoded.model) else {
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
    let mut request = ClientRequest::parse(operation, decoded.body.as_bytes())?;
    translated(state, edge, headers, &target, &mut request)
        .await
        .map(|tokens| tokens.map(Counted::Tokens))
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
        operation: operation_of(dialect),
        native: Some(native),
        model: target.model.to_owned(),
        body,
        stream: false,
        headers: forwarded(headers),
    };
    let info = RequestInfo {
        operation: request.operation,
        native: request.native.clone(),
        model: request.model.clone(),
        stream: false,
    };
    let redactor = edge.gateway.secrets.for_request(headers);
    let mut call = provider
        .plugin
        .start(SlotKind::Call)
        .await
        .map_err(ApiError::plugin)?;
    let bytes = request.body.len();
    let prepared = call
        .prepare(&provider.config, &request)
        .await
        .map_err(|failure| ApiError::prepare_failed(failure, bytes))?
        .map_err(|error| ApiError::provider(&provider.name, error, &redactor))?;
    let http = match prepared {
        Prepared::Upstream(http) => http,
        Prepared::Local(completion) => return Ok(Some(completion.body)),
        // A count is JSON both ways: a plugin that would send it as a form or read it as raw
        // bytes has no counting endpoint the gateway can use.
        Prepared::LocalStream(_) | Prepared::UpstreamForm(_) | Prepared::UpstreamRaw(_) => {
            return Ok(None);
        }
    };
    let response = send(state, target, http).await?;
    let completion = call
        .parse_response(&provider.config, &info, &response)
        .await
        .map_err(ApiError::plugin)?
        .map_err(|error| ApiError::provider(&provider.name, error, &redactor))?;
    Ok(Some(completion.body))
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
    let info = RequestInfo {
        operation: request.operation,
        native: None,
        model: request.model.clone(),
        stream: false,
    };
    let redactor = edge.gateway.secrets.for_request(headers);
    let mut call = provider
        .plugin
        .start(SlotKind::Call)
        .await
        .map_err(ApiError::plugin)?;
    let bytes = request.body.len();
    let prepared = call
        .prepare_count(&provider.config, &request)
        .await
        .map_err(|failure| ApiError::prepare_failed(failure, bytes))?
        .map_err(|error| ApiError::provider(&provider.name, error, &redactor))?;
    let Some(http) = prepared else {
        return Ok(None);
    };
    let response = send(state, target, http).await?;
    let tokens = call
        .parse_count(&provider.config, &info, &response)
        .await
        .map_err(ApiError::plugin)?
        .map_err(|error| ApiError::provider(&provider.name, error, &redactor))?;
    Ok(Some(tokens))
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
    let headers = super::attempt::header_pairs(response.headers());
    let body = upstream::read_body(response, provider.timeout)
        .await
        .map_err(|e| ApiError::upstream(&provider.name, e))?;
    Ok(HttpResponse {
        status,
        headers,
        body: body.to_vec(),
    })
}
