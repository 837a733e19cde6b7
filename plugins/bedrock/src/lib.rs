//! The Amazon Bedrock provider: OpenAI chat completions translated to Bedrock's Converse API and
//! back, streamed (binary event stream) or not; embeddings with Amazon Titan; every request
//! signed with AWS Signature Version 4 inside the plugin.
//!
//! Wire formats are taken from AWS's public documentation:
//! - Converse: <https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html>
//!   and <https://docs.aws.amazon.com/bedrock/latest/userguide/conversation-inference.html>
//! - ConverseStream and its events:
//!   <https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html>,
//!   <https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStreamOutput.html>
//! - Tool use: <https://docs.aws.amazon.com/bedrock/latest/userguide/tool-use.html>
//! - Errors: <https://docs.aws.amazon.com/bedrock/latest/APIReference/CommonErrors.html>
//! - Titan embeddings (InvokeModel):
//!   <https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-titan-embed-text.html>
//! - Event stream encoding (prelude, headers, CRC32s):
//!   <https://docs.aws.amazon.com/lexv2/latest/dg/event-stream-encoding.html>
//! - SigV4: <https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html>
//!   and the worked example of
//!   <https://docs.aws.amazon.com/general/latest/gr/sigv4-create-canonical-request.html>
//!
//! Modules: [`settings`] (region, base URL, credentials), [`sigv4`] (signing), [`request`] (the
//! Converse body), [`messages`] (the conversation), [`response`] (complete answers),
//! [`eventstream`] (binary framing), [`stream`] (streamed answers), [`embeddings`] (Titan),
//! [`errors`] (error bodies and stream exceptions).

mod embeddings;
mod errors;
mod eventstream;
mod messages;
mod request;
mod response;
mod settings;
mod sigv4;
mod stream;

use wasmgate_plugin_sdk::chat::{ChatRequest, unix_now};
use wasmgate_plugin_sdk::http::path_segment;
use wasmgate_plugin_sdk::{
    CanonicalRequest, Completion, ConfigError, HttpRequest, HttpResponse, Operation, PluginError,
    Prepared, Provider, ProviderConfig, RequestInfo,
};

use settings::Settings;

/// The SigV4 service name of the Bedrock runtime.
const SERVICE: &str = "bedrock";

struct Bedrock;

impl Provider for Bedrock {
    type Decoder = stream::Events;

    fn validate(config: &ProviderConfig) -> Result<(), ConfigError> {
        Settings::from_config(config).map(drop)
    }

    fn prepare(
        config: &ProviderConfig,
        request: CanonicalRequest,
    ) -> Result<Prepared, PluginError> {
        prepare_at(config, request, unix_now())
    }

    fn parse_response(
        _config: &ProviderConfig,
        request: &RequestInfo,
        response: HttpResponse,
    ) -> Result<Completion, PluginError> {
        if !response.is_success() {
            return Err(errors::http_error(&response));
        }
        match request.operation {
            Operation::ChatCompletions => {
                response::parse(request, &response.headers, &response.body)
            }
            Operation::Embeddings => embeddings::parse(request, &response.body),
            Operation::ImageGenerations
            | Operation::ListModels
            | Operation::Messages
            | Operation::Responses
            | Operation::Completions
            | Operation::Moderations
            | Operation::Rerank
            | Operation::AudioTranscriptions
            | Operation::AudioTranslations
            | Operation::AudioSpeech => Err(unsupported()),
        }
    }
}

fn unsupported() -> PluginError {
    PluginError::invalid_request("Bedrock offers chat completions and Titan embeddings only")
}

/// [`Provider::prepare`], signing at `unix_secs` (the wall clock outside tests).
fn prepare_at(
    config: &ProviderConfig,
    request: CanonicalRequest,
    unix_secs: u64,
) -> Result<Prepared, PluginError> {
    let settings = Settings::from_config(config).map_err(|_| {
        PluginError::upstream(format!("provider `{}` is misconfigured", config.name))
    })?;
    // Model ids hold `:` and ARNs `/`: the id is one encoded path segment, and one that no
    // encoding could keep a dot segment (`.`, `..`) is refused.
    let model = path_segment(&request.model).ok_or_else(|| {
        PluginError::invalid_request("the model must be a Bedrock model id or ARN")
            .with_param("model")
    })?;
    let (action, body) = match request.operation {
        Operation::ChatCompletions => {
            let chat = ChatRequest::parse(&request.body)?;
            let body = serde_json::to_vec(&request::build(&chat)?);
            let action = if request.stream {
                "converse-stream"
            } else {
                "converse"
            };
            (action, body)
        }
        Operation::Embeddings => (
            "invoke",
            serde_json::to_vec(&embeddings::build(&request.model, &request.body)?),
        ),
        Operation::ImageGenerations
        | Operation::ListModels
        | Operation::Messages
        | Operation::Responses
        | Operation::Completions
        | Operation::Moderations
        | Operation::Rerank
        | Operation::AudioTranscriptions
        | Operation::AudioTranslations
        | Operation::AudioSpeech => return Err(unsupported()),
    };
    let body = body.map_err(|_| PluginError::upstream("could not write the upstream request"))?;
    let url = format!("{}/model/{model}/{action}", settings.base_url);
    let mut http = HttpRequest::post_json(url, body);
    if request.operation == Operation::Embeddings {
        http.set_header("accept", "application/json");
    }
    sigv4::sign(
        &mut http,
        &settings.credentials,
        &settings.region,
        SERVICE,
        unix_secs,
    );
    Ok(Prepared::Upstream(http))
}

wasmgate_plugin_sdk::export_provider!(Bedrock);

#[cfg(test)]
mod tests;
