//! Rerank answers in Cohere's v2 shape, from Cohere itself (billed in search units) or from
//! hosts that serve the same endpoint (vLLM, Jina, Voyage: billed in tokens).

use serde::Deserialize;
use serde_json::Value;

use crate::{Completion, HttpResponse, PluginError, Usage, openai_error};

/// Passes a rerank answer through with its usage: Cohere's `meta.billed_units.search_units`
/// (and its token counts, when it reports them), or a compatible host's `usage.total_tokens`.
pub fn parse_rerank(response: HttpResponse) -> Result<Completion, PluginError> {
    #[derive(Deserialize)]
    struct Envelope {
        meta: Option<Meta>,
        usage: Option<Value>,
    }
    #[derive(Deserialize)]
    struct Meta {
        billed_units: Option<Billed>,
    }
    #[derive(Deserialize)]
    struct Billed {
        search_units: Option<f64>,
        input_tokens: Option<f64>,
    }
    if !response.is_success() {
        return Err(openai_error(response.status, &response.body));
    }
    let envelope: Envelope = serde_json::from_slice(&response.body)
        .map_err(|_| PluginError::upstream("upstream answered with a body that is not JSON"))?;
    let billed = envelope.meta.and_then(|m| m.billed_units);
    let tokens = envelope.usage.as_ref().and_then(|u| {
        ["total_tokens", "prompt_tokens", "input_tokens"]
            .iter()
            .find_map(|k| u.get(k)?.as_u64())
    });
    let usage = match (billed, tokens) {
        (Some(billed), _) if billed.search_units.is_some() => Some(Usage {
            search_units: count(billed.search_units),
            input_tokens: count(billed.input_tokens),
            ..Usage::default()
        }),
        (_, Some(tokens)) => Some(Usage::tokens(tokens, 0)),
        (Some(_), None) | (None, None) => None,
    };
    let body = String::from_utf8(response.body)
        .map_err(|_| PluginError::upstream("upstream answered with a body that is not UTF-8"))?;
    Ok(Completion { body, usage })
}

/// Cohere writes billed units as JSON numbers that may carry a fraction (`1.0`).
fn count(units: Option<f64>) -> u64 {
    units
        .filter(|u| u.is_finite() && *u >= 0.0)
        .map_or(0, |u| u.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(body: &str) -> HttpResponse {
        HttpResponse {
            status: 200,
            headers: Vec::new(),
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn cohere_bills_search_units_and_others_tokens() {
        let cohere = r#"{"id":"r","results":[{"index":1,"relevance_score":0.9}],"meta":{"api_version":{"version":"2"},"billed_units":{"search_units":1}}}"#;
        let usage = parse_rerank(ok(cohere)).ok().and_then(|c| c.usage);
        assert_eq!(usage.map(|u| u.search_units), Some(1));
        let vllm = r#"{"id":"r","model":"m","usage":{"total_tokens":42},"results":[]}"#;
        let usage = parse_rerank(ok(vllm)).ok().and_then(|c| c.usage);
        assert_eq!(usage, Some(Usage::tokens(42, 0)));
    }
}
