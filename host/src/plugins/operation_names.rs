//! The provider contract's operations by their WIT names (`chat-completions`, `messages`, ...),
//! so that a dialect can be matched to an operation by the name it declares, without the host
//! naming any dialect.

use super::Operation;

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

/// The operation's name in `wit/provider.wit`. Exhaustive, so that a new operation is named.
pub fn wit_name(operation: Operation) -> &'static str {
    match operation {
        Operation::ChatCompletions => "chat-completions",
        Operation::Embeddings => "embeddings",
        Operation::ImageGenerations => "image-generations",
        Operation::ListModels => "list-models",
        Operation::Messages => "messages",
        Operation::Responses => "responses",
        Operation::Completions => "completions",
        Operation::Moderations => "moderations",
        Operation::Rerank => "rerank",
        Operation::AudioTranscriptions => "audio-transcriptions",
        Operation::AudioTranslations => "audio-translations",
        Operation::AudioSpeech => "audio-speech",
    }
}

/// The operation whose WIT name is `name`, if any.
pub fn operation_named(name: &str) -> Option<Operation> {
    ALL.into_iter().find(|op| wit_name(*op) == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_is_found_by_its_name() {
        for op in ALL {
            assert_eq!(operation_named(wit_name(op)), Some(op));
        }
        assert_eq!(operation_named("gemini"), None);
    }
}
