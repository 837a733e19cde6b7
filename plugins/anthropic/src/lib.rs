//! The Anthropic provider: OpenAI chat completions translated to Anthropic's Messages API and
//! back, streamed or not.
//!
//! Wire formats are taken from Anthropic's API reference:
//! - Messages: <https://docs.anthropic.com/en/api/messages>
//! - Streaming events: <https://docs.anthropic.com/en/docs/build-with-claude/streaming>
//! - Errors: <https://docs.anthropic.com/en/api/errors>
//! - Tool use, and JSON output through a forced tool:
//!   <https://docs.anthropic.com/en/docs/build-with-claude/tool-use/overview>
//! - Images: <https://docs.anthropic.com/en/docs/build-with-claude/vision>
//!
//! Messages requests (`POST /v1/messages` on the gateway) are passed through natively: see
//! [`native`].
//!
//! Modules: [`settings`] (options), [`count`] (counts by Anthropic's tokenizer), [`request`] (the request body), [`messages`]
//! (the conversation), [`response`] (complete answers), [`stream`] (streamed answers),
//! [`errors`] (error bodies and stream error events), [`native`] (Messages passed through),
//! [`batches`] (Message Batches calls).

mod batches;
mod count;
mod errors;
mod messages;
mod native;
mod request;
mod response;
mod settings;
mod stream;

use wasmgate_plugin_sdk::chat::ChatRequest;
use wasmgate_plugin_sdk::native::{MESSAGES, NativeStream, OrNative, native_call};
use wasmgate_plugin_sdk::sse_stream::SseStream;
use wasmgate_plugin_sdk::{
    Auth, CanonicalRequest, Completion, ConfigError, Entry, HttpRequest, HttpResponse, Operation,
    PassthroughAuth, PassthroughCall, PluginError, Prepared, Provider, RequestInfo,
};

use settings::Settings;

/// The name of the tool that carries a JSON answer when the client asked for `response_format`
/// JSON: Anthropic's documented way to get JSON that follows a schema is to force a tool call
/// whose input schema is that schema. Answers translate its input back into message text.
const JSON_TOOL: &str = "wasmgate_json_response";

struct Anthropic;

impl Provider for Anthropic {
    type Settings = Settings;
    type Decoder = OrNative<SseStream<stream::Events>, NativeStream<native::MessagesEvents>>;
    const SYSTEM: Option<&'static str> = Some("anthropic");
    const AUTH: Auth = Auth::Header("x-api-key");

    fn default_base_url(_: &Settings) -> Option<String> {
        Some("https://api.anthropic.com/v1".to_owned())
    }

    /// Anthropic's own API is Messages: every entry serves it natively. And its Message
    /// Batches API, which the host drives to run OpenAI batches (see [`batches`]).
    fn native_dialects(_: &Entry<Settings>) -> Vec<String> {
        vec![MESSAGES.to_owned(), batches::DIALECT.to_owned()]
    }

    fn validate(entry: &Entry<Settings>) -> Result<(), ConfigError> {
        entry.settings.check()
    }

    /// The key in `x-api-key`, and the entry's `anthropic-version` (and `anthropic-beta`)
    /// unless the client sent its own, which Anthropic requires on every request.
    fn passthrough(
        entry: &Entry<Settings>,
        call: &PassthroughCall,
    ) -> Result<PassthroughAuth, PluginError> {
        let mut request = HttpRequest::get(String::new());
        entry.authorize(&mut request);
        let settings = &entry.settings;
        let mut auth = PassthroughAuth {
            headers: request.headers,
            query: Vec::new(),
        }
        .with_default(call, "anthropic-version", &settings.version);
        if !settings.beta.is_empty() {
            auth = auth.with_default(call, "anthropic-beta", &settings.beta.join(","));
        }
        Ok(auth)
    }

    fn prepare(
        entry: &Entry<Settings>,
        request: CanonicalRequest,
    ) -> Result<Prepared, PluginError> {
        if let Some(call) = batches::call(entry, &request) {
            return call.map(Prepared::Upstream);
        }
        if native_call(&request.native, MESSAGES).is_some() {
            return native::prepare(entry, request).map(Prepared::Upstream);
        }
        let settings = &entry.settings;
        match request.operation {
            Operation::ChatCompletions => {}
            Operation::Embeddings
            | Operation::ImageGenerations
            | Operation::ListModels
            | Operation::Completions
            | Operation::Moderations
            | Operation::Rerank
            | Operation::AudioTranscriptions
            | Operation::AudioTranslations
            | Operation::AudioSpeech => {
                return Err(PluginError::invalid_request(
                    "Anthropic offers chat completions and Messages only",
                ));
            }
        }
        let chat = ChatRequest::parse(&request.body)?;
        let body = request::build(&chat, request.stream, settings.default_max_tokens())?;
        let body = serde_json::to_vec(&body)
            .map_err(|_| PluginError::upstream("could not write the upstream request"))?;
        let mut http = HttpRequest::post_json(entry.url("messages"), body)
            .header("anthropic-version", settings.version.as_str());
        if !settings.beta.is_empty() {
            http.set_header("anthropic-beta", settings.beta.join(","));
        }
        Ok(Prepared::Upstream(http))
    }

    /// Anthropic's own counter, `POST /messages/count_tokens`, which every entry has.
    fn prepare_count(
        entry: &Entry<Settings>,
        request: CanonicalRequest,
    ) -> Result<Option<HttpRequest>, PluginError> {
        count::prepare(entry, &request.body).map(Some)
    }

    fn parse_count(
        _: &Entry<Settings>,
        _: &RequestInfo,
        response: HttpResponse,
    ) -> Result<u64, PluginError> {
        count::parse(response)
    }

    fn parse_response(
        _: &Entry<Settings>,
        request: &RequestInfo,
        response: HttpResponse,
    ) -> Result<Completion, PluginError> {
        if !response.is_success() {
            return Err(errors::http_error(response.status, &response.body));
        }
        match native_call(&request.native, MESSAGES) {
            Some(_) => native::parse(response.body),
            None => response::parse(request, &response.body),
        }
    }
}

wasmgate_plugin_sdk::export_provider!(Anthropic);

#[cfg(test)]
mod tests;
