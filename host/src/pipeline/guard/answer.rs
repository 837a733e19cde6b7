//! The answer guards of one request: its chain opened ([`open`], see `chain.rs`), and a whole
//! answer or a local stream's events put through it, their verdicts kept on the request. A
//! guard that stops the answer ends it: a whole answer with an error, a stream with the
//! client's dialect's error event.

use std::sync::Arc;

use super::action::Action;
use super::chain::{AnswerChain, Stage};
use super::events;
use super::failure::{failed, failed_with};
use crate::config::guards::GuardMode;
use crate::error::ApiError;
use crate::pipeline::context::Context;
use crate::plugins::SlotKind;

/// Opens the answer guards of the request, if any (a stream keeps them as long as it lasts).
pub async fn open(cx: &mut Context, kind: SlotKind) -> Result<Option<AnswerChain>, ApiError> {
    if cx.guard.answer.is_empty() {
        return Ok(None);
    }
    let gateway = Arc::clone(&cx.gateway);
    let request = cx.guard.request.clone().unwrap_or_else(|| Arc::from("{}"));
    let mut stages = Vec::with_capacity(cx.guard.answer.len());
    for index in cx.guard.answer.clone() {
        let Some(guard) = gateway.guards.get(index) else {
            continue;
        };
        let monitor = guard.mode == GuardMode::Monitor;
        let mut span = cx.trace.stage("guard");
        span.set("wasmgate.guard", guard.name.to_string());
        span.set("wasmgate.guard.side", "answer");
        match span.scope(guard.start_answer(kind, &request)).await {
            Ok(call) => stages.push(Stage::new(
                Arc::clone(&guard.name),
                call,
                monitor,
                guard.fail_open,
                guard.max_hold_chars,
                span,
            )),
            Err(failure) if guard.fail_open || monitor => {
                tracing::warn!(guard = &*guard.name, "guard failed open: {failure}");
                cx.guard
                    .record(&guard.name, "answer", Action::Error, monitor, &[]);
            }
            Err(failure) => {
                cx.guard
                    .record(&guard.name, "answer", Action::Error, monitor, &[]);
                return Err(failed(&guard.name, &failure));
            }
        }
    }
    Ok(Some(AnswerChain::new(stages)))
}

/// Opens the stream's chain and keeps it for the relay.
pub async fn open_stream(cx: &mut Context) -> Result<(), ApiError> {
    cx.guard.chain = open(cx, SlotKind::Stream).await?.map(std::sync::Mutex::new);
    Ok(())
}

/// A whole canonical answer through the answer guards, in one push.
pub async fn whole(cx: &mut Context, body: String) -> Result<String, ApiError> {
    let Some(mut chain) = open(cx, SlotKind::Call).await? else {
        return Ok(body);
    };
    let Ok(mut completion) = serde_json::from_str::<serde_json::Value>(&body) else {
        return Err(failed_with("answer", "the answer is not JSON"));
    };
    let events = events::read_completion(&completion);
    let mut passed = chain.run(events, true).await;
    cx.guard.verdicts_from(&mut chain);
    if let Ok(events) = &mut passed {
        events::write_completion(&mut completion, events);
    }
    passed.map(|_| completion.to_string())
}

/// Events a plugin produced at once (a local stream), through the answer guards: what they
/// released, and the error that ends the stream there if one stopped it or failed (written as
/// the client's dialect's error event after the released events, as on a relayed stream).
pub async fn events(
    cx: &mut Context,
    events: Vec<String>,
) -> Result<(Vec<String>, Option<ApiError>), ApiError> {
    let Some(mut chain) = open(cx, SlotKind::Call).await? else {
        return Ok((events, None));
    };
    let mut released = Vec::new();
    let mut stopped = None;
    // One push per event, as they would arrive streamed: what a guard releases before it stops
    // the answer reaches the client.
    for event in events {
        match chain.push(vec![event]).await {
            Ok(out) => released.extend(out),
            Err(error) => {
                stopped = Some(error);
                break;
            }
        }
    }
    if stopped.is_none() {
        match chain.finish().await {
            Ok(more) => released.extend(more),
            Err(error) => stopped = Some(error),
        }
    }
    cx.guard.verdicts_from(&mut chain);
    Ok((released, stopped))
}
