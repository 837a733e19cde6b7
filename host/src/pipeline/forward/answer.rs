//! A pass-through answer relayed to the client as it arrives. Of a JSON or event-stream body,
//! the whole (up to [`WHOLE_MAX`]) or the last [`TAIL_MAX`] bytes are kept, so that the entry's
//! plugin can read the usage from its end; the request ends (its record in the journal before
//! the last bytes go) when the body does, breaks, or the client leaves.

use std::time::Duration;

use axum::body::{Body, Bytes};
use futures_util::StreamExt;
use futures_util::stream::{self, BoxStream};

use axum::http::{HeaderName, HeaderValue, StatusCode};

use crate::clip::clip;
use crate::pipeline::context::{Context, Tried};
use crate::pipeline::finish::End;
use crate::plugins::{HttpResponse, PassthroughCall, SlotKind, Usage};

/// A pass-through answer, ready to send: the upstream's status and headers, its body relayed.
pub struct Forwarded {
    pub status: StatusCode,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub body: Body,
}

/// Bytes of a body kept whole for its usage to be read, at most.
const WHOLE_MAX: usize = 1 << 20;
/// Bytes of a longer body's end kept instead.
const TAIL_MAX: usize = 64 << 10;
/// Bytes of a model name an answer reports that the record keeps.
const MODEL_MAX: usize = 200;

/// An upstream's answer: its status and headers, and its body as it comes (or, once guarded,
/// as the guards left it).
pub struct Upstream {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: BoxStream<'static, reqwest::Result<Bytes>>,
}

impl From<reqwest::Response> for Upstream {
    fn from(response: reqwest::Response) -> Self {
        Self {
            status: response.status(),
            headers: response.headers().clone(),
            body: response.bytes_stream().boxed(),
        }
    }
}

/// The response relaying `upstream`, which entry `provider` (an index into the context's
/// config) answered to `call`.
pub fn relay(cx: Context, upstream: Upstream, provider: usize, call: PassthroughCall) -> Forwarded {
    let Upstream {
        status,
        headers: upstream_headers,
        body: upstream,
    } = upstream;
    let headers = super::headers::to_client(&upstream_headers);
    let textual = upstream_headers
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.contains("json") || t.contains("event-stream"));
    let kept_headers = upstream_headers
        .iter()
        .filter_map(|(n, v)| Some((n.as_str().to_owned(), v.to_str().ok()?.to_owned())))
        .collect();
    let idle_timeout = cx.gateway.providers[provider].timeout;
    let pass = Pass {
        cx: Some(cx),
        provider,
        call,
        status: status.as_u16(),
        headers: kept_headers,
        kept: Kept::new(textual && status.is_success()),
        upstream,
        idle_timeout,
    };
    let body = Body::from_stream(stream::unfold(pass, |mut pass| async move {
        let next = pass.next().await?;
        Some((next, pass))
    }));
    Forwarded {
        status,
        headers,
        body,
    }
}

struct Pass {
    cx: Option<Context>,
    provider: usize,
    call: PassthroughCall,
    status: u16,
    headers: Vec<(String, String)>,
    kept: Kept,
    upstream: BoxStream<'static, reqwest::Result<Bytes>>,
    idle_timeout: Duration,
}

impl Pass {
    async fn next(&mut self) -> Option<Result<Bytes, std::io::Error>> {
        let cx = self.cx.as_mut()?;
        match tokio::time::timeout(self.idle_timeout, self.upstream.next()).await {
            Ok(Some(Ok(bytes))) => {
                cx.first_output();
                self.kept.push(&bytes);
                Some(Ok(bytes))
            }
            Ok(None) => {
                let mut cx = self.cx.take()?;
                let usage = self.usage(&mut cx).await;
                cx.finish(End::Passed {
                    status: self.status,
                    usage,
                    completed: true,
                })
                .wait()
                .await;
                None
            }
            // The body is the upstream's, in no shape the gateway could write an error into:
            // the connection is cut, which clients see as an incomplete body.
            Ok(Some(Err(e))) => Some(Err(self.fail(e.without_url().to_string()))),
            Err(_) => Some(Err(self.fail("the upstream went quiet".to_owned()))),
        }
    }

    /// The usage the entry's plugin reads from what was kept, if anything was.
    async fn usage(&mut self, cx: &mut Context) -> Option<Usage> {
        let (body, whole) = self.kept.take()?;
        let gateway = std::sync::Arc::clone(&cx.gateway);
        let provider = &gateway.providers[self.provider];
        let response = HttpResponse {
            status: self.status,
            headers: std::mem::take(&mut self.headers),
            body,
        };
        let read = async {
            let mut instance = provider.plugin.start(SlotKind::Call).await?;
            instance
                .passthrough_usage(&provider.config, &self.call, &response, whole)
                .await
        };
        let metered = match read.await {
            Ok(metered) => metered?,
            Err(failure) => {
                tracing::warn!("reading a pass-through answer's usage failed: {failure}");
                return None;
            }
        };
        if let (Some(model), Some(tried)) = (&metered.model, cx.target.as_mut()) {
            let model = clip(model, MODEL_MAX).into_owned();
            *tried = Tried {
                price: provider.price(&model),
                model,
                provider: std::mem::take(&mut tried.provider),
                system: tried.system.clone(),
            };
        }
        Some(metered.usage)
    }

    fn fail(&mut self, detail: String) -> std::io::Error {
        tracing::warn!("pass-through answer ended early: {detail}");
        self.end();
        std::io::Error::other(detail)
    }

    /// Ends the request once, incomplete.
    fn end(&mut self) {
        if let Some(cx) = self.cx.take() {
            drop(cx.finish(End::Passed {
                status: self.status,
                usage: None,
                completed: false,
            }));
        }
    }
}

impl Drop for Pass {
    fn drop(&mut self) {
        // The client left before the end.
        self.end();
    }
}

/// What is kept of the body for its usage: all of it while it is small, then its tail.
struct Kept {
    bytes: Vec<u8>,
    whole: bool,
    /// Nothing is kept of a body whose usage cannot be read (binary, or an error).
    on: bool,
}

impl Kept {
    fn new(on: bool) -> Self {
        Self {
            bytes: Vec::new(),
            whole: true,
            on,
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        if !self.on {
            return;
        }
        self.bytes.extend_from_slice(bytes);
        if self.whole && self.bytes.len() > WHOLE_MAX {
            self.whole = false;
        }
        // Trimmed in steps, so that a stream of small chunks does not move the tail each time.
        if !self.whole && self.bytes.len() > 2 * TAIL_MAX {
            let cut = self.bytes.len() - TAIL_MAX;
            self.bytes.drain(..cut);
        }
    }

    /// The bytes kept and whether they are the whole body; `None` when nothing was kept.
    fn take(&mut self) -> Option<(Vec<u8>, bool)> {
        if !self.on || self.bytes.is_empty() {
            return None;
        }
        let mut bytes = std::mem::take(&mut self.bytes);
        if !self.whole && bytes.len() > TAIL_MAX {
            bytes.drain(..bytes.len() - TAIL_MAX);
        }
        Some((bytes, self.whole))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_small_body_is_kept_whole_and_a_large_one_by_its_tail() {
        let mut kept = Kept::new(true);
        kept.push(b"{\"usage\":");
        kept.push(b"{}}");
        assert_eq!(kept.take(), Some((b"{\"usage\":{}}".to_vec(), true)));

        let mut kept = Kept::new(true);
        for _ in 0..40 {
            kept.push(&[b'x'; 64 << 10]);
        }
        kept.push(b"END");
        let (bytes, whole) = kept.take().unwrap();
        assert!(!whole);
        assert_eq!(bytes.len(), TAIL_MAX);
        assert!(bytes.ends_with(b"END"));

        let mut off = Kept::new(false);
        off.push(b"binary");
        assert_eq!(off.take(), None);
    }
}
