//! The guards of one loaded config: each entry's plugin, validated options, what it checks and
//! for whom, in the order they run (`loaded.rs`, `guard.rs`), and where its outside verdicts
//! come from (`endpoint.rs`, `answer_guard.rs`). The pipeline (`pipeline/guard/`) runs them.

mod answer_guard;
mod endpoint;
mod guard;
mod guard_error;
mod loaded;

pub use answer_guard::AnswerGuard;
pub use endpoint::Endpoint;
pub use guard::{Checked, Guard, Who};
pub use guard_error::GuardError;
pub use loaded::Guards;
