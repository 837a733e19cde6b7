//! Calls into provider plugins: one sandboxed instance per request, and a stream decoder that
//! keeps its instance for as long as the stream lasts.

use wasmtime::component::ResourceAny;

use super::bindings;
use super::bindings::provider_types::{
    CanonicalRequest, Completion, Description, Metered, PassthroughAuth, PassthroughCall,
    ProviderConfig, RequestInfo, StreamOutput,
};
use super::bindings::types::{ConfigError, HttpRequest, HttpResponse, PluginError};
use super::failure::PluginFailure;
use super::loaded::{Instance, Loaded};

pub use bindings::provider_types::Prepared;

/// A loaded provider plugin, ready to instantiate cheaply; `start` makes one request's instance.
pub type ProviderPlugin = Loaded<bindings::ProviderPlugin>;

/// One request's instance of a provider plugin. Each method call gets the full deadline.
pub type PluginCall = Instance<bindings::ProviderPlugin>;

/// A stream decoder with the instance it lives in.
pub struct ProviderStream {
    call: PluginCall,
    decoder: ResourceAny,
}

type CallResult<T, E> = Result<Result<T, E>, PluginFailure>;

impl PluginCall {
    /// What the provider states of itself for this entry: its default base URL and telemetry
    /// name.
    pub async fn describe(
        &mut self,
        config: &ProviderConfig,
    ) -> Result<Description, PluginFailure> {
        self.run("describe", async |b, s| {
            b.wasmgate_plugin_provider().call_describe(s, config).await
        })
        .await
    }

    /// The dialects, by their declared names, the entry's upstream serves itself, to pass
    /// through rather than translate.
    pub async fn native_dialects(
        &mut self,
        config: &ProviderConfig,
    ) -> Result<Vec<String>, PluginFailure> {
        self.run("native_dialects", async |b, s| {
            b.wasmgate_plugin_provider()
                .call_native_dialects(s, config)
                .await
        })
        .await
    }

    pub async fn validate(&mut self, config: &ProviderConfig) -> CallResult<(), ConfigError> {
        self.run("validate", async |b, s| {
            b.wasmgate_plugin_provider().call_validate(s, config).await
        })
        .await
    }

    pub async fn prepare(
        &mut self,
        config: &ProviderConfig,
        request: &CanonicalRequest,
    ) -> CallResult<Prepared, PluginError> {
        self.run("prepare", async |b, s| {
            b.wasmgate_plugin_provider()
                .call_prepare(s, config, request)
                .await
        })
        .await
    }

    pub async fn parse_response(
        &mut self,
        config: &ProviderConfig,
        request: &RequestInfo,
        response: &HttpResponse,
    ) -> CallResult<Completion, PluginError> {
        self.run("parse_response", async |b, s| {
            b.wasmgate_plugin_provider()
                .call_parse_response(s, config, request, response)
                .await
        })
        .await
    }

    /// The request to the upstream's own counting endpoint for a canonical request, if it
    /// has one.
    pub async fn prepare_count(
        &mut self,
        config: &ProviderConfig,
        request: &CanonicalRequest,
    ) -> CallResult<Option<HttpRequest>, PluginError> {
        self.run("prepare_count", async |b, s| {
            b.wasmgate_plugin_provider()
                .call_prepare_count(s, config, request)
                .await
        })
        .await
    }

    /// The prompt's tokens from the counting endpoint's answer.
    pub async fn parse_count(
        &mut self,
        config: &ProviderConfig,
        request: &RequestInfo,
        response: &HttpResponse,
    ) -> CallResult<u64, PluginError> {
        self.run("parse_count", async |b, s| {
            b.wasmgate_plugin_provider()
                .call_parse_count(s, config, request, response)
                .await
        })
        .await
    }

    /// The credentials of a pass-through request, as the plugin adds them.
    pub async fn passthrough(
        &mut self,
        config: &ProviderConfig,
        call: &PassthroughCall,
    ) -> CallResult<PassthroughAuth, PluginError> {
        self.run("passthrough", async |b, s| {
            b.wasmgate_plugin_provider()
                .call_passthrough(s, config, call)
                .await
        })
        .await
    }

    /// The usage a pass-through answer reports, from its whole body or its tail.
    pub async fn passthrough_usage(
        &mut self,
        config: &ProviderConfig,
        call: &PassthroughCall,
        response: &HttpResponse,
        whole: bool,
    ) -> Result<Option<Metered>, PluginFailure> {
        self.run("passthrough_usage", async |b, s| {
            b.wasmgate_plugin_provider()
                .call_passthrough_usage(s, config, call, response, whole)
                .await
        })
        .await
    }

    /// Turns this instance into the decoder of one upstream stream.
    pub async fn open_stream(
        mut self,
        config: &ProviderConfig,
        request: &RequestInfo,
        headers: &[(String, String)],
    ) -> Result<ProviderStream, PluginFailure> {
        let decoder = self
            .run("open_stream", async |b, s| {
                b.wasmgate_plugin_provider()
                    .stream_decoder()
                    .call_constructor(s, config, request, headers)
                    .await
            })
            .await?;
        Ok(ProviderStream {
            call: self,
            decoder,
        })
    }
}

impl ProviderStream {
    pub async fn push(&mut self, bytes: &[u8]) -> CallResult<StreamOutput, PluginError> {
        let decoder = self.decoder;
        self.call
            .run("push", async |b, s| {
                b.wasmgate_plugin_provider()
                    .stream_decoder()
                    .call_push(s, decoder, bytes)
                    .await
            })
            .await
    }

    pub async fn finish(&mut self) -> CallResult<StreamOutput, PluginError> {
        let decoder = self.decoder;
        self.call
            .run("finish", async |b, s| {
                b.wasmgate_plugin_provider()
                    .stream_decoder()
                    .call_finish(s, decoder)
                    .await
            })
            .await
    }
}
