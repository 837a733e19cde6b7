//! One pass of a request's texts through the request guards, in order: allow, rewrite or
//! refuse, each verdict recorded. It reads only what it is given (the gateway, the request's
//! trace and verdicts, and the request itself for a chat's rewrite), so that a route outside
//! the model-call path (a count, a pass-through) runs the same guards the same way.

use super::action::Action;
use super::failure::{failed, failed_with, status};
use super::texts::{NotRead, TextView};
use super::verdicts::Guarded;
use crate::auth::Caller;
use crate::config::guards::GuardMode;
use crate::error::ApiError;
use crate::gateway::Gateway;
use crate::guards::{Checked, GuardError, Who};
use crate::pipeline::context::Context;
use crate::pipeline::request::ClientRequest;
use crate::plugins::RequestVerdict;
use crate::telemetry::Trace;

/// How the guards read a request, and how their rewrite is taken back.
pub enum Reading {
    /// A chat's canonical request, as it is.
    Chat,
    /// Any other body, as its texts (`texts.rs`).
    Texts(TextView),
}

/// The indices of the guards that apply to `caller` asking `model` (those whose scope takes it
/// and those its key names); none without a guard configured or named, at no cost. A guard
/// the key names that the config lacks fails the request.
pub fn applying(gateway: &Gateway, caller: &Caller, model: &str) -> Result<Vec<usize>, ApiError> {
    let guards = &gateway.guards;
    if guards.is_empty() && caller.limits.guards.is_empty() {
        return Ok(Vec::new());
    }
    let who = Who {
        project: &caller.project,
        key_id: caller.key_id.as_deref(),
        model,
        named: &caller.limits.guards,
    };
    guards.applying(&who).map_err(|missing| {
        failed_with(
            missing,
            "the API key names it, but the config has no such guard",
        )
    })
}

/// What a check reads and writes: the request's gateway, trace and verdicts, and its parsed
/// request (a chat's rewrite is made in it as it comes).
pub struct Checker<'a> {
    pub gateway: &'a Gateway,
    pub trace: &'a Trace,
    pub guard: &'a mut Guarded,
    pub request: &'a mut ClientRequest,
}

impl<'a> Checker<'a> {
    pub fn of(cx: &'a mut Context) -> Self {
        Self {
            gateway: &cx.gateway,
            trace: &cx.trace,
            guard: &mut cx.guard,
            request: &mut cx.request,
        }
    }
}

/// `request` (as `reading` shows it) through the request guards `checking`, in order: the last
/// rewrite, if any guard made one (a chat's is made in `cx.request` as it comes). A check of
/// what a native body alone carries (`record_allow` false) records only what found something.
pub async fn check(
    cx: &mut Checker<'_>,
    checking: &[usize],
    request: &str,
    reading: &Reading,
    record_allow: bool,
) -> Result<Option<String>, ApiError> {
    let gateway = cx.gateway;
    let mut body: Option<String> = None;
    for &index in checking {
        let Some(guard) = gateway.guards.get(index) else {
            continue;
        };
        let json = body.as_deref().unwrap_or(request);
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
                if record_allow || !findings.is_empty() {
                    cx.guard
                        .record(&guard.name, "request", Action::Allow, monitor, &findings);
                }
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
                    let invalid = || {
                        failed_with(
                            &guard.name,
                            "it rewrote the request into one that is not valid",
                        )
                    };
                    match reading {
                        Reading::Chat => {
                            *cx.request =
                                cx.request.rewritten(&rewrite.body).map_err(|_| invalid())?;
                        }
                        Reading::Texts(view) => match view.read(&rewrite.body) {
                            Ok(_) => {}
                            Err(NotRead::KeyRewritten) => {
                                return Err(ApiError::GuardRefused {
                                    guard: guard.name.to_string(),
                                    status: 400,
                                    reason: NotRead::KeyRewritten.to_string(),
                                });
                            }
                            Err(NotRead::Reshaped) => return Err(invalid()),
                        },
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
    Ok(body)
}
