//! OpenAI's error body and usage object, which most OpenAI-compatible upstreams also send.

use serde::Deserialize;
use serde_json::Value;

use crate::{PluginError, Usage, error_kind_for_status};

/// How much of an unparsable error body goes into the message.
const SNIPPET_CHARS: usize = 200;

/// Turns a non-2xx upstream response into a [`PluginError`] whose kind follows the status.
///
/// Reads OpenAI's `{"error": {"message", "type", "param", "code"}}`, and the looser shapes some
/// compatible servers send (`{"error": "..."}`, `{"message": "..."}`, `{"detail": "..."}`). Any
/// other body gives `upstream returned HTTP {status}: {the start of the body}`.
pub fn openai_error(status: u16, body: &[u8]) -> PluginError {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let described = parsed.as_ref().and_then(describe);
    let mut err = match described {
        Some(d) => {
            let mut err = PluginError::new(error_kind_for_status(status), d.message);
            err.param = d.param;
            err.code = d.code;
            err
        }
        None => PluginError::new(
            error_kind_for_status(status),
            fallback_message(status, body),
        ),
    };
    err.upstream_status = Some(status);
    err
}

struct Described {
    message: String,
    param: Option<String>,
    code: Option<String>,
}

fn describe(body: &Value) -> Option<Described> {
    let text = |v: &Value| match v {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    };
    let simple = |message| Described {
        message,
        param: None,
        code: None,
    };
    match body.get("error") {
        Some(error @ Value::Object(_)) => Some(Described {
            message: error.get("message").and_then(text)?,
            param: error.get("param").and_then(text),
            code: error.get("code").and_then(text),
        }),
        Some(Value::String(message)) if !message.is_empty() => Some(simple(message.clone())),
        _ => body
            .get("message")
            .or_else(|| body.get("detail"))
            .and_then(text)
            .map(simple),
    }
}

fn fallback_message(status: u16, body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let snippet: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if snippet.is_empty() {
        return format!("upstream returned HTTP {status}");
    }
    let mut chars = snippet.chars();
    let head: String = chars.by_ref().take(SNIPPET_CHARS).collect();
    let ellipsis = if chars.next().is_some() { "…" } else { "" };
    format!("upstream returned HTTP {status}: {head}{ellipsis}")
}

/// Reads an OpenAI `usage` object: `prompt_tokens`, `completion_tokens`,
/// `prompt_tokens_details.cached_tokens` and `completion_tokens_details.reasoning_tokens` (or the
/// `input_`/`output_` names of the images and responses APIs). Embeddings have only `prompt_tokens`. `None` when `usage` is not an object
/// with token counts (absent, `null`).
pub fn openai_usage(usage: &Value) -> Option<Usage> {
    let count = |names: [&str; 2]| names.iter().find_map(|n| usage.get(n)?.as_u64());
    let input = count(["prompt_tokens", "input_tokens"]);
    let output = count(["completion_tokens", "output_tokens"]);
    if input.is_none() && output.is_none() {
        return None;
    }
    let cached = ["prompt_tokens_details", "input_tokens_details"]
        .iter()
        .find_map(|n| usage.get(n)?.get("cached_tokens")?.as_u64());
    let reasoning = ["completion_tokens_details", "output_tokens_details"]
        .iter()
        .find_map(|n| usage.get(n)?.get("reasoning_tokens")?.as_u64());
    Some(Usage {
        cached_input_tokens: cached.unwrap_or(0),
        reasoning_tokens: reasoning.unwrap_or(0),
        ..Usage::tokens(input.unwrap_or(0), output.unwrap_or(0))
    })
}

/// Reads the top-level `usage` of an OpenAI response body without building the rest of it (an
/// embeddings body is mostly numbers that need not be allocated).
pub fn openai_usage_in_body(body: &[u8]) -> Option<Usage> {
    #[derive(Deserialize)]
    struct Envelope {
        usage: Option<Value>,
    }
    let envelope: Envelope = serde_json::from_slice(body).ok()?;
    openai_usage(envelope.usage.as_ref()?)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::ErrorKind;

    #[test]
    fn reads_openai_error_body() {
        let body = br#"{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#;
        let err = openai_error(429, body);
        assert_eq!(err.kind, ErrorKind::RateLimited);
        assert_eq!(err.message, "Rate limit reached");
        assert_eq!(err.param, None);
        assert_eq!(err.code.as_deref(), Some("rate_limit_exceeded"));
        assert_eq!(err.upstream_status, Some(429));

        let body = br#"{"error":{"message":"bad","type":"invalid_request_error","param":"messages","code":400}}"#;
        let err = openai_error(400, body);
        assert_eq!(err.kind, ErrorKind::InvalidRequest);
        assert_eq!(err.param.as_deref(), Some("messages"));
        assert_eq!(err.code.as_deref(), Some("400"));
    }

    #[test]
    fn reads_looser_error_shapes() {
        assert_eq!(
            openai_error(401, br#"{"error":"no key"}"#).message,
            "no key"
        );
        assert_eq!(
            openai_error(404, br#"{"detail":"Not Found"}"#).message,
            "Not Found"
        );
        let err = openai_error(400, br#"{"object":"error","message":"too long"}"#);
        assert_eq!(err.message, "too long");
    }

    #[test]
    fn falls_back_to_status_and_snippet() {
        let err = openai_error(503, b"<html>\n  <body>Service  Unavailable</body>\n</html>");
        assert_eq!(err.kind, ErrorKind::Upstream);
        assert_eq!(
            err.message,
            "upstream returned HTTP 503: <html> <body>Service Unavailable</body> </html>"
        );
        assert_eq!(err.upstream_status, Some(503));
        assert_eq!(openai_error(502, b"").message, "upstream returned HTTP 502");
        assert_eq!(
            openai_error(500, br#"{"error":{"type":"x"}}"#).message,
            r#"upstream returned HTTP 500: {"error":{"type":"x"}}"#
        );

        let long = "é".repeat(500);
        let err = openai_error(500, long.as_bytes());
        assert!(err.message.ends_with("é…"), "{}", err.message);
        assert_eq!(
            err.message.chars().filter(|&c| c == 'é').count(),
            SNIPPET_CHARS
        );
    }

    #[test]
    fn reads_usage() {
        let chat = json!({"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17,
            "prompt_tokens_details": {"cached_tokens": 8, "audio_tokens": 0}});
        assert_eq!(
            openai_usage(&chat),
            Some(Usage {
                cached_input_tokens: 8,
                ..Usage::tokens(12, 5)
            })
        );
        let embeddings = json!({"prompt_tokens": 7, "total_tokens": 7});
        assert_eq!(openai_usage(&embeddings), Some(Usage::tokens(7, 0)));
        let images = json!({"input_tokens": 50, "output_tokens": 4160, "total_tokens": 4210,
            "input_tokens_details": {"text_tokens": 50, "image_tokens": 0}});
        assert_eq!(openai_usage(&images), Some(Usage::tokens(50, 4160)));
        let reasoning = json!({"prompt_tokens": 9, "completion_tokens": 300,
            "completion_tokens_details": {"reasoning_tokens": 256, "audio_tokens": 0}});
        assert_eq!(
            openai_usage(&reasoning),
            Some(Usage {
                reasoning_tokens: 256,
                ..Usage::tokens(9, 300)
            })
        );
        let responses = json!({"input_tokens": 36, "output_tokens": 87,
            "input_tokens_details": {"cached_tokens": 4},
            "output_tokens_details": {"reasoning_tokens": 64}});
        assert_eq!(
            openai_usage(&responses),
            Some(Usage {
                cached_input_tokens: 4,
                reasoning_tokens: 64,
                ..Usage::tokens(36, 87)
            })
        );
        assert_eq!(openai_usage(&Value::Null), None);
        assert_eq!(openai_usage(&json!({})), None);
        let details_null =
            json!({"prompt_tokens": 1, "completion_tokens": 2, "prompt_tokens_details": null});
        assert_eq!(openai_usage(&details_null), Some(Usage::tokens(1, 2)));
    }

    #[test]
    fn reads_usage_in_body() {
        let body = br#"{"object":"list","data":[{"embedding":[0.1,-0.2,3e-5]}],"usage":{"prompt_tokens":3,"total_tokens":3}}"#;
        assert_eq!(openai_usage_in_body(body), Some(Usage::tokens(3, 0)));
        assert_eq!(openai_usage_in_body(br#"{"data":[]}"#), None);
        assert_eq!(openai_usage_in_body(b"not json"), None);
    }
}
