//! The one table of the provider contract's operations and what each is called: the name its
//! records carry, the path it is served on and the name its spans and metrics carry. A request of a registry dialect is recorded and measured under the dialect's declared
//! name instead (see `Context::recorded_as`), so no dialect is named here.

use super::bindings::provider_types::Operation;

/// What one operation is called wherever the host names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OperationNames {
    /// The ledger's name for its records, which the usage API filters by (`chat.completions`).
    pub recorded: &'static str,
    /// The path the host serves it on, for traces (`/v1/chat/completions`).
    pub path: &'static str,
    /// The name its spans and metrics carry (`chat`).
    pub measured: &'static str,
}

/// The names of `operation`. Exhaustive, so that a new operation is named once, here.
pub const fn names(operation: Operation) -> OperationNames {
    use Operation as O;
    let (recorded, path, measured) = match operation {
        O::ChatCompletions => ("chat.completions", "/v1/chat/completions", "chat"),
        O::Embeddings => ("embeddings", "/v1/embeddings", "embeddings"),
        O::ImageGenerations => (
            "images.generations",
            "/v1/images/generations",
            "image_generation",
        ),
        O::ListModels => ("models", "/v1/models", "models"),
        O::Completions => ("completions", "/v1/completions", "text_completion"),
        O::Moderations => ("moderations", "/v1/moderations", "moderation"),
        O::Rerank => ("rerank", "/v1/rerank", "rerank"),
        O::AudioTranscriptions => (
            "audio.transcriptions",
            "/v1/audio/transcriptions",
            "transcription",
        ),
        O::AudioTranslations => (
            "audio.translations",
            "/v1/audio/translations",
            "translation",
        ),
        O::AudioSpeech => ("audio.speech", "/v1/audio/speech", "speech"),
    };
    OperationNames {
        recorded,
        path,
        measured,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_two_operations_share_a_name() {
        let all = [
            Operation::ChatCompletions,
            Operation::Embeddings,
            Operation::ImageGenerations,
            Operation::ListModels,
            Operation::Completions,
            Operation::Moderations,
            Operation::Rerank,
            Operation::AudioTranscriptions,
            Operation::AudioTranslations,
            Operation::AudioSpeech,
        ];
        for field in [
            |n: OperationNames| n.recorded,
            |n: OperationNames| n.path,
            |n: OperationNames| n.measured,
        ] {
            let distinct: std::collections::HashSet<_> =
                all.into_iter().map(|op| field(names(op))).collect();
            assert_eq!(distinct.len(), all.len());
        }
    }
}
