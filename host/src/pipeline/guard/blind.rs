//! What a guard cannot read of a request: an uploaded file's bytes (audio), or text sent as
//! token ids (an embeddings `input`, a completion's `prompt`). A guard that applies to such a
//! request refuses it, unless its entry exempts the route (`exempt`).

use serde_json::Value;

use crate::config::guards::BlindRoute;
use crate::pipeline::request::ClientRequest;
use crate::plugins::Operation;

/// What of a request no guard can read, and its route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlindSpot {
    pub route: BlindRoute,
    /// For the client: what could not be read.
    pub what: &'static str,
}

/// The part of `request` no guard can read, if any.
pub fn blind_spot(request: &ClientRequest) -> Option<BlindSpot> {
    let (route, tokens_in) = match request.operation {
        Operation::AudioTranscriptions => (BlindRoute::AudioTranscriptions, None),
        Operation::AudioTranslations => (BlindRoute::AudioTranslations, None),
        Operation::Embeddings => (BlindRoute::Embeddings, Some("input")),
        Operation::Completions => (BlindRoute::Completions, Some("prompt")),
        _ => return None,
    };
    if request.upload.is_some() {
        return Some(BlindSpot {
            route,
            what: "the uploaded file",
        });
    }
    let field = tokens_in?;
    let (_, raw) = request.fields().find(|(name, _)| *name == field)?;
    let value: Value = serde_json::from_str(raw.get()).ok()?;
    holds_number(&value).then_some(BlindSpot {
        route,
        what: "token ids",
    })
}

fn holds_number(value: &Value) -> bool {
    match value {
        Value::Number(_) => true,
        Value::Array(items) => items.iter().any(holds_number),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn spot(operation: Operation, body: &str) -> Option<BlindRoute> {
        let request = ClientRequest::parse(operation, body.as_bytes()).unwrap();
        blind_spot(&request).map(|spot| spot.route)
    }

    #[test]
    fn token_ids_cannot_be_read_and_text_can() {
        let embeddings = Operation::Embeddings;
        assert_eq!(
            spot(embeddings, r#"{"model":"m","input":[[1,2]]}"#),
            Some(BlindRoute::Embeddings)
        );
        assert_eq!(
            spot(embeddings, r#"{"model":"m","input":[3,4]}"#),
            Some(BlindRoute::Embeddings)
        );
        assert_eq!(spot(embeddings, r#"{"model":"m","input":["a"]}"#), None);
        let completions = Operation::Completions;
        assert_eq!(
            spot(completions, r#"{"model":"m","prompt":[5]}"#),
            Some(BlindRoute::Completions)
        );
        assert_eq!(spot(completions, r#"{"model":"m","prompt":"hi"}"#), None);
    }
}
