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
//! Modules: [`settings`], [`request`] (generation settings and tools), [`contents`] (the
//! conversation), [`response`], [`stream`], [`embeddings`], [`native`], [`errors`].

mod contents;
mod embeddings;
mod errors;
mod native;
mod request;
mod response;
mod settings;
mod stream;

use wasmgate_plugin_sdk::chat::ChatRequest;
use wasmgate_plugin_sdk::http::{join_url, path_segment};
use wasmgate_plugin_sdk::sse_stream::SseStream;
use wasmgate_plugin_sdk::{
    CanonicalRequest, Completion, ConfigError, HttpRequest, HttpResponse, Operation,
    PassthroughAuth, PassthroughCall, PluginError, Prepared, Provider, ProviderConfig, RequestInfo,
};

use settings::Settings;

struct Gemini;

impl Provider for Gemini {
    type Decoder = SseStream<stream::Events>;

    fn native_dialects(_config: &ProviderConfig) -> Vec<String> {
        vec![native::DIALECT.to_owned()]
    }

    fn validate(config: &ProviderConfig) -> Result<(), ConfigError> {
        Settings::from_config(config).map(drop)
    }

    /// The key in `x-goog-api-key`, as on every request (never `?key=`, which URLs log).
    fn passthrough(
        config: &ProviderConfig,
        _call: &PassthroughCall,
    ) -> Result<PassthroughAuth, PluginError> {
        Ok(PassthroughAuth::header(
            config,
            "x-goog-api-key",
            str::to_owned,
        ))
    }

    fn prepare(
        config: &ProviderConfig,
        request: CanonicalRequest,
    ) -> Result<Prepared, PluginError> {
        let settings = Settings::from_config(config).map_err(|_| {
            PluginError::upstream(format!("provider `{}` is misconfigured", config.name))
        })?;
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
                (method, to_json(&body)?)
            }
            (None, Operation::Embeddings) => {
                let (method, body) = embeddings::build(&request.body, &model)?;
                (method, to_json(&body)?)
            }
            (
                None,
                Operation::ImageGenerations
                | Operation::ListModels
                | Operation::Messages
                | Operation::Responses
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
        let url = join_url(&settings.base_url, &format!("{resource}:{method}"));
        let mut http = HttpRequest::post_json(url, body);
        if let Some(key) = config.api_key.as_deref().filter(|k| !k.is_empty()) {
            // The header rather than `?key=`, so that the key stays out of URLs and their logs.
            http.set_header("x-goog-api-key", key);
        }
        Ok(Prepared::Upstream(http))
    }

    fn parse_response(
        _config: &ProviderConfig,
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
            | Operation::Messages
            | Operation::Responses
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

fn to_json(body: &impl serde::Serialize) -> Result<Vec<u8>, PluginError> {
    serde_json::to_vec(body)
        .map_err(|_| PluginError::upstream("could not write the upstream request"))
}

#[cfg(test)]
mod tests;
