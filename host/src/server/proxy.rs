//! The Chat Completions handlers (`/v1/chat/completions` and the endpoints beside it): each
//! turns its HTTP request into a call of the pipeline, and the pipeline's reply into a response.
//! The registry's dialects have theirs in `dialect_routes`.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Extension, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};

use super::request_log::{LoggedAtEnd, RequestId};
use crate::error::Dialect;
use crate::pipeline::{self, AnswerBody, Incoming, Reply};
use crate::plugins::Operation;
use crate::state::AppState;

pub async fn chat_completions(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    id: Option<Extension<RequestId>>,
    body: Body,
) -> Response {
    proxy(&state, headers, id, Operation::ChatCompletions, body).await
}

pub async fn embeddings(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    id: Option<Extension<RequestId>>,
    body: Body,
) -> Response {
    proxy(&state, headers, id, Operation::Embeddings, body).await
}

pub async fn image_generations(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    id: Option<Extension<RequestId>>,
    body: Body,
) -> Response {
    proxy(&state, headers, id, Operation::ImageGenerations, body).await
}

/// The rest of OpenAI's API (and rerank in Cohere's shape): each its own operation through
/// the same pipeline.
macro_rules! operation_handler {
    ($($(#[$doc:meta])* $name:ident => $operation:expr;)*) => {$(
        $(#[$doc])*
        pub async fn $name(
            State(state): State<Arc<AppState>>,
            headers: HeaderMap,
            id: Option<Extension<RequestId>>,
            body: Body,
        ) -> Response {
            proxy(&state, headers, id, $operation, body).await
        }
    )*};
}

operation_handler! {
    /// `POST /v1/completions`: legacy text completions.
    completions => Operation::Completions;
    /// `POST /v1/moderations`.
    moderations => Operation::Moderations;
    /// `POST /v1/rerank`, Cohere's v2 shape.
    rerank => Operation::Rerank;
    /// `POST /v1/audio/transcriptions`: a multipart upload.
    audio_transcriptions => Operation::AudioTranscriptions;
    /// `POST /v1/audio/translations`: a multipart upload.
    audio_translations => Operation::AudioTranslations;
    /// `POST /v1/audio/speech`: audio streamed back.
    audio_speech => Operation::AudioSpeech;
}

/// Proxies one request. Its log line is written when it ends (by `finish`, which knows the
/// tokens), so the response is marked for the request-log middleware.
async fn proxy(
    state: &AppState,
    headers: HeaderMap,
    id: Option<Extension<RequestId>>,
    operation: Operation,
    body: Body,
) -> Response {
    let incoming = Incoming {
        dialect: Dialect::Chat,
        operation,
        request_id: id.map(|Extension(RequestId(id))| id).unwrap_or_default(),
        headers,
        body,
        edge: None,
        socket: None,
    };
    let mut response = respond(pipeline::run(state, incoming).await);
    response.extensions_mut().insert(LoggedAtEnd);
    response
}

pub(super) fn respond(reply: Reply) -> Response {
    let answer = match reply.result {
        Ok(answer) => answer,
        Err(error) => {
            let mut response = error.response(reply.dialect);
            if let Some(body) = reply.error_body {
                *response.body_mut() = Body::from(body);
            }
            return response;
        }
    };
    let mut response = match answer.body {
        AnswerBody::Json(body) => (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            body,
        )
            .into_response(),
        AnswerBody::Events(body) => (
            [
                (header::CONTENT_TYPE, "text/event-stream"),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            body,
        )
            .into_response(),
        AnswerBody::Typed { content_type, body } => {
            ([(header::CONTENT_TYPE, content_type)], body).into_response()
        }
    };
    let headers = response.headers_mut();
    for (name, value) in answer.headers {
        headers.insert(name, value);
    }
    response
}
