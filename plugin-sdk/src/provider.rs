//! The traits a plugin implements: [`Provider`] for the calls, [`StreamDecoder`] for streams.

use crate::{
    CanonicalRequest, Completion, ConfigError, HttpResponse, Metered, Operation, PassthroughAuth,
    PassthroughCall, PluginError, Prepared, ProviderConfig, RequestInfo, StreamOutput,
};

/// A provider plugin. The host calls each function on a fresh instance, so implementations are
/// types without values (`struct MyProvider;`) and everything arrives as arguments.
pub trait Provider: 'static {
    /// Decodes a streamed upstream body; [`NoStream`] for plugins that only answer locally.
    type Decoder: StreamDecoder;

    /// The dialect operations ([`Operation::Messages`], [`Operation::Responses`]) this entry's
    /// upstream serves itself; the host passes such requests through to `prepare` untranslated.
    /// The default is none: every dialect reaches the plugin translated into chat completions.
    fn native_operations(config: &ProviderConfig) -> Vec<Operation> {
        let _ = config;
        Vec::new()
    }

    /// The dialects besides Messages and Responses, by their declared names (`gemini`), this
    /// entry's upstream serves itself: their requests reach `prepare` with
    /// [`CanonicalRequest::native`] set. The default is none.
    fn native_dialects(config: &ProviderConfig) -> Vec<String> {
        let _ = config;
        Vec::new()
    }

    /// Checks a config entry's `base_url` and `options` once, when the gateway loads its config.
    /// The default accepts anything.
    fn validate(config: &ProviderConfig) -> Result<(), ConfigError> {
        let _ = config;
        Ok(())
    }

    /// Turns a client request into an upstream request, or answers it locally. The request is
    /// passed by value so that its body can move into the upstream request without a copy.
    fn prepare(config: &ProviderConfig, request: CanonicalRequest)
    -> Result<Prepared, PluginError>;

    /// Turns a complete upstream response (of any status) into OpenAI's response JSON and usage.
    /// The default suits plugins that never go upstream.
    fn parse_response(
        config: &ProviderConfig,
        request: &RequestInfo,
        response: HttpResponse,
    ) -> Result<Completion, PluginError> {
        let _ = (request, response);
        Err(PluginError::upstream(format!(
            "provider `{}` does not make upstream requests",
            config.name
        )))
    }

    /// The credentials of a pass-through request (`/passthrough/<entry>/<path>`) to this
    /// entry's upstream, added as the plugin adds them to its own requests
    /// ([`PassthroughAuth::bearer`], [`PassthroughAuth::header`]). The default refuses: a
    /// plugin offers pass-through only when it says how its upstream takes keys.
    fn passthrough(
        config: &ProviderConfig,
        call: &PassthroughCall,
    ) -> Result<PassthroughAuth, PluginError> {
        let _ = call;
        Err(crate::passthrough::unsupported(config))
    }

    /// The usage of a pass-through answer, from its whole body (`whole`) or its tail. The
    /// default reads the shapes the common APIs write ([`crate::passthrough::read_usage`]).
    fn passthrough_usage(
        config: &ProviderConfig,
        call: &PassthroughCall,
        response: &HttpResponse,
        whole: bool,
    ) -> Option<Metered> {
        let _ = (config, call);
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
