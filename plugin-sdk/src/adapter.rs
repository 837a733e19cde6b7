//! Adapts a [`Provider`] to the traits the generated bindings export.

use core::cell::RefCell;
use core::marker::PhantomData;

use crate::wit::exports::wasmgate::plugin::provider::{Guest, GuestStreamDecoder};
use crate::{
    CanonicalRequest, Completion, ConfigError, HttpResponse, Metered, Operation, PassthroughAuth,
    PassthroughCall, PluginError, Prepared, Provider, ProviderConfig, RequestInfo, StreamDecoder,
    StreamOutput,
};

/// The type [`export_provider!`](crate::export_provider) exports for a provider `P`.
pub struct Adapter<P>(PhantomData<P>);

impl<P: Provider> Guest for Adapter<P> {
    type StreamDecoder = DecoderResource<P::Decoder>;

    fn native_operations(config: ProviderConfig) -> Vec<Operation> {
        P::native_operations(&config)
    }

    fn native_dialects(config: ProviderConfig) -> Vec<String> {
        P::native_dialects(&config)
    }

    fn validate(config: ProviderConfig) -> Result<(), ConfigError> {
        P::validate(&config)
    }

    fn prepare(config: ProviderConfig, request: CanonicalRequest) -> Result<Prepared, PluginError> {
        P::prepare(&config, request)
    }

    fn parse_response(
        config: ProviderConfig,
        request: RequestInfo,
        response: HttpResponse,
    ) -> Result<Completion, PluginError> {
        P::parse_response(&config, &request, response)
    }

    fn passthrough(
        config: ProviderConfig,
        call: PassthroughCall,
    ) -> Result<PassthroughAuth, PluginError> {
        P::passthrough(&config, &call)
    }

    fn passthrough_usage(
        config: ProviderConfig,
        call: PassthroughCall,
        response: HttpResponse,
        whole: bool,
    ) -> Option<Metered> {
        P::passthrough_usage(&config, &call, &response, whole)
    }
}

/// A stream decoder as a WIT resource. Resource methods get `&self`, and a decoder is called by one
/// host task at a time, so a `RefCell` gives it the `&mut self` it wants.
pub struct DecoderResource<D>(RefCell<D>);

impl<D: StreamDecoder> GuestStreamDecoder for DecoderResource<D> {
    fn new(config: ProviderConfig, request: RequestInfo, headers: Vec<(String, String)>) -> Self {
        DecoderResource(RefCell::new(D::new(config, request, &headers)))
    }

    fn push(&self, bytes: Vec<u8>) -> Result<StreamOutput, PluginError> {
        self.0.borrow_mut().push(&bytes)
    }

    fn finish(&self) -> Result<StreamOutput, PluginError> {
        self.0.borrow_mut().finish()
    }
}
