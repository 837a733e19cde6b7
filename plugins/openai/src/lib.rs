//! The OpenAI provider: OpenAI itself and any upstream that speaks its API (vLLM, Ollama, Azure
//! OpenAI with `auth_header: api-key`, ...). Requests and responses already are in the canonical
//! format, so bodies pass through untouched; the plugin adds the URL and headers, and the SDK's
//! `openai_compat` reads usage and maps errors.

mod settings;

use wasmgate_plugin_sdk::http::join_url;
use wasmgate_plugin_sdk::openai_compat::{OpenAiStream, parse_response};
use wasmgate_plugin_sdk::{
    CanonicalRequest, Completion, ConfigError, HttpRequest, HttpResponse, Operation, PluginError,
    Prepared, Provider, ProviderConfig, RequestInfo,
};

use settings::Settings;

struct OpenAi;

impl Provider for OpenAi {
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
            Operation::ListModels => "models",
        };
        let url = join_url(&settings.base_url, path);
        let mut http = match request.operation {
            Operation::ListModels => HttpRequest::get(url),
            // The host has validated the body already: re-serialising it would only cost time.
            Operation::ChatCompletions | Operation::Embeddings | Operation::ImageGenerations => {
                HttpRequest::post_json(url, request.body.into_bytes())
            }
        };
        if request.stream {
            http.set_header("accept", "text/event-stream");
        }
        settings.apply_headers(&mut http, config.api_key.as_deref());
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

wasmgate_plugin_sdk::export_provider!(OpenAi);

#[cfg(test)]
mod tests;
