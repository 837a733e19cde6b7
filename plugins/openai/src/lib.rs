//! The OpenAI provider: OpenAI itself and any upstream that speaks its API (vLLM, Ollama, Azure
//! OpenAI with `auth_header: api-key`, ...). Requests and responses already are in the canonical
//! format, so bodies pass through untouched; the plugin adds the URL and headers, and the SDK's
//! `openai_compat` reads usage and maps errors.
//!
//! Responses requests (`POST /v1/responses` on the gateway) go natively to `{base_url}/responses`
//! when the entry's upstream serves that API: by default OpenAI's own base URL does and any
//! other does not, and the `responses: native | translate` option says otherwise (the presets
//! of hosts that serve it set `native`). A `translate` entry gets them as chat completions,
//! translated by the host.

mod settings;

use wasmgate_plugin_sdk::http::{check_header, join_url};
use wasmgate_plugin_sdk::native::{OrNative, ResponsesStream, forwarded_header};
use wasmgate_plugin_sdk::openai_compat::{
    BATCHES_DIALECT, OpenAiStream, batch_call, parse_response, request_of, speech,
    transcription_form,
};
use wasmgate_plugin_sdk::{
    CanonicalRequest, Completion, ConfigError, HttpRequest, HttpResponse, Operation, PluginError,
    Prepared, Provider, ProviderConfig, RequestInfo,
};

use settings::{ResponsesMode, Settings};

struct OpenAi;

impl Provider for OpenAi {
    type Decoder = OrNative<OpenAiStream, ResponsesStream>;

    fn native_operations(config: &ProviderConfig) -> Vec<Operation> {
        match Settings::from_config(config).map(|s| s.responses) {
            Ok(ResponsesMode::Native) => vec![Operation::Responses],
            // A misconfigured entry is refused by `validate`: it serves nothing.
            Ok(ResponsesMode::Translate) | Err(_) => Vec::new(),
        }
    }

    /// OpenAI's Files and Batch APIs, which the host drives (see `openai_compat::batch_call`),
    /// where the upstream runs them (the `batches` option).
    fn native_dialects(config: &ProviderConfig) -> Vec<String> {
        match Settings::from_config(config) {
            Ok(settings) if settings.batches => vec![BATCHES_DIALECT.to_owned()],
            Ok(_) | Err(_) => Vec::new(),
        }
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
        if let Some(prepared) = batch_call(&request, |path| join_url(&settings.base_url, path)) {
            let mut prepared = prepared?;
            if let Some(http) = request_of(&mut prepared) {
                settings.apply_headers(http, config.api_key.as_deref());
            }
            return Ok(prepared);
        }
        let path = match request.operation {
            Operation::ChatCompletions => "chat/completions",
            Operation::Embeddings => "embeddings",
            Operation::ImageGenerations => "images/generations",
            Operation::ListModels => "models",
            Operation::Completions => "completions",
            Operation::Moderations => "moderations",
            // vLLM, Jina and Voyage serve Cohere's shape under the OpenAI base URL.
            Operation::Rerank => "rerank",
            Operation::AudioTranscriptions => "audio/transcriptions",
            Operation::AudioTranslations => "audio/translations",
            Operation::AudioSpeech => "audio/speech",
            Operation::Responses if settings.responses == ResponsesMode::Native => "responses",
            Operation::Responses | Operation::Messages => {
                return Err(PluginError::invalid_request(format!(
                    "provider `{}` does not serve this API natively",
                    config.name
                )));
            }
        };
        // `OpenAI-Beta` opts a client into preview behaviour; only a client of the Responses
        // API itself can mean it for this upstream.
        let beta = match forwarded_header(&request, "openai-beta") {
            Some(value) if request.operation == Operation::Responses => {
                check_header("openai-beta", value).map_err(|_| {
                    PluginError::invalid_request("the `openai-beta` header is not a valid value")
                })?;
                Some(value.to_owned())
            }
            Some(_) | None => None,
        };
        let url = join_url(&settings.base_url, path);
        match request.operation {
            Operation::AudioTranscriptions | Operation::AudioTranslations => {
                return transcription_form(url, &request).map(|mut prepared| {
                    if let Prepared::UpstreamForm(form) = &mut prepared {
                        settings.apply_headers(&mut form.request, config.api_key.as_deref());
                    }
                    prepared
                });
            }
            Operation::AudioSpeech => {
                return speech(url, &request).map(|mut prepared| {
                    if let Prepared::UpstreamRaw(raw) = &mut prepared {
                        settings.apply_headers(&mut raw.request, config.api_key.as_deref());
                    }
                    prepared
                });
            }
            _ => {}
        }
        let mut http = match request.operation {
            Operation::ListModels => HttpRequest::get(url),
            // The host has validated the body already: re-serialising it would only cost time.
            Operation::ChatCompletions
            | Operation::Embeddings
            | Operation::ImageGenerations
            | Operation::Responses
            | Operation::Messages
            | Operation::Completions
            | Operation::Moderations
            | Operation::Rerank
            | Operation::AudioTranscriptions
            | Operation::AudioTranslations
            | Operation::AudioSpeech => HttpRequest::post_json(url, request.body.into_bytes()),
        };
        if request.stream {
            http.set_header("accept", "text/event-stream");
        }
        if let Some(beta) = beta {
            http.set_header("openai-beta", beta);
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
