//! The `/v1/*` proxy: request → model resolution → provider plugin → upstream → response.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use super::request::ClientRequest;
use super::stream;
use crate::gateway::{ResolveError, Target};
use crate::plugins::{Completion, HttpResponse, Operation, PluginCall, Prepared, RequestInfo};
use crate::state::AppState;
use crate::upstream;

pub async fn chat_completions(
    State(state): State<Arc<AppState>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    proxy(&state, Operation::ChatCompletions, body).await
}

pub async fn embeddings(
    State(state): State<Arc<AppState>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    proxy(&state, Operation::Embeddings, body).await
}

pub async fn image_generations(
    State(state): State<Arc<AppState>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    proxy(&state, Operation::ImageGenerations, body).await
}

async fn proxy(
    state: &AppState,
    operation: Operation,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::BodyTooLarge(state.max_body_bytes)
        } else {
            ApiError::InvalidJson(rejection.body_text())
        }
    })?;
    let mut request = ClientRequest::parse(operation, &body)?;
    let gateway = state.gateway.load_full();
    let model = std::mem::take(&mut request.model);
    let target = gateway.resolve(&model).map_err(|e| match e {
        ResolveError::NotFound => ApiError::ModelNotFound(model.clone()),
        ResolveError::Ambiguous(candidates) => ApiError::AmbiguousModel {
            model: model.clone(),
            candidates,
        },
    })?;
    let canonical = request.canonical(target.model);
    let info = RequestInfo {
        operation,
        model: canonical.model.clone(),
        stream: canonical.stream,
    };
    let provider = target.provider;
    let mut call = provider
        .plugin
        .start()
        .await
        .map_err(ApiError::PluginFailed)?;
    let prepared = call
        .prepare(&provider.config, &canonical)
        .await
        .map_err(ApiError::PluginFailed)?
        .map_err(|error| provider_error(&target, error))?;

    let response = match prepared {
        Prepared::Local(completion) => json_response(completion),
        Prepared::LocalStream(output) => {
            stream::local(output, request.client_wants_usage).into_response()
        }
        Prepared::Upstream(http) => {
            let upstream = upstream::send(&state.http, http, provider.timeout)
                .await
                .map_err(|e| ApiError::upstream(&provider.name, e))?;
            if request.stream && upstream.status().is_success() {
                let headers = header_pairs(upstream.headers());
                let decoder = call
                    .open_stream(&provider.config, &info, &headers)
                    .await
                    .map_err(ApiError::PluginFailed)?;
                stream::relay(
                    std::sync::Arc::clone(&provider.name),
                    decoder,
                    upstream,
                    provider.timeout,
                    request.client_wants_usage,
                )
                .into_response()
            } else {
                let completion = complete(&mut call, &target, &info, upstream).await?;
                json_response(completion)
            }
        }
    };
    Ok(with_route_headers(response, &target))
}

/// Reads a whole upstream response and has the plugin translate it.
async fn complete(
    call: &mut PluginCall,
    target: &Target<'_>,
    info: &RequestInfo,
    upstream: reqwest::Response,
) -> Result<Completion, ApiError> {
    let provider = target.provider;
    let status = upstream.status().as_u16();
    let headers = header_pairs(upstream.headers());
    let body = upstream::read_body(upstream, provider.timeout)
        .await
        .map_err(|e| ApiError::upstream(&provider.name, e))?;
    let response = HttpResponse {
        status,
        headers,
        body: body.to_vec(),
    };
    call.parse_response(&provider.config, info, &response)
        .await
        .map_err(ApiError::PluginFailed)?
        .map_err(|error| provider_error(target, error))
}

/// Headers as plugins receive them: lower-case names (as `http` keeps them), UTF-8 values.
fn header_pairs(headers: &reqwest::header::HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
        .collect()
}

fn provider_error(target: &Target<'_>, error: crate::plugins::PluginError) -> ApiError {
    ApiError::Provider {
        provider: target.provider.name.to_string(),
        error,
    }
}

fn json_response(completion: Completion) -> Response {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        completion.body,
    )
        .into_response()
}

/// Names the provider and model that answered.
fn with_route_headers(mut response: Response, target: &Target<'_>) -> Response {
    let headers = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&target.provider.name) {
        headers.insert("x-wasmgate-provider", v);
    }
    if let Ok(v) = HeaderValue::from_str(target.model) {
        headers.insert("x-wasmgate-model", v);
    }
    response
}
