//! The Azure OpenAI provider: OpenAI's wire format, sent to a resource's deployments.
//!
//! Azure differs from OpenAI only in the request line and the key header, so the plugin builds
//! `{base_url}/openai/deployments/{deployment}/{operation}?api-version={version}` with the key
//! in `api-key`, passes the body through, and leaves responses, streams and errors to the SDK's
//! `openai_compat`.
//!
//! Wire format: the Azure OpenAI inference REST reference,
//! <https://learn.microsoft.com/en-us/azure/ai-services/openai/reference> (authentication,
//! `api-version`, chat completions, embeddings, image generations).
//!
//! Responses requests (`POST /v1/responses` on the gateway) go natively to the v1 API,
//! `{base_url}/openai/v1/responses` with the key in `api-key` and no `api-version`, the body as
//! the client wrote it but for `model`, which becomes the deployment name when `deployments`
//! maps it (the v1 API names the deployment in the body, not the URL). The option
//! `responses: translate` turns that off for resources without the Responses API.
//! <https://learn.microsoft.com/en-us/azure/ai-foundry/openai/how-to/responses>
//!
//! Completions and the audio endpoints go to the deployment as the others do (transcriptions
//! and translations as a multipart form the host attaches the file to, speech streamed back).
//! Azure serves no `/moderations` or `/rerank` (its content filters run on every deployment):
//! those are refused.
//!
//! Modules: [`settings`] (base URL, API version, deployment names).

mod settings;

use serde_json::json;
use wasmgate_plugin_sdk::native::{OrNative, ResponsesStream, with_model};
use wasmgate_plugin_sdk::openai_compat::{
    BATCHES_DIALECT, OpenAiStream, batch_call, parse_response, request_of, speech,
    transcription_form,
};
use wasmgate_plugin_sdk::{
    CanonicalRequest, Completion, ConfigError, HttpRequest, HttpResponse, Operation, PluginError,
    Prepared, Provider, ProviderConfig, RequestInfo,
};

use settings::{ResponsesMode, Settings};

struct AzureOpenAi;

impl Provider for AzureOpenAi {
    type Decoder = OrNative<OpenAiStream, ResponsesStream>;

    fn native_operations(config: &ProviderConfig) -> Vec<Operation> {
        match Settings::from_config(config).map(|s| s.responses) {
            Ok(ResponsesMode::Native) => vec![Operation::Responses],
            // A misconfigured entry is refused by `validate`: it serves nothing.
            Ok(ResponsesMode::Translate) | Err(_) => Vec::new(),
        }
    }

    /// The Files and Batch APIs (global batch deployments), which the host drives: a batch
    /// line's `model` is the deployment's name, so a batch deployment is named after its model.
    fn native_dialects(_config: &ProviderConfig) -> Vec<String> {
        vec![BATCHES_DIALECT.to_owned()]
    }

    fn validate(config: &ProviderConfig) -> Result<(), ConfigError> {
        Settings::from_config(config).map(drop)
    }

    fn prepare(
        config: &ProviderConfig,
        request: CanonicalRequest,
    ) -> Result<Prepared, PluginError> {
        let settings = Settings::from_config(config).map_err(|_| {
            PluginError::upstream(format!("provider `{}` is misconfigured", config.name))
        })?;
        if let Some(prepared) = batch_call(&request, |path| settings.resource_url(path)) {
            let mut prepared = prepared?;
            if let Some(http) = request_of(&mut prepared) {
                api_key(http, config);
            }
            return Ok(prepared);
        }
        let path = match request.operation {
            Operation::ChatCompletions => "chat/completions",
            Operation::Embeddings => "embeddings",
            Operation::ImageGenerations => "images/generations",
            Operation::Completions => "completions",
            Operation::AudioTranscriptions | Operation::AudioTranslations => {
                let path = match request.operation {
                    Operation::AudioTranslations => "audio/translations",
                    _ => "audio/transcriptions",
                };
                let mut prepared =
                    transcription_form(settings.url(&request.model, path)?, &request)?;
                if let Prepared::UpstreamForm(form) = &mut prepared {
                    api_key(&mut form.request, config);
                }
                return Ok(prepared);
            }
            Operation::AudioSpeech => {
                let mut prepared = speech(settings.url(&request.model, "audio/speech")?, &request)?;
                if let Prepared::UpstreamRaw(raw) = &mut prepared {
                    api_key(&mut raw.request, config);
                }
                return Ok(prepared);
            }
            Operation::Moderations | Operation::Rerank => {
                return Err(PluginError::invalid_request(format!(
                    "provider `{}` (Azure OpenAI) serves no moderations or rerank endpoint",
                    config.name
                )));
            }
            // Azure lists models a resource could deploy, not its deployments, and
            // `/openai/deployments` left the data plane after 2022-12-01: the configured
            // deployments are the answer.
            Operation::ListModels => return Ok(Prepared::Local(list_models(&settings))),
            Operation::Responses if settings.responses == ResponsesMode::Native => {
                return responses(&settings, config, request);
            }
            Operation::Responses | Operation::Messages => {
                return Err(PluginError::invalid_request(format!(
                    "provider `{}` does not serve this API natively",
                    config.name
                )));
            }
        };
        let url = settings.url(&request.model, path)?;
        // The host has validated the body already: re-serialising it would only cost time.
        // Azure takes the model from the URL and ignores the body's `model`.
        let mut http = HttpRequest::post_json(url, request.body.into_bytes());
        if request.stream {
            http.set_header("accept", "text/event-stream");
        }
        api_key(&mut http, config);
        Ok(Prepared::Upstream(http))
    }

    fn parse_response(
        _config: &ProviderConfig,
        request: &RequestInfo,
        response: HttpResponse,
    ) -> Result<Completion, PluginError> {
        parse_response(request.operation, response)
    }
}

wasmgate_plugin_sdk::export_provider!(AzureOpenAi);

/// Azure takes the key bare, in `api-key`.
fn api_key(http: &mut HttpRequest, config: &ProviderConfig) {
    if let Some(key) = config.api_key.as_deref().filter(|k| !k.is_empty()) {
        http.set_header("api-key", key);
    }
}

/// A Responses request to the v1 API. The body goes on as the client wrote it unless the model
/// maps to a deployment of another name, which only `model` is changed to.
fn responses(
    settings: &Settings,
    config: &ProviderConfig,
    request: CanonicalRequest,
) -> Result<Prepared, PluginError> {
    let deployment = settings.deployment(&request.model)?;
    let body = if deployment == request.model {
        request.body
    } else {
        with_model(&request.body, deployment)?
    };
    let mut http = HttpRequest::post_json(settings.responses_url(), body.into_bytes());
    if request.stream {
        http.set_header("accept", "text/event-stream");
    }
    if let Some(key) = config.api_key.as_deref().filter(|k| !k.is_empty()) {
        http.set_header("api-key", key);
    }
    Ok(Prepared::Upstream(http))
}

/// OpenAI's models list, one entry per model name the `deployments` option maps.
fn list_models(settings: &Settings) -> Completion {
    let data: Vec<_> = settings
        .model_names()
        .map(|id| json!({"id": id, "object": "model", "created": 0, "owned_by": "azure-openai"}))
        .collect();
    Completion {
        body: json!({"object": "list", "data": data}).to_string(),
        usage: None,
    }
}

#[cfg(test)]
mod tests;
