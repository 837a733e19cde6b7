//! An entry's upstream socket at `{base_url}{path}`: its credentials from the entry's plugin as
//! for a pass-through request (the host never writes a provider's auth), the URL through the
//! entry's scope, then the connection and the handshake (`upstream::websocket`), all within the
//! entry's timeout. The Realtime API's socket and the Responses API's WebSocket mode open theirs
//! here.

use axum::http::HeaderMap;
use tokio::time::timeout;

use super::credentials::{credentials, header_map};
use crate::error::ApiError;
use crate::gateway::Provider;
use crate::plugins::{HttpRequest, PassthroughCall};
use crate::redact::Redactor;
use crate::upstream::websocket::{self, ConnectError, Socket};

/// Where and how a socket is opened.
pub struct Opening<'a> {
    /// The path after the entry's base URL (`/realtime`, `/responses`).
    pub path: &'a str,
    /// Query parameters before the plugin's (`model` for the Realtime API).
    pub query: &'a [(&'a str, &'a str)],
    /// Client headers passed on (names and values, as the plugin sees them too).
    pub forwarded: Vec<(String, String)>,
    /// The largest message taken.
    pub max_message: usize,
}

/// Why a socket could not be opened.
#[derive(Debug)]
pub enum OpenError {
    /// The upstream answered the upgrade with an HTTP status: it has no socket there.
    Refused(ApiError),
    /// Anything else: no URL, the scope, the plugin, the network, the time.
    Failed(ApiError),
}

impl From<OpenError> for ApiError {
    fn from(error: OpenError) -> Self {
        match error {
            OpenError::Refused(error) | OpenError::Failed(error) => error,
        }
    }
}

/// Opens `provider`'s socket as `opening` says. Errors name no credential: the plugin's are
/// redacted, the others are the host's.
pub async fn open(
    provider: &Provider,
    opening: Opening<'_>,
    redactor: &Redactor,
) -> Result<Socket, OpenError> {
    let failed = |detail: String| {
        OpenError::Failed(ApiError::BadUpstreamRequest {
            provider: provider.name.to_string(),
            detail,
        })
    };
    let Opening {
        path,
        query,
        forwarded,
        max_message,
    } = opening;
    let base = (provider.config.base_url.as_deref())
        .ok_or_else(|| failed("the entry has no base_url".to_owned()))?;
    let call = PassthroughCall {
        method: "GET".to_owned(),
        path: path.to_owned(),
        headers: forwarded.clone(),
    };
    let auth = (credentials(provider, &call, redactor).await).map_err(OpenError::Failed)?;
    let mut url = format!("{}{path}", base.trim_end_matches('/'));
    if !query.is_empty() || !auth.query.is_empty() {
        let query = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(query)
            .extend_pairs(&auth.query)
            .finish();
        url = format!("{url}?{query}");
    }
    let admitted = (provider.scope)
        .admit(HttpRequest {
            method: "GET".to_owned(),
            url,
            headers: Vec::new(),
            body: Vec::new(),
        })
        .map_err(|refusal| failed(format!("its socket URL {refusal}")))?;
    let headers =
        header_map(&forwarded, auth.headers, &provider.name).map_err(OpenError::Failed)?;
    let url = admitted.url().clone();
    let connected = timeout(
        provider.timeout,
        websocket::connect(&url, headers, max_message),
    )
    .await;
    let unreachable = |failure: ConnectError| ApiError::UpstreamUnreachable {
        provider: provider.name.to_string(),
        detail: redactor.string(failure.to_string()),
    };
    match connected {
        Ok(Ok(socket)) => Ok(socket),
        Ok(Err(refused @ ConnectError::Refused(_))) => {
            Err(OpenError::Refused(unreachable(refused)))
        }
        Ok(Err(failure)) => Err(OpenError::Failed(unreachable(failure))),
        Err(_) => Err(OpenError::Failed(ApiError::UpstreamTimeout {
            provider: provider.name.to_string(),
        })),
    }
}

/// The client headers named in `names` that `headers` carries, as pairs.
pub fn forwarded(headers: &HeaderMap, names: &[&str]) -> Vec<(String, String)> {
    (names.iter())
        .filter_map(|name| {
            let value = headers.get(*name)?.to_str().ok()?;
            Some(((*name).to_owned(), value.to_owned()))
        })
        .collect()
}
