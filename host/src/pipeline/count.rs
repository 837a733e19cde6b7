//! Token counts from the model's own tokenizer: a dialect's `count-tokens` request whose model
//! is one entry's, and that entry speaks the dialect natively (Messages' `count_tokens` to an
//! `anthropic` entry, Google's `:countTokens` to a `gemini` entry), goes to the upstream's own
//! counting endpoint as the client wrote it, with the model and key swapped; anything else is
//! counted by the gateway. The answer says which (`x-wasmgate-count`). Counting is not billed
//! and writes no ledger record.

use super::dialect::{Edge, forwarded, operation_of};
use super::error::ApiError;
use super::raw_json::Fields;
use crate::plugins::{CanonicalRequest, HttpResponse, NativeCall, Prepared, RequestInfo, SlotKind};
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

/// Characters of a model name an error repeats.
const MODEL_SHOWN: usize = 64;

/// The upstream's own count of `fields` (the client's body) for `model`, if the model is one
/// entry's and the entry speaks the dialect; `None` when the gateway must count.
pub async fn upstream(
    state: &AppState,
    edge: &Edge,
    headers: &http::HeaderMap,
    model: &str,
    fields: &Fields,
) -> Result<Option<String>, ApiError> {
    let dialect = &edge.matched.dialect;
    let Ok(target) = edge.gateway.resolve(model) else {
        return Ok(None);
    };
    let provider = target.provider;
    if !provider.native.contains(&dialect.name) {
        return Ok(None);
    }
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
    let response = HttpResponse {
        status,
        headers,
        body: body.to_vec(),
    };
    let completion = call
        .parse_response(&provider.config, &info, &response)
        .await
        .map_err(ApiError::plugin)?
        .map_err(|error| ApiError::provider(&provider.name, error, &redactor))?;
    Ok(Some(completion.body))
}
