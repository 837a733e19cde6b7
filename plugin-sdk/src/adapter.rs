//! Adapts a [`Provider`] to the traits the generated bindings export, and the same calls as
//! functions, for plugins' unit tests: [`validate`], [`prepare`], ...

use core::cell::RefCell;
use core::marker::PhantomData;

use crate::entry::Entry;
use crate::wit::provider::{Description, Guest, GuestStreamDecoder};
use crate::{
    CanonicalRequest, Completion, ConfigError, HttpRequest, HttpResponse, Metered, PassthroughAuth,
    PassthroughCall, PluginError, Prepared, Provider, ProviderConfig, RequestInfo, StreamDecoder,
    StreamOutput,
};

/// The type [`export_provider!`](crate::export_provider) exports for a provider `P`.
pub struct Adapter<P>(PhantomData<P>);

impl<P: Provider> Guest for Adapter<P> {
    type StreamDecoder = DecoderResource<P::Decoder>;

    fn describe(config: ProviderConfig) -> Description {
        describe::<P>(&config)
    }

    fn native_dialects(config: ProviderConfig) -> Vec<String> {
        native_dialects::<P>(&config)
    }

    fn validate(config: ProviderConfig) -> Result<(), ConfigError> {
        validate::<P>(&config)
    }

    fn prepare(config: ProviderConfig, request: CanonicalRequest) -> Result<Prepared, PluginError> {
        prepare::<P>(&config, request)
    }

    fn parse_response(
        config: ProviderConfig,
        request: RequestInfo,
        response: HttpResponse,
    ) -> Result<Completion, PluginError> {
        parse_response::<P>(&config, &request, response)
    }

    fn prepare_count(
        config: ProviderConfig,
        request: CanonicalRequest,
    ) -> Result<Option<HttpRequest>, PluginError> {
        prepare_count::<P>(&config, request)
    }

    fn parse_count(
        config: ProviderConfig,
        request: RequestInfo,
        response: HttpResponse,
    ) -> Result<u64, PluginError> {
        P::parse_count(&entry::<P>(&config)?, &request, response)
    }

    fn passthrough(
        config: ProviderConfig,
        call: PassthroughCall,
    ) -> Result<PassthroughAuth, PluginError> {
        passthrough::<P>(&config, &call)
    }

    fn passthrough_usage(
        config: ProviderConfig,
        call: PassthroughCall,
        response: HttpResponse,
        whole: bool,
    ) -> Option<Metered> {
        P::passthrough_usage(&entry::<P>(&config).ok()?, &call, &response, whole)
    }
}

/// What `P` states of itself for the entry `config`, as the host asks when the config loads.
/// Options that cannot be read give no default base URL (`validate` then refuses them).
pub fn describe<P: Provider>(config: &ProviderConfig) -> Description {
    let options = crate::options::parse_object(&config.options);
    let settings = options.ok().and_then(|mut options| {
        // The common options are not the plugin's to read.
        options.retain(|key, _| !matches!(key.as_str(), "headers" | "auth_header"));
        crate::options::from_object::<P::Settings>(options).ok()
    });
    Description {
        default_base_url: settings.as_ref().and_then(P::default_base_url),
        system: P::SYSTEM.map(str::to_owned),
        // An entry `validate` will refuse declares nothing.
        plain: Entry::read::<P>(config)
            .map(|entry| P::plain_operations(&entry))
            .unwrap_or_default(),
    }
}

/// Reads `config` and has `P` check it, as the host does once when the config loads.
pub fn validate<P: Provider>(config: &ProviderConfig) -> Result<(), ConfigError> {
    let entry = Entry::read::<P>(config)?;
    P::validate(&entry)?;
    if entry.base_url.is_empty() && !P::LOCAL {
        return Err(ConfigError::at(
            "base_url",
            "is required: this provider has no default",
        ));
    }
    Ok(())
}

/// The dialects `P` serves natively for `config`; none for an entry `validate` refuses.
pub fn native_dialects<P: Provider>(config: &ProviderConfig) -> Vec<String> {
    Entry::read::<P>(config)
        .map(|entry| P::native_dialects(&entry))
        .unwrap_or_default()
}

/// `P::prepare` as the host calls it: the entry read, then the key and configured headers
/// added to the upstream request.
pub fn prepare<P: Provider>(
    config: &ProviderConfig,
    request: CanonicalRequest,
) -> Result<Prepared, PluginError> {
    let entry = entry::<P>(config)?;
    let mut prepared = P::prepare(&entry, request)?;
    entry.authorize_prepared(&mut prepared);
    Ok(prepared)
}

/// `P::prepare_count` as the host calls it: the entry read, then the key and configured
/// headers added to the counting request.
pub fn prepare_count<P: Provider>(
    config: &ProviderConfig,
    request: CanonicalRequest,
) -> Result<Option<HttpRequest>, PluginError> {
    let entry = entry::<P>(config)?;
    let mut counting = P::prepare_count(&entry, request)?;
    if let Some(http) = &mut counting {
        entry.authorize(http);
    }
    Ok(counting)
}

/// `P::passthrough` as the host calls it: the credentials of a pass-through request, and of
/// every request of a plain operation.
pub fn passthrough<P: Provider>(
    config: &ProviderConfig,
    call: &PassthroughCall,
) -> Result<PassthroughAuth, PluginError> {
    P::passthrough(&entry::<P>(config)?, call)
}

/// `P::parse_response` as the host calls it.
pub fn parse_response<P: Provider>(
    config: &ProviderConfig,
    request: &RequestInfo,
    response: HttpResponse,
) -> Result<Completion, PluginError> {
    P::parse_response(&entry::<P>(config)?, request, response)
}

/// The entry, for a call: `validate` accepted it when the config loaded, so this fails only if
/// the host skipped that.
fn entry<P: Provider>(config: &ProviderConfig) -> Result<Entry<P::Settings>, PluginError> {
    Entry::read::<P>(config)
        .map_err(|_| PluginError::upstream(format!("provider `{}` is misconfigured", config.name)))
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
