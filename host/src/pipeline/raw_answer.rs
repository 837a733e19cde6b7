//! Answers that are not JSON or events (speech audio): the upstream's bytes go to the client as
//! they arrive, with its content type, and the request ends with them. Its usage is what the
//! provider plugin counted from the request, so it is recorded whether or not the client stays
//! to the end (the upstream bills the text either way).

use std::time::Duration;

use axum::body::{Body, Bytes};
use futures_util::StreamExt;
use futures_util::stream::{self, BoxStream};

use super::context::Context;
use super::finish::End;
use crate::error::ApiError;
use crate::plugins::Usage;

/// A successful upstream answer to pass through.
pub struct Raw {
    pub provider: String,
    pub response: reqwest::Response,
    pub usage: Option<Usage>,
    /// The longest wait for the next upstream bytes.
    pub idle_timeout: Duration,
}

/// The content type to answer with: the upstream's, or bytes of no known type.
pub fn content_type(raw: &Raw) -> axum::http::HeaderValue {
    raw.response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .filter(|v| v.to_str().is_ok_and(|s| !s.is_empty()))
        .cloned()
        .unwrap_or(axum::http::HeaderValue::from_static(
            "application/octet-stream",
        ))
}

/// The response body relaying `raw`; it finishes `cx` when the upstream ends (its record in
/// the journal before the last bytes go), breaks, or the client leaves.
pub fn body(raw: Raw, cx: Context) -> Body {
    let pass = Pass {
        cx: Some(cx),
        usage: raw.usage,
        provider: raw.provider,
        upstream: raw.response.bytes_stream().boxed(),
        idle_timeout: raw.idle_timeout,
    };
    Body::from_stream(stream::unfold(pass, |mut pass| async move {
        let next = pass.next().await?;
        Some((next, pass))
    }))
}

struct Pass {
    cx: Option<Context>,
    usage: Option<Usage>,
    provider: String,
    upstream: BoxStream<'static, reqwest::Result<Bytes>>,
    idle_timeout: Duration,
}

impl Pass {
    async fn next(&mut self) -> Option<Result<Bytes, std::io::Error>> {
        let cx = self.cx.as_mut()?;
        match tokio::time::timeout(self.idle_timeout, self.upstream.next()).await {
            Ok(Some(Ok(bytes))) => {
                cx.first_output();
                Some(Ok(bytes))
            }
            Ok(None) => {
                let cx = self.cx.take()?;
                cx.finish(End::Answered(self.usage)).wait().await;
                None
            }
            // The audio is binary: no error event can be written into it. The connection is
            // cut, which clients see as an incomplete body.
            Ok(Some(Err(e))) => {
                let error = ApiError::UpstreamUnreachable {
                    provider: self.provider.clone(),
                    detail: e.without_url().to_string(),
                };
                Some(Err(self.fail(&error)))
            }
            Err(_) => {
                let provider = self.provider.clone();
                Some(Err(self.fail(&ApiError::UpstreamTimeout { provider })))
            }
        }
    }

    fn fail(&mut self, error: &ApiError) -> std::io::Error {
        tracing::warn!("audio stream ended early: {error}");
        self.end(false);
        std::io::Error::other(error.to_string())
    }

    /// Ends the request once, with the plugin's usage.
    fn end(&mut self, completed: bool) {
        if let Some(cx) = self.cx.take() {
            drop(cx.finish(End::Streamed {
                usage: self.usage,
                text: String::new(),
                completed,
            }));
        }
    }
}

impl Drop for Pass {
    fn drop(&mut self) {
        // The client left: the text was billed all the same.
        self.end(false);
    }
}
