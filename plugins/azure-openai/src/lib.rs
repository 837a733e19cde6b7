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
//! Modules: [`settings`] (base URL, API version, deployment names).

mod settings;

use serde_json::json;
use wasmgate_plugin_sdk::openai_compat::{OpenAiStream, parse_response};
use wasmgate_plugin_sdk::{
    CanonicalRequest, Completion, ConfigError, HttpRequest, HttpResponse, Operation, PluginError,
    Prepared, Provider, ProviderConfig, RequestInfo,
};

use settings::Settings;

struct AzureOpenAi;

impl Provider for AzureOpenAi {
    type Decoder = OpenAiStream;

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
        let path = match request.operation {
            Operation::ChatCompletions => "chat/completions",
            Operation::Embeddings => "embeddings",
            Operation::ImageGenerations => "images/generations",
            // Azure lists models a resource could deploy, not its deployments, and
            // `/openai/deployments` left the data plane after 2022-12-01: the configured
            // deployments are the answer.
            Operation::ListModels => return Ok(Prepared::Local(list_models(&settings))),
        };
        let url = settings.url(&request.model, path)?;
        // The host has validated the body already: re-serialising it would only cost time.
        // Azure takes the model from the URL and ignores the body's `model`.
        let mut http = HttpRequest::post_json(url, request.body.into_bytes());
        if request.stream {
            http.set_header("accept", "text/event-stream");
        }
        if let Some(key) = config.api_key.as_deref().filter(|k| !k.is_empty()) {
            http.set_header("api-key", key);
        }
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
