//! For upstreams that speak OpenAI's API themselves (OpenAI, Azure OpenAI, vLLM, ...): complete
//! responses and streams pass through unchanged, and only usage and errors are read on the way.
//!
//! A plugin for such an upstream names the URL ([`path`] under its base URL) and delegates the
//! rest: [`upstream`] builds the request, [`parse_response`] (the default of
//! `Provider::parse_response`) reads the answer, [`OpenAiStream`] decodes streams.

mod audio;
mod batches;
mod request;
mod rerank;
mod response;
mod stream;

pub use audio::{parse_transcription, speech, transcription_form, upstream_format};
pub use batches::{DIALECT as BATCHES_DIALECT, batch_call};
pub use request::{path, plain, upstream};
pub use rerank::parse_rerank;
pub use response::parse_response;
pub use stream::{OpenAiEvents, OpenAiStream};

#[cfg(test)]
mod tests;
