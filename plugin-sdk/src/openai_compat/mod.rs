//! For upstreams that speak OpenAI's API themselves (OpenAI, Azure OpenAI, vLLM, ...): complete
//! responses and streams pass through unchanged, and only usage and errors are read on the way.
//!
//! A plugin for such an upstream only builds the request (URL and headers) and delegates the
//! rest: [`parse_response`] in `Provider::parse_response`, [`OpenAiStream`] as its decoder.

mod audio;
mod batches;
mod rerank;
mod response;
mod stream;

pub use audio::{parse_transcription, speech, transcription_form, upstream_format};
pub use batches::{DIALECT as BATCHES_DIALECT, batch_call, request_of};
pub use rerank::parse_rerank;
pub use response::parse_response;
pub use stream::{OpenAiEvents, OpenAiStream};
