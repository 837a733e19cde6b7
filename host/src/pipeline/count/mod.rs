//! Token counts: a dialect's `count-tokens` route ([`tokens`]), answered by the model's own
//! tokenizer where its upstream has a counting endpoint ([`upstream`]), else by the gateway's.

pub mod tokens;
pub mod upstream;

pub use tokens::count_tokens;
pub use upstream::{Counted, Counter};
