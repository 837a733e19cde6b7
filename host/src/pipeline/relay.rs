//! The stream relay: server-sent events decoded from the upstream by the provider plugin (or, for
//! a plain stream, by the host: [`super::plain::stream`]), passed
//! through the answer's guards, and handed to the edge's [`Frame`] that writes them for the
//! client (the relay moves canonical chunks, or a native target's own events, and never asks
//! which dialect the client spoke).
//!
//! The relay pulls upstream bytes only as fast as the client takes events, so when the client
//! goes away the body (and with it the upstream response) is dropped: the upstream connection is
//! closed and generation stops there too. The body owns the request's context and finishes it
//! when the stream ends, breaks, or is dropped: at an end it sends, before its last bytes go,
//! once the record is in the ledger's journal.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use futures_util::stream::{self, BoxStream};
use futures_util::{FutureExt, StreamExt};

use super::context::Context;
use super::finish::End;
use super::guard::watch::Watch;
use super::plain::stream::Decoder;
use crate::error::ApiError;
use crate::plugins::{PluginError, PluginFailure, ProviderStream, StreamOutput, Usage};
use crate::redact::Redactor;

/// How relayed events are written for the client: the edge's way out chooses one when the
/// stream opens. Each call gets the request (`None` once it has ended).
pub trait Frame: Send + 'static {
    /// The bytes for `events`; `ended`: the upstream ended behind them, with `usage`.
    fn frame(
        &mut self,
        cx: Option<&Context>,
        events: Vec<String>,
        ended: bool,
        usage: Option<Usage>,
    ) -> impl Future<Output = Result<Vec<u8>, ApiError>> + Send;

    /// The bytes that end the stream with `error`, as the client's API ends one mid-stream.
    fn fail(
        &mut self,
        cx: Option<&Context>,
        error: &ApiError,
    ) -> impl Future<Output = Vec<u8>> + Send;
}

/// An upstream stream the attempt opened, for the relay to pass on.
pub struct Upstream {
    pub provider: Arc<str>,
    /// The plugin's decoder, or the host's reading of a plain stream.
    pub decoder: Decoder,
    /// A second decoder reading the same bytes into canonical chunks, for the guards of a
    /// native answer (`guard/native.rs`).
    pub shadow: Option<ProviderStream>,
    /// The upstream's bytes: an HTTP response's body ([`http_bytes`]), or what an upstream
    /// socket's events stand for (`forward::socket`).
    pub bytes: BoxStream<'static, Result<Bytes, String>>,
    /// The longest wait for the next upstream bytes.
    pub idle_timeout: Duration,
    /// The upstream speaks the client's dialect (its events pass through as they are).
    pub native: bool,
}

/// The response body relaying `upstream` through its plugin's decoder, written by `framing`;
/// it finishes `cx`.
pub fn body(upstream: Box<Upstream>, cx: Context, framing: impl Frame) -> Body {
    let upstream = *upstream;
    let mut cx = cx;
    let mut guard = cx.guard.take_chain();
    let watch = match (upstream.shadow, guard.take()) {
        (Some(shadow), Some(chain)) => {
            let provider = Arc::clone(&upstream.provider);
            Some(Watch::new(shadow, chain, provider, cx.redactor.clone()))
        }
        (_, chain) => {
            guard = chain;
            None
        }
    };
    let relay = Relay {
        guard,
        watch,
        framing,
        redactor: cx.redactor.clone(),
        cx: Some(cx),
        text: String::new(),
        usage: None,
        failed: false,
        provider: upstream.provider,
        decoder: upstream.decoder,
        upstream: upstream.bytes,
        idle_timeout: upstream.idle_timeout,
        ready: VecDeque::new(),
        ended: false,
        pending: None,
    };
    let events = stream::unfold(relay, |mut relay| async move {
        let next = relay.next().await?;
        Some((Ok::<_, std::convert::Infallible>(next), relay))
    });
    Body::from_stream(events)
}

struct Relay<F> {
    /// The answer's guards, which the canonical chunks pass through before they are framed.
    guard: Option<super::guard::chain::AnswerChain>,
    /// A native answer's guards, on its canonical view.
    watch: Option<Watch>,
    /// The request, finished when the relay is dropped (taken there, once).
    cx: Option<Context>,
    /// Keeps the request's secrets out of an error event relayed from the upstream.
    redactor: Redactor,
    /// The text sent so far, kept only until the upstream reports usage.
    text: String,
    usage: Option<Usage>,
    failed: bool,
    provider: Arc<str>,
    decoder: Decoder,
    upstream: BoxStream<'static, Result<Bytes, String>>,
    idle_timeout: Duration,
    /// Writes the events for the client (the edge's).
    framing: F,
    ready: VecDeque<Bytes>,
    ended: bool,
    /// An error met behind gathered chunks, reported once their events are sent.
    pending: Option<ApiError>,
}

/// Upstream bytes taken at once, and what came after them.
#[derive(Debug)]
struct Gathered<E> {
    chunks: Vec<Bytes>,
    end: ReadEnd<E>,
}

#[derive(Debug, PartialEq)]
enum ReadEnd<E> {
    /// The stream goes on.
    More,
    /// The upstream finished the stream.
    Finished,
    /// Reading failed.
    Failed(E),
}

/// Bytes gathered into one write at most; past it, the rest waits for the next round.
const GATHER_MAX: usize = 64 << 10;
/// Yields without a new chunk before the gathered bytes go: the connection task takes one or
/// two turns of the scheduler to hand over a chunk it already holds.
const GATHER_YIELDS: u32 = 2;

impl<F: Frame> Relay<F> {
    /// The next bytes to send to the client, or `None` at the end.
    async fn next(&mut self) -> Option<Bytes> {
        loop {
            if let Some(bytes) = self.ready.pop_front() {
                if self.ended && self.ready.is_empty() && self.pending.is_none() {
                    self.finish().await;
                }
                return Some(bytes);
            }
            if let Some(error) = self.pending.take() {
                self.fail(&error).await;
                continue;
            }
            if self.ended {
                // The last events framed nothing: the body's end is still to go.
                self.finish().await;
                return None;
            }
            let chunk = tokio::time::timeout(self.idle_timeout, self.upstream.next()).await;
            let decoded = match chunk {
                Ok(Some(Ok(bytes))) => {
                    let read = gather(&mut self.upstream, bytes).await;
                    self.decode(read).await
                }
                Ok(None) => {
                    self.ended = true;
                    if let Err(error) = self.watch_read(true).await {
                        self.fail(&error).await;
                        continue;
                    }
                    self.decoder.finish().await
                }
                Ok(Some(Err(e))) => {
                    self.fail(&unreachable(&self.provider, e)).await;
                    continue;
                }
                Err(_) => {
                    let provider = self.provider.to_string();
                    self.fail(&ApiError::UpstreamTimeout { provider }).await;
                    continue;
                }
            };
            match decoded {
                Ok(Ok(output)) => {
                    if let Some(cx) = &mut self.cx {
                        cx.cache.push(&output.events);
                    }
                    if output.usage.is_some() {
                        self.usage = output.usage;
                        self.text = String::new();
                    } else if self.usage.is_none() {
                        output
                            .events
                            .iter()
                            .for_each(|e| delta_text(e, &mut self.text));
                    }
                    let events = match self.guarded(output.events).await {
                        Ok(events) => events,
                        Err(error) => {
                            self.fail(&error).await;
                            continue;
                        }
                    };
                    let (cx, ended, usage) = (self.cx.as_ref(), self.ended, self.usage);
                    let buf = match self.framing.frame(cx, events, ended, usage).await {
                        Ok(buf) => buf,
                        Err(error) => {
                            self.fail(&error).await;
                            continue;
                        }
                    };
                    if !buf.is_empty() {
                        if let Some(cx) = &mut self.cx {
                            cx.first_output();
                        }
                        self.ready.push_back(Bytes::from(buf));
                    }
                }
                Ok(Err(error)) => {
                    let error = ApiError::provider(&self.provider, error, &self.redactor);
                    self.fail(&error).await;
                }
                Err(failure) => self.fail(&ApiError::PluginFailed(failure)).await,
            }
        }
    }

    /// Pushes gathered chunks into the decoder one by one (so that an upstream error event
    /// leaves the events before it intact), and finishes it if the upstream ended behind them;
    /// their events go to the client as one write. An error behind them is reported after.
    async fn decode(
        &mut self,
        read: Gathered<String>,
    ) -> Result<Result<StreamOutput, PluginError>, PluginFailure> {
        let mut out = StreamOutput {
            events: Vec::new(),
            usage: None,
        };
        if let Some(watch) = &mut self.watch {
            watch.take(&read.chunks);
        }
        for chunk in &read.chunks {
            let decoded = self.decoder.push(chunk).await;
            if let Some(failed) = self.merge(&mut out, decoded) {
                return failed;
            }
            if self.pending.is_some() {
                return Ok(Ok(out));
            }
        }
        match read.end {
            ReadEnd::More => {}
            ReadEnd::Finished => {
                if let Err(error) = self.watch_read(true).await {
                    self.pending = Some(error);
                    return Ok(Ok(out));
                }
                let decoded = self.decoder.finish().await;
                if let Some(failed) = self.merge(&mut out, decoded) {
                    return failed;
                }
                // Ended only once the last events are out: a kept failure is reported first.
                self.ended = self.pending.is_none();
            }
            ReadEnd::Failed(e) => self.pending = Some(unreachable(&self.provider, e)),
        }
        // The watch's decoder reads only once there are native events to release: what it
        // reads before them would only wait with them.
        if !out.events.is_empty()
            && self.pending.is_none()
            && let Err(error) = self.watch_read(false).await
        {
            self.pending = Some(error);
        }
        Ok(Ok(out))
    }

    /// Ends the stream with the client's API's error event, as the APIs do mid-stream.
    async fn fail(&mut self, error: &ApiError) {
        tracing::warn!("stream ended early: {error}");
        let buf = self.framing.fail(self.cx.as_ref(), error).await;
        self.ready.push_back(Bytes::from(buf));
        self.ended = true;
        self.failed = true;
    }

    /// Adds one decoder call's output to `out`. A failure after events is kept for after them
    /// (the client gets the text before the error, as when each chunk was sent alone); a
    /// failure before any is handed back to be reported now.
    fn merge(
        &mut self,
        out: &mut StreamOutput,
        decoded: Result<Result<StreamOutput, PluginError>, PluginFailure>,
    ) -> Option<Result<Result<StreamOutput, PluginError>, PluginFailure>> {
        let error = match decoded {
            Ok(Ok(more)) => {
                out.events.extend(more.events);
                out.usage = more.usage.or(out.usage);
                return None;
            }
            Ok(Err(error)) if !out.events.is_empty() => {
                ApiError::provider(&self.provider, error, &self.redactor)
            }
            Err(failure) if !out.events.is_empty() => ApiError::PluginFailed(failure),
            failed => return Some(failed),
        };
        self.pending = Some(error);
        None
    }
}

/// `first` and the upstream bytes that are already there behind it. The HTTP client hands
/// a chunked body over one chunk at a time (its connection task decodes the next only
/// once this one is taken), so what arrived in one read comes as many chunks: taken one by
/// one, each would cost a write to the client of its own. One yield lets
/// the connection task hand over what it already holds; a chunk that is not there after it
/// is waited for in the next round, so nothing is held back.
async fn gather<E>(
    upstream: &mut (impl futures_util::Stream<Item = Result<Bytes, E>> + Unpin),
    first: Bytes,
) -> Gathered<E> {
    let mut size = first.len();
    let mut chunks = vec![first];
    let mut misses = 0;
    let mut end = ReadEnd::More;
    loop {
        let next = match upstream.next().now_or_never() {
            Some(next) => next,
            None if misses == GATHER_YIELDS => break,
            None => {
                misses += 1;
                tokio::task::yield_now().await;
                continue;
            }
        };
        match next {
            Some(Ok(more)) => {
                size += more.len();
                chunks.push(more);
                misses = 0;
                if size >= GATHER_MAX {
                    break;
                }
            }
            Some(Err(e)) => {
                end = ReadEnd::Failed(e);
                break;
            }
            None => {
                end = ReadEnd::Finished;
                break;
            }
        }
    }
    Gathered { chunks, end }
}

/// A read of the upstream stream failed (the URL left out: it may carry a key).
fn unreachable(provider: &str, detail: String) -> ApiError {
    ApiError::UpstreamUnreachable {
        provider: provider.to_owned(),
        detail,
    }
}

/// An HTTP response's body as the relay reads it (an error without the URL, which may carry
/// a key).
pub fn http_bytes(response: reqwest::Response) -> BoxStream<'static, Result<Bytes, String>> {
    (response.bytes_stream())
        .map(|read| read.map_err(|e| e.without_url().to_string()))
        .boxed()
}

impl<F> Relay<F> {
    /// The watch's decoder reads the bytes it has not read (with `end`, and the upstream's end).
    async fn watch_read(&mut self, end: bool) -> Result<(), ApiError> {
        match &mut self.watch {
            Some(watch) => watch.read(end).await,
            None => Ok(()),
        }
    }

    /// Canonical chunks through the answer's guards (all they hold, once the upstream ended);
    /// a native answer's events wait for its guards instead.
    async fn guarded(&mut self, events: Vec<String>) -> Result<Vec<String>, ApiError> {
        if let Some(watch) = &mut self.watch {
            return watch.pass(events, self.ended).await;
        }
        let Some(chain) = &mut self.guard else {
            return Ok(events);
        };
        let mut passed = chain.push(events).await?;
        if self.ended {
            passed.extend(chain.finish().await?);
        }
        Ok(passed)
    }

    /// Ends the request (once); the record is written to the journal before this returns.
    async fn finish(&mut self) {
        if let Some(written) = self.end() {
            written.wait().await;
        }
    }

    fn end(&mut self) -> Option<crate::ledger::Written> {
        let mut cx = self.cx.take()?;
        if let Some(chain) = &mut self.guard {
            cx.guard.verdicts_from(chain);
        }
        if let Some(watch) = &mut self.watch {
            cx.guard.verdicts_from(watch.chain());
        }
        if self.ended && !self.failed {
            let model = cx.target.as_ref().map_or("", |t| t.model.as_str());
            cx.cache.streamed(&self.provider, model, self.usage);
        }
        Some(cx.finish(End::Streamed {
            usage: self.usage,
            text: std::mem::take(&mut self.text),
            completed: self.ended && !self.failed,
        }))
    }
}

impl<F> Drop for Relay<F> {
    fn drop(&mut self) {
        // A stream dropped before its end: its client gets nothing more, nothing waits.
        drop(self.end());
    }
}

/// Appends the text of a chunk's `choices[].delta` (content, reasoning, tool arguments), or of
/// a text completion's `choices[].text`.
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
        /// A text completion's chunk (`/v1/completions`) carries its text here.
        #[serde(default, borrow)]
        text: Option<std::borrow::Cow<'a, str>>,
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
    for choice in &chunk.choices {
        text.push_str(choice.text.as_deref().unwrap_or_default());
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn what_one_read_delivered_is_gathered_into_one_write() {
        let chunks: Vec<Result<Bytes, ()>> = (1..22)
            .map(|i| Ok(Bytes::from(format!("data: {i}\n\n"))))
            .collect();
        let mut upstream = stream::iter(chunks);
        let read = gather(&mut upstream, Bytes::from_static(b"data: 0\n\n")).await;
        let expected: String = (0..22).map(|i| format!("data: {i}\n\n")).collect();
        assert_eq!(read.chunks.concat(), expected.as_bytes());
        assert_eq!(read.end, ReadEnd::Finished);
    }

    #[tokio::test]
    async fn gathering_stops_at_what_has_not_arrived_and_keeps_an_error_for_after() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Result<Bytes, &str>>();
        let mut rx = stream::poll_fn(move |cx| rx.poll_recv(cx));
        tx.send(Ok(Bytes::from_static(b"b"))).unwrap();
        // Nothing more has arrived: the first bytes go without waiting for more.
        let read = gather(&mut rx, Bytes::from_static(b"a")).await;
        assert_eq!(
            (read.chunks.concat(), read.end),
            (b"ab".to_vec(), ReadEnd::More)
        );
        let read = tokio::time::timeout(Duration::from_secs(1), gather(&mut rx, Bytes::new()))
            .await
            .expect("an empty channel does not hold gathering");
        assert_eq!(read.end, ReadEnd::More);
        tx.send(Ok(Bytes::from_static(b"d"))).unwrap();
        tx.send(Err("reset")).unwrap();
        let read = gather(&mut rx, Bytes::from_static(b"c")).await;
        assert_eq!(
            (read.chunks.concat(), read.end),
            (b"cd".to_vec(), ReadEnd::Failed("reset"))
        );
    }

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
        delta_text(
            r#"{"object":"text_completion","choices":[{"text":"!"}]}"#,
            &mut text,
        );
        assert_eq!(text, "Hello \"x\"{}!");
    }
}
