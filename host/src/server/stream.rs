//! Server-sent-event responses: `data: {chunk}` events and a final `data: [DONE]`.
//!
//! The relay pulls upstream bytes only as fast as the client takes events, so when the client
//! goes away the body (and with it the upstream response) is dropped: the upstream connection is
//! closed and generation stops there too.

use std::collections::VecDeque;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use futures_util::stream::{self, BoxStream};

use super::error::ApiError;
use crate::plugins::{ProviderStream, StreamOutput, Usage};

const DONE: &[u8] = b"data: [DONE]\n\n";

/// Called once when a request is over (for a stream: finished, failed, or dropped because the
/// client went away) with the last usage the upstream reported, its cost in micro-USD when the
/// model is priced, and whether it finished normally.
pub type OnFinish = Box<dyn FnOnce(Option<Usage>, Option<i64>, bool) + Send>;

/// An SSE response from events the plugin produced without any upstream.
pub fn local(output: StreamOutput, client_wants_usage: bool) -> SseResponse {
    let mut body = Vec::new();
    write_events(&mut body, output.events, client_wants_usage);
    body.extend_from_slice(DONE);
    SseResponse(Body::from(body))
}

/// An SSE response relaying an upstream stream through the plugin's decoder.
pub fn relay(
    provider: std::sync::Arc<str>,
    decoder: ProviderStream,
    upstream: reqwest::Response,
    idle_timeout: Duration,
    client_wants_usage: bool,
    on_finish: Option<OnFinish>,
) -> SseResponse {
    let relay = Relay {
        on_finish,
        usage: None,
        failed: false,
        provider,
        decoder,
        upstream: upstream.bytes_stream().boxed(),
        idle_timeout,
        client_wants_usage,
        ready: VecDeque::new(),
        ended: false,
    };
    let events = stream::unfold(relay, |mut relay| async move {
        let next = relay.next().await?;
        Some((Ok::<_, std::convert::Infallible>(next), relay))
    });
    SseResponse(Body::from_stream(events))
}

pub struct SseResponse(Body);

impl IntoResponse for SseResponse {
    fn into_response(self) -> Response {
        (
            [
                (header::CONTENT_TYPE, "text/event-stream"),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            self.0,
        )
            .into_response()
    }
}

struct Relay {
    on_finish: Option<OnFinish>,
    usage: Option<Usage>,
    failed: bool,
    provider: std::sync::Arc<str>,
    decoder: ProviderStream,
    upstream: BoxStream<'static, reqwest::Result<Bytes>>,
    idle_timeout: Duration,
    client_wants_usage: bool,
    ready: VecDeque<Bytes>,
    ended: bool,
}

impl Relay {
    /// The next bytes to send to the client, or `None` at the end.
    async fn next(&mut self) -> Option<Bytes> {
        loop {
            if let Some(bytes) = self.ready.pop_front() {
                return Some(bytes);
            }
            if self.ended {
                return None;
            }
            let chunk = tokio::time::timeout(self.idle_timeout, self.upstream.next()).await;
            let decoded = match chunk {
                Ok(Some(Ok(bytes))) => self.decoder.push(&bytes).await,
                Ok(None) => {
                    self.ended = true;
                    self.decoder.finish().await
                }
                Ok(Some(Err(e))) => {
                    let provider = self.provider.to_string();
                    self.fail(&ApiError::UpstreamUnreachable {
                        provider,
                        detail: e.without_url().to_string(),
                    });
                    continue;
                }
                Err(_) => {
                    let provider = self.provider.to_string();
                    self.fail(&ApiError::UpstreamTimeout { provider });
                    continue;
                }
            };
            match decoded {
                Ok(Ok(output)) => {
                    if output.usage.is_some() {
                        self.usage = output.usage;
                    }
                    let mut buf = Vec::new();
                    write_events(&mut buf, output.events, self.client_wants_usage);
                    if self.ended {
                        buf.extend_from_slice(DONE);
                    }
                    if !buf.is_empty() {
                        self.ready.push_back(Bytes::from(buf));
                    }
                }
                Ok(Err(error)) => {
                    let provider = self.provider.to_string();
                    self.fail(&ApiError::Provider { provider, error });
                }
                Err(failure) => self.fail(&ApiError::PluginFailed(failure)),
            }
        }
    }

    /// Ends the stream with an error event, as OpenAI does mid-stream.
    fn fail(&mut self, error: &ApiError) {
        tracing::warn!("stream ended early: {error}");
        let event = serde_json::json!({ "error": error.detail() });
        self.ready
            .push_back(Bytes::from(format!("data: {event}\n\n")));
        self.ended = true;
        self.failed = true;
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        if let Some(on_finish) = self.on_finish.take() {
            on_finish(self.usage, None, self.ended && !self.failed);
        }
    }
}

/// Frames events as SSE. The usage-only chunk (empty `choices`) is kept only for clients that
/// asked for it: the gateway always asks upstream for usage, but a client that did not may not
/// expect a chunk without choices.
fn write_events(buf: &mut Vec<u8>, events: Vec<String>, client_wants_usage: bool) {
    for event in events {
        if !client_wants_usage && is_usage_only(&event) {
            continue;
        }
        buf.extend_from_slice(b"data: ");
        buf.extend_from_slice(event.as_bytes());
        buf.extend_from_slice(b"\n\n");
    }
}

fn is_usage_only(event: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(default)]
        choices: Vec<serde::de::IgnoredAny>,
        #[serde(default)]
        usage: Option<serde::de::IgnoredAny>,
    }
    // Cheap pre-check: only an event with an empty choices list can be usage-only.
    if !event.contains("\"choices\":[]") && !event.contains("\"choices\": []") {
        return false;
    }
    serde_json::from_str::<Probe>(event)
        .map(|p| p.choices.is_empty() && p.usage.is_some())
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_the_usage_chunk_only_for_clients_that_did_not_ask() {
        let events = || {
            vec![
                r#"{"choices":[{"delta":{"content":"a"}}],"usage":null}"#.to_owned(),
                r#"{"choices":[],"usage":{"prompt_tokens":1}}"#.to_owned(),
            ]
        };
        let mut without = Vec::new();
        write_events(&mut without, events(), false);
        let mut with = Vec::new();
        write_events(&mut with, events(), true);
        assert_eq!(
            String::from_utf8_lossy(&without).matches("data: ").count(),
            1
        );
        assert_eq!(String::from_utf8_lossy(&with).matches("data: ").count(), 2);
    }
}
