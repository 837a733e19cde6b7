//! {{name}}: a wasmgate provider for an OpenAI-compatible upstream.

use wasmgate_plugin_sdk::http::{is_http_url, join_url};
use wasmgate_plugin_sdk::openai_compat::{OpenAiStream, parse_response};
use wasmgate_plugin_sdk::{
    CanonicalRequest, Completion, ConfigError, HttpRequest, HttpResponse, Operation, PluginError,
    Prepared, Provider, ProviderConfig, RequestInfo, export_provider,
};

const DEFAULT_BASE_URL: &str = "http://127.0.0.1:8000/v1";

struct Plugin;

fn base_url(config: &ProviderConfig) -> &str {
    config.base_url.as_deref().unwrap_or(DEFAULT_BASE_URL)
}

impl Provider for Plugin {
    type Decoder = OpenAiStream;

    fn validate(config: &ProviderConfig) -> Result<(), ConfigError> {
        if !is_http_url(base_url(config)) {
            return Err(ConfigError::at("base_url", "must be an absolute http:// or https:// URL"));
        }
        Ok(())
    }

    fn prepare(config: &ProviderConfig, request: CanonicalRequest) -> Result<Prepared, PluginError> {
        let path = match request.operation {
            Operation::ChatCompletions => "chat/completions",
            Operation::Embeddings => "embeddings",
            Operation::ImageGenerations => "images/generations",
            Operation::ListModels => "models",
            Operation::Completions => "completions",
            Operation::Moderations => "moderations",
            Operation::Rerank => "rerank",
            // Served natively only by plugins that say so (`native_operations`); this one
            // gets them translated into chat completions.
            Operation::Messages | Operation::Responses => {
                return Err(PluginError::invalid_request("this provider takes chat completions"));
            }
            // Uploads and audio: see `openai_compat::{transcription_form, speech}` in the SDK.
            Operation::AudioTranscriptions
            | Operation::AudioTranslations
            | Operation::AudioSpeech => {
                return Err(PluginError::invalid_request("this provider serves no audio"));
            }
        };
        let url = join_url(base_url(config), path);
        let mut http = match request.operation {
            Operation::ListModels => HttpRequest::get(url),
            _ => HttpRequest::post_json(url, request.body.into_bytes()),
        };
        if let Some(key) = config.api_key.as_deref().filter(|k| !k.is_empty()) {
            http.set_header("authorization", format!("Bearer {key}"));
        }
        Ok(Prepared::Upstream(http))
    }

    fn parse_response(_: &ProviderConfig, request: &RequestInfo, response: HttpResponse) -> Result<Completion, PluginError> {
        parse_response(request.operation, response)
    }
}

export_provider!(Plugin);

#[cfg(test)]
mod tests {
    use wasmgate_plugin_sdk::{CanonicalRequest, Operation, Prepared, Provider, ProviderConfig};

    use super::Plugin;

    #[test]
    fn chat_goes_to_the_base_url_with_the_key() {
        let config = ProviderConfig {
            name: "p".into(), base_url: Some("https://llm.example/v1/".into()),
            api_key: Some("sk-1".into()), models: vec![], options: "{}".into(),
        };
        let request = CanonicalRequest {
            operation: Operation::ChatCompletions, model: "m".into(), body: "{}".into(), stream: false,
        };
        let Ok(Prepared::Upstream(http)) = Plugin::prepare(&config, request) else { panic!("not upstream") };
        assert_eq!(http.url, "https://llm.example/v1/chat/completions");
        assert!(http.headers.contains(&("authorization".into(), "Bearer sk-1".into())));
    }
}
