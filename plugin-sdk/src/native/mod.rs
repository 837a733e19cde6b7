//! Native pass-through of a client dialect (Anthropic's Messages, OpenAI's Responses) to an
//! upstream that speaks it itself: the request body goes on as the client wrote it, the answer
//! comes back unchanged, and only usage and errors are read on the way.
//!
//! A plugin lists the dialects it serves natively in `Provider::native_dialects` ([`MESSAGES`],
//! [`RESPONSES`], or any other dialect's declared name), finds their requests with
//! [`native_call`], builds the request in `prepare` (URL and key; [`forwarded_header`] for the
//! client headers it passes on), and decodes streams with [`NativeStream`] over a [`NativeDialect`] that reads the
//! dialect's usage. [`OrNative`] lets one `Provider::Decoder` serve both its chat streams and
//! its native ones. OpenAI's Responses dialect is here ([`ResponsesEvents`]), shared by every
//! plugin whose upstream serves it.

mod model;
mod responses;

use serde::Deserialize;

use crate::sse::SseEvent;
use crate::sse_stream::{EventTranslator, SseStream};
use crate::{
    CanonicalRequest, NativeCall, PluginError, ProviderConfig, RequestInfo, StreamDecoder,
    StreamOutput, Usage,
};

pub use model::with_model;
pub use responses::{ResponsesEvents, ResponsesStream};

/// The declared name of Anthropic's Messages dialect (`POST /v1/messages`).
pub const MESSAGES: &str = "messages";
/// The declared name of OpenAI's Responses dialect (`POST /v1/responses`).
pub const RESPONSES: &str = "responses";
/// Not a dialect: listed beside [`RESPONSES`] by a provider whose upstream's Responses endpoint
/// also takes WebSocket mode (`GET {base_url}/responses` upgraded, `response.create` events in).
/// The host then sends a client socket's turns there on an upstream socket, opened with the
/// credentials `passthrough` gives for `GET /responses`.
pub const RESPONSES_WEBSOCKET: &str = "openai-responses-websocket";

/// The path, below an upstream's Responses API root (`https://api.openai.com/v1/`), that serves
/// the Responses dialect's route named `route`: `responses`, and its `input_tokens` counter and
/// `compact` compaction (<https://platform.openai.com/docs/api-reference/responses>).
pub fn responses_path(route: &str) -> &'static str {
    match route {
        "input_tokens" => "responses/input_tokens",
        "compact" => "responses/compact",
        _ => "responses",
    }
}

/// The native call of `native` (a request's or a request info's) if it is in `dialect`.
pub fn native_call<'a>(native: &'a Option<NativeCall>, dialect: &str) -> Option<&'a NativeCall> {
    native.as_ref().filter(|call| call.dialect == dialect)
}

/// The value of the client header `name` the host forwarded with `request` (compared
/// case-insensitively), if the client sent it.
pub fn forwarded_header<'a>(request: &'a CanonicalRequest, name: &str) -> Option<&'a str> {
    request
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// What a native stream needs to know of its dialect: where the usage is, which events are
/// errors, and which event ends a complete answer.
pub trait NativeDialect: Default + 'static {
    /// Looks at one event, whose `type` is `kind` and whose whole `data` is `data`. `Err` ends
    /// the stream with a typed error instead of passing the event on (an upstream `error`
    /// event: the host reports it in the client's dialect).
    fn observe(&mut self, kind: &str, data: &str) -> Result<(), PluginError>;

    /// The body ended: `Err` when the answer is incomplete (no closing event came).
    fn end(&self) -> Result<(), PluginError>;

    /// The usage reported so far, if any.
    fn usage(&self) -> Option<Usage>;
}

/// The [`EventTranslator`] of a native stream: each event's `data` passes through unchanged as
/// one event, after the dialect `D` has read it.
#[derive(Debug, Default)]
pub struct NativeEvents<D> {
    dialect: D,
}

/// The decoder of a native stream in dialect `D`.
pub type NativeStream<D> = SseStream<NativeEvents<D>>;

impl<D> NativeEvents<D> {
    /// The dialect's state, e.g. to inspect it in tests.
    pub fn dialect(&self) -> &D {
        &self.dialect
    }
}

/// Every event of both dialects is a JSON object naming its `type`, which the host writes as the
/// SSE `event:` line; the rest is left unread here.
#[derive(Deserialize)]
struct Typed<'a> {
    #[serde(rename = "type", borrow)]
    kind: std::borrow::Cow<'a, str>,
}

impl<D: NativeDialect> EventTranslator for NativeEvents<D> {
    fn new(_: ProviderConfig, _: RequestInfo, _: &[(String, String)]) -> Self {
        NativeEvents {
            dialect: D::default(),
        }
    }

    fn event(&mut self, event: SseEvent, out: &mut Vec<String>) -> Result<(), PluginError> {
        let data = event.data.trim();
        // Comments and keep-alives carry no data; `[DONE]` is chat's terminator, which some
        // compatible servers add to other streams too.
        if data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        let typed: Typed = serde_json::from_str(data).map_err(|_| {
            PluginError::upstream("upstream sent a stream event that is not a typed JSON object")
        })?;
        self.dialect.observe(&typed.kind, data)?;
        out.push(event.data);
        Ok(())
    }

    fn end(&mut self, _: &mut Vec<String>) -> Result<(), PluginError> {
        self.dialect.end()
    }

    fn usage(&self) -> Option<Usage> {
        self.dialect.usage()
    }
}

/// A decoder that is `C` for canonical (chat) streams and `N` for native dialect streams,
/// chosen by whether the request is native, so that one `Provider::Decoder` serves both.
pub enum OrNative<C, N> {
    /// Decoding a chat completion stream.
    Canonical(C),
    /// Passing a dialect's stream through.
    Native(N),
}

impl<C: StreamDecoder, N: StreamDecoder> StreamDecoder for OrNative<C, N> {
    fn new(config: ProviderConfig, request: RequestInfo, headers: &[(String, String)]) -> Self {
        if request.native.is_some() {
            OrNative::Native(N::new(config, request, headers))
        } else {
            OrNative::Canonical(C::new(config, request, headers))
        }
    }

    fn push(&mut self, bytes: &[u8]) -> Result<StreamOutput, PluginError> {
        match self {
            OrNative::Canonical(c) => c.push(bytes),
            OrNative::Native(n) => n.push(bytes),
        }
    }

    fn finish(&mut self) -> Result<StreamOutput, PluginError> {
        match self {
            OrNative::Canonical(c) => c.finish(),
            OrNative::Native(n) => n.finish(),
        }
    }
}

#[cfg(test)]
mod tests;
