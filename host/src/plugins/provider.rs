//! Calls into provider plugins: one sandboxed instance per request, and a stream decoder that
//! keeps its instance for as long as the stream lasts.

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::OwnedSemaphorePermit;
use wasmtime::component::ResourceAny;
use wasmtime::{Store, Trap, UpdateDeadline};

use super::bindings::provider_types::{
    CanonicalRequest, Completion, ProviderConfig, RequestInfo, StreamOutput,
};
use super::bindings::types::{ConfigError, HttpResponse, PluginError};
use super::bindings::{self, ProviderPluginPre};
use super::state::{DeadlineExceeded, PluginState};
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
    plugin: ProviderPlugin,
    store: Store<PluginState>,
    bindings: bindings::ProviderPlugin,
    _permit: OwnedSemaphorePermit,
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

    /// A fresh instance for one request: waits for a free slot, then instantiates.
    pub async fn start(&self) -> Result<PluginCall, PluginFailure> {
        let inner = &self.host.inner;
        let permit = Arc::clone(&inner.permits)
            .acquire_owned()
            .await
            .map_err(|_| self.trapped("the plugin host is shutting down".into()))?;
        let state = PluginState::new(Arc::clone(&self.name), inner.tokenizer, inner.limits);
        let mut store = Store::new(&inner.engine, state);
        store.limiter(|s| &mut s.memory);
        store.epoch_deadline_callback(|ctx| {
            if Instant::now() >= ctx.data().deadline {
                return Err(DeadlineExceeded.into());
            }
            // Yielding every tick lets a long call share its worker thread with other requests.
            Ok(UpdateDeadline::Yield(1))
        });
        arm(&mut store, inner.limits.call_timeout);
        let bindings = match self.pre.instantiate_async(&mut store).await {
            Ok(bindings) => bindings,
            Err(e) => return Err(classify(&self.name, &store, e)),
        };
        Ok(PluginCall {
            plugin: self.clone(),
            store,
            bindings,
            _permit: permit,
        })
    }

    fn trapped(&self, detail: String) -> PluginFailure {
        PluginFailure::Trapped {
            plugin: Arc::clone(&self.name),
            detail,
        }
    }
}

/// Gives the next call its whole (wall-clock) deadline, checked at every epoch tick.
fn arm(store: &mut Store<PluginState>, timeout: std::time::Duration) {
    store.data_mut().deadline = Instant::now() + timeout;
    store.set_epoch_deadline(1);
}

/// Tells a trap from a timeout from an exhausted memory cap.
fn classify(
    plugin: &Arc<str>,
    store: &Store<PluginState>,
    error: wasmtime::Error,
) -> PluginFailure {
    let limits = &store.data().limits;
    if error.downcast_ref::<DeadlineExceeded>().is_some()
        || matches!(error.downcast_ref::<Trap>(), Some(Trap::Interrupt))
    {
        return PluginFailure::TimedOut {
            plugin: Arc::clone(plugin),
            ms: u64::try_from(limits.call_timeout.as_millis()).unwrap_or(u64::MAX),
        };
    }
    if store.data().memory.exceeded {
        return PluginFailure::OutOfMemory {
            plugin: Arc::clone(plugin),
            mib: (limits.memory_bytes >> 20) as u64,
        };
    }
    let detail = match error.downcast_ref::<Trap>() {
        Some(trap) => trap.to_string(),
        None => format!("{error:#}"),
    };
    PluginFailure::Trapped {
        plugin: Arc::clone(plugin),
        detail,
    }
}

impl PluginCall {
    /// Runs one export with a fresh deadline and turns a trap into a `PluginFailure`.
    async fn run<T>(
        &mut self,
        f: impl AsyncFnOnce(&bindings::ProviderPlugin, &mut Store<PluginState>) -> wasmtime::Result<T>,
    ) -> Result<T, PluginFailure> {
        let timeout = self.plugin.host.inner.limits.call_timeout;
        arm(&mut self.store, timeout);
        match f(&self.bindings, &mut self.store).await {
            Ok(value) => Ok(value),
            Err(e) => Err(classify(&self.plugin.name, &self.store, e)),
        }
    }

    pub async fn validate(&mut self, config: &ProviderConfig) -> CallResult<(), ConfigError> {
        self.run(async |b, s| b.wasmgate_plugin_provider().call_validate(s, config).await)
            .await
    }

    pub async fn prepare(
        &mut self,
        config: &ProviderConfig,
        request: &CanonicalRequest,
    ) -> CallResult<Prepared, PluginError> {
        self.run(async |b, s| {
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
        self.run(async |b, s| {
            b.wasmgate_plugin_provider()
                .call_parse_response(s, config, request, response)
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
            .run(async |b, s| {
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
            .run(async |b, s| {
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
            .run(async |b, s| {
                b.wasmgate_plugin_provider()
                    .stream_decoder()
                    .call_finish(s, decoder)
                    .await
            })
            .await
    }
}
