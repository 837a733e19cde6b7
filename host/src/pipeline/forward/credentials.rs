//! What the entry's plugin adds to a request the host sends for it without a `prepare` (a
//! pass-through request, an upstream socket): its credentials, set over the client's forwarded
//! headers.

use axum::http::{HeaderMap, HeaderName, HeaderValue};

use crate::error::ApiError;
use crate::gateway::Provider;
use crate::plugins::{PassthroughAuth, PassthroughCall, SlotKind};

/// What the entry's plugin adds to a request it does not model (a pass-through request, the
/// Realtime API's upstream socket): its upstream's credentials.
pub async fn credentials(
    provider: &Provider,
    call: &PassthroughCall,
    redactor: &crate::redact::Redactor,
) -> Result<PassthroughAuth, ApiError> {
    let mut instance = provider
        .plugin
        .start(SlotKind::Call)
        .await
        .map_err(ApiError::plugin)?;
    instance
        .passthrough(&provider.config, call)
        .await
        .map_err(ApiError::plugin)?
        .map_err(|e| ApiError::provider(&provider.name, e, redactor))
}

/// The client's forwarded headers with the plugin's set over them, each checked.
pub fn header_map(
    forwarded: &[(String, String)],
    auth: Vec<(String, String)>,
    provider: &str,
) -> Result<HeaderMap, ApiError> {
    let bad = |detail: String| ApiError::BadUpstreamRequest {
        provider: provider.to_owned(),
        detail,
    };
    let mut map = HeaderMap::with_capacity(forwarded.len() + auth.len());
    for (name, value) in forwarded {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            map.append(name, value);
        }
    }
    for (name, value) in auth {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| bad(format!("bad header name {name:?}")))?;
        // The value is a credential: never echoed.
        let mut value =
            HeaderValue::from_str(&value).map_err(|_| bad(format!("bad value for {name}")))?;
        value.set_sensitive(true);
        map.insert(name, value);
    }
    Ok(map)
}
