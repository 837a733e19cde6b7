//! Calls into provider plugins: one sandboxed instance per request, and a stream decoder that
//! keeps its instance for as long as the stream lasts.

use std::sync::Arc;

use wasmtime::Store;
use wasmtime::component::ResourceAny;

use super::bindings::provider_types::{
    CanonicalRequest, Completion, Description, Metered, Operation, PassthroughAuth,
    PassthroughCall, ProviderConfig, RequestInfo, StreamOutput,
};
use super::bindings::types::{ConfigError, HttpResponse, PluginError};
use super::bindings::{self, ProviderPluginPre};
use super::sandbox::Sandbox;
use super::slots::SlotKind;
use super::state::PluginState;
use super::{PluginFailure, PluginHost};

pub use bindings::provider_types::Prepared;

/// A loaded provider plugin, ready to instantiate cheaply.
#[derive(Clone)]
pub struct ProviderPlugin {
    host: PluginHost,
    name: Arc<str>,
    pre: ProviderPluginPre<PluginState>,
}

/// One request's instance of a provider plugin. Each method call gets the full deadline.
pub struct PluginCall {
    sandbox: Sandbox,
    bindings: bindings::ProviderPlugin,
}

/// A stream decoder with the instance it lives in.
pub struct ProviderStream {
    call: PluginCall,
    decoder: ResourceAny,
}

type CallResult<T, E> = Result<Result<T, E>, PluginFailure>;

impl ProviderPlugin {
    pub(super) fn new(
        host: PluginHost,
        name: &str,
        component: &wasmtime::component::Component,
    ) -> wasmtime::Result<Self> {
        let pre = host.inner.linker.instantiate_pre(component)?;
        let pre = ProviderPluginPre::new(pre)?;
        Ok(Self {
            host,
            name: name.into(),
            pre,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// A fresh instance for one request: waits (for a bounded time) for a free slot of `kind`,
    /// then instantiates. A request that may turn into a stream takes a `SlotKind::Stream`
    /// slot, since its instance then lives as long as the stream.
    pub async fn start(&self, kind: SlotKind) -> Result<PluginCall, PluginFailure> {
        let mut sandbox = self.host.sandbox(&self.name, kind).await?;
        let bindings = sandbox
            .instantiate(async |s| self.pre.instantiate_async(s).await)
            .await?;
        Ok(PluginCall { sandbox, bindings })
    }
}

impl PluginCall {
    async fn run<T>(
        &mut self,
        call: &'static str,
        f: impl AsyncFnOnce(&bindings::ProviderPlugin, &mut Store<PluginState>) -> wasmtime::Result<T>,
    ) -> Result<T, PluginFailure> {
        self.sandbox.run(call, &self.bindings, f).await
    }

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

    /// The dialect operations (`Messages`, `Responses`) the entry's upstream serves itself, to
    /// pass through rather than translate.
    pub async fn native_operations(
        &mut self,
        config: &ProviderConfig,
    ) -> Result<Vec<Operation>, PluginFailure> {
        self.run("native_operations", async |b, s| {
            b.wasmgate_plugin_provider()
                .call_native_operations(s, config)
                .await
        })
        .await
    }

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
