//! The trait a guard plugin implements, and its adapter to the generated bindings.

use core::cell::RefCell;
use core::marker::PhantomData;

use serde::de::DeserializeOwned;

use crate::kept_options::parse_kept;
use crate::wit::guard::{Guest, GuestAnswerGuard};
use crate::{
    AnswerEvent, ConfigError, ConsultReply, Finding, GuardInfo, RequestVerdict, StreamVerdict,
};
use crate::{Release, parse_options};

/// A guard plugin: a content policy on requests before they leave and on answers as they come
/// back. Request checks run on an instance that may serve other requests, so implementations
/// are types without values (`struct MyGuard;`); an answer's state lives in its
/// [`Guard::Answer`].
pub trait Guard: 'static {
    /// The entry's `options`, read with [`parse_options`] once per distinct
    /// text by each instance (a reading depends on the text alone). Give it
    /// `#[serde(deny_unknown_fields)]` so that a misspelt option fails when the config loads.
    type Options: DeserializeOwned + 'static;
    /// What guards one answer.
    type Answer: AnswerGuard<Options = Self::Options>;

    /// Checks the options once, when the config loads, and says how much text the answer guard
    /// may hold back. The default accepts anything and holds nothing.
    fn validate(options: &Self::Options) -> Result<GuardInfo, ConfigError> {
        let _ = options;
        Ok(GuardInfo { max_hold_chars: 0 })
    }

    /// Checks a request (Chat Completions JSON). The default allows it.
    fn check_request(options: &Self::Options, request: &str) -> RequestVerdict {
        let _ = (options, request);
        RequestVerdict::Allow(Vec::new())
    }

    /// The check of `request` once the outside call a `RequestVerdict::Consult` asked for
    /// came back as `reply` (`context` is the consult's own). It may run on another instance
    /// than the check that asked. A guard that consults implements this; the default fails
    /// the request closed.
    fn check_request_reply(
        options: &Self::Options,
        request: &str,
        context: &str,
        reply: ConsultReply,
    ) -> RequestVerdict {
        let _ = (options, request, context, reply);
        panic!("this guard asked for an outside call it does not take the reply of")
    }
}

/// Guards one answer: takes its events in order, returns what may go now.
pub trait AnswerGuard: Sized + 'static {
    /// The guard's options.
    type Options: DeserializeOwned;
    /// Starts guarding an answer to `request` (Chat Completions JSON).
    fn new(options: Self::Options, request: &str) -> Self;
    /// Takes the next events.
    fn push(&mut self, events: Vec<AnswerEvent>) -> StreamVerdict;
    /// The answer ended: release all that is held.
    fn finish(&mut self) -> StreamVerdict;
    /// What came of the outside call the last verdict (a `StreamVerdict::Consult`) asked for.
    /// A guard that consults implements this; the default fails the answer closed.
    fn reply(&mut self, reply: ConsultReply) -> StreamVerdict {
        let _ = reply;
        panic!("this guard asked for an outside call it does not take the reply of")
    }
}

/// An answer guard that releases every event as it comes: for guards of requests only.
pub struct PassAnswers<O>(PhantomData<O>);

impl<O: DeserializeOwned + 'static> AnswerGuard for PassAnswers<O> {
    type Options = O;
    fn new(_: O, _: &str) -> Self {
        Self(PhantomData)
    }
    fn push(&mut self, events: Vec<AnswerEvent>) -> StreamVerdict {
        StreamVerdict::release(events, 0, Vec::new())
    }
    fn finish(&mut self) -> StreamVerdict {
        StreamVerdict::release(Vec::new(), 0, Vec::new())
    }
}

impl StreamVerdict {
    /// Lets `events` go, holding `held_chars` of text, having found `findings`.
    pub fn release(events: Vec<AnswerEvent>, held_chars: u32, findings: Vec<Finding>) -> Self {
        StreamVerdict::Release(Release {
            events,
            held_chars,
            findings,
        })
    }
}

/// The type [`export_guard!`](crate::export_guard) exports for a guard `G`.
pub struct GuardAdapter<G>(PhantomData<G>);

impl<G: Guard> Guest for GuardAdapter<G> {
    type AnswerGuard = AnswerResource<G::Answer>;

    fn validate(options: String) -> Result<GuardInfo, ConfigError> {
        G::validate(&parse_options(&options)?)
    }

    fn check_request(options: String, request: String) -> RequestVerdict {
        match parse_kept::<G::Options>(&options) {
            Ok(options) => G::check_request(&options, &request),
            // Refused when the config loaded; failing closed is all that is left.
            Err(err) => panic!("invalid guard options: {}", err.message),
        }
    }

    fn check_request_reply(
        options: String,
        request: String,
        context: String,
        reply: ConsultReply,
    ) -> RequestVerdict {
        match parse_kept::<G::Options>(&options) {
            Ok(options) => G::check_request_reply(&options, &request, &context, reply),
            Err(err) => panic!("invalid guard options: {}", err.message),
        }
    }
}

/// The resource the host holds for one answer. The host calls it from one task at a time, so a
/// `RefCell` gives the guard the `&mut self` it wants.
pub struct AnswerResource<A>(RefCell<A>);

impl<A: AnswerGuard> GuestAnswerGuard for AnswerResource<A> {
    fn new(options: String, request: String) -> Self {
        match parse_options(&options) {
            Ok(options) => AnswerResource(RefCell::new(A::new(options, &request))),
            Err(err) => panic!("invalid guard options: {}", err.message),
        }
    }

    fn push(&self, events: Vec<AnswerEvent>) -> StreamVerdict {
        self.0.borrow_mut().push(events)
    }

    fn finish(&self) -> StreamVerdict {
        self.0.borrow_mut().finish()
    }

    fn reply(&self, reply: ConsultReply) -> StreamVerdict {
        self.0.borrow_mut().reply(reply)
    }
}

/// Adds `n` findings of `kind` to `findings`, one entry per kind.
pub fn count(findings: &mut Vec<Finding>, kind: &str, n: u32) {
    if n == 0 {
        return;
    }
    match findings.iter_mut().find(|f| f.kind == kind) {
        Some(f) => f.count = f.count.saturating_add(n),
        None => findings.push(Finding {
            kind: kind.to_owned(),
            count: n,
        }),
    }
}

pub use crate::request_texts::{Origin, request_origin, request_texts};
