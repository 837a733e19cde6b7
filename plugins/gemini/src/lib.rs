//! The Gemini provider: OpenAI chat completions and embeddings translated to the Gemini API
//! (Google AI Studio's `generativelanguage.googleapis.com`) and back, streamed or not.
//!
//! Wire formats are taken from Google's API reference:
//! - generateContent / streamGenerateContent: <https://ai.google.dev/api/generate-content>
//! - Contents, parts, function calling: <https://ai.google.dev/api/caching#Content>,
//!   <https://ai.google.dev/gemini-api/docs/function-calling>
//! - Structured output (`responseJsonSchema`): <https://ai.google.dev/gemini-api/docs/structured-output>
//! - Embeddings: <https://ai.google.dev/api/embeddings>
//! - Errors: <https://ai.google.dev/gemini-api/docs/troubleshooting>
//!
//! Requests of Google's own API (the `gemini` client dialect) pass through untranslated:
//! [`native`].
//!
//! The plugin takes no options of its own.
//!
//! Modules: [`request`] (generation settings and tools), [`count`] (counts by Gemini's tokenizer), [`contents`] (the
//! conversation), [`response`], [`stream`], [`embeddings`], [`native`], [`errors`].

mod contents;
mod count;
mod embeddings;
mod errors;
mod native;
mod request;
mod response;
mod stream;

use wasmgate_plugin_sdk::chat::ChatRequest;
use wasmgate_plugin_sdk::http::{json_body, path_segment};
use wasmgate_plugin_sdk::sse_stream::SseStream;
use wasmgate_plugin_sdk::{
    Auth, CanonicalRequest, Completion, Entry, HttpRequest, HttpResponse, NoOptions, Operation,
    PluginError, Prepared, Provider, RequestInfo,
};

struct Gemini;

impl Provider for Gemini {
    type Settings = NoOptions;
    type Decoder = SseStream<stream::Events>;
    const SYSTEM: Option<&'static str> = Some("gcp.gemini");
    // The header rather than `?key=`, so that the key stays out of URLs and their logs.
    const AUTH: Auth = Auth::Header("x-goog-api-key");

    fn default_base_url(_: &NoOptions) -> Option<String> {
        Some("https://generativelanguage.googleapis.com/v1beta".to_owned())
    }

    fn native_dialects(_: &Entry<NoOptions>) -> Vec<String> {
        vec![native::DIALECT.to_owned()]
    }

    fn prepare(
        entry: &Entry<NoOptions>,
        request: CanonicalRequest,
    ) -> Result<Prepared, PluginError> {
        let model = model_path(&request.model);
        let resource = url_path(&request.model)?;
        let native = request
            .native
            .as_ref()
            .filter(|n| n.dialect == native::DIALECT);
        let (method, body) = match (native, request.operation) {
            (Some(call), _) => native::prepare(call, &model, &request.body)?,
            (None, Operation::ChatCompletions) => {
                let chat = ChatRequest::parse(&request.body)?;
                let body = request::build(&chat)?;
                let method = if request.stream {
                    // `alt=sse` makes the stream Server-Sent Events rather than one JSON array.
                    "streamGenerateContent?alt=sse"
                } else {
                    "generateContent"
                };
                (method, json_body(&body)?)
            }
            (None, Operation::Embeddings) => {
                let (method, body) = embeddings::build(&request.body, &model)?;
                (method, json_body(&body)?)
            }
            (
                None,
                Operation::ImageGenerations
                | Operation::ListModels
                | Operation::Completions
                | Operation::Moderations
                | Operation::Rerank
                | Operation::AudioTranscriptions
                | Operation::AudioTranslations
                | Operation::AudioSpeech,
            ) => {
                return Err(PluginError::invalid_request(
                    "the Gemini provider offers chat completions and embeddings",
                ));
            }
        };
        let url = entry.url(&format!("{resource}:{method}"));
        Ok(Prepared::Upstream(HttpRequest::post_json(url, body)))
    }

    /// Google's own counter, `models/{model}:countTokens`.
    fn prepare_count(
        entry: &Entry<NoOptions>,
        request: CanonicalRequest,
    ) -> Result<Option<HttpRequest>, PluginError> {
        let body = count::body(&request.body, &model_path(&request.model))?;
        let url = entry.url(&format!("{}:countTokens", url_path(&request.model)?));
        Ok(Some(HttpRequest::post_json(url, json_body(&body)?)))
    }

    fn parse_count(
        _: &Entry<NoOptions>,
        _: &RequestInfo,
        response: HttpResponse,
    ) -> Result<u64, PluginError> {
        count::parse(response)
    }

    fn parse_response(
        _: &Entry<NoOptions>,
        request: &RequestInfo,
        response: HttpResponse,
    ) -> Result<Completion, PluginError> {
        if !response.is_success() {
            return Err(errors::http_error(response.status, &response.body));
        }
        if request.native.is_some() {
            return native::parse(response.body);
        }
        match request.operation {
            Operation::Embeddings => embeddings::parse(request, &response.body),
            Operation::ChatCompletions
            | Operation::ImageGenerations
            | Operation::ListModels
            | Operation::Completions
            | Operation::Moderations
            | Operation::Rerank
            | Operation::AudioTranscriptions
            | Operation::AudioTranslations
            | Operation::AudioSpeech => response::parse(request, &response.body),
        }
    }
}

wasmgate_plugin_sdk::export_provider!(Gemini);

/// The resource name of a model: `models/<name>`, unless the configured name is a path already
/// (`tunedModels/...`, `models/...`).
fn model_path(model: &str) -> String {
    if model.contains('/') {
        model.to_owned()
    } else {
        format!("models/{model}")
    }
}

/// [`model_path`] as it goes into the URL: the collection, then the name as one escaped path
/// segment, so that no model name can add a segment, a query or a fragment. A path is only
/// `models/<name>` or `tunedModels/<name>`, the resources `generateContent` serves.
fn url_path(model: &str) -> Result<String, PluginError> {
    let (collection, name) = match model.split_once('/') {
        None => ("models", model),
        Some((collection @ ("models" | "tunedModels"), name)) => (collection, name),
        Some(_) => return Err(bad_model()),
    };
    let name = path_segment(name).ok_or_else(bad_model)?;
    Ok(format!("{collection}/{name}"))
}

fn bad_model() -> PluginError {
    PluginError::invalid_request(
        "the model must be a Gemini model name, `models/<name>` or `tunedModels/<name>`",
    )
    .with_param("model")
}

#[cfg(test)]
mod tests;
