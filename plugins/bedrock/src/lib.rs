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
//! Modules: [`settings`] (region, credentials), [`sigv4`] (signing), [`request`] (the
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
use wasmgate_plugin_sdk::http::{json_body, path_segment};
use wasmgate_plugin_sdk::{
    Auth, CanonicalRequest, Completion, ConfigError, Entry, HttpRequest, HttpResponse, Operation,
    PluginError, Prepared, Provider, RequestInfo,
};

use settings::Settings;

/// The SigV4 service name of the Bedrock runtime.
const SERVICE: &str = "bedrock";

struct Bedrock;

impl Provider for Bedrock {
    type Settings = Settings;
    type Decoder = stream::Events;
    const SYSTEM: Option<&'static str> = Some("aws.bedrock");
    // The key signs each request; it is never sent.
    const AUTH: Auth = Auth::Own;

    /// The runtime endpoint of the entry's region; none for a region that is no region name
    /// (`validate` refuses it).
    fn default_base_url(settings: &Settings) -> Option<String> {
        let region = settings.region().ok()?;
        Some(format!("https://bedrock-runtime.{region}.amazonaws.com"))
    }

    fn validate(entry: &Entry<Settings>) -> Result<(), ConfigError> {
        entry.settings.region()?;
        settings::credentials(entry).map(drop)
    }

    fn prepare(
        entry: &Entry<Settings>,
        request: CanonicalRequest,
    ) -> Result<Prepared, PluginError> {
        prepare_at(entry, request, unix_now())
    }

    fn parse_response(
        _: &Entry<Settings>,
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
    entry: &Entry<Settings>,
    request: CanonicalRequest,
    unix_secs: u64,
) -> Result<Prepared, PluginError> {
    // `validate` accepted both when the config loaded.
    let misconfigured =
        |_| PluginError::upstream(format!("provider `{}` is misconfigured", entry.name));
    let region = entry.settings.region().map_err(misconfigured)?;
    let credentials = settings::credentials(entry).map_err(misconfigured)?;
    // Model ids hold `:` and ARNs `/`: the id is one encoded path segment, and one that no
    // encoding could keep a dot segment (`.`, `..`) is refused.
    let model = path_segment(&request.model).ok_or_else(|| {
        PluginError::invalid_request("the model must be a Bedrock model id or ARN")
            .with_param("model")
    })?;
    let (action, body) = match request.operation {
        Operation::ChatCompletions => {
            let chat = ChatRequest::parse(&request.body)?;
            let body = json_body(&request::build(&chat)?)?;
            let action = if request.stream {
                "converse-stream"
            } else {
                "converse"
            };
            (action, body)
        }
        Operation::Embeddings => (
            "invoke",
            json_body(&embeddings::build(&request.model, &request.body)?)?,
        ),
        Operation::ImageGenerations
        | Operation::ListModels
        | Operation::Completions
        | Operation::Moderations
        | Operation::Rerank
        | Operation::AudioTranscriptions
        | Operation::AudioTranslations
        | Operation::AudioSpeech => return Err(unsupported()),
    };
    let url = entry.url(&format!("model/{model}/{action}"));
    let mut http = HttpRequest::post_json(url, body);
    if request.operation == Operation::Embeddings {
        http.set_header("accept", "application/json");
    }
    sigv4::sign(&mut http, &credentials, region, SERVICE, unix_secs);
    Ok(Prepared::Upstream(http))
}

wasmgate_plugin_sdk::export_provider!(Bedrock);

#[cfg(test)]
mod tests;
