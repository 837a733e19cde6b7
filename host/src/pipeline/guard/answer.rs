//! The answer guards of one request: its chain opened ([`open`], see `chain.rs`), and a whole
//! answer or a local stream's events put through it, their verdicts kept on the request. A
//! guard that stops the answer ends it: a whole answer with an error, a stream with the
//! client's dialect's error event.

use std::sync::Arc;

use super::action::Action;
use super::chain::{AnswerChain, Stage};
use super::events;
use super::failure::{failed, failed_with};
use super::texts::TextView;
use crate::config::guards::{BlindRoute, GuardMode};
use crate::error::ApiError;
use crate::pipeline::context::Context;
use crate::plugins::{AnswerEvent, SlotKind, Stop, TextDelta};

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

/// Picks the answer guards of a request outside the model-call path (a pass-through), as the
/// request stage does for a model call: whether any applies.
pub fn pick(cx: &mut Context, model: &str) -> Result<bool, ApiError> {
    let gateway = Arc::clone(&cx.gateway);
    for index in super::check::applying(&gateway, &cx.caller, model)? {
        if gateway.guards.get(index).is_some_and(|g| g.apply.answer()) {
            cx.guard.any = true;
            cx.guard.answer.push(index);
        }
    }
    Ok(cx.guard.answer_guarded())
}

/// Refuses an answer no answer guard of the request can read (`what`, on `route`), unless
/// every one's entry exempts the route.
pub fn refuse_blind(cx: &Context, route: BlindRoute, what: &'static str) -> Result<(), ApiError> {
    match (cx.gateway.guards).not_exempting(cx.guard.answer.iter().copied(), route) {
        Some(guard) => Err(ApiError::AnswerCannotBeInspected {
            guard: guard.name.to_string(),
            what,
            route: route.name(),
        }),
        None => Ok(()),
    }
}

/// Every string of an answer's `body` (one that is not a chat completion: a pass-through's)
/// through the answer guards, each as the whole text of a choice of its own, the text they
/// release written back where it stood; whether one changed.
pub async fn body(cx: &mut Context, body: &mut serde_json::Value) -> Result<bool, ApiError> {
    let view = TextView::of_body(body);
    if view.is_empty() {
        return Ok(false);
    }
    let Some(mut chain) = open(cx, SlotKind::Call).await? else {
        return Ok(false);
    };
    let shown = view.texts();
    let count = shown.len();
    let mut events = Vec::with_capacity(2 * count);
    for (n, text) in shown.into_iter().enumerate() {
        let choice = u32::try_from(n).unwrap_or(u32::MAX);
        events.push(AnswerEvent::Text(TextDelta { choice, text }));
        events.push(AnswerEvent::Stop(Stop {
            choice,
            reason: "stop".to_owned(),
        }));
    }
    let passed = chain.run(events, true).await;
    cx.guard.verdicts_from(&mut chain);
    let released = passed?;
    let mut texts = vec![String::new(); count];
    for event in released {
        if let AnswerEvent::Text(t) = event
            && let Some(text) = usize::try_from(t.choice)
                .ok()
                .and_then(|i| texts.get_mut(i))
        {
            text.push_str(&t.text);
        }
    }
    view.keys_kept(&texts)
        .map_err(|e| failed_with("answer", &e.to_string()))?;
    Ok(view.write(&texts, body) > 0)
}

/// The `data` of an event stream's events (each a JSON value, or a text) through the answer
/// guards. The strings that stand at one place in successive events (a delta's `content`) are
/// shown as one text, so that a value split across events is found, and the rewrite is spread
/// back over the pieces; a place that holds the same string in every event (an id, the model)
/// is shown once. Whether one changed.
pub async fn event_data(
    cx: &mut Context,
    data: &mut [serde_json::Value],
) -> Result<bool, ApiError> {
    // Pointer within an event (a text event's own: `#<n>`) -> the pieces, in order.
    let mut places: indexmap::IndexMap<String, Vec<(usize, String, String)>> =
        indexmap::IndexMap::new();
    for (n, value) in data.iter().enumerate() {
        let mut found = Vec::new();
        strings(value, &mut String::new(), &mut found);
        for (pointer, text) in found {
            let place = match value.is_string() {
                true => format!("#{n}"),
                false => pointer.clone(),
            };
            places.entry(place).or_default().push((n, pointer, text));
        }
    }
    let same = |pieces: &[(usize, String, String)]| pieces.windows(2).all(|w| w[0].2 == w[1].2);
    let mut shown = serde_json::Value::Array(
        (places.values())
            .map(|pieces| match same(pieces) {
                true => pieces[0].2.clone().into(),
                false => pieces
                    .iter()
                    .map(|p| p.2.as_str())
                    .collect::<String>()
                    .into(),
            })
            .collect(),
    );
    if !body(cx, &mut shown).await? {
        return Ok(false);
    }
    let serde_json::Value::Array(after) = shown else {
        return Ok(false);
    };
    for (pieces, after) in places.values().zip(after) {
        let Some(after) = after.as_str() else {
            continue;
        };
        let texts: Vec<String> = match same(pieces) {
            true => vec![after.to_owned(); pieces.len()],
            false => {
                let before: Vec<&str> = pieces.iter().map(|p| p.2.as_str()).collect();
                super::edits::rewrite_segments(&before, after)
            }
        };
        for ((n, pointer, _), text) in pieces.iter().zip(texts) {
            if let Some(slot) = data.get_mut(*n).and_then(|v| v.pointer_mut(pointer)) {
                *slot = text.into();
            }
        }
    }
    Ok(true)
}

/// Every non-empty string of `value`, with its JSON pointer (RFC 6901).
fn strings(value: &serde_json::Value, at: &mut String, found: &mut Vec<(String, String)>) {
    use serde_json::Value;
    match value {
        Value::String(text) if !text.is_empty() => found.push((at.clone(), text.clone())),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = at.len();
                at.push('/');
                at.push_str(&i.to_string());
                strings(item, at, found);
                at.truncate(len);
            }
        }
        Value::Object(fields) => {
            for (key, item) in fields {
                let len = at.len();
                at.push('/');
                at.push_str(&key.replace('~', "~0").replace('/', "~1"));
                strings(item, at, found);
                at.truncate(len);
            }
        }
        _ => {}
    }
}
