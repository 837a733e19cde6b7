//! The upstream's realtime socket: its path from the provider entry's catalog (OpenAI's
//! `{base}/realtime?model=`, Azure OpenAI's v1 `{base}/openai/v1/realtime?model=`), opened as
//! any entry's socket is (`pipeline::forward::upstream_socket`: the plugin's credentials, the
//! entry's scope and timeout).

use axum::http::HeaderMap;

use crate::error::ApiError;
use crate::gateway::Provider;
use crate::pipeline::forward::upstream_socket::{self, Opening};
use crate::redact::Redactor;

pub use crate::upstream::websocket::Socket;

/// Client headers passed on: a beta client's protocol choice.
const FORWARDED: [&str; 1] = ["openai-beta"];

/// Opens the realtime socket of `provider`'s `model`, taking messages of at most `max_message`
/// bytes. Errors name no credential: the plugin's are redacted, the others are the host's.
pub async fn open(
    provider: &Provider,
    model: &str,
    client_headers: &HeaderMap,
    redactor: &Redactor,
    max_message: usize,
) -> Result<Socket, ApiError> {
    let path = match provider.catalog.as_deref() {
        Some("azure-openai") => "/openai/v1/realtime",
        _ => "/realtime",
    };
    let opening = Opening {
        path,
        query: &[("model", model)],
        forwarded: upstream_socket::forwarded(client_headers, &FORWARDED),
        max_message,
    };
    Ok(upstream_socket::open(provider, opening, redactor).await?)
}
