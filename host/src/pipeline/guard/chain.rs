//! One answer's chain of answer guards, each on an instance of its own: a whole answer passes
//! through it in one push and a stream event by event (as typed events, see `events.rs`), never
//! buffered whole. It knows nothing of the request: `answer.rs` opens it for one.

use std::sync::Arc;

use super::action::Action;
use super::events::{self, Template};
use super::failure::{failed, failed_with, status};
use crate::error::ApiError;
use crate::guards::{AnswerGuard, GuardError};
use crate::plugins::{AnswerEvent, Finding, StreamVerdict};
use crate::telemetry::trace::Span;

/// One answer's guards in order, each on an instance of its own.
pub struct AnswerChain {
    stages: Vec<Stage>,
    template: Template,
    /// (guard, action, monitor, findings), moved into the request's verdicts as they come.
    pub(in crate::pipeline) verdicts: Vec<(Arc<str>, Action, bool, Vec<Finding>)>,
}

pub(in crate::pipeline) struct Stage {
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

impl AnswerChain {
    /// Canonical chunks through the guards: what may go to the client now.
    pub async fn push(&mut self, chunks: Vec<String>) -> Passed {
        let (events, mut plain) = events::read_chunks(&mut self.template, chunks);
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
    pub(in crate::pipeline) fn held(&self) -> u32 {
        (self.stages.iter())
            .filter(|s| !s.monitor && !s.out)
            .map(|s| s.held)
            .fold(0, u32::saturating_add)
    }

    /// `events` through every stage; with `end`, each stage also releases what it holds.
    pub async fn run(
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

impl AnswerChain {
    /// A chain of `stages`, in order.
    pub(in crate::pipeline) fn new(stages: Vec<Stage>) -> Self {
        Self {
            stages,
            template: Template::default(),
            verdicts: Vec::new(),
        }
    }
}

impl Stage {
    /// A guard's answer call, its span, and what its entry says of failing and holding.
    pub(in crate::pipeline) fn new(
        name: Arc<str>,
        call: AnswerGuard,
        monitor: bool,
        fail_open: bool,
        max_hold: u32,
        span: Span,
    ) -> Self {
        Self {
            name,
            call,
            monitor,
            fail_open,
            max_hold,
            held: 0,
            out: false,
            span,
            action: None,
        }
    }
}
