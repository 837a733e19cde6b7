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

use super::action::Action;
use super::failure::{failed, failed_with, status};
use crate::config::guards::GuardMode;
use crate::error::ApiError;
use crate::guards::{Checked, GuardError, Who};
use crate::pipeline::context::Context;
use crate::plugins::{Operation, RequestVerdict};

/// Guards read conversations: chat completions, which every dialect's call decodes into (the
/// request's operation is the canonical one from its decoding on).
fn guards_apply(operation: Operation) -> bool {
    operation == Operation::ChatCompletions
}

/// The request stage's guards: each that applies checks the canonical request in order, and
/// may rewrite or refuse it. Picks the guards of the answer too.
pub async fn request(cx: &mut Context) -> Result<(), ApiError> {
    let gateway = Arc::clone(&cx.gateway);
    let guards = &gateway.guards;
    let named = !cx.caller.limits.guards.is_empty();
    if (guards.is_empty() && !named) || !guards_apply(cx.operation) {
        return Ok(());
    }
    let who = Who {
        project: &cx.caller.project,
        key_id: cx.caller.key_id.as_deref(),
        model: &cx.request.model,
        named: &cx.caller.limits.guards,
    };
    let applying = guards.applying(&who).map_err(|missing| {
        failed_with(
            missing,
            "the API key names it, but the config has no such guard",
        )
    })?;
    if applying.is_empty() {
        return Ok(());
    }
    cx.guard.any = true;
    let mut body: Option<String> = None;
    // The canonical request before the first rewrite, when one was made: the native body gets
    // the same change.
    let mut before: Option<String> = None;
    // The client's own request, for the answer guards: a guard that rewrote it (reversible
    // redaction) finds in it what to give the client back.
    let original: Option<Arc<str>> = applying
        .iter()
        .any(|&i| guards.get(i).is_some_and(|g| g.apply.answer()))
        .then(|| cx.request.body_json().into());
    for &index in &applying {
        let Some(guard) = guards.get(index) else {
            continue;
        };
        if guard.apply.answer() {
            cx.guard.answer.push(index);
        }
        if !guard.apply.request() {
            continue;
        }
        let json = body.get_or_insert_with(|| cx.request.body_json());
        let monitor = guard.mode == GuardMode::Monitor;
        // A span per guard, its plugin call a child of it.
        let mut span = cx.trace.stage("guard");
        span.set("wasmgate.guard", guard.name.to_string());
        span.set("wasmgate.guard.side", "request");
        let checked = span.scope(guard.check_request(json)).await;
        let action = match &checked {
            Ok(Checked {
                verdict: RequestVerdict::Allow(_),
                ..
            }) => "allow",
            Ok(Checked {
                verdict: RequestVerdict::Rewrite(_),
                ..
            }) => "rewrite",
            Ok(Checked {
                verdict: RequestVerdict::Refuse(_),
                ..
            }) => "refuse",
            Ok(Checked {
                verdict: RequestVerdict::Consult(_),
                ..
            })
            | Err(_) => "error",
        };
        span.set("wasmgate.guard.action", action);
        drop(span);
        let verdict = match checked {
            Ok(checked) => {
                if checked.outside_failed {
                    cx.guard
                        .record(&guard.name, "request", Action::Error, monitor, &[]);
                }
                checked.verdict
            }
            Err(failure @ GuardError::Unavailable(_)) if !monitor => {
                cx.guard
                    .record(&guard.name, "request", Action::Error, monitor, &[]);
                return Err(failed(&guard.name, &failure));
            }
            Err(failure) if guard.fail_open || monitor => {
                tracing::warn!(guard = &*guard.name, "guard failed open: {failure}");
                cx.guard
                    .record(&guard.name, "request", Action::Error, monitor, &[]);
                continue;
            }
            Err(failure) => {
                cx.guard
                    .record(&guard.name, "request", Action::Error, monitor, &[]);
                return Err(failed(&guard.name, &failure));
            }
        };
        match verdict {
            RequestVerdict::Allow(findings) => {
                cx.guard
                    .record(&guard.name, "request", Action::Allow, monitor, &findings);
            }
            RequestVerdict::Rewrite(rewrite) => {
                cx.guard.record(
                    &guard.name,
                    "request",
                    Action::Rewrite,
                    monitor,
                    &rewrite.findings,
                );
                if !monitor {
                    let rewritten = cx.request.rewritten(&rewrite.body).map_err(|_| {
                        failed_with(
                            &guard.name,
                            "it rewrote the request into one that is not valid",
                        )
                    })?;
                    cx.request = rewritten;
                    if before.is_none() {
                        before = body.take();
                    }
                    body = Some(rewrite.body);
                }
            }
            RequestVerdict::Refuse(refusal) => {
                cx.guard.record(
                    &guard.name,
                    "request",
                    Action::Refuse,
                    monitor,
                    &refusal.findings,
                );
                if !monitor {
                    return Err(ApiError::GuardRefused {
                        guard: guard.name.to_string(),
                        status: status(&refusal),
                        reason: refusal.reason,
                    });
                }
            }
            // `check_request` answers every consult before it returns.
            RequestVerdict::Consult(_) => {}
        }
    }
    if !cx.guard.answer.is_empty() {
        cx.guard.request = original;
        // A dialect whose native answers have no canonical view (its provider reads them only
        // natively; Responses repeats its text in several events) is translated, so that its
        // answer is checked.
        cx.guard.translate |= cx
            .translation
            .as_ref()
            .is_some_and(|t| !t.dialect.native_answers_guarded);
    }
    if let (Some(before), Some(after)) = (before, body)
        && !cx.guard.translate
    {
        super::native::carry_request(cx, &before, &after).await;
    }
    Ok(())
}
