//! The plain path (issue 38): a request of an operation its provider declared plain goes
//! upstream as the plan in [`crate::gateway::PlainPlan`] says, and its success answer, in
//! OpenAI's canonical shape, is read here: the usage of a whole answer, and a stream's events
//! ([`stream`]). What cannot be read so goes to the plugin after all, so its error mapping
//! stays the plugin's; no instance is made for an answer that reads plainly.

pub mod stream;

use serde::Deserialize;
use serde_json::Value;

use crate::plugins::{Completion, HttpResponse, Usage};

/// A whole success answer read as the contract says: its body as it came, with the usage of
/// its `usage` object. The response comes back when it is not a JSON object in UTF-8, for the
/// plugin to read.
pub fn completion(response: HttpResponse) -> Result<Completion, HttpResponse> {
    /// The part looked at; serde skips the rest (choices, vectors) unbuilt.
    #[derive(Deserialize)]
    struct Envelope {
        usage: Option<Value>,
    }
    // serde would read a struct from an array too: an object is asked for.
    let envelope = match serde_json::from_slice::<Envelope>(&response.body) {
        Ok(envelope) if response.body.trim_ascii_start().starts_with(b"{") => envelope,
        _ => return Err(response),
    };
    let usage = envelope.usage.as_ref().and_then(openai_usage);
    let HttpResponse {
        status,
        headers,
        body,
    } = response;
    match String::from_utf8(body) {
        Ok(body) => Ok(Completion { body, usage }),
        Err(e) => Err(HttpResponse {
            status,
            headers,
            body: e.into_bytes(),
        }),
    }
}

/// OpenAI's usage object (Chat Completions' names, or the Responses API's), as the plugin SDK
/// reads it: `None` when it counts neither input nor output.
pub fn openai_usage(usage: &Value) -> Option<Usage> {
    let count = |names: [&str; 2]| names.iter().find_map(|n| usage.get(n)?.as_u64());
    let input = count(["prompt_tokens", "input_tokens"]);
    let output = count(["completion_tokens", "output_tokens"]);
    if input.is_none() && output.is_none() {
        return None;
    }
    let detail = |parents: [&str; 2], name: &str| {
        parents
            .iter()
            .find_map(|p| usage.get(p)?.get(name)?.as_u64())
            .unwrap_or(0)
    };
    Some(Usage {
        input_tokens: input.unwrap_or(0),
        output_tokens: output.unwrap_or(0),
        cached_input_tokens: detail(
            ["prompt_tokens_details", "input_tokens_details"],
            "cached_tokens",
        ),
        cache_write_tokens: 0,
        reasoning_tokens: detail(
            ["completion_tokens_details", "output_tokens_details"],
            "reasoning_tokens",
        ),
        images: 0,
        search_units: 0,
        audio_ms: 0,
        characters: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(body: &[u8]) -> HttpResponse {
        HttpResponse {
            status: 200,
            headers: Vec::new(),
            body: body.to_vec(),
        }
    }

    #[test]
    fn a_json_answer_passes_with_its_usage_and_anything_else_goes_back() {
        let body = br#"{"id":"c","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":2},"completion_tokens_details":{"reasoning_tokens":1}}}"#;
        let read = completion(response(body)).expect("read");
        assert_eq!(read.body.as_bytes(), body);
        let usage = read.usage.expect("usage");
        assert_eq!(
            (
                usage.input_tokens,
                usage.output_tokens,
                usage.cached_input_tokens,
                usage.reasoning_tokens
            ),
            (3, 4, 2, 1)
        );
        let without = completion(response(br#"{"data":[]}"#)).expect("read");
        assert!(without.usage.is_none());
        for unreadable in [&b"not json"[..], b"[1]", b"{\"a\":\"\xff\"}"] {
            assert!(completion(response(unreadable)).is_err());
        }
    }
}
