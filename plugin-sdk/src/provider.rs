//! The traits a plugin implements: [`Provider`] for the calls, [`StreamDecoder`] for streams.

use serde::de::DeserializeOwned;

use crate::entry::{Auth, Entry};
use crate::{
    CanonicalRequest, Completion, ConfigError, HttpResponse, Metered, PassthroughAuth,
    PassthroughCall, PluginError, Prepared, ProviderConfig, RequestInfo, StreamOutput,
};

/// A provider plugin. The host calls each function on a fresh instance, so implementations are
/// types without values (`struct MyProvider;`) and everything arrives as arguments.
///
/// The SDK reads the config entry before each call into an [`Entry`]: base URL, key and the
/// common `headers` and `auth_header` options checked, the rest of `options` parsed into
/// [`Self::Settings`]. When the config loads, a failure there refuses the entry with the key at
/// fault; so `prepare` never sees an entry that `validate` would refuse. After `prepare`, the SDK
/// adds the key and the entry's headers to the upstream request.
pub trait Provider: 'static {
    /// The entry's `options` (but `headers` and `auth_header`, which the SDK reads). Give it
    /// `#[serde(deny_unknown_fields)]` so that a misspelt option fails when the config loads;
    /// [`NoOptions`](crate::NoOptions) for a provider that takes none.
    type Settings: DeserializeOwned;

    /// Decodes a streamed upstream body; [`NoStream`] for plugins that only answer locally.
    type Decoder: StreamDecoder;

    /// The upstream's OpenTelemetry GenAI name (`gen_ai.provider.name`: `openai`,
    /// `gcp.gemini`, `aws.bedrock`, ...); `None`: the host uses the plugin's name.
    const SYSTEM: Option<&'static str> = None;

    /// How the entry's key goes upstream.
    const AUTH: Auth = Auth::Bearer;

    /// Whether the provider answers every request itself, so that an entry needs no base URL.
    const LOCAL: bool = false;

    /// Where an entry's requests go when it sets no `base_url`; `None` (the default) makes
    /// `base_url` required. The host is told it when the config loads, and keeps every
    /// upstream request under it.
    fn default_base_url(settings: &Self::Settings) -> Option<String> {
        let _ = settings;
        None
    }

    /// The dialects, by their declared names ([`crate::native::MESSAGES`],
    /// [`crate::native::RESPONSES`], `gemini`), this entry's upstream serves itself: the host
    /// passes their requests through to `prepare` untranslated, with
    /// [`CanonicalRequest::native`] set. The default is none: every dialect reaches the plugin
    /// translated into chat completions.
    fn native_dialects(entry: &Entry<Self::Settings>) -> Vec<String> {
        let _ = entry;
        Vec::new()
    }

    /// The operations the host may send and read itself for this entry, without an instance
    /// of the plugin (see `plain-operation` in the contract): only those whose [`Self::prepare`]
    /// sends the canonical body untouched as `POST {base_url}/{path}` with no headers but
    /// `content-type`, `accept` for a stream and what [`Self::passthrough`] gives, and whose
    /// success answers are OpenAI's canonical shape with its usage. The default is none.
    /// [`openai_compat::plain`](crate::openai_compat::plain) declares OpenAI's.
    fn plain_operations(entry: &Entry<Self::Settings>) -> Vec<crate::PlainOperation> {
        let _ = entry;
        Vec::new()
    }

    /// Checks what the settings' types cannot say, once, when the gateway loads its config.
    /// The default accepts any entry the SDK could read.
    fn validate(entry: &Entry<Self::Settings>) -> Result<(), ConfigError> {
        let _ = entry;
        Ok(())
    }

    /// Turns a client request into an upstream request, or answers it locally. The request is
    /// passed by value so that its body can move into the upstream request without a copy.
    fn prepare(
        entry: &Entry<Self::Settings>,
        request: CanonicalRequest,
    ) -> Result<Prepared, PluginError>;

    /// Turns a complete upstream response (of any status) into OpenAI's response JSON and usage.
    /// The default reads OpenAI's format ([`openai_compat::parse_response`]).
    ///
    /// [`openai_compat::parse_response`]: crate::openai_compat::parse_response
    fn parse_response(
        entry: &Entry<Self::Settings>,
        request: &RequestInfo,
        response: HttpResponse,
    ) -> Result<Completion, PluginError> {
        let _ = entry;
        crate::openai_compat::parse_response(request.operation, response)
    }

    /// The request to the upstream's own token-counting endpoint for a canonical chat request
    /// (a dialect's count whose target speaks another dialect), or `None` (the default) when
    /// the upstream has none: the gateway then counts with its own tokenizer. The SDK adds the
    /// key and the entry's headers, as after `prepare`.
    fn prepare_count(
        entry: &Entry<Self::Settings>,
        request: CanonicalRequest,
    ) -> Result<Option<crate::HttpRequest>, PluginError> {
        let _ = (entry, request);
        Ok(None)
    }

    /// The prompt's tokens, from the counting endpoint's answer to [`Self::prepare_count`]'s
    /// request. Only called when `prepare_count` sent one; the default refuses.
    fn parse_count(
        entry: &Entry<Self::Settings>,
        request: &RequestInfo,
        response: HttpResponse,
    ) -> Result<u64, PluginError> {
        let _ = (request, response);
        Err(PluginError::upstream(format!(
            "provider `{}` has no counting endpoint",
            entry.name
        )))
    }

    /// The credentials of a pass-through request (`/passthrough/<entry>/<path>`) to this
    /// entry's upstream: by default the key as [`Self::AUTH`] sends it and the entry's
    /// `headers`, as on every request. A provider that answers locally ([`Self::LOCAL`]) or
    /// signs its requests itself ([`Auth::Own`]) refuses by default: its upstream cannot take
    /// a body the plugin never sees.
    fn passthrough(
        entry: &Entry<Self::Settings>,
        call: &PassthroughCall,
    ) -> Result<PassthroughAuth, PluginError> {
        let _ = call;
        if Self::LOCAL || matches!(Self::AUTH, Auth::Own) {
            return Err(crate::passthrough::unsupported(&entry.name));
        }
        let mut request = crate::HttpRequest::get(String::new());
        entry.authorize(&mut request);
        Ok(PassthroughAuth {
            headers: request.headers,
            query: Vec::new(),
        })
    }

    /// The usage of a pass-through answer, from its whole body (`whole`) or its tail. The
    /// default reads the shapes the common APIs write ([`crate::passthrough::read_usage`]).
    fn passthrough_usage(
        entry: &Entry<Self::Settings>,
        call: &PassthroughCall,
        response: &HttpResponse,
        whole: bool,
    ) -> Option<Metered> {
        let _ = (entry, call);
        if !(200..300).contains(&response.status) {
            return None;
        }
        crate::passthrough::read_usage(&response.body, whole)
    }
}

/// Decodes one streamed upstream body into OpenAI `chat.completion.chunk` events. One value lives
/// as long as its stream, so it may keep state between pushes.
pub trait StreamDecoder: Sized + 'static {
    /// Starts decoding the stream that answers `request`; `headers` are the upstream response's
    /// (lower-cased names).
    fn new(config: ProviderConfig, request: RequestInfo, headers: &[(String, String)]) -> Self;

    /// Takes the next bytes of the body, split anywhere, and returns the events they complete.
    fn push(&mut self, bytes: &[u8]) -> Result<StreamOutput, PluginError>;

    /// The body ended: returns the remaining events and the final usage.
    fn finish(&mut self) -> Result<StreamOutput, PluginError>;
}

/// The [`StreamDecoder`] of a plugin that never streams from upstream. The host only creates a
/// decoder after an upstream answered, so its methods are not called; if they are, they fail.
#[derive(Debug)]
pub struct NoStream;

impl StreamDecoder for NoStream {
    fn new(_: ProviderConfig, _: RequestInfo, _: &[(String, String)]) -> Self {
        NoStream
    }

    fn push(&mut self, _: &[u8]) -> Result<StreamOutput, PluginError> {
        Err(PluginError::upstream(
            "this provider does not decode upstream streams",
        ))
    }

    fn finish(&mut self) -> Result<StreamOutput, PluginError> {
        Err(PluginError::upstream(
            "this provider does not decode upstream streams",
        ))
    }
}

/// No events and no usage yet.
impl Default for StreamOutput {
    fn default() -> Self {
        StreamOutput {
            events: Vec::new(),
            usage: None,
        }
    }
}
