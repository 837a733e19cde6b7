//! The stream relay: server-sent events (`data: {chunk}`, then `data: [DONE]`) decoded from the
//! upstream by the provider plugin and passed on to the client.
//!
//! The relay pulls upstream bytes only as fast as the client takes events, so when the client
//! goes away the body (and with it the upstream response) is dropped: the upstream connection is
//! closed and generation stops there too. The body owns the request's context and finishes it
//! when the stream ends, breaks, or is dropped.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use futures_util::StreamExt;
use futures_util::stream::{self, BoxStream};

use super::context::{Context, Dialect};
use super::error::ApiError;
use super::finish::End;
use crate::plugins::{ProviderStream, StreamOutput, Usage};
use crate::redact::Redactor;

const DONE: &[u8] = b"data: [DONE]\n\n";

/// The whole SSE body of events the plugin produced without any upstream.
pub fn local(output: StreamOutput, client_wants_usage: bool) -> Vec<u8> {
    let mut body = Vec::new();
    write_events(&mut body, output.events, client_wants_usage);
    body.extend_from_slice(DONE);
    body
}

/// An upstream stream the attempt opened, for the relay to pass on.
pub struct Upstream {
    pub provider: Arc<str>,
    pub decoder: ProviderStream,
    pub response: reqwest::Response,
    /// The longest wait for the next upstream bytes.
    pub idle_timeout: Duration,
}

/// The response body relaying `upstream` through its plugin's decoder; it finishes `cx`.
pub fn body(upstream: Box<Upstream>, cx: Context) -> Body {
    let upstream = *upstream;
    let relay = Relay {
        client_wants_usage: cx.request.client_wants_usage,
        redactor: cx.redactor.clone(),
        dialect: cx.dialect,
        cx: Some(cx),
        text: String::new(),
        usage: None,
        failed: false,
        provider: upstream.provider,
        decoder: upstream.decoder,
        upstream: upstream.response.bytes_stream().boxed(),
        idle_timeout: upstream.idle_timeout,
        ready: VecDeque::new(),
        ended: false,
    };
    let events = stream::unfold(relay, |mut relay| async move {
        let next = relay.next().await?;
        Some((Ok::<_, std::convert::Infallible>(next), relay))
    });
    Body::from_stream(events)
}

struct Relay {
    /// The request, finished when the relay is dropped (taken there, once).
    cx: Option<Context>,
    /// Keeps the request's secrets out of an error event relayed from the upstream.
    redactor: Redactor,
    /// The client's dialect, which error events are written in.
    dialect: Dialect,
    /// The text sent so far, kept only until the upstream reports usage.
    text: String,
    usage: Option<Usage>,
    failed: bool,
    provider: Arc<str>,
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
                        self.text = String::new();
                    } else if self.usage.is_none() {
                        output
                            .events
                            .iter()
                            .for_each(|e| delta_text(e, &mut self.text));
                    }
                    let mut buf = Vec::new();
                    write_events(&mut buf, output.events, self.client_wants_usage);
                    if self.ended {
                        buf.extend_from_slice(DONE);
                    }
                    if !buf.is_empty() {
                        if let Some(cx) = &mut self.cx {
                            cx.first_output();
                        }
                        self.ready.push_back(Bytes::from(buf));
                    }
                }
                Ok(Err(error)) => {
                    let error = ApiError::provider(&self.provider, error, &self.redactor);
                    self.fail(&error);
                }
                Err(failure) => self.fail(&ApiError::PluginFailed(failure)),
            }
        }
    }

    /// Ends the stream with an error event, as OpenAI does mid-stream.
    fn fail(&mut self, error: &ApiError) {
        tracing::warn!("stream ended early: {error}");
        self.ready
            .push_back(Bytes::from(error.stream_event(self.dialect)));
        self.ended = true;
        self.failed = true;
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        if let Some(cx) = self.cx.take() {
            cx.finish(End::Streamed {
                usage: self.usage,
                text: std::mem::take(&mut self.text),
                completed: self.ended && !self.failed,
            });
        }
    }
}

/// Appends the text of a chunk's `choices[].delta` (content, reasoning, tool arguments).
fn delta_text(event: &str, text: &mut String) {
    #[derive(serde::Deserialize)]
    struct Chunk<'a> {
        #[serde(default, borrow)]
        choices: Vec<Choice<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Choice<'a> {
        #[serde(default, borrow)]
        delta: Option<Delta<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Delta<'a> {
        #[serde(default, borrow)]
        content: Option<std::borrow::Cow<'a, str>>,
        #[serde(default, borrow)]
        reasoning_content: Option<std::borrow::Cow<'a, str>>,
        #[serde(default)]
        tool_calls: Vec<serde_json::Value>,
    }
    let Ok(chunk) = serde_json::from_str::<Chunk<'_>>(event) else {
        return;
    };
    for delta in chunk.choices.into_iter().filter_map(|c| c.delta) {
        for part in [delta.content, delta.reasoning_content]
            .into_iter()
            .flatten()
        {
            text.push_str(&part);
        }
        for call in delta.tool_calls {
            if let Some(args) = call["function"]["arguments"].as_str() {
                text.push_str(args);
            }
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
    fn collects_the_text_of_deltas() {
        let mut text = String::new();
        delta_text(r#"{"choices":[{"delta":{"content":"Hel"}}]}"#, &mut text);
        delta_text(
            r#"{"choices":[{"delta":{"content":"lo \"x\""}}]}"#,
            &mut text,
        );
        delta_text(
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"{}"}}]}}]}"#,
            &mut text,
        );
        delta_text(r#"{"choices":[],"usage":{"prompt_tokens":1}}"#, &mut text);
        delta_text("not json", &mut text);
        assert_eq!(text, "Hello \"x\"{}");
    }

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
