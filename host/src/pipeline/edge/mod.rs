//! The pipeline's edge: the client's API, in at the start and out at the end. A request of a
//! registry dialect (Anthropic's Messages, OpenAI's Responses, Google's GenAI, ...) is decoded
//! once by its dialect's plugin into the canonical request ([`decode`]), and everything the
//! stages hand back (a whole answer, a stream, a local or cached answer, an error) leaves
//! through one way out ([`out`]), encoded back by the plugin unless the target spoke the
//! dialect itself. Chat Completions is the identity edge on the same path: its body is the
//! canonical one, and its answers are written as they are.
//!
//! Between the two the stages speak only the canonical form, or the client's own body, which a
//! target that speaks the dialect gets untouched ([`Translation::native_request`]). Which
//! dialect it is comes from the route the server matched ([`Edge`]); nothing here knows a
//! dialect by name: what differs between them (the prefix of an answer's id, whether turns are
//! chained through the store) is what each declared.
//!
//! In a dialect that chains turns (OpenAI's Responses), answers the client asks to keep
//! (`store`, the default) are kept in the ledger's database, whichever upstream answered, and a
//! `previous_response_id` is replayed from there, so that a conversation can move between
//! providers and replicas (see `replay.rs`).
//!
//! The files: `decode` (the way in) and `translation` (what a dialect request carries) come
//! first; `out` (the way out) with `encode` (the plugin's encodings), `frame` (a stream written
//! for the client), `hit` (a cache hit written), `json_array` (a stream as one JSON array),
//! `transcript` (a transcription's formats) after the stages; `replay` and `keeper` (Responses
//! kept and replayed) and `dialect_call` are leaves.

pub mod decode;
pub mod dialect_call;
mod encode;
mod frame;
mod hit;
mod json_array;
mod keeper;
pub mod out;
mod replay;
mod transcript;
pub mod translation;

pub use decode::{decode, forwarded};
pub use dialect_call::models;
pub use encode::error_body;
pub use out::{Outcome, out};
pub use translation::{Edge, Translation};
