//! The pass-through routes, `<passthrough.prefix>/<entry>/<path>`, served from the router's
//! fallback (the prefix is the config's, so it can change on reload): see
//! [`crate::pipeline::forward`]. Errors are written in OpenAI's shape.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::Extension;
use axum::http::{HeaderMap, Method, Uri};
use axum::response::{IntoResponse, Response};

use super::request_log::{LoggedAtEnd, RequestId};
use crate::error::Dialect;
use crate::pipeline::Incoming;
use crate::pipeline::forward::{self, Destination};
use crate::plugins::Operation;
use crate::state::AppState;

/// The request forwarded if its path is under the pass-through prefix; else it is handed back.
pub async fn serve(
    state: &Arc<AppState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    id: Option<Extension<RequestId>>,
    body: Body,
) -> Result<Response, (Method, Uri, HeaderMap, Option<Extension<RequestId>>, Body)> {
    let prefix = state.gateway.load().config.passthrough.prefix.clone();
    let Some(rest) = uri
        .path()
        .strip_prefix(prefix.as_str())
        .filter(|rest| rest.starts_with('/'))
    else {
        return Err((method, uri, headers, id, body));
    };
    let rest = rest.to_owned();
    let incoming = Incoming {
        dialect: Dialect::Chat,
        // Unused: a pass-through request is recorded as `passthrough`.
        operation: Operation::ChatCompletions,
        request_id: id.map(|Extension(RequestId(id))| id).unwrap_or_default(),
        headers,
        body,
        edge: None,
        socket: None,
    };
    let to = Destination {
        method: &method,
        rest: &rest,
        query: uri.query(),
    };
    // Boxed: the forwarding's state (about 9 KB) would otherwise size the future of every
    // request the dialect routes serve, which asks here first.
    let mut response = match Box::pin(forward::run(state, incoming, to)).await {
        Ok(forwarded) => {
            let mut response = Response::new(forwarded.body);
            *response.status_mut() = forwarded.status;
            let headers = response.headers_mut();
            for (name, value) in forwarded.headers {
                headers.append(name, value);
            }
            response
        }
        Err(refused) => refused.into_response(),
    };
    response.extensions_mut().insert(LoggedAtEnd);
    Ok(response)
}
