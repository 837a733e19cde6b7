//! Calls into dialect plugins: one sandboxed instance per request, and a stream encoder that
//! keeps its instance for as long as the stream lasts.

use wasmtime::component::ResourceAny;

use super::bindings;
use super::bindings::dialect_types::{AnswerInfo, Call, Declaration, Decoded, Event, Failure};
use super::bindings::types::Usage;
use super::failure::PluginFailure;
use super::loaded::{Instance, Loaded};

/// A loaded dialect plugin, ready to instantiate cheaply; `start` makes one request's instance
/// (a stream's encoder lives as long as the stream).
pub type DialectPlugin = Loaded<bindings::DialectPlugin>;

/// One request's instance of a dialect plugin. Each method call gets the full deadline.
pub type DialectCall = Instance<bindings::DialectPlugin>;

/// A stream encoder with the instance it lives in.
pub struct DialectStream {
    call: DialectCall,
    encoder: ResourceAny,
}

type CallResult<T> = Result<Result<T, Failure>, PluginFailure>;

impl DialectCall {
    pub async fn describe(&mut self) -> Result<Declaration, PluginFailure> {
        self.run("describe", async |b, s| {
            b.wasmgate_plugin_dialect().call_describe(s).await
        })
        .await
    }

    pub async fn decode(&mut self, request: &Call) -> CallResult<Decoded> {
        self.run("decode", async |b, s| {
            b.wasmgate_plugin_dialect().call_decode(s, request).await
        })
        .await
    }

    pub async fn encode_count(
        &mut self,
        info: &AnswerInfo,
        tokens: u32,
    ) -> Result<String, PluginFailure> {
        self.run("encode_count", async |b, s| {
            b.wasmgate_plugin_dialect()
                .call_encode_count(s, info, tokens)
                .await
        })
        .await
    }

    pub async fn encode_models(&mut self, route: &str, models: &str) -> CallResult<String> {
        self.run("encode_models", async |b, s| {
            b.wasmgate_plugin_dialect()
                .call_encode_models(s, route, models)
                .await
        })
        .await
    }

    pub async fn encode(
        &mut self,
        info: &AnswerInfo,
        completion: &str,
        usage: Option<Usage>,
    ) -> CallResult<String> {
        self.run("encode", async |b, s| {
            b.wasmgate_plugin_dialect()
                .call_encode(s, info, completion, usage)
                .await
        })
        .await
    }

    pub async fn encode_error(
        &mut self,
        status: u16,
        error: &Failure,
    ) -> Result<String, PluginFailure> {
        self.run("encode_error", async |b, s| {
            b.wasmgate_plugin_dialect()
                .call_encode_error(s, status, error)
                .await
        })
        .await
    }

    /// Turns this instance into the encoder of one stream.
    pub async fn open_stream(mut self, info: &AnswerInfo) -> Result<DialectStream, PluginFailure> {
        let encoder = self
            .run("open_stream", async |b, s| {
                b.wasmgate_plugin_dialect()
                    .stream_encoder()
                    .call_constructor(s, info)
                    .await
            })
            .await?;
        Ok(DialectStream {
            call: self,
            encoder,
        })
    }
}

impl DialectStream {
    /// Encodes `chunks` (what one upstream read delivered) in one call.
    pub async fn push(&mut self, chunks: &[String]) -> CallResult<Vec<Event>> {
        let encoder = self.encoder;
        self.call
            .run("push", async |b, s| {
                b.wasmgate_plugin_dialect()
                    .stream_encoder()
                    .call_push(s, encoder, chunks)
                    .await
            })
            .await
    }

    pub async fn finish(&mut self, usage: Option<Usage>) -> CallResult<Vec<Event>> {
        let encoder = self.encoder;
        self.call
            .run("finish", async |b, s| {
                b.wasmgate_plugin_dialect()
                    .stream_encoder()
                    .call_finish(s, encoder, usage)
                    .await
            })
            .await
    }

    pub async fn fail(
        &mut self,
        status: u16,
        error: &Failure,
    ) -> Result<Vec<Event>, PluginFailure> {
        let encoder = self.encoder;
        self.call
            .run("fail", async |b, s| {
                b.wasmgate_plugin_dialect()
                    .stream_encoder()
                    .call_fail(s, encoder, status, error)
                    .await
            })
            .await
    }
}
