//! The request path of `/v1/*`, as stages over one [`Context`] passed forward, between the
//! two halves of the client's API, the [`edge`]:
//!
//! 1. [`auth`]: who sent it (its key, its project), from the headers alone: a stranger costs no
//!    read of the body and no plugin call, and the way in needs the caller's project (a
//!    Responses conversation is replayed from that project's store).
//! 2. [`edge`], in: the body read under the budget; a registry dialect's decoded once by its
//!    plugin into the canonical form (Chat Completions' is the canonical form already), and
//!    what the way out needs kept.
//! 3. [`parse`]: the canonical body checked into the canonical request; then the [`guard`]s
//!    that apply check it (and later the answer, whole or streamed).
//! 4. [`admit`]: the limit rules check it (and reserve).
//! 5. [`cache`]: a kept answer, exact or semantic, answers it instead.
//! 6. [`route`]: its model leads to a target, or a router orders a virtual model's targets.
//! 7. [`attempt`]: one try at one target, through its provider plugin and the upstream, or,
//!    for an operation the plugin declared [`plain`], by the host alone.
//! 8. [`relay`]: a streamed answer passed on event by event, written by the edge's framing.
//! 9. [`edge`], out: every answer (whole, streamed, as one JSON array, from the cache) and
//!    every error written in the client's API.
//! 10. [`finish`]: the one place a request ends (limits settled, record, telemetry), reached
//!     from the way out, or from the stream it hands the request to.
//!
//! Between the edge's two halves the stages speak only the canonical form (or pass a native
//! target the client's own body untouched); none of them calls into the edge
//! (`tests/module_graph.rs` checks). The server's handlers only turn HTTP into an [`Incoming`]
//! and the [`Reply`] into a response.

pub mod admit;
pub mod attempt;
pub mod auth;
pub mod cache;
pub mod caller;
pub mod context;
pub mod count;
pub mod edge;
pub mod finish;
pub mod forward;
pub mod guard;
pub mod parse;
pub mod plain;
pub mod raw_answer;
pub mod relay;
pub mod reply;
pub mod request;
pub mod route;

pub use context::{Context, Incoming};
pub use reply::{Answer, AnswerBody, Reply};

use attempt::Sent;
use edge::out::Outcome;
use reply::answer_headers;
use route::Answered;

use crate::error::ApiError;
use crate::ledger::Written;
use crate::state::AppState;

/// Runs one request through every stage, and ends it.
pub async fn run(state: &AppState, incoming: Incoming) -> Reply {
    let cx = Context::new(state, &incoming);
    // Boxed: the stages' future is several KiB, and the server's layers (axum's handler and
    // route futures, the middleware) move theirs into boxes of their own; holding this one
    // by pointer keeps those moves small (callgrind: three copies of it per request were 3 %
    // of the instructions).
    let (reply, written) = Box::pin(carry(state, cx, incoming)).await;
    // The answer goes once its record is in the journal. Waited for here, with the stages' and
    // the way out's states freed: at saturation many requests wait for the journal's next
    // group, and each held both (BENCHMARKS.md).
    written.wait().await;
    reply
}

/// The stages in order over `cx`, between the edge's way in and its way out.
///
/// An async block, not an `async fn`: an `async fn` keeps its arguments in its state twice
/// (as given, and moved into its body's own bindings), and `cx` is 2.6 KB held by every request
/// in flight.
#[expect(
    clippy::manual_async_fn,
    reason = "an async fn keeps its arguments twice (see above)"
)]
fn carry(
    state: &AppState,
    mut cx: Context,
    incoming: Incoming,
) -> impl std::future::Future<Output = (Reply, Written)> + '_ {
    async move {
        let outcome = if state.ledger.is_full() {
            // As when the counter store is gone: refused, rather than answered without a record.
            Outcome::Failed(ApiError::LedgerFull)
        } else {
            stages(state, &mut cx, incoming).await
        };
        // Boxed: this future is as large as its largest state, and the way out's (every kind
        // of answer and error) is the largest, though it is held only at the end. By pointer,
        // each request in flight holds the stages' state instead, while the upstream answers.
        // (Bound first: a temporary of the awaiting statement is kept in the state, though
        // moved.)
        let out = Box::pin(edge::out(cx, outcome));
        out.await
    }
}

/// auth, the edge's way in, parse, guard, admit, cache, route (with attempt): what the way out
/// is to write.
async fn stages(state: &AppState, cx: &mut Context, incoming: Incoming) -> Outcome {
    let answered = async {
        auth::auth(state, cx, &incoming.headers).await?;
        let inbound = edge::decode(state, cx, &incoming.headers, incoming.body).await?;
        // The body's share of the budget is kept while its parsed form is being answered.
        let _body = parse::parse(state, cx, &incoming.headers, inbound).await?;
        guard::request(cx).await?;
        admit::admit(cx).await?;
        if let Some(hit) = cache::lookup(state, cx, &incoming.headers).await {
            return Ok(Err(hit));
        }
        route::route(state, cx).await.map(Ok)
    }
    .await;
    let answered = match answered {
        Ok(answered) => answered,
        Err(error) => return Outcome::Failed(error),
    };
    let Answered {
        sent,
        provider,
        model,
        attempts,
    } = match answered {
        Ok(answered) => answered,
        Err(hit) => return Outcome::Hit(hit),
    };
    let headers = answer_headers(cx, &provider, &model, attempts);
    if let Sent::Whole {
        body,
        usage,
        native,
    } = &sent
    {
        cx.cache
            .keep_whole(&provider, &model, body, *usage, *native);
    }
    Outcome::Answered { sent, headers }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::sync::atomic::{AtomicUsize, Ordering};

    use axum::body::Body;

    use super::*;
    use crate::error::Dialect;
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

    /// The size of the future `f` returns, without a call.
    fn future_size<'a, A: 'a, B: 'a, C, F: std::future::Future>(
        _: impl FnOnce(&'a A, B, C) -> F,
    ) -> usize {
        std::mem::size_of::<F>()
    }

    /// What a request holds while the upstream answers is `carry`'s future, as large as its
    /// largest state: the stages', not the way out's (every kind of answer and error, held only
    /// at the end) nor a semantic cache lookup's (a request of its own), which are boxed.
    #[test]
    fn a_request_in_flight_holds_the_stages_state_not_the_way_outs() {
        let carry = future_size(carry);
        let stages = future_size(|state: &AppState, cx: &mut Context, incoming: Incoming| {
            stages(state, cx, incoming)
        });
        let route =
            future_size(|state: &AppState, cx: &mut Context, (): ()| route::route(state, cx));
        let out = future_size(|(): &(), cx: Context, outcome: Outcome| edge::out(cx, outcome));
        let run = future_size(|state: &AppState, incoming: Incoming, (): ()| run(state, incoming));
        let context = std::mem::size_of::<Context>();
        let incoming = std::mem::size_of::<Incoming>();
        eprintln!(
            "run {run}, carry {carry}, stages {stages}, route {route}, edge::out {out}, Context {context}, \
             Incoming {incoming} bytes"
        );
        // Boxed, the way out is a pointer in `carry`: what is left is the context and the stages.
        assert!(
            carry <= context + stages + 256,
            "carry's future ({carry} bytes) is larger than its context ({context}) and its \
             stages' ({stages}): a state held only at the end sizes every request in flight"
        );
        // And the stages' is the route's (the attempt, the upstream's answer awaited), with the
        // request's headers and body beside it, not a lookup's.
        assert!(
            stages <= route + incoming + 1024,
            "the stages' future ({stages} bytes) is larger than the route's ({route}) and the \
             request's ({incoming}): a rare state sizes every request in flight"
        );
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
            socket: None,
        };
        let mut cx = Context::new(&state, &incoming);
        cx.count_prompt = count;
        let (reply, written) = carry(&state, cx, incoming).await;
        written.wait().await;
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
