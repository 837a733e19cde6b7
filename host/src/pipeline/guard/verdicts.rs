//! What a request's guards decided: each guard's verdict on each side (its strongest action,
//! the counts of what it found by kind, never the matched text), kept on the request's context
//! and summarised into its record and the verdicts metric when the request ends.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::action::Action;
use super::chain::AnswerChain;
use crate::plugins::Finding;

/// Kinds kept per verdict, and bytes per kind: what a guard reports is bounded before it is
/// recorded or labelled.
const KINDS_MAX: usize = 16;
const KIND_MAX: usize = 32;

/// A request's guards: the ones that check its answer, and the verdicts so far.
#[derive(Default)]
pub struct Guarded {
    /// Indices into the gateway's guards of those that check the answer.
    pub(in crate::pipeline) answer: Vec<usize>,
    /// Some guard applies.
    pub(in crate::pipeline) any: bool,
    /// The request must be translated for a target that speaks the client's dialect: a
    /// guard's rewrite could not be carried into the native body, or the answer cannot be
    /// checked natively (see `native.rs`).
    pub(in crate::pipeline) translate: bool,
    verdicts: Vec<Verdict>,
    /// The request as the client sent it (canonical), for the answer guards' constructors.
    pub(in crate::pipeline) request: Option<Arc<str>>,
    /// The chain a streamed answer goes through, taken by the relay. In a mutex only so that
    /// the context stays `Sync` (a plugin instance is not); nothing contends for it.
    pub(in crate::pipeline) chain: Option<std::sync::Mutex<AnswerChain>>,
}

/// One guard's verdict on one side of a request.
struct Verdict {
    guard: Arc<str>,
    side: &'static str,
    action: Action,
    monitor: bool,
    counts: BTreeMap<String, u64>,
}

impl Guarded {
    /// Whether a guard applies.
    pub fn applies(&self) -> bool {
        self.any
    }

    /// Whether a target that speaks the client's dialect must get the request translated
    /// rather than in the client's own body.
    pub fn forces_translation(&self) -> bool {
        self.translate
    }

    /// Whether the answer is guarded.
    pub fn answer_guarded(&self) -> bool {
        !self.answer.is_empty()
    }

    pub(in crate::pipeline) fn record(
        &mut self,
        guard: &Arc<str>,
        side: &'static str,
        action: Action,
        monitor: bool,
        findings: &[Finding],
    ) {
        let verdict = self.verdict(guard, side, monitor);
        verdict.take(action);
        for finding in findings {
            verdict.count(kind_label(&finding.kind), u64::from(finding.count));
        }
    }

    /// The verdict of `guard` on `side`, made (allowing, counting nothing) if there is none.
    fn verdict(&mut self, guard: &Arc<str>, side: &'static str, monitor: bool) -> &mut Verdict {
        let at =
            (self.verdicts.iter()).position(|v| Arc::ptr_eq(&v.guard, guard) && v.side == side);
        let at = at.unwrap_or_else(|| {
            self.verdicts.push(Verdict {
                guard: Arc::clone(guard),
                side,
                action: Action::Allow,
                monitor,
                counts: BTreeMap::new(),
            });
            self.verdicts.len() - 1
        });
        &mut self.verdicts[at]
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

    /// `other`'s verdicts moved into these: a session's checks made outside any request (a
    /// Realtime client's events), into the record of the response they came before.
    pub fn absorb(&mut self, other: &mut Guarded) {
        for theirs in other.verdicts.drain(..) {
            let mine = self.verdict(&theirs.guard, theirs.side, theirs.monitor);
            mine.take(theirs.action);
            for (kind, count) in theirs.counts {
                mine.count(kind, count);
            }
        }
    }

    /// The chain a streamed answer goes through (taken once, by the relay).
    pub fn take_chain(&mut self) -> Option<AnswerChain> {
        let chain = self.chain.take()?;
        Some(crate::sync::into_inner(chain))
    }

    /// The verdicts `chain` reached so far, moved into the request's.
    pub fn verdicts_from(&mut self, chain: &mut AnswerChain) {
        for (guard, action, monitor, findings) in chain.verdicts.drain(..) {
            self.record(&guard, "answer", action, monitor, &findings);
        }
    }
}

impl Verdict {
    /// `action` seen: the strongest action seen stands for the side.
    fn take(&mut self, action: Action) {
        if action.rank() >= self.action.rank() {
            self.action = action;
        }
    }

    /// `count` more findings of `kind` (a label), within [`KINDS_MAX`] kinds.
    fn count(&mut self, kind: String, count: u64) {
        if self.counts.len() < KINDS_MAX || self.counts.contains_key(&kind) {
            *self.counts.entry(kind).or_default() += count;
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
