//! What the pipeline hands back to HTTP: an answer (its headers and body) or the error to write
//! in the client's API; and the headers every answer carries (which target answered, the
//! cache's and the limits' state).

use axum::body::Body;
use axum::http::{HeaderName, HeaderValue};

use super::context::Context;
use crate::error::{ApiError, Dialect};

/// What the pipeline hands back to HTTP: an answer, or the error to render in `dialect`.
pub struct Reply {
    pub dialect: Dialect,
    pub result: Result<Answer, ApiError>,
    /// The error's body as a registry dialect's plugin wrote it (the status and headers are
    /// the error's own); `None` for an answer, or for Chat Completions' errors, which the
    /// gateway writes itself.
    pub error_body: Option<String>,
}

/// A successful answer: its headers (which target answered, the limits' state) and its body.
pub struct Answer {
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub body: AnswerBody,
}

pub enum AnswerBody {
    /// A whole JSON answer.
    Json(String),
    /// Server-sent events.
    Events(Body),
    /// Anything else (a transcript as text or subtitles, speech audio), with its content type.
    Typed {
        content_type: HeaderValue,
        body: Body,
    },
}

/// Names the provider and model that answered and how many attempts it took; and the limits'
/// `x-ratelimit-*` headers.
pub fn answer_headers(
    cx: &Context,
    provider: &str,
    model: &str,
    attempts: usize,
) -> Vec<(HeaderName, HeaderValue)> {
    let mut headers = vec![(
        HeaderName::from_static("x-wasmgate-attempts"),
        HeaderValue::from(attempts),
    )];
    if let Ok(v) = HeaderValue::from_str(provider) {
        headers.push((HeaderName::from_static("x-wasmgate-provider"), v));
    }
    if let Ok(v) = HeaderValue::from_str(model) {
        headers.push((HeaderName::from_static("x-wasmgate-model"), v));
    }
    headers.extend(cx.cache.headers());
    for (name, value) in cx.admission.iter().flat_map(|a| &a.headers) {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            headers.push((name, value));
        }
    }
    headers
}
