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
//! `{base_url}/openai/v1/responses` (its `/compact` and `/input_tokens` for those routes) with
//! the key in `api-key` and no `api-version`, the body as the client wrote it but for `model`,
//! which becomes the deployment name when `deployments` maps it (the v1 API names the
//! deployment in the body, not the URL), and the gateway's own compaction items, expanded into
//! messages. The option
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
use wasmgate_plugin_sdk::native::{
    OrNative, RESPONSES, ResponsesStream, native_call, responses_path, with_model,
};
use wasmgate_plugin_sdk::openai_compat::{
    BATCHES_DIALECT, OpenAiStream, batch_call, path, upstream,
};
use wasmgate_plugin_sdk::{
    Auth, CanonicalRequest, Completion, ConfigError, Entry, Operation, PluginError, Prepared,
    Provider, compaction,
};

use settings::{ResponsesMode, Settings};

struct AzureOpenAi;

impl Provider for AzureOpenAi {
    type Settings = Settings;
    type Decoder = OrNative<OpenAiStream, ResponsesStream>;
    const SYSTEM: Option<&'static str> = Some("azure.ai.openai");
    const AUTH: Auth = Auth::Header("api-key");

    // No default base URL: every Azure resource has its own endpoint.

    /// The Responses API unless the entry's `responses` option says `translate`; and the
    /// Files and Batch APIs (global batch deployments), which the host drives: a batch line's
    /// `model` is the deployment's name, so a batch deployment is named after its model.
    fn native_dialects(entry: &Entry<Settings>) -> Vec<String> {
        let responses = match entry.settings.responses {
            ResponsesMode::Native => Some(RESPONSES.to_owned()),
            ResponsesMode::Translate => None,
        };
        responses
            .into_iter()
            .chain([BATCHES_DIALECT.to_owned()])
            .collect()
    }

    fn validate(entry: &Entry<Settings>) -> Result<(), ConfigError> {
        entry.settings.check()
    }

    fn prepare(
        entry: &Entry<Settings>,
        request: CanonicalRequest,
    ) -> Result<Prepared, PluginError> {
        let settings = &entry.settings;
        if let Some(prepared) = batch_call(&request, |path| {
            settings.resource_url(&entry.base_url, path)
        }) {
            return prepared;
        }
        if request.native.is_some() {
            return match native_call(&request.native, RESPONSES) {
                Some(_) if settings.responses == ResponsesMode::Native => responses(entry, request),
                _ => Err(PluginError::invalid_request(format!(
                    "provider `{}` does not serve this API natively",
                    entry.name
                ))),
            };
        }
        match request.operation {
            // Azure serves no moderations or rerank endpoint: its content filters run on every
            // deployment.
            Operation::Moderations | Operation::Rerank => {
                Err(PluginError::invalid_request(format!(
                    "provider `{}` (Azure OpenAI) serves no moderations or rerank endpoint",
                    entry.name
                )))
            }
            // Azure lists models a resource could deploy, not its deployments, and
            // `/openai/deployments` left the data plane after 2022-12-01: the configured
            // deployments are the answer.
            Operation::ListModels => Ok(Prepared::Local(list_models(settings))),
            // Azure takes the model from the URL and ignores the body's `model`.
            Operation::ChatCompletions
            | Operation::Embeddings
            | Operation::ImageGenerations
            | Operation::Completions
            | Operation::AudioTranscriptions
            | Operation::AudioTranslations
            | Operation::AudioSpeech => {
                let path = path(request.operation);
                upstream(
                    settings.url(&entry.base_url, &request.model, path)?,
                    request,
                )
            }
        }
    }
}

wasmgate_plugin_sdk::export_provider!(AzureOpenAi);

/// A Responses request to the v1 API, which takes the deployment from the body's `model` and
/// needs no `api-version`. The body goes on as the client wrote it unless the model maps to a
/// deployment of another name, which only `model` is changed to.
fn responses(
    entry: &Entry<Settings>,
    mut request: CanonicalRequest,
) -> Result<Prepared, PluginError> {
    let deployment = entry.settings.deployment(&request.model)?;
    if deployment != request.model {
        request.body = with_model(&request.body, deployment)?;
    }
    if let Some(expanded) = compaction::expand(&request.body) {
        request.body = expanded;
    }
    let route = native_call(&request.native, RESPONSES).map_or("", |call| call.route.as_str());
    let path = format!("openai/v1/{}", responses_path(route));
    upstream(entry.url(&path), request)
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
