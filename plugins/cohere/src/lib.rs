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
use wasmgate_plugin_sdk::http::json_body;
use wasmgate_plugin_sdk::openai_compat::parse_rerank;
use wasmgate_plugin_sdk::sse_stream::SseStream;
use wasmgate_plugin_sdk::{
    CanonicalRequest, Completion, Entry, HttpRequest, HttpResponse, Operation, PluginError,
    Prepared, Provider, RequestInfo, openai_error,
};

use settings::Settings;

struct Cohere;

impl Provider for Cohere {
    type Settings = Settings;
    type Decoder = SseStream<stream::Events>;
    const SYSTEM: Option<&'static str> = Some("cohere");

    fn default_base_url(_: &Settings) -> Option<String> {
        Some("https://api.cohere.com/v2".to_owned())
    }

    fn prepare(
        entry: &Entry<Settings>,
        request: CanonicalRequest,
    ) -> Result<Prepared, PluginError> {
        let (path, body) = match request.operation {
            Operation::ChatCompletions => {
                let chat = ChatRequest::parse(&request.body)?;
                ("chat", json_body(&request::build(&chat, request.stream)?)?)
            }
            Operation::Embeddings => (
                "embed",
                json_body(&embed::build(&request.body, entry.settings.input_type)?)?,
            ),
            // Cohere's v2 rerank is the gateway's rerank shape: the body goes on as it came.
            Operation::Rerank => ("rerank", request.body.into_bytes()),
            Operation::ImageGenerations
            | Operation::ListModels
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
        let mut http = HttpRequest::post_json(entry.url(path), body);
        if request.stream {
            http.set_header("accept", "text/event-stream");
        }
        Ok(Prepared::Upstream(http))
    }

    fn parse_response(
        _: &Entry<Settings>,
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
            | Operation::Completions
            | Operation::Moderations
            | Operation::AudioTranscriptions
            | Operation::AudioTranslations
            | Operation::AudioSpeech => response::parse(request, &response.body),
        }
    }
}

wasmgate_plugin_sdk::export_provider!(Cohere);

#[cfg(test)]
mod tests;
