//! The guards, after `parse`: each guard that applies checks the canonical request (allow,
//! rewrite, refuse: [`request`]), and the answer, whole or streamed, goes through each guard's
//! answer guard in order ([`chain`], opened for a request by [`answer`]). Every verdict (guard,
//! action, counts by kind, never the matched text) goes into the request's record and a metric
//! ([`verdicts`]).
//!
//! A request to a target that speaks the client's dialect keeps its native body: the guards
//! check its canonical view, their rewrites are carried into the native text ([`native`],
//! [`edits`]), and a native stream is read a second time into canonical chunks for the answer
//! guards ([`watch`]). [`events`] is the canonical answer as guards see it.
//!
//! The files depend one way: `action`, `events`, `edits` and `failure` are leaves; `chain` uses
//! them; `verdicts` keeps a chain; `answer` opens one for a request; `native` and `request` are
//! the stage's entries.

mod action;
pub mod answer;
mod blind;
pub mod body;
pub mod chain;
pub mod check;
mod edits;
mod events;
pub mod failure;
pub mod native;
pub mod request;
mod texts;
pub mod verdicts;
pub mod watch;

pub use request::request;
