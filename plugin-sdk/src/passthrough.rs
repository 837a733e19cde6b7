//! Pass-through routes (`/passthrough/<entry>/<path>`): the credentials a provider adds, and the
//! usage read from the end of an answer the gateway does not model.
//!
//! The host streams the body both ways and hands the plugin only what it needs: the method,
//! path and headers to sign or key, and at the end the answer whole (when small) or its tail.

use serde_json::Value;

use crate::{Metered, PassthroughAuth, PassthroughCall, PluginError, Usage};

impl PassthroughAuth {
    /// Adds header `name: value` unless the client sent one of that name (a version header
    /// the upstream requires, with the client's own taking precedence).
    pub fn with_default(mut self, call: &PassthroughCall, name: &str, value: &str) -> Self {
        if !call
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
        {
            self.headers.push((name.to_owned(), value.to_owned()));
        }
        self
    }
}

/// The refusal of a plugin whose upstream cannot be passed through to.
pub fn unsupported(entry: &str) -> PluginError {
    PluginError::not_found(format!("provider `{entry}` offers no pass-through route"))
}

/// The usage an answer reports, read the ways the common APIs write it: a JSON body's `usage`
/// (OpenAI's Chat Completions and Responses, Anthropic's Messages) or `usageMetadata`
/// (Google's), or the same in the last stream event that has one (`response.usage` of a
/// Responses stream included). `body` may be a tail: a JSON body cut at its start is read as
/// events only. The model is the answer's `model` (or `modelVersion`) beside it.
pub fn read_usage(body: &[u8], whole: bool) -> Option<Metered> {
    if whole && let Ok(value) = serde_json::from_slice::<Value>(body) {
        return metered(&value);
    }
    // Events (`data: {...}` lines), last first: the last one that reports usage wins.
    let text = String::from_utf8_lossy(body);
    text.lines()
        .rev()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find_map(|event| metered(&event))
}

/// The usage of one JSON answer or event, and its model.
fn metered(value: &Value) -> Option<Metered> {
    // A Responses stream's last event carries the response, with its usage, inside.
    let value = match value.get("response") {
        Some(inner) if inner.get("usage").is_some() => inner,
        _ => value,
    };
    let usage = match (value.get("usage"), value.get("usageMetadata")) {
        (Some(usage), _) if usage.is_object() => anthropic_or_openai(usage)?,
        (_, Some(google)) => gemini(google)?,
        _ => value.get("message").and_then(|m| {
            // Anthropic's `message_start` event.
            anthropic_or_openai(m.get("usage")?)
        })?,
    };
    let model = ["model", "modelVersion"]
        .iter()
        .find_map(|n| value.get(n)?.as_str())
        .map(str::to_owned);
    Some(Metered { model, usage })
}

/// OpenAI's counts, or Anthropic's (whose cache reads and writes are apart from `input_tokens`).
fn anthropic_or_openai(usage: &Value) -> Option<Usage> {
    let mut counted = crate::openai_usage(usage)?;
    let count = |name: &str| usage.get(name).and_then(Value::as_u64).unwrap_or(0);
    let (read, write) = (
        count("cache_read_input_tokens"),
        count("cache_creation_input_tokens"),
    );
    if read + write > 0 {
        counted.input_tokens += read + write;
        counted.cached_input_tokens = read;
        counted.cache_write_tokens = write;
    }
    Some(counted)
}

/// Google's `usageMetadata`.
fn gemini(usage: &Value) -> Option<Usage> {
    let count = |name: &str| usage.get(name).and_then(Value::as_u64);
    let input = count("promptTokenCount");
    let output = count("candidatesTokenCount");
    let thoughts = count("thoughtsTokenCount").unwrap_or(0);
    if input.is_none() && output.is_none() {
        return None;
    }
    Some(Usage {
        cached_input_tokens: count("cachedContentTokenCount").unwrap_or(0),
        reasoning_tokens: thoughts,
        ..Usage::tokens(input.unwrap_or(0), output.unwrap_or(0) + thoughts)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_json_answer_and_its_model() {
        let body = br#"{"id":"ftjob-1","model":"gpt-4o-mini","usage":{"prompt_tokens":12,"completion_tokens":3}}"#;
        let read = read_usage(body, true).expect("usage");
        assert_eq!(read.model.as_deref(), Some("gpt-4o-mini"));
        assert_eq!((read.usage.input_tokens, read.usage.output_tokens), (12, 3));
        assert_eq!(read_usage(br#"{"object":"list","data":[]}"#, true), None);
    }

    #[test]
    fn reads_the_last_event_with_usage_from_a_tail() {
        let tail = b"lta\":\"x\"}\n\ndata: {\"type\":\"response.completed\",\"response\":{\"model\":\"m\",\"usage\":{\"input_tokens\":5,\"output_tokens\":7}}}\n\ndata: [DONE]\n\n";
        let read = read_usage(tail, false).expect("usage");
        assert_eq!((read.usage.input_tokens, read.usage.output_tokens), (5, 7));
        assert_eq!(read.model.as_deref(), Some("m"));
    }

    #[test]
    fn reads_anthropic_cache_counts_and_google_metadata() {
        let body = br#"{"model":"claude","usage":{"input_tokens":10,"output_tokens":2,"cache_read_input_tokens":30,"cache_creation_input_tokens":5}}"#;
        let usage = read_usage(body, true).expect("usage").usage;
        assert_eq!(
            (
                usage.input_tokens,
                usage.cached_input_tokens,
                usage.cache_write_tokens
            ),
            (45, 30, 5)
        );
        let body = br#"{"usageMetadata":{"promptTokenCount":4,"candidatesTokenCount":6,"thoughtsTokenCount":2},"modelVersion":"gemini-2.5"}"#;
        let read = read_usage(body, true).expect("usage");
        assert_eq!(
            (
                read.usage.input_tokens,
                read.usage.output_tokens,
                read.usage.reasoning_tokens
            ),
            (4, 8, 2)
        );
    }
}
