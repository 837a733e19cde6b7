//! The HTTP client that talks to upstream providers on the plugins' behalf, and the guard
//! ([`guard`]) every request a plugin builds passes before it is sent.

mod form;
mod guard;
pub mod websocket;

use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

pub use form::{FilePart, Upload, send_form, send_form_part};
pub use guard::{Admitted, Refusal, Scope, dot_segment, shorten};

/// Why an upstream request got no response.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    #[error("the plugin built an invalid upstream request: {0}")]
    InvalidRequest(String),
    #[error("cannot reach the upstream: {0}")]
    Connect(String),
    #[error("the upstream did not answer within {0:?}")]
    Timeout(Duration),
}

/// One pooled client for every upstream. Nagle is off: streamed tokens must not wait for ACKs.
pub fn client() -> anyhow::Result<reqwest::Client> {
    // rustls needs a process-wide crypto provider; a second install is harmless.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .tcp_nodelay(true)
        .connect_timeout(Duration::from_secs(10))
        .pool_idle_timeout(Duration::from_secs(90))
        .pool_max_idle_per_host(1024)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| anyhow::anyhow!("building the HTTP client: {e}"))
}

/// Sends `request` (its URL checked by [`Scope::admit`]) and waits up to `timeout` for the
/// response headers.
pub async fn send(
    client: &reqwest::Client,
    admitted: Admitted,
    timeout: Duration,
) -> Result<reqwest::Response, UpstreamError> {
    let Admitted { request, url } = admitted;
    let method = reqwest::Method::from_bytes(request.method.as_bytes())
        .map_err(|_| UpstreamError::InvalidRequest(format!("bad method {:?}", request.method)))?;
    let headers = header_map(request.headers)?;
    let send = client
        .request(method, url)
        .headers(headers)
        .body(Bytes::from(request.body))
        .send();
    match tokio::time::timeout(timeout, send).await {
        Err(_) => Err(UpstreamError::Timeout(timeout)),
        Ok(Err(e)) if e.is_timeout() => Err(UpstreamError::Timeout(timeout)),
        Ok(Err(e)) => Err(UpstreamError::Connect(describe(e))),
        Ok(Ok(response)) => Ok(response),
    }
}

/// Sends `admitted` with its own headers and `body` (its own ignored) streamed as it is read,
/// waiting up to `timeout` for the response headers.
pub async fn send_body(
    client: &reqwest::Client,
    admitted: Admitted,
    body: reqwest::Body,
    timeout: Duration,
) -> Result<reqwest::Response, UpstreamError> {
    let headers = header_map(admitted.request.headers.clone())?;
    send_streaming(client, admitted, headers, body, timeout).await
}

/// Sends `admitted` (its own body ignored) with `body` streamed as it arrives, and `headers`
/// as they are (already checked), waiting up to `timeout` for the response headers: a
/// pass-through request, whose body the gateway never holds whole.
pub async fn send_streaming(
    client: &reqwest::Client,
    admitted: Admitted,
    headers: HeaderMap,
    body: reqwest::Body,
    timeout: Duration,
) -> Result<reqwest::Response, UpstreamError> {
    let Admitted { request, url } = admitted;
    let method = reqwest::Method::from_bytes(request.method.as_bytes())
        .map_err(|_| UpstreamError::InvalidRequest(format!("bad method {:?}", request.method)))?;
    let send = client
        .request(method, url)
        .headers(headers)
        .body(body)
        .send();
    match tokio::time::timeout(timeout, send).await {
        Err(_) => Err(UpstreamError::Timeout(timeout)),
        Ok(Err(e)) if e.is_timeout() => Err(UpstreamError::Timeout(timeout)),
        Ok(Err(e)) => Err(UpstreamError::Connect(describe(e))),
        Ok(Ok(response)) => Ok(response),
    }
}

/// A plugin's headers as a header map, each checked.
fn header_map(pairs: Vec<(String, String)>) -> Result<HeaderMap, UpstreamError> {
    let mut headers = HeaderMap::with_capacity(pairs.len());
    for (name, value) in pairs {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| UpstreamError::InvalidRequest(format!("bad header name {name:?}")))?;
        // The value may be a credential: never echo it.
        let value = HeaderValue::from_str(&value)
            .map_err(|_| UpstreamError::InvalidRequest(format!("bad value for header {name}")))?;
        headers.append(name, value);
    }
    Ok(headers)
}

/// Reads a whole response body, allowing `timeout` for it.
pub async fn read_body(
    response: reqwest::Response,
    timeout: Duration,
) -> Result<Bytes, UpstreamError> {
    match tokio::time::timeout(timeout, response.bytes()).await {
        Err(_) => Err(UpstreamError::Timeout(timeout)),
        Ok(Err(e)) => Err(UpstreamError::Connect(describe(e))),
        Ok(Ok(body)) => Ok(body),
    }
}

/// reqwest's error text without the URL, which may carry a key in its query string.
fn describe(error: reqwest::Error) -> String {
    let error = error.without_url();
    let mut text = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
