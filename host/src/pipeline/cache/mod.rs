//! The cache stage, between admission and routing: a request the cache may answer is looked up
//! under its key (see `crate::cache::key`), the operator's cache-key plugin having had its say in
//! what goes into it, then (in semantic mode, after an exact miss) by the meaning of its last
//! user turn ([`semantic`]). A hit is answered from the kept completion in the client's
//! dialect, whole or as a replayed stream (see `edge/hit.rs`); a miss carries its key forward
//! on the request's [`slot::Slot`], so that the answer is kept once it is whole: a whole answer
//! at once, a stream once it ended normally.
//!
//! What is kept is the canonical completion, which answers any form of the request. An answer a
//! target gave in the client's own dialect (a native pass-through: Messages to Anthropic,
//! Responses to OpenAI) is kept as it came, and answers the same dialect (the key has it) in the
//! same form (whole, or streamed), its id replaced by a fresh one in each replay.
//!
//! `slot` is a leaf (the request's context holds it); `semantic` asks the embeddings model
//! through the route stage; `lookup` is the stage's entry.

pub mod lookup;
mod semantic;
pub mod slot;

pub use lookup::lookup;
pub use slot::{Hit, Slot};
