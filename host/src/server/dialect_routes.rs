//! The registry's dialects, served: a request whose path no fixed route takes is matched
//! against the routes the config's dialect plugins declared, its key read from where its
//! dialect says, and it is answered by the pipeline (a model call), by the gateway's count of
//! its prompt, or from the model list. Every error on these routes is written by the dialect's
//! plugin, from the config snapshot the route was found in.

use std::sync::Arc;

use axum::Json;
use axum::body::Body;
use axum::extract::{Extension, State};
use axum::http::header::AUTHORIZATION;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, Uri, header};
use axum::response::{IntoResponse, Response};

use super::request_log::{LoggedAtEnd, RequestId};
use crate::error::{ApiError, Dialect};
use crate::pipeline::edge::{self as edge_of, Edge};
use crate::pipeline::{self, Incoming};
use crate::plugins::{KeySource, Mounted, Operation, RouteKind, Unmatched};
use crate::state::AppState;

/// Bytes of a key read from a dialect's own header or query parameter, at most.
const KEY_MAX: usize = 512;

/// The router's fallback for a path it knows with other methods: a dialect's route, or the
/// method-not-allowed error.
pub async fn serve_or_refuse(
    state: State<Arc<AppState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    id: Option<Extension<RequestId>>,
    body: Body,
) -> Response {
    let known = state
        .gateway
        .load()
        .dialects
        .find(&method, uri.path(), uri.query())
        .is_ok();
    if !known {
        return super::unrouted::method_not_allowed(&method, &uri).into_response();
    }
    serve(state, method, uri, headers, id, body).await
}

/// The router's fallback: a pass-through route, a dialect's route, or the unknown-route error.
pub async fn serve(
    State(state): State<Arc<AppState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    id: Option<Extension<RequestId>>,
    body: Body,
) -> Response {
    let (method, uri, mut headers, id, body) =
        match super::passthrough::serve(&state, method, uri, headers, id, body).await {
            Ok(response) => return response,
            Err(not_ours) => not_ours,
        };
    let gateway = state.gateway.load_full();
    let matched = match gateway.dialects.find(&method, uri.path(), uri.query()) {
        Ok(matched) => matched,
        Err(Unmatched::NoRoute) => {
            return super::unrouted::unknown_route(&method, &uri).into_response();
        }
        Err(Unmatched::Method(dialect, allowed)) => {
            let refused = ApiError::MethodNotAllowed {
                method: method.to_string(),
                path: uri.path().to_owned(),
            };
            let mut response = error(&dialect, &refused).await;
            // As RFC 9110 asks of a 405, and as axum writes it for the fixed routes.
            let allow: Vec<&str> = allowed.iter().map(Method::as_str).collect();
            if let Ok(value) = HeaderValue::from_str(&allow.join(",")) {
                response.headers_mut().insert(header::ALLOW, value);
            }
            return response;
        }
        Err(Unmatched::BadParams(dialect, message)) => {
            let refused = ApiError::InvalidField {
                param: "url".to_owned(),
                message,
            };
            return error(&dialect, &refused).await;
        }
    };
    let dialect = Arc::clone(&matched.dialect);
    if let Err(refused) = present_key(&dialect, &mut headers, uri.query()) {
        return error(&dialect, &refused).await;
    }
    let edge = Edge { gateway, matched };
    // The other kinds are boxed: each request's future is as large as its largest state, and a
    // model call's, the one held while the upstream answers, is the smallest.
    let answered = match edge.matched.route().kind {
        RouteKind::Call => return call(&state, edge, headers, id, body).await,
        RouteKind::CountTokens => Box::pin(crate::pipeline::count::count_tokens(
            &state, &edge, &headers, body,
        ))
        .await
        .map(|(body, counter)| (body, Some(counter))),
        RouteKind::ListModels | RouteKind::GetModel => Box::pin(models(&state, &edge, headers))
            .await
            .map(|body| (body, None)),
    };
    match answered {
        Ok((body, counter)) => {
            let mut response = ([(header::CONTENT_TYPE, "application/json")], body).into_response();
            if let Some(counter) = counter {
                // Which tokenizer counted: the model's own, or the gateway's estimate.
                response.headers_mut().insert(
                    HeaderName::from_static("x-wasmgate-count"),
                    HeaderValue::from_static(counter.name()),
                );
            }
            response
        }
        Err(refused) => error(&dialect, &refused).await,
    }
}

/// A model call, through the pipeline. Its log line is written when it ends (by `finish`).
async fn call(
    state: &AppState,
    edge: Edge,
    headers: HeaderMap,
    id: Option<Extension<RequestId>>,
    body: Body,
) -> Response {
    let incoming = Incoming {
        dialect: Dialect::Plugin,
        // Until its plugin has decoded the body into the canonical operation it stands for.
        operation: Operation::ChatCompletions,
        request_id: id.map(|Extension(RequestId(id))| id).unwrap_or_default(),
        headers,
        body,
        edge: Some(edge),
        socket: None,
    };
    // Its errors come written by the dialect's plugin, from the pipeline's way out.
    let mut response = super::proxy::respond(pipeline::run(state, incoming).await);
    response.extensions_mut().insert(LoggedAtEnd);
    response
}

/// The gateway's model list (or the one model the route names) in the dialect's shape.
async fn models(
    state: &Arc<AppState>,
    edge: &Edge,
    headers: HeaderMap,
) -> Result<String, ApiError> {
    let Json(list) = super::models::list(State(Arc::clone(state)), headers).await?;
    let mut list = serde_json::to_value(&list).map_err(|e| ApiError::InvalidJson(e.to_string()))?;
    if edge.matched.route().kind == RouteKind::GetModel {
        let wanted = edge.matched.param("model").unwrap_or_default().to_owned();
        crate::pipeline::request::check_model(&wanted)?;
        let data = list.get_mut("data").and_then(|d| d.as_array_mut());
        let found = data.is_some_and(|data| {
            data.retain(|m| m.get("id").and_then(|id| id.as_str()) == Some(wanted.as_str()));
            !data.is_empty()
        });
        if !found {
            return Err(ApiError::ModelNotFound(wanted));
        }
    }
    edge_of::models(&edge.matched, &list.to_string()).await
}

/// The error as the dialect's plugin writes it, with the status and headers every error gets.
async fn error(dialect: &Mounted, refused: &ApiError) -> Response {
    let plugin = Some(dialect.plugin.clone());
    // Boxed for the reason the route kinds are (`serve`).
    let body = Box::pin(edge_of::error_body(plugin, Dialect::Plugin, refused)).await;
    let mut response = refused.response(Dialect::Plugin);
    *response.body_mut() = Body::from(body);
    response
}

/// A key sent where the dialect says (`x-goog-api-key`, `?key=`) is presented to the auth stage
/// as a bearer key, so that one check serves every dialect; a second place carrying another key
/// is refused rather than guessed between.
fn present_key(
    dialect: &Mounted,
    headers: &mut HeaderMap,
    query: Option<&str>,
) -> Result<(), ApiError> {
    let mut found: Option<String> = None;
    for source in &dialect.keys {
        let (name, values): (&str, Vec<String>) = match source {
            KeySource::Header(name) => (
                name,
                headers
                    .get_all(name.as_str())
                    .iter()
                    .map(|v| v.to_str().unwrap_or("\u{0}").trim().to_owned())
                    .collect(),
            ),
            KeySource::Query(name) => (
                name,
                form_urlencoded::parse(query.unwrap_or("").as_bytes())
                    .filter(|(k, _)| k == name.as_str())
                    .map(|(_, v)| v.trim().to_owned())
                    .collect(),
            ),
        };
        let refuse = |message: &str| ApiError::InvalidField {
            param: crate::clip::clip(name, 64).into_owned(),
            message: message.to_owned(),
        };
        if values.len() > 1 {
            return Err(refuse("The key is sent twice."));
        }
        let Some(value) = values.into_iter().next().filter(|v| !v.is_empty()) else {
            continue;
        };
        if value.len() > KEY_MAX {
            return Err(refuse("The key is too long."));
        }
        match &found {
            Some(other) if *other != value => {
                return Err(refuse(
                    "Two places carry different keys: send it in one of them.",
                ));
            }
            _ => found = Some(value),
        }
    }
    let Some(key) = found else {
        return Ok(());
    };
    let existing = pipeline::caller::bearer(headers)
        .or_else(|| headers.get("x-api-key").and_then(|v| v.to_str().ok()))
        .map(str::trim);
    match existing {
        Some(other) if other != key => Err(ApiError::InvalidField {
            param: "key".to_owned(),
            message: "Two places carry different keys: send it in one of them.".to_owned(),
        }),
        Some(_) => Ok(()),
        None => {
            let value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                ApiError::InvalidField {
                    param: "key".to_owned(),
                    message: "The key is not a printable string.".to_owned(),
                }
            })?;
            headers.insert(AUTHORIZATION, value);
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of the future `f` returns, without a call.
    fn future_size<'a, A: 'a, B, F: std::future::Future>(_: impl FnOnce(&'a A, B) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    type Parts = (Method, Uri, HeaderMap, Option<Extension<RequestId>>, Body);

    /// A model call on a dialect's route (Messages, Responses) holds its handler's future while
    /// the upstream answers: the call's state, not a pass-through's, a token count's, a model
    /// list's or an error's, which are boxed.
    #[test]
    fn a_model_call_holds_the_calls_state_not_a_rarer_routes() {
        let serve = future_size(
            |state: &Arc<AppState>, (method, uri, headers, id, body): Parts| {
                serve(State(Arc::clone(state)), method, uri, headers, id, body)
            },
        );
        let call =
            future_size(
                |state: &AppState,
                 (edge, headers, id, body): (
                    Edge,
                    HeaderMap,
                    Option<Extension<RequestId>>,
                    Body,
                )| { call(state, edge, headers, id, body) },
            );
        eprintln!("serve {serve}, call {call} bytes");
        assert!(
            serve <= call + 1024,
            "a dialect route's future is {serve} bytes where a model call's is {call}: a rarer \
             route's state sizes every call in flight"
        );
    }
}
