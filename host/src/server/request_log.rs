//! Request ids and the one log line per request.

use std::time::Instant;

use axum::extract::Request;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;

use crate::clip::echo;
use crate::error::ErrorNote;

/// Gives every request an id (the client's `x-request-id` if it sent a sane one, else a UUIDv7), returns it in
/// the response, and logs one line when the response headers are ready.
pub async fn request_log(mut request: Request, next: Next) -> Response {
    let started = Instant::now();
    let id = request
        .headers()
        .get("x-request-id")
        .filter(|v| v.len() <= 128 && v.to_str().is_ok_and(|s| !s.is_empty()))
        .cloned()
        .unwrap_or_else(|| {
            // Time-ordered (v7): the ledger's index on request ids then grows at one end,
            // where random ids dirtied a page of it per record (a tenth of the gateway's CPU
            // went to writing those pages).
            HeaderValue::from_str(&uuid::Uuid::now_v7().to_string())
                .unwrap_or(HeaderValue::from_static("unknown"))
        });
    request
        .extensions_mut()
        .insert(RequestId(id.to_str().unwrap_or_default().to_owned()));
    let method = request.method().clone();
    // The client chose both (a method may be any token): bounded like every echo.
    let path = echo(request.uri().path()).into_owned();
    let mut response = next.run(request).await;
    if response.extensions().get::<LoggedAtEnd>().is_some() {
        response.headers_mut().insert("x-request-id", id);
        return response;
    }
    let status = response.status().as_u16();
    let headers = response.headers();
    let provider = header(headers, "x-wasmgate-provider");
    let model = header(headers, "x-wasmgate-model");
    let request_id = id.to_str().unwrap_or_default();
    let latency_us = started.elapsed().as_micros() as u64;
    match response.extensions().get::<ErrorNote>() {
        Some(ErrorNote(message, detail)) => tracing::warn!(
            request_id, method = %echo(method.as_str()), path, status, provider, model,
            latency_us, error = message.as_str(), detail = detail.as_deref().unwrap_or(""),
            "request failed"
        ),
        // Probes and scrapes arrive every few seconds: at `info` they would drown the requests.
        None if path == "/metrics" || path == "/health" => tracing::debug!(
            request_id, method = %echo(method.as_str()), path, status, latency_us, "request"
        ),
        None => tracing::info!(
            request_id, method = %echo(method.as_str()), path, status, provider, model,
            latency_us, "request"
        ),
    }
    response.headers_mut().insert("x-request-id", id);
    response
}

/// Marks a response whose request writes its own log line when it ends (the `/v1` proxy: a
/// stream's tokens are known only then).
#[derive(Clone, Copy, Debug)]
pub struct LoggedAtEnd;

/// The request's id, for handlers (the usage ledger).
#[derive(Clone, Debug, Default)]
pub struct RequestId(pub String);

fn header<'a>(headers: &'a axum::http::HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}
