//! The one place an error becomes what a client reads, in its API ([`ApiError::render`]):
//! OpenAI's `{"error": {message, type, param, code}}`, as a whole response or as the event that
//! ends a stream.

use std::borrow::Cow;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::api_error::{ApiError, Detail};
use crate::plugins::ErrorKind;

/// The client's API. Every dialect enters the same pipeline: the edge's way in reads it into
/// the canonical (chat) form and its way out writes the answer and errors back in it, so the
/// stages between never ask which one it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// OpenAI's Chat Completions (`/v1/chat/completions`, and the embeddings and images
    /// endpoints beside it), which the host speaks itself.
    Chat,
    /// A dialect of the registry (Anthropic's Messages, OpenAI's Responses, Google's GenAI,
    /// ...): the request's edge says which, and its plugin reads and writes it.
    Plugin,
}

#[derive(Serialize)]
struct Body<'a> {
    error: Detail<'a>,
}

impl ApiError {
    /// The one place an error becomes what a client reads, in its `dialect`: the status and
    /// the body. A whole response and a stream's error event both carry this body.
    pub fn render(&self, dialect: Dialect) -> (StatusCode, String) {
        // A registry dialect's body is its plugin's (see `edge::error_body`); this one is
        // what it falls back on when the plugin cannot write one.
        let body = match dialect {
            Dialect::Chat | Dialect::Plugin => serde_json::to_string(&Body {
                error: self.detail(),
            }),
        };
        // Serialising strings and options cannot fail; the fallback keeps the shape anyway.
        let body = body
            .unwrap_or_else(|_| r#"{"error":{"message":"error","type":"api_error"}}"#.to_owned());
        (self.status(), body)
    }

    /// The error as an HTTP response in `dialect`, with the headers that tell a client when to
    /// retry.
    pub fn response(&self, dialect: Dialect) -> Response {
        let (status, body) = self.render(dialect);
        let content_type = [(
            axum::http::header::CONTENT_TYPE,
            axum::http::HeaderValue::from_static("application/json"),
        )];
        let mut response = (status, content_type, body).into_response();
        if let Self::ServerBusy = self {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, 1.into());
        }
        if let Self::LimitExceeded(denial) = self {
            let headers = response.headers_mut();
            let seconds = denial.retry_after_ms.div_ceil(1000).max(1);
            headers.insert(axum::http::header::RETRY_AFTER, seconds.into());
            for (name, value) in &denial.headers {
                if let (Ok(name), Ok(value)) = (
                    axum::http::HeaderName::from_bytes(name.as_bytes()),
                    axum::http::HeaderValue::from_str(value),
                ) {
                    headers.insert(name, value);
                }
            }
        }
        if let Self::Saturated(_) = self {
            // Instances come free in milliseconds to minutes: a second is a fair first retry.
            let headers = response.headers_mut();
            headers.insert(axum::http::header::RETRY_AFTER, 1.into());
        }
        // The request-log middleware writes internal details (never sent to the client).
        let message = self.detail().message;
        response
            .extensions_mut()
            .insert(ErrorNote(message, self.internal_detail()));
        response
    }

    /// The error as the SSE event that ends a stream in `dialect`, as OpenAI does mid-stream.
    pub fn stream_event(&self, dialect: Dialect) -> String {
        // A registry dialect's stream ends with its plugin's events (see `relay`); this is
        // what it falls back on when the plugin cannot write them.
        let (_, body) = self.render(dialect);
        match dialect {
            Dialect::Chat => format!("data: {body}\n\n"),
            Dialect::Plugin => format!("event: error\ndata: {body}\n\n"),
        }
    }

    /// The failure as a dialect plugin receives it, to write in its own shape.
    pub fn failure(&self) -> crate::plugins::Failure {
        let detail = self.detail();
        let kind = match self.status().as_u16() {
            401 => ErrorKind::Authentication,
            403 => ErrorKind::PermissionDenied,
            404 => ErrorKind::NotFound,
            429 => ErrorKind::RateLimited,
            504 => ErrorKind::Timeout,
            s if s >= 500 => ErrorKind::Upstream,
            _ => ErrorKind::InvalidRequest,
        };
        crate::plugins::Failure {
            kind,
            message: detail.message,
            openai_type: detail.kind.to_owned(),
            code: detail.code.map(str::to_owned),
            param: detail.param.map(Cow::into_owned),
        }
    }
}

/// The handlers outside the pipeline (`/usage/*`, `/v1/models`, unknown routes) answer in the
/// Chat Completions dialect.
impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        self.response(Dialect::Chat)
    }
}

/// What went wrong, for the log line of a failed request.
#[derive(Clone, Debug)]
pub struct ErrorNote(pub String, pub Option<String>);
