//! Guards on a request whose target speaks the client's dialect. The client's native body stays
//! the truth; the guards check a canonical view of it, and what they change there is changed in
//! the native text (`edits.rs`), so that every other field (Anthropic's `thinking`,
//! `metadata`, `cache_control`, its signed thinking blocks in the answer) goes on untouched.
//!
//! - The request: the guards' rewrite is carried into the native body and checked by having the
//!   dialect plugin read the edited body back; when it does not read as the guards' canonical
//!   request, the request is translated instead (as every guarded request was before).
//! - A whole answer: the provider plugin reads the native answer into a canonical view as well,
//!   the answer guards check that, and their rewrite is made in the native answer's text.
//! - A stream: a second decoder of the provider reads the same upstream bytes into canonical
//!   chunks for the guards (`watch.rs`).

use serde_json::Value;

use super::answer::open;
use super::edits::Edits;
use super::events;
use super::failure::failed_with;
use super::texts::TextView;
use crate::error::ApiError;
use crate::pipeline::context::Context;
use crate::pipeline::request::ClientRequest;
use crate::plugins::SlotKind;

/// Carries the guards' rewrite of the canonical request (`before` → `after`) into the client's
/// native body; when it cannot be carried exactly, the request is translated.
pub(in crate::pipeline) async fn carry_request(cx: &mut Context, before: &str, after: &str) {
    let Some(translation) = &cx.translation else {
        return;
    };
    let carried = async {
        let before: Value = serde_json::from_str(before).ok()?;
        let mut after: Value = serde_json::from_str(after).ok()?;
        let edits = Edits::between(&before, &after)?;
        let mut native = translation.native_value()?;
        edits.apply(&mut native);
        let decoded = translation.decoded_body(&native).await?;
        // Read as the client's first reading was: the dialect's decoding, then the host's.
        let decoded = ClientRequest::parse(cx.request.operation, decoded.as_bytes()).ok()?;
        let mut decoded: Value = serde_json::from_str(&decoded.body_json()).ok()?;
        // The model is the client's in both; only the texts are compared.
        for body in [&mut decoded, &mut after] {
            if let Value::Object(fields) = body {
                fields.remove("model");
            }
        }
        (decoded == after).then_some(native)
    }
    .await;
    let set = match (carried, cx.translation.as_mut()) {
        (Some(native), Some(translation)) => translation.set_native(&native),
        _ => false,
    };
    if !set {
        tracing::debug!("a guard's rewrite could not be carried into the native body");
        cx.guard.translate = true;
    }
}

/// The guards' rewrite (`before` → `after`, as they saw the texts) made in what the request
/// keeps beside its body: a Responses request's input items, stored with its answer.
pub(in crate::pipeline) fn keep_as_sent(cx: &mut Context, before: &Value, after: &Value) {
    let Some(translation) = cx.translation.as_mut() else {
        return;
    };
    if let Some(edits) = Edits::between(before, after).filter(|e| !e.is_empty()) {
        translation.edit_kept_input(|items| {
            edits.apply(items);
        });
    }
}

/// The guards' rewrite of what the native body alone carries (`residue`, read back as `after`)
/// made in it; when it cannot be, the request is translated (the canonical form never carried
/// those texts).
pub(in crate::pipeline) fn carry_residue(cx: &mut Context, residue: &TextView, after: &str) {
    let texts = residue.read(after).ok();
    if let Some(texts) = &texts {
        keep_as_sent(
            cx,
            &Value::from(residue.texts()),
            &Value::from(texts.clone()),
        );
    }
    let carried = match (texts, cx.translation.as_mut()) {
        (Some(texts), Some(translation)) => translation.native_value().is_some_and(|mut native| {
            residue.write(&texts, &mut native);
            translation.set_native(&native)
        }),
        _ => false,
    };
    if !carried {
        cx.guard.translate = true;
    }
}

/// A native whole answer through the answer guards, checked on `view` (the provider plugin's
/// canonical reading of it); the native answer with the guards' changes made in its text.
pub(in crate::pipeline) async fn whole(
    cx: &mut Context,
    native: String,
    view: &str,
) -> Result<String, ApiError> {
    let Some(mut chain) = open(cx, SlotKind::Call).await? else {
        return Ok(native);
    };
    let Ok(mut before) = serde_json::from_str::<Value>(view) else {
        return Err(failed_with(
            "answer",
            "the answer's canonical view is not JSON",
        ));
    };
    let events = events::read_completion(&before);
    let passed = chain.run(events.clone(), true).await;
    cx.guard.verdicts_from(&mut chain);
    let released = passed?;
    // Both sides written back the same way, so that they differ only where the guards did.
    let mut after = before.clone();
    events::write_completion(&mut before, &events);
    events::write_completion(&mut after, &released);
    let edits = Edits::between(&before, &after)
        .ok_or_else(|| failed_with("answer", "the guards changed the answer's shape"))?;
    if edits.is_empty() {
        return Ok(native);
    }
    let mut body: Value = serde_json::from_str(&native)
        .map_err(|_| failed_with("answer", "the native answer is not JSON"))?;
    if !edits.every_one_applies(&mut body) {
        return Err(failed_with(
            "answer",
            "its rewrite could not be carried into the native answer",
        ));
    }
    Ok(body.to_string())
}
