//! The guards on the request path: after `parse`, each guard that applies checks the canonical
//! request (allow, rewrite, refuse); the answer, whole or streamed, goes through each guard's
//! answer guard in order (`answer.rs`). Every verdict (guard, action, counts by kind,
//! never the matched text) goes into the request's record and a metric (`verdicts.rs`).
//!
//! A request to a target that speaks the client's dialect keeps its native body: the guards
//! check its canonical view, and their rewrites are made in the native text
//! (`native.rs`). With no guard configured nothing here runs (no plugin call, no
//! allocation).

use std::sync::Arc;

use serde_json::Value;

use super::blind::blind_spot;
use super::check::{Checker, Reading, applying, check};
use super::failure::failed_with;
use super::texts::TextView;
use crate::error::ApiError;
use crate::pipeline::context::Context;
use crate::pipeline::request::ClientRequest;
use crate::plugins::Operation;

fn guards_apply(operation: Operation) -> bool {
    !matches!(operation, Operation::ListModels)
}

/// The request stage's guards: each that applies checks the canonical request in order, and
/// may rewrite or refuse it. Picks the guards of the answer too.
pub async fn request(cx: &mut Context) -> Result<(), ApiError> {
    let gateway = Arc::clone(&cx.gateway);
    let guards = &gateway.guards;
    if !guards_apply(cx.operation) {
        return Ok(());
    }
    let applying = applying(&gateway, &cx.caller, &cx.request.model)?;
    if applying.is_empty() {
        return Ok(());
    }
    cx.guard.any = true;
    let mut checking = Vec::with_capacity(applying.len());
    for &index in &applying {
        let Some(guard) = guards.get(index) else {
            continue;
        };
        if guard.apply.answer() {
            cx.guard.answer.push(index);
        }
        if guard.apply.request() {
            checking.push(index);
        }
    }
    if let Some(spot) = blind_spot(&cx.request)
        && let Some(guard) = guards.not_exempting(checking.iter().copied(), spot.route)
    {
        return Err(ApiError::GuardCannotInspect {
            guard: guard.name.to_string(),
            what: spot.what,
            route: spot.route.name(),
        });
    }
    if checking.is_empty() && cx.guard.answer.is_empty() {
        return Ok(());
    }
    let chat = cx.request.operation == Operation::ChatCompletions;
    let canonical = cx.request.body_json();
    // Parsed once, for every reading of it below; a chat's answer guards alone read none.
    let parsed = (!chat || !checking.is_empty())
        .then(|| serde_json::from_str::<Value>(&canonical).ok())
        .flatten();
    let reading = match (chat, &parsed) {
        (true, _) => Reading::Chat,
        (false, Some(body)) => Reading::Texts(TextView::of_body(body)),
        (false, None) => return Err(failed_with("request", "the request is not JSON")),
    };
    let seen: Arc<str> = match &reading {
        Reading::Chat => Arc::from(canonical.as_str()),
        Reading::Texts(view) => Arc::from(view.request(&cx.request.model, &route_name(cx))),
    };
    let after = check(&mut Checker::of(cx), &checking, &seen, &reading, true).await?;
    if let (Reading::Chat, Some(body)) = (&reading, &parsed) {
        keys(cx, &checking, body).await?;
    }
    if let (Reading::Texts(view), Some(after)) = (&reading, &after) {
        let texts = view
            .read(after)
            .map_err(|_| failed_with("request", "a rewrite did not read back"))?;
        let mut body = parsed.clone().unwrap_or(Value::Null);
        view.write(&texts, &mut body);
        let request = std::mem::replace(&mut cx.request, ClientRequest::unparsed(cx.operation));
        cx.request = request.with_body(&body)?;
    }
    if after.is_some() {
        // What the gateway keeps of the request is what the upstream is sent: the log line's
        // prompt, a Responses request's stored input items.
        if let Some(telemetry) = &mut cx.telemetry {
            let (request, redactor) = (&cx.request, &cx.redactor);
            telemetry.prompt_rewritten(|| redactor.string(request.prompt_json()));
        }
        if let (Some(before), Ok(rewritten)) = (
            &parsed,
            serde_json::from_str::<Value>(&cx.request.body_json()),
        ) {
            super::native::keep_as_sent(cx, before, &rewritten);
        }
    }
    if !cx.guard.answer.is_empty() {
        // The client's own request, for the answer guards: a guard that rewrote it (reversible
        // redaction) finds in it what to give the client back.
        cx.guard.request = Some(Arc::clone(&seen));
        // A dialect whose native answers have no canonical view (its provider reads them only
        // natively; Responses repeats its text in several events) is translated, so that its
        // answer is checked.
        cx.guard.translate |= cx
            .translation
            .as_ref()
            .is_some_and(|t| !t.dialect.native_answers_guarded);
    }
    if cx.translation.is_none() || cx.guard.translate || checking.is_empty() {
        return Ok(());
    }
    let native_before = cx.translation.as_ref().and_then(|t| t.native_value());
    if after.is_some() {
        let after = cx.request.body_json();
        super::native::carry_request(cx, &canonical, &after).await;
    }
    // What the native body carries that its canonical view did not: checked on its own.
    if let (Some(before), false, Some(seen)) = (native_before, cx.guard.translate, &parsed) {
        let residue = TextView::residue(&before, seen);
        if !residue.is_empty() {
            let view = residue.request(&cx.request.model, &route_name(cx));
            let reading = Reading::Texts(residue);
            if let (Some(after), Reading::Texts(residue)) = (
                check(&mut Checker::of(cx), &checking, &view, &reading, false).await?,
                &reading,
            ) {
                super::native::carry_residue(cx, residue, &after);
            }
        }
    }
    Ok(())
}

/// The keys of a Chat Completions request that are shown ([`TextView::keys`]), checked on
/// their own: a guard that would rewrite one refuses the request.
async fn keys(cx: &mut Context, checking: &[usize], body: &Value) -> Result<(), ApiError> {
    let keys = TextView::keys(body);
    if keys.is_empty() {
        return Ok(());
    }
    let view = keys.request(&cx.request.model, &route_name(cx));
    let reading = Reading::Texts(keys);
    check(&mut Checker::of(cx), checking, &view, &reading, false).await?;
    Ok(())
}

/// The route's name as guards are told it: a dialect's (`messages`, `gemini`), else the
/// operation's as the ledger records it (`embeddings`, `audio.transcriptions`).
fn route_name(cx: &Context) -> std::borrow::Cow<'static, str> {
    cx.recorded_as.clone().unwrap_or_else(|| {
        std::borrow::Cow::Borrowed(crate::plugins::operation_names(cx.operation).recorded)
    })
}
