//! The one table of the provider contract's operations and what each is called: its WIT name,
//! the name its records carry, the path it is served on and the name its spans and metrics
//! carry. A request of a registry dialect is recorded and measured under the dialect's declared
//! name instead (see `Context::recorded_as`), so no dialect is named here.

use super::Operation;

/// What one operation is called wherever the host names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OperationNames {
    /// Its name in `wit/provider.wit` (`chat-completions`).
    pub wit: &'static str,
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
    let (wit, recorded, path, measured) = match operation {
        O::ChatCompletions => (
            "chat-completions",
            "chat.completions",
            "/v1/chat/completions",
            "chat",
        ),
        O::Embeddings => ("embeddings", "embeddings", "/v1/embeddings", "embeddings"),
        O::ImageGenerations => (
            "image-generations",
            "images.generations",
            "/v1/images/generations",
            "image_generation",
        ),
        O::ListModels => ("list-models", "models", "/v1/models", "models"),
        O::Messages => ("messages", "messages", "/v1/messages", "messages"),
        O::Responses => ("responses", "responses", "/v1/responses", "responses"),
        O::Completions => (
            "completions",
            "completions",
            "/v1/completions",
            "text_completion",
        ),
        O::Moderations => (
            "moderations",
            "moderations",
            "/v1/moderations",
            "moderation",
        ),
        O::Rerank => ("rerank", "rerank", "/v1/rerank", "rerank"),
        O::AudioTranscriptions => (
            "audio-transcriptions",
            "audio.transcriptions",
            "/v1/audio/transcriptions",
            "transcription",
        ),
        O::AudioTranslations => (
            "audio-translations",
            "audio.translations",
            "/v1/audio/translations",
            "translation",
        ),
        O::AudioSpeech => ("audio-speech", "audio.speech", "/v1/audio/speech", "speech"),
    };
    OperationNames {
        wit,
        recorded,
        path,
        measured,
    }
}

/// Every operation of the contract.
const ALL: [Operation; 12] = [
    Operation::ChatCompletions,
    Operation::Embeddings,
    Operation::ImageGenerations,
    Operation::ListModels,
    Operation::Messages,
    Operation::Responses,
    Operation::Completions,
    Operation::Moderations,
    Operation::Rerank,
    Operation::AudioTranscriptions,
    Operation::AudioTranslations,
    Operation::AudioSpeech,
];

/// The operation whose WIT name is `name`, if any.
pub fn operation_named(name: &str) -> Option<Operation> {
    ALL.into_iter().find(|op| names(*op).wit == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_is_found_by_its_name() {
        for op in ALL {
            assert_eq!(operation_named(names(op).wit), Some(op));
        }
        assert_eq!(operation_named("gemini"), None);
    }

    #[test]
    fn no_two_operations_share_a_name() {
        for field in [
            |n: OperationNames| n.wit,
            |n: OperationNames| n.recorded,
            |n: OperationNames| n.path,
            |n: OperationNames| n.measured,
        ] {
            let distinct: std::collections::HashSet<_> =
                ALL.into_iter().map(|op| field(names(op))).collect();
            assert_eq!(distinct.len(), ALL.len());
        }
    }
}
