//! The Cohere provider: OpenAI chat completions and embeddings translated to Cohere's v2 API and
//! back, streamed or not.
//!
//! Wire formats are taken from Cohere's API reference:
//! - Chat: <https://docs.cohere.com/v2/reference/chat>
//! - Chat with streaming: <https://docs.cohere.com/v2/reference/chat-stream>, and the event
//!   guides <https://docs.cohere.com/v2/docs/streaming>,
//!   <https://docs.cohere.com/v2/docs/tool-use-streaming>
//! - Embed: <https://docs.cohere.com/v2/reference/embed>
//! - Errors: <https://docs.cohere.com/reference/errors>
//!
//! Modules: [`settings`], [`request`] (the chat body), [`response`], [`stream`], [`embed`].

mod embed;
mod request;
mod response;
mod settings;
mod stream;

use wasmgate_plugin_sdk::chat::ChatRequest;
use wasmgate_plugin_sdk::http::join_url;
use wasmgate_plugin_sdk::openai_compat::parse_rerank;
use wasmgate_plugin_sdk::sse_stream::SseStream;
use wasmgate_plugin_sdk::{
    CanonicalRequest, Completion, ConfigError, HttpRequest, HttpResponse, Operation,
    PassthroughAuth, PassthroughCall, PluginError, Prepared, Provider, ProviderConfig, RequestInfo,
    openai_error,
};

use settings::Settings;

struct Cohere;

impl Provider for Cohere {
    type Decoder = SseStream<stream::Events>;

    fn validate(config: &ProviderConfig) -> Result<(), ConfigError> {
        Settings::from_config(config).map(drop)
    }

    /// The key as a bearer token, as on every request.
    fn passthrough(
        config: &ProviderConfig,
        _call: &PassthroughCall,
    ) -> Result<PassthroughAuth, PluginError> {
        Ok(PassthroughAuth::bearer(config))
    }

    fn prepare(
        config: &ProviderConfig,
        request: CanonicalRequest,
    ) -> Result<Prepared, PluginError> {
        let settings = Settings::from_config(config).map_err(|_| {
            PluginError::upstream(format!("provider `{}` is misconfigured", config.name))
        })?;
        let (path, body) = match request.operation {
            Operation::ChatCompletions => {
                let chat = ChatRequest::parse(&request.body)?;
                ("chat", to_json(&request::build(&chat, request.stream)?)?)
            }
            Operation::Embeddings => (
                "embed",
                to_json(&embed::build(&request.body, &settings.input_type)?)?,
            ),
            // Cohere's v2 rerank is the gateway's rerank shape: the body goes on as it came.
            Operation::Rerank => ("rerank", request.body.into_bytes()),
            Operation::ImageGenerations
            | Operation::ListModels
            | Operation::Messages
            | Operation::Responses
            | Operation::Completions
            | Operation::Moderations
            | Operation::AudioTranscriptions
            | Operation::AudioTranslations
            | Operation::AudioSpeech => {
                return Err(PluginError::invalid_request(
                    "the Cohere provider offers chat completions, embeddings and rerank",
                ));
            }
        };
        let mut http = HttpRequest::post_json(join_url(&settings.base_url, path), body);
        if request.stream {
            http.set_header("accept", "text/event-stream");
        }
        if let Some(key) = config.api_key.as_deref().filter(|k| !k.is_empty()) {
            http.set_header("authorization", format!("Bearer {key}"));
        }
        Ok(Prepared::Upstream(http))
    }

    fn parse_response(
        _config: &ProviderConfig,
        request: &RequestInfo,
        response: HttpResponse,
    ) -> Result<Completion, PluginError> {
        if !response.is_success() {
            // Cohere's error body is `{"id", "message"}`, one of the shapes this reads.
            return Err(openai_error(response.status, &response.body));
        }
        match request.operation {
            Operation::Embeddings => embed::parse(request, &response.body),
            Operation::Rerank => parse_rerank(response),
            Operation::ChatCompletions
            | Operation::ImageGenerations
            | Operation::ListModels
            | Operation::Messages
            | Operation::Responses
            | Operation::Completions
            | Operation::Moderations
            | Operation::AudioTranscriptions
            | Operation::AudioTranslations
            | Operation::AudioSpeech => response::parse(request, &response.body),
        }
    }
}

wasmgate_plugin_sdk::export_provider!(Cohere);

fn to_json(body: &impl serde::Serialize) -> Result<Vec<u8>, PluginError> {
    serde_json::to_vec(body)
        .map_err(|_| PluginError::upstream("could not write the upstream request"))
}

#[cfg(test)]
mod tests;
