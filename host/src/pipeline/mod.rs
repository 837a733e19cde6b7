//! The request path of `/v1/*`, as stages over one [`Context`] passed forward:
//!
//! 1. [`auth`]: who sent it (its key, its project).
//! 2. [`parse`]: the body read under the budget and checked into the canonical request; then
//!    the [`guard`]s that apply check it (and later the answer, whole or streamed).
//! 3. [`admit`]: the limit rules check it (and reserve).
//! 4. [`route`]: its model leads to a target, or a router orders a virtual model's targets.
//! 5. [`attempt`]: one try at one target, through its provider plugin and the upstream.
//! 6. [`relay`]: a streamed answer passed on event by event.
//! 7. [`finish`]: the one place a request ends (limits settled, record, telemetry).
//!
//! The server's handlers only turn HTTP into an [`Incoming`] and the [`Reply`] into a response.

pub mod admit;
pub mod attempt;
pub mod auth;
pub mod body;
pub mod cache;
mod cache_replay;
pub mod context;
pub mod count;
pub mod dialect;
pub mod end_user;
pub mod error;
pub mod finish;
pub mod forward;
pub mod guard;
mod guard_answer;
mod guard_edits;
mod guard_events;
mod guard_native;
mod guard_verdicts;
mod guard_watch;
mod json_array;
mod operations;
pub mod parse;
mod passthrough;
pub mod raw_json;
pub mod relay;
pub mod request;
#[cfg(test)]
mod request_props;
pub mod route;
mod semantic;
mod transcript;
mod upload;

use axum::body::Body;
use axum::http::{HeaderName, HeaderValue};

use attempt::Sent;
pub use context::{Context, Dialect, Incoming};
pub use error::ApiError;
use finish::End;
use route::Answered;

use crate::plugins;
use crate::state::AppState;

/// What the pipeline hands back to HTTP: an answer, or the error to render in `dialect`.
pub struct Reply {
    pub dialect: Dialect,
    pub result: Result<Answer, ApiError>,
}

/// A successful answer: its headers (which target answered, the limits' state) and its body.
pub struct Answer {
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub body: AnswerBody,
}

pub enum AnswerBody {
    /// A whole JSON answer.
    Json(String),
    /// Server-sent events.
    Events(Body),
    /// Anything else (a transcript as text or subtitles, speech audio), with its content type.
    Typed {
        content_type: HeaderValue,
        body: Body,
    },
}

/// Runs one request through every stage, and ends it.
pub async fn run(state: &AppState, incoming: Incoming) -> Reply {
    let cx = Context::new(state, &incoming);
    // Boxed: the stages' future is several KiB, and the server's layers (axum's handler and
    // route futures, the middleware) move theirs into boxes of their own; holding this one
    // by pointer keeps those moves small (callgrind: three copies of it per request were 3 %
    // of the instructions).
    Box::pin(carry(state, cx, incoming)).await
}

/// The stages in order over `cx`; then the end of the request, or the stream that will end it.
async fn carry(state: &AppState, mut cx: Context, incoming: Incoming) -> Reply {
    let dialect = cx.dialect;
    if state.ledger.is_full() {
        // As when the counter store is gone: refused, rather than answered without a record.
        let error = ApiError::LedgerFull;
        cx.finish(End::Failed(&error)).wait().await;
        return Reply {
            dialect,
            result: Err(error),
        };
    }
    let answered = async {
        auth::auth(state, &mut cx, &incoming.headers).await?;
        // The body's share of the budget is kept while its parsed form is being answered.
        let _body = parse::parse(state, &mut cx, &incoming.headers, incoming.body).await?;
        guard::request(&mut cx).await?;
        admit::admit(&mut cx).await?;
        if let Some(hit) = cache::lookup(state, &mut cx, &incoming.headers).await {
            return Ok(Err(hit));
        }
        route::route(state, &mut cx).await.map(Ok)
    }
    .await;
    // A stream the client asked for as one JSON array (Google's `streamGenerateContent` without
    // `alt=sse`), live or from the cache.
    let array = cx
        .translation
        .as_ref()
        .is_some_and(|t| t.framing == crate::plugins::Framing::JsonArray);
    let Answered {
        sent,
        provider,
        model,
        attempts,
    } = match answered {
        Ok(Ok(answered)) => answered,
        Ok(Err(hit)) => return framed(cache_replay::serve(cx, hit).await, array),
        Err(error) => {
            cx.finish(End::Failed(&error)).wait().await;
            return Reply {
                dialect,
                result: Err(error),
            };
        }
    };
    let headers = answer_headers(&cx, &provider, &model, attempts);
    if let Sent::Whole {
        body,
        usage,
        native,
    } = &sent
    {
        cx.cache
            .keep_whole(&provider, &model, body, *usage, *native);
    }
    let result = answer(cx, sent).await.map(|body| Answer { headers, body });
    framed(Reply { dialect, result }, array)
}

/// `reply`, its stream reframed as one JSON array when `array`.
fn framed(reply: Reply, array: bool) -> Reply {
    if !array {
        return reply;
    }
    Reply {
        dialect: reply.dialect,
        result: reply.result.map(json_array::reframe),
    }
}

/// The answer's body in the client's dialect: encoded by the dialect plugin unless the target
/// spoke it; a Responses answer kept before the client has it. Finishes `cx` (its record in
/// the journal before the answer goes), or hands it to the stream that will.
async fn answer(mut cx: Context, sent: Sent) -> Result<AnswerBody, ApiError> {
    async fn failed(cx: Context, error: ApiError) -> Result<AnswerBody, ApiError> {
        cx.finish(End::Failed(&error)).wait().await;
        Err(error)
    }
    match sent {
        Sent::Whole {
            body,
            usage,
            native,
        } => {
            // A native answer was checked by its guards in the attempt, on its canonical view.
            let checked = match native {
                true => Ok(body),
                false => guard::whole(&mut cx, body).await,
            };
            let body = match checked {
                Ok(body) => body,
                Err(error) => return failed(cx, error).await,
            };
            let body = match &cx.translation {
                Some(_) if !native => match dialect::encode(&mut cx, &body, usage).await {
                    Ok(body) => body,
                    Err(error) => return failed(cx, error).await,
                },
                Some(translation) => translation.with_previous_id(body),
                None => body,
            };
            if let Some(keeper) = cx.translation.as_ref().and_then(|t| t.keeper.as_ref()) {
                keeper.keep(&body).await;
            }
            let body = match transcript_format(&cx) {
                Some(format) => match transcript::render(&format, body) {
                    Ok(rendered) => AnswerBody::Typed {
                        content_type: HeaderValue::from_static(rendered.content_type),
                        body: Body::from(rendered.body),
                    },
                    Err(error) => {
                        let provider = cx.target.as_ref().map(|t| t.provider.clone());
                        let error = plugins::PluginError {
                            kind: plugins::ErrorKind::Upstream,
                            message: error.to_string(),
                            param: None,
                            code: None,
                            upstream_status: None,
                        };
                        let error =
                            ApiError::provider(&provider.unwrap_or_default(), error, &cx.redactor);
                        return failed(cx, error).await;
                    }
                },
                None => AnswerBody::Json(body),
            };
            cx.finish(End::Answered(usage)).wait().await;
            Ok(body)
        }
        Sent::Raw(raw) => {
            let content_type = passthrough::content_type(&raw);
            cx.request.release_body();
            Ok(AnswerBody::Typed {
                content_type,
                body: passthrough::body(*raw, cx),
            })
        }
        Sent::Events { events, usage } => {
            let (events, stopped) = match guard::events(&mut cx, events).await {
                Ok(passed) => passed,
                Err(error) => return failed(cx, error).await,
            };
            let framing = match framing(&mut cx, false).await {
                Ok(framing) => framing,
                Err(error) => return failed(cx, error).await,
            };
            let dialect = cx.dialect;
            let stop = stopped.as_ref().map(|error| (error, dialect));
            let body = relay::local(events, usage, framing, stop).await;
            cx.first_output();
            let end = match stopped {
                // Ended as a relayed stream a guard stops ends: sent, and incomplete.
                Some(_) => End::Streamed {
                    usage,
                    text: String::new(),
                    completed: false,
                },
                None => End::Answered(usage),
            };
            cx.finish(end).wait().await;
            Ok(AnswerBody::Events(Body::from(body)))
        }
        Sent::Stream(upstream) => {
            if upstream.native {
                cx.cache.native_stream();
            }
            let framing = match framing(&mut cx, upstream.native).await {
                Ok(framing) => framing,
                Err(error) => return failed(cx, error).await,
            };
            if let Err(error) = guard::open_stream(&mut cx).await {
                return failed(cx, error).await;
            }
            cx.release_body_for_stream();
            Ok(AnswerBody::Events(relay::body(upstream, cx, framing)))
        }
    }
}

/// The `response_format` a transcription or translation is to be written in.
fn transcript_format(cx: &Context) -> Option<String> {
    match cx.operation {
        plugins::Operation::AudioTranscriptions | plugins::Operation::AudioTranslations => Some(
            cx.request
                .string_field("response_format")
                .unwrap_or_else(|| "json".to_owned()),
        ),
        _ => None,
    }
}

/// How a stream is written for the client: as chat chunks, as the target's own events in the
/// client's dialect, or re-encoded by the dialect plugin.
async fn framing(cx: &mut Context, native: bool) -> Result<relay::Framing, ApiError> {
    if cx.translation.is_none() {
        return Ok(relay::Framing::Chat {
            client_wants_usage: cx.request.client_wants_usage,
        });
    }
    if native {
        return Ok(relay::Framing::Native);
    }
    match dialect::encoder(cx).await? {
        Some(encoder) => Ok(relay::Framing::Translated(Box::new(encoder))),
        None => Ok(relay::Framing::Chat {
            client_wants_usage: cx.request.client_wants_usage,
        }),
    }
}

/// Names the provider and model that answered and how many attempts it took; and the limits'
/// `x-ratelimit-*` headers.
fn answer_headers(
    cx: &Context,
    provider: &str,
    model: &str,
    attempts: usize,
) -> Vec<(HeaderName, HeaderValue)> {
    let mut headers = vec![(
        HeaderName::from_static("x-wasmgate-attempts"),
        HeaderValue::from(attempts),
    )];
    if let Ok(v) = HeaderValue::from_str(provider) {
        headers.push((HeaderName::from_static("x-wasmgate-provider"), v));
    }
    if let Ok(v) = HeaderValue::from_str(model) {
        headers.push((HeaderName::from_static("x-wasmgate-model"), v));
    }
    headers.extend(cx.cache.headers());
    for (name, value) in cx.admission.iter().flat_map(|a| &a.headers) {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            headers.push((name, value));
        }
    }
    headers
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::plugins::Operation;

    /// An upstream in OpenAI's wire format whose stream never reports usage, so the record
    /// falls back on the gateway's own count of the prompt.
    async fn upstream() -> String {
        let events = concat!(
            "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",",
            "\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hi there\"},",
            "\"finish_reason\":null}]}\n\n",
            "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",",
            "\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
            "data: [DONE]\n\n",
        );
        let app = axum::Router::new().route(
            "/v1/chat/completions",
            axum::routing::post(move || async move {
                (
                    [(axum::http::header::CONTENT_TYPE, "text/event-stream")],
                    events,
                )
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        format!("http://{addr}/v1")
    }

    /// Prompts counted by the tests' tokenizer seam (one counter per test: they run at once).
    static COUNTED: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];

    fn counting_0(request: &request::ClientRequest) -> u32 {
        COUNTED[0].fetch_add(1, Ordering::SeqCst);
        request.estimate_input_tokens(crate::tokenizer::Tokenizer)
    }

    fn counting_1(request: &request::ClientRequest) -> u32 {
        COUNTED[1].fetch_add(1, Ordering::SeqCst);
        request.estimate_input_tokens(crate::tokenizer::Tokenizer)
    }

    /// A streamed request to a virtual model under a token limit, whose upstream reports no
    /// usage: admit, route and the record all need the prompt's tokens, and it is counted once.
    #[tokio::test]
    async fn the_prompt_is_counted_once_per_request() {
        let config = r#"
routing:
  smart: { policy: fallback, targets: [openai/m] }
limits:
  store: memory
  rules:
    - { policy: rate-limit, scope: project, options: { tokens_per_day: 100000 } }
"#;
        // Counted by admit, before the stream starts.
        stream_without_usage(config, "smart", counting_0, &COUNTED[0], 1).await;
        assert_eq!(COUNTED[0].load(Ordering::SeqCst), 1);
    }

    /// Without limits or a router nothing needs the count before the stream ends: its small
    /// body is kept, and the prompt is counted once, for the record, when the upstream has
    /// reported no usage.
    #[tokio::test]
    async fn a_stream_counts_its_prompt_only_for_a_record_without_usage() {
        stream_without_usage("", "openai/m", counting_1, &COUNTED[1], 0).await;
        assert_eq!(COUNTED[1].load(Ordering::SeqCst), 1);
    }

    /// Streams `model` from an upstream that reports no usage, the prompt counted by `count`
    /// (into `counted`, which holds `before` when the stream starts); checks the record carries
    /// the gateway's own count.
    async fn stream_without_usage(
        more: &str,
        model: &str,
        count: fn(&request::ClientRequest) -> u32,
        counted: &AtomicUsize,
        before: usize,
    ) {
        let yaml = format!(
            r#"
providers:
  openai: {{ plugin: openai, base_url: "{}", api_key: sk-test-0123456789, models: [m] }}
ledger: {{ url: "sqlite::memory:" }}
{more}"#,
            upstream().await
        );
        let mut config = crate::config::Config::from_yaml(&yaml).unwrap();
        config.plugins.cache_dir = Some(
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../target/test-plugin-cache"),
        );
        let state = crate::build_state(config).await.unwrap();
        let body = format!(
            r#"{{"model":"{model}","stream":true,"messages":[{{"role":"user","content":"Say hello to the whole wide world"}}]}}"#
        );
        let incoming = Incoming {
            dialect: Dialect::Chat,
            operation: Operation::ChatCompletions,
            request_id: "count-once".to_owned(),
            headers: axum::http::HeaderMap::new(),
            body: Body::from(body),
            edge: None,
        };
        let mut cx = Context::new(&state, &incoming);
        cx.count_prompt = count;
        let reply = carry(&state, cx, incoming).await;
        let Ok(Answer {
            body: AnswerBody::Events(events),
            ..
        }) = reply.result
        else {
            panic!("not a stream");
        };
        assert_eq!(
            counted.load(Ordering::SeqCst),
            before,
            "counted as the stream starts"
        );
        let events = axum::body::to_bytes(events, 1 << 20).await.unwrap();
        assert!(String::from_utf8_lossy(&events).contains("Hi there"));

        state.ledger.shutdown().await;
        let store = state.ledger.store();
        let record = tokio::task::spawn_blocking(move || store.record("count-once"))
            .await
            .unwrap()
            .unwrap()
            .expect("a record");
        assert!(record.estimated, "the record used the gateway's count");
        assert!(record.input_tokens >= 7, "{record:?}");
    }
}
