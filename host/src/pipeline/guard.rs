//! The guards on the request path: after `parse`, each guard that applies checks the canonical
//! request (allow, rewrite, refuse); the answer, whole or streamed, goes through each guard's
//! answer guard in order as typed events (see `guard_events.rs`), never buffered whole. Every
//! verdict (guard, action, counts by kind, never the matched text) goes into the request's
//! record and a metric.
//!
//! A request with a guard is never passed through natively to a target that speaks the client's
//! dialect: it is translated, so that its answer is canonical and checked like any other.
//! With no guard configured nothing here runs (no plugin call, no allocation).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::context::Context;
use super::error::ApiError;
use super::guard_events::{self, Template};
use crate::config::guards::GuardMode;
use crate::guards::Who;
use crate::plugins::{
    AnswerEvent, AnswerGuardCall, Finding, Operation, PluginFailure, Refusal, RequestVerdict,
    SlotKind, StreamVerdict,
};

/// Kinds kept per verdict, and bytes per kind: what a guard reports is bounded before it is
/// recorded or labelled.
const KINDS_MAX: usize = 16;
const KIND_MAX: usize = 32;

/// A request's guards: the ones that check its answer, and the verdicts so far.
#[derive(Default)]
pub struct Guarded {
    /// Indices into the gateway's guards of those that check the answer.
    answer: Vec<usize>,
    /// Some guard applies: the answer must be canonical (no native pass-through).
    any: bool,
    verdicts: Vec<Verdict>,
    /// The request as the client sent it (canonical), for the answer guards' constructors.
    request: Option<Arc<str>>,
    /// The chain a streamed answer goes through, taken by the relay. In a mutex only so that
    /// the context stays `Sync` (a plugin instance is not); nothing contends for it.
    chain: Option<std::sync::Mutex<AnswerChain>>,
}

/// One guard's verdict on one side of a request.
struct Verdict {
    guard: Arc<str>,
    side: &'static str,
    action: Action,
    monitor: bool,
    counts: BTreeMap<String, u64>,
}

/// What a guard did.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Allow,
    Rewrite,
    Refuse,
    Stop,
    /// It failed, and its entry says `fail_open`.
    Error,
}

impl Action {
    fn name(self, monitor: bool) -> &'static str {
        match (self, monitor) {
            (Self::Allow, false) => "allow",
            (Self::Rewrite, false) => "rewrite",
            (Self::Refuse, false) => "refuse",
            (Self::Stop, false) => "stop",
            (Self::Error, false) => "error",
            (Self::Allow, true) => "monitor_allow",
            (Self::Rewrite, true) => "monitor_rewrite",
            (Self::Refuse, true) => "monitor_refuse",
            (Self::Stop, true) => "monitor_stop",
            (Self::Error, true) => "monitor_error",
        }
    }
}

impl Guarded {
    /// Whether a guard applies, so that the answer must come back canonical.
    pub fn forces_translation(&self) -> bool {
        self.any
    }

    fn record(
        &mut self,
        guard: &Arc<str>,
        side: &'static str,
        action: Action,
        monitor: bool,
        findings: &[Finding],
    ) {
        let at = self
            .verdicts
            .iter()
            .position(|v| Arc::ptr_eq(&v.guard, guard) && v.side == side);
        let verdict = match at {
            Some(at) => &mut self.verdicts[at],
            None => {
                self.verdicts.push(Verdict {
                    guard: Arc::clone(guard),
                    side,
                    action: Action::Allow,
                    monitor,
                    counts: BTreeMap::new(),
                });
                let last = self.verdicts.len() - 1;
                &mut self.verdicts[last]
            }
        };
        // The strongest action seen stands for the side.
        let rank = |a: Action| match a {
            Action::Allow => 0,
            Action::Rewrite => 1,
            Action::Error => 2,
            Action::Refuse | Action::Stop => 3,
        };
        if rank(action) >= rank(verdict.action) {
            verdict.action = action;
        }
        for finding in findings {
            if verdict.counts.len() >= KINDS_MAX && !verdict.counts.contains_key(&finding.kind) {
                continue;
            }
            let kind = kind_label(&finding.kind);
            *verdict.counts.entry(kind).or_default() += u64::from(finding.count);
        }
    }

    /// The verdicts as the record keeps them (JSON), counted in `metrics`; `None` without any.
    pub fn summary(&mut self, metrics: &crate::telemetry::Metrics) -> Option<String> {
        if self.verdicts.is_empty() {
            return None;
        }
        let list: Vec<serde_json::Value> = (self.verdicts.drain(..))
            .map(|v| {
                let action = v.action.name(v.monitor);
                metrics.guard_verdicts.inc([&v.guard, action], 1);
                serde_json::json!({
                    "guard": &*v.guard,
                    "side": v.side,
                    "action": action,
                    "counts": v.counts,
                })
            })
            .collect();
        Some(serde_json::Value::Array(list).to_string())
    }

    /// The chain a streamed answer goes through (taken once, by the relay).
    pub fn take_chain(&mut self) -> Option<AnswerChain> {
        let chain = self.chain.take()?;
        Some(
            chain
                .into_inner()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    pub(super) fn verdicts_from(&mut self, chain: &mut AnswerChain) {
        for (guard, action, monitor, findings) in chain.verdicts.drain(..) {
            self.record(&guard, "answer", action, monitor, &findings);
        }
    }
}

/// A kind as a label: printable, without quotes, bounded.
fn kind_label(kind: &str) -> String {
    let clean: String = kind
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .take(KIND_MAX)
        .collect();
    if clean.is_empty() {
        "other".to_owned()
    } else {
        clean
    }
}

/// The refusal's status as the client gets it: 4xx or 5xx, else 400.
fn status(refusal: &Refusal) -> u16 {
    if (400..=599).contains(&refusal.status) {
        refusal.status
    } else {
        400
    }
}

fn guards_apply(operation: Operation) -> bool {
    matches!(
        operation,
        Operation::ChatCompletions | Operation::Messages | Operation::Responses
    )
}

/// The request stage's guards: each that applies checks the canonical request in order, and
/// may rewrite or refuse it. Picks the guards of the answer too.
pub async fn request(cx: &mut Context) -> Result<(), ApiError> {
    let gateway = Arc::clone(&cx.gateway);
    let guards = &gateway.guards;
    if guards.is_empty() || !guards_apply(cx.operation) {
        return Ok(());
    }
    let who = Who {
        project: &cx.caller.project,
        key_id: cx.caller.key_id.as_deref(),
        model: &cx.request.model,
    };
    let applying = guards.applying(&who);
    if applying.is_empty() {
        return Ok(());
    }
    cx.guard.any = true;
    let mut body: Option<String> = None;
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
        let checked = span
            .scope(guard.plugin.check_request(&guard.options, json))
            .await;
        let action = match &checked {
            Ok(RequestVerdict::Allow(_)) => "allow",
            Ok(RequestVerdict::Rewrite(_)) => "rewrite",
            Ok(RequestVerdict::Refuse(_)) => "refuse",
            Err(_) => "error",
        };
        span.set("wasmgate.guard.action", action);
        drop(span);
        let verdict = match checked {
            Ok(verdict) => verdict,
            Err(failure) if guard.fail_open => {
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
        }
    }
    if !cx.guard.answer.is_empty() {
        cx.guard.request = original;
    }
    Ok(())
}

/// A guard's failure: no free instance is the gateway's capacity (503, retried by clients),
/// anything else the guard's own fault, which fails the request closed.
fn failed(guard: &str, failure: &PluginFailure) -> ApiError {
    match failure {
        PluginFailure::Saturated { waited_ms, .. } => ApiError::Saturated(*waited_ms),
        PluginFailure::Trapped { .. }
        | PluginFailure::TimedOut { .. }
        | PluginFailure::OutOfMemory { .. } => failed_with(guard, &failure.to_string()),
    }
}

fn failed_with(guard: &str, detail: &str) -> ApiError {
    ApiError::GuardFailed {
        guard: guard.to_owned(),
        detail: detail.to_owned(),
    }
}

/// One answer's guards in order, each on an instance of its own.
pub struct AnswerChain {
    stages: Vec<Stage>,
    template: Template,
    /// (guard, action, monitor, findings), moved into the request's verdicts as they come.
    verdicts: Vec<(Arc<str>, Action, bool, Vec<Finding>)>,
}

struct Stage {
    name: Arc<str>,
    call: AnswerGuardCall,
    monitor: bool,
    fail_open: bool,
    max_hold: u32,
    /// It stopped (in monitor mode) or failed open: events pass it by.
    out: bool,
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
        match guard
            .plugin
            .start_answer(kind, &guard.options, &request)
            .await
        {
            Ok(call) => stages.push(Stage {
                name: Arc::clone(&guard.name),
                call,
                monitor,
                fail_open: guard.fail_open,
                max_hold: guard.max_hold_chars,
                out: false,
            }),
            Err(failure) if guard.fail_open => {
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

    /// `events` through every stage; with `end`, each stage also releases what it holds.
    async fn run(
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
                verdicts.push(stage.call.push(&events).await);
            }
            if end {
                verdicts.push(stage.call.finish().await);
            }
            let mut released = Vec::new();
            for verdict in verdicts {
                match stage.judge(verdict, &mut self.verdicts)? {
                    Some(more) => released.extend(more),
                    None => break,
                }
            }
            if !stage.monitor && !stage.out {
                events = released;
            }
        }
        Ok(events)
    }
}

impl Stage {
    /// One call's verdict: the events released, `None` when the stage is out of the chain from
    /// now on, or the error that ends the answer.
    fn judge(
        &mut self,
        verdict: Result<StreamVerdict, PluginFailure>,
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
                verdicts.push((name, action, self.monitor, release.findings));
                return Ok(Some(release.events));
            }
            Ok(StreamVerdict::Release(release)) => format!(
                "it held {} characters back, more than the {} it declared",
                release.held_chars, self.max_hold
            ),
            Ok(StreamVerdict::Stop(refusal)) => {
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
            Err(failure) => failure.to_string(),
        };
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

/// Events a plugin produced at once (a local stream) through the answer guards.
pub async fn events(cx: &mut Context, events: Vec<String>) -> Result<Vec<String>, ApiError> {
    let Some(mut chain) = open(cx, SlotKind::Call).await? else {
        return Ok(events);
    };
    let mut passed = chain.push(events).await;
    if let Ok(out) = &mut passed {
        match chain.finish().await {
            Ok(more) => out.extend(more),
            Err(error) => passed = Err(error),
        }
    }
    cx.guard.verdicts_from(&mut chain);
    passed
}
