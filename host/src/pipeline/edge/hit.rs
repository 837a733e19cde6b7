//! The way out for a cache hit (exact or semantic): the kept answer in the client's dialect,
//! whole or replayed as a stream, the request ended as a hit (cost 0, the cost it saved). See
//! `cache/` for when a request hits.

use axum::body::Body;
use axum::http::HeaderValue;

use super::encode::encode;
use super::frame::{self, Framing};
use crate::cache::answer::{self, Entry, Form};
use crate::cache::now_ms;
use crate::error::{ApiError, Dialect};
use crate::ledger::Written;
use crate::pipeline::cache::Hit;
use crate::pipeline::context::{Context, Tried};
use crate::pipeline::finish::End;
use crate::pipeline::reply::{Answer, AnswerBody};
use crate::plugins::Usage;

/// Answers the request from `hit` in the client's dialect, and ends it as a hit (what it
/// returns beside the answer says when the record is in the journal).
pub(super) async fn serve(mut cx: Context, hit: Hit) -> (Result<Answer, ApiError>, Written) {
    let Hit { entry } = hit;
    let usage = entry.usage.map(Usage::from);
    let id = format!("{}/{}", entry.provider, entry.model);
    let (price, system) = match cx.gateway.resolve(&id) {
        Ok(target) => (
            target.provider.price(target.model),
            std::sync::Arc::clone(&target.provider.system),
        ),
        Err(_) => (None, std::sync::Arc::from("unknown")),
    };
    cx.target = Some(Tried {
        provider: entry.provider.clone(),
        model: entry.model.clone(),
        price,
        system,
    });
    let mut headers = crate::pipeline::reply::answer_headers(&cx, &entry.provider, &entry.model, 0);
    let age = now_ms().saturating_sub(entry.stored_ms) / 1000;
    headers.push((http::header::AGE, HeaderValue::from(age)));
    let body = match entry.form {
        Form::Canonical if cx.request.stream => replay(&mut cx, &entry.completion, usage).await,
        Form::Canonical => whole(&mut cx, &entry.completion, usage).await,
        Form::NativeWhole | Form::NativeStream => Ok(native(&cx, &entry).await),
    };
    match body {
        Ok(body) => {
            let written = cx.finish(End::Cached(usage));
            (Ok(Answer { headers, body }), written)
        }
        Err(error) => cx.fail(error),
    }
}

/// A whole answer in the client's dialect (a fresh id for Messages and Responses, kept for
/// `previous_response_id` as a live one would be).
async fn whole(
    cx: &mut Context,
    completion: &str,
    usage: Option<Usage>,
) -> Result<AnswerBody, ApiError> {
    let body = match cx.dialect {
        Dialect::Chat => completion.to_owned(),
        Dialect::Plugin => encode(cx, completion, usage).await?,
    };
    if let Some(keeper) = cx.translation.as_ref().and_then(|t| t.keeper.as_ref()) {
        keeper.keep(&body).await;
    }
    Ok(AnswerBody::Json(body))
}

/// A native answer as it came, under a fresh id; a Responses one kept as a live one would be.
async fn native(cx: &Context, entry: &Entry) -> AnswerBody {
    let fresh = fresh_id(entry.answer_id.as_deref());
    let translation = cx.translation.as_ref();
    let keeper = translation.and_then(|t| t.keeper.as_ref());
    let own = |text: &str| {
        let text = entry.with_fresh_id(text, &fresh);
        match translation {
            Some(translation) => translation.with_previous_id(text),
            None => text,
        }
    };
    if entry.form == Form::NativeWhole {
        let body = own(&entry.completion);
        if let Some(keeper) = keeper {
            keeper.keep(&body).await;
        }
        return AnswerBody::Json(body);
    }
    let events: Vec<String> = entry.events.iter().map(|e| own(e)).collect();
    AnswerBody::Events(Body::from(frame::replay_native(&events, keeper).await))
}

/// A new id in the style of `old` (`msg_…`, `resp_…`).
fn fresh_id(old: Option<&str>) -> String {
    let prefix = old
        .and_then(|old| old.split_once('_'))
        .map_or("cached", |(prefix, _)| prefix);
    format!("{prefix}_{}", uuid::Uuid::new_v4().simple())
}

/// The answer as the stream a live one would be, framed as the relay frames one.
async fn replay(
    cx: &mut Context,
    completion: &str,
    usage: Option<Usage>,
) -> Result<AnswerBody, ApiError> {
    let events = answer::chunks(completion).unwrap_or_default();
    let framing = frame::framing(cx, false).await?;
    let keeper = cx.translation.as_ref().and_then(|t| t.keeper.clone());
    let body = match (framing, keeper) {
        (Framing::Translated(encoder), Some(keeper)) => {
            frame::replay_kept(*encoder, events, usage, &keeper).await?
        }
        (framing, _) => frame::local(events, usage, framing, None).await,
    };
    cx.first_output();
    Ok(AnswerBody::Events(Body::from(body)))
}
