//! The edge's way out: every answer and every error of a request leaves through [`out`],
//! written in the client's API (whole, streamed, as one JSON array, from the cache, refused);
//! the request is finished here, or handed to the stream that will finish it. A finished
//! request's answer goes once its record is in the journal: [`out`] returns what says when,
//! for its caller to wait on once the way out's state is freed.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderName, HeaderValue};

use super::encode::{encode, error_body};
use super::frame::{self};
use super::transcript;
use super::{hit, json_array};
use crate::error::ApiError;
use crate::ledger::Written;
use crate::pipeline::attempt::Sent;
use crate::pipeline::cache::Hit;
use crate::pipeline::context::Context;
use crate::pipeline::finish::End;
use crate::pipeline::raw_answer;
use crate::pipeline::reply::{Answer, AnswerBody, Reply};
use crate::pipeline::{guard, relay};
use crate::plugins;

/// What the stages hand the way out.
pub enum Outcome {
    /// A target answered; `headers` say which, and the limits' state.
    Answered {
        sent: Sent,
        headers: Vec<(HeaderName, HeaderValue)>,
    },
    /// The response cache (exact or semantic) had the answer.
    Hit(Hit),
    /// A stage refused the request, or it failed.
    Failed(ApiError),
}

/// Writes `outcome` for the client, and ends the request (or hands it to its stream): the reply
/// is to go once what is returned beside it says the request's record is in the journal. An
/// error on a registry dialect's route is written by its plugin, from the request's own
/// snapshot.
pub async fn out(cx: Context, outcome: Outcome) -> (Reply, Written) {
    let dialect = cx.dialect;
    // A stream the client asked for as one JSON array (Google's `streamGenerateContent` without
    // `alt=sse`), live or from the cache.
    let array = cx
        .translation
        .as_ref()
        .is_some_and(|t| t.framing == plugins::Framing::JsonArray);
    let mounted = cx.edge.as_ref().map(|matched| Arc::clone(&matched.dialect));
    let (result, written) = match outcome {
        Outcome::Answered { sent, headers } => {
            let (body, written) = answer(cx, sent).await;
            (body.map(|body| Answer { headers, body }), written)
        }
        Outcome::Hit(hit) => hit::serve(cx, hit).await,
        Outcome::Failed(error) => cx.fail(error),
    };
    let result = if array {
        result.map(json_array::reframe)
    } else {
        result
    };
    let error_body = match (result.as_ref().err(), mounted) {
        (Some(error), Some(mounted)) => {
            Some(error_body(Some(mounted.plugin.clone()), dialect, error).await)
        }
        _ => None,
    };
    let reply = Reply {
        dialect,
        result,
        error_body,
    };
    (reply, written)
}

/// The answer's body in the client's dialect: encoded by the dialect plugin unless the target
/// spoke it; a Responses answer kept before the client has it. Finishes `cx` (what it returns
/// beside the body says when its record is in the journal), or hands it to the stream that
/// will.
async fn answer(mut cx: Context, sent: Sent) -> (Result<AnswerBody, ApiError>, Written) {
    match sent {
        Sent::Whole {
            body,
            usage,
            native,
        } => {
            // A native answer was checked by its guards in the attempt, on its canonical view.
            let checked = match native {
                true => Ok(body),
                false => guard::answer::whole(&mut cx, body).await,
            };
            let body = match checked {
                Ok(body) => body,
                Err(error) => return cx.fail(error),
            };
            let body = match &cx.translation {
                Some(_) if !native => match encode(&mut cx, &body, usage).await {
                    Ok(body) => body,
                    Err(error) => return cx.fail(error),
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
                        return cx.fail(error);
                    }
                },
                None => AnswerBody::Json(body),
            };
            let written = cx.finish(End::Answered(usage));
            (Ok(body), written)
        }
        Sent::Raw(raw) => {
            let content_type = raw_answer::content_type(&raw);
            cx.request.release_body();
            // Its body ends the request when it has been relayed.
            let body = AnswerBody::Typed {
                content_type,
                body: raw_answer::body(*raw, cx),
            };
            (Ok(body), Written::now())
        }
        Sent::Events { events, usage } => {
            let (events, stopped) = match guard::answer::events(&mut cx, events).await {
                Ok(passed) => passed,
                Err(error) => return cx.fail(error),
            };
            let framing = match frame::framing(&mut cx, false).await {
                Ok(framing) => framing,
                Err(error) => return cx.fail(error),
            };
            let body = frame::local(events, usage, framing, stopped.as_ref()).await;
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
            let written = cx.finish(end);
            (Ok(AnswerBody::Events(Body::from(body))), written)
        }
        Sent::Stream(upstream) => {
            if upstream.native {
                cx.cache.native_stream();
            }
            let framing = match frame::framing(&mut cx, upstream.native).await {
                Ok(framing) => framing,
                Err(error) => return cx.fail(error),
            };
            if let Err(error) = guard::answer::open_stream(&mut cx).await {
                return cx.fail(error);
            }
            cx.release_body_for_stream();
            // The stream ends the request, and waits for its record before its last event.
            let body = AnswerBody::Events(relay::body(upstream, cx, framing));
            (Ok(body), Written::now())
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
