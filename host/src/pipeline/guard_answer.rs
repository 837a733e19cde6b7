//! The guards of the answer: one chain of answer guards per answer, each on an instance of its
//! own, that a whole answer passes through in one push and a stream event by event (as typed
//! events, see `guard_events.rs`), never buffered whole. A guard that stops the answer ends it:
//! a whole answer with an error, a stream with the client's dialect's error event.

use std::sync::Arc;

use super::context::Context;
use super::error::ApiError;
use super::guard::{failed, failed_with, status};
use super::guard_events::{self, Template};
use super::guard_verdicts::Action;
use crate::config::guards::GuardMode;
use crate::guards::{AnswerGuard, GuardError};
use crate::plugins::{AnswerEvent, Finding, SlotKind, StreamVerdict};
use crate::telemetry::trace::Span;

/// One answer's guards in order, each on an instance of its own.
pub struct AnswerChain {
    stages: Vec<Stage>,
    template: Template,
    /// (guard, action, monitor, findings), moved into the request's verdicts as they come.
    pub(super) verdicts: Vec<(Arc<str>, Action, bool, Vec<Finding>)>,
}

struct Stage {
    name: Arc<str>,
    call: AnswerGuard,
    monitor: bool,
    fail_open: bool,
    max_hold: u32,
    /// The text it said it holds after its last call.
    held: u32,
    /// It stopped (in monitor mode) or failed open: events pass it by.
    out: bool,
    /// Its span: the whole answer it guards, its plugin calls children of it.
    span: Span,
    /// The strongest action it took, set on its span when it ends.
    action: Option<Action>,
}

impl Drop for Stage {
    fn drop(&mut self) {
        let action = self.action.map_or("allow", |a| a.name(self.monitor));
        self.span.set("wasmgate.guard.action", action);
    }
}

/// What the chain let through, or why the answer ends.
pub type Passed = Result<Vec<String>, ApiError>;

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
            Ok(call) => stages.push(Stage {
                name: Arc::clone(&guard.name),
                call,
                monitor,
                fail_open: guard.fail_open,
                max_hold: guard.max_hold_chars,
                held: 0,
                out: false,
                span,
                action: None,
            }),
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
    Ok(Some(AnswerChain {
        stages,
        template: Template::default(),
        verdicts: Vec::new(),
    }))
}

/// Opens the stream's chain and keeps it for the relay.
pub async fn open_stream(cx: &mut Context) -> Result<(), ApiError> {
    cx.guard.chain = open(cx, SlotKind::Stream).await?.map(std::sync::Mutex::new);
    Ok(())
}

impl AnswerChain {
    /// Canonical chunks through the guards: what may go to the client now.
    pub async fn push(&mut self, chunks: Vec<String>) -> Passed {
        let (events, mut plain) = guard_events::read_chunks(&mut self.template, chunks);
        if events.is_empty() {
            return Ok(plain);
        }
        let events = self.run(events, false).await?;
        plain.extend(self.template.write(events));
        Ok(plain)
    }

    /// The upstream ended: what the guards still hold.
    pub async fn finish(&mut self) -> Passed {
        let events = self.run(Vec::new(), true).await?;
        Ok(self.template.write(events))
    }

    /// The text the guards hold back now (those whose output counts: not monitors, not out).
    pub(super) fn held(&self) -> u32 {
        (self.stages.iter())
            .filter(|s| !s.monitor && !s.out)
            .map(|s| s.held)
            .fold(0, u32::saturating_add)
    }

    /// `events` through every stage; with `end`, each stage also releases what it holds.
    pub(super) async fn run(
        &mut self,
        mut events: Vec<AnswerEvent>,
        end: bool,
    ) -> Result<Vec<AnswerEvent>, ApiError> {
        for stage in &mut self.stages {
            if stage.out {
                continue;
            }
            let mut verdicts = Vec::new();
            if !events.is_empty() {
                let scope = stage.span.scope_handle();
                verdicts.push(scope.run(stage.call.push(&events)).await);
            }
            if end {
                let scope = stage.span.scope_handle();
                verdicts.push(scope.run(stage.call.finish()).await);
            }
            let mut released = Vec::new();
            for verdict in verdicts {
                match stage.judge(verdict, &mut self.verdicts)? {
                    Some(more) => released.extend(more),
                    None => break,
                }
            }
            if std::mem::take(&mut stage.call.outside_failed) {
                let name = Arc::clone(&stage.name);
                (self.verdicts).push((name, Action::Error, stage.monitor, Vec::new()));
            }
            if !stage.monitor && !stage.out {
                events = released;
            }
        }
        Ok(events)
    }
}

impl Stage {
    /// Keeps `action` for the span if it is the strongest so far.
    fn took(&mut self, action: Action) {
        if self.action.is_none_or(|a| action.rank() >= a.rank()) {
            self.action = Some(action);
        }
    }

    /// One call's verdict: the events released, `None` when the stage is out of the chain from
    /// now on, or the error that ends the answer.
    fn judge(
        &mut self,
        verdict: Result<StreamVerdict, GuardError>,
        verdicts: &mut Vec<(Arc<str>, Action, bool, Vec<Finding>)>,
    ) -> Result<Option<Vec<AnswerEvent>>, ApiError> {
        let name = Arc::clone(&self.name);
        let failure = match verdict {
            Ok(StreamVerdict::Release(release)) if release.held_chars <= self.max_hold => {
                let action = if release.findings.is_empty() {
                    Action::Allow
                } else {
                    Action::Rewrite
                };
                self.took(action);
                self.held = release.held_chars;
                verdicts.push((name, action, self.monitor, release.findings));
                return Ok(Some(release.events));
            }
            Ok(StreamVerdict::Release(release)) => format!(
                "it held {} characters back, more than the {} it declared",
                release.held_chars, self.max_hold
            ),
            Ok(StreamVerdict::Stop(refusal)) => {
                self.took(Action::Stop);
                verdicts.push((name, Action::Stop, self.monitor, refusal.findings.clone()));
                if self.monitor {
                    self.out = true;
                    return Ok(None);
                }
                return Err(ApiError::AnswerStopped {
                    guard: self.name.to_string(),
                    status: status(&refusal),
                    reason: refusal.reason,
                });
            }
            // The host answered every consult before handing the verdict back.
            Ok(StreamVerdict::Consult(_)) => "it asked for an outside call unanswered".to_owned(),
            Err(failure) => {
                self.took(Action::Error);
                verdicts.push((name, Action::Error, self.monitor, Vec::new()));
                let unavailable = matches!(failure, GuardError::Unavailable(_));
                if self.monitor || (self.fail_open && !unavailable) {
                    tracing::warn!(guard = &*self.name, "guard failed open: {failure}");
                    self.out = true;
                    return Ok(None);
                }
                return Err(failed(&self.name, &failure));
            }
        };
        self.took(Action::Error);
        verdicts.push((name, Action::Error, self.monitor, Vec::new()));
        if self.fail_open || self.monitor {
            tracing::warn!(guard = &*self.name, "guard failed open: {failure}");
            self.out = true;
            return Ok(None);
        }
        Err(failed_with(&self.name, &failure))
    }
}

/// A whole canonical answer through the answer guards, in one push.
pub async fn whole(cx: &mut Context, body: String) -> Result<String, ApiError> {
    let Some(mut chain) = open(cx, SlotKind::Call).await? else {
        return Ok(body);
    };
    let Ok(mut completion) = serde_json::from_str::<serde_json::Value>(&body) else {
        return Err(failed_with("answer", "the answer is not JSON"));
    };
    let events = guard_events::read_completion(&completion);
    let mut passed = chain.run(events, true).await;
    cx.guard.verdicts_from(&mut chain);
    if let Ok(events) = &mut passed {
        guard_events::write_completion(&mut completion, events);
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
