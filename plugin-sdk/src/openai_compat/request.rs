//! The upstream request for an OpenAI-compatible host: OpenAI's path for the operation, the body
//! passed through.

use super::{speech, transcription_form};
use crate::{CanonicalRequest, HttpRequest, Operation, PlainOperation, PluginError, Prepared};

/// OpenAI's path, under the base URL, of a canonical operation.
pub fn path(operation: Operation) -> &'static str {
    match operation {
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
    }
}

/// The plain declaration of `operations` at OpenAI's paths, for a provider that sends them
/// with [`upstream`] and reads them with [`parse_response`](super::parse_response). Only those
/// [`upstream`] posts as JSON qualify, and of those not `moderations`, whose reading makes up a
/// zero usage, nor `image-generations` and `rerank`, whose usage is read from elsewhere.
pub fn plain(operations: &[Operation]) -> Vec<PlainOperation> {
    operations
        .iter()
        .filter(|op| {
            matches!(
                op,
                Operation::ChatCompletions | Operation::Embeddings | Operation::Completions
            )
        })
        .map(|&operation| PlainOperation {
            operation,
            path: path(operation).to_owned(),
        })
        .collect()
}

/// `request` sent to `url` as OpenAI's API takes it: `GET` for the models list, a multipart
/// form for an upload, audio streamed back for speech, and otherwise the body as the host
/// validated it (re-serialising it would only cost time), asking for an event stream when the
/// client asked for a stream. The SDK adds the key and the entry's headers.
pub fn upstream(url: String, request: CanonicalRequest) -> Result<Prepared, PluginError> {
    match request.operation {
        Operation::AudioTranscriptions | Operation::AudioTranslations => {
            transcription_form(url, &request)
        }
        Operation::AudioSpeech => speech(url, &request),
        Operation::ListModels => Ok(Prepared::Upstream(HttpRequest::get(url))),
        Operation::ChatCompletions
        | Operation::Embeddings
        | Operation::ImageGenerations
        | Operation::Completions
        | Operation::Moderations
        | Operation::Rerank => {
            let mut http = HttpRequest::post_json(url, request.body.into_bytes());
            if request.stream {
                http.set_header("accept", "text/event-stream");
            }
            Ok(Prepared::Upstream(http))
        }
    }
}
