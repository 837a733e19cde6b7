//! The provider's discovery document (OpenID Connect Discovery 1.0): where to send the user,
//! where to exchange the code, where its keys are. Fetched once and kept for [`FRESH`]; an
//! issuer in the document other than the configured one is refused (§4.3).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::refusal::SignInError;

/// How long a fetched document is used.
const FRESH: Duration = Duration::from_secs(600);
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// Bytes of a discovery document or token answer, at most.
pub const BODY_MAX: usize = 256 * 1024;

/// The endpoints the gateway uses.
#[derive(Clone, Debug, Deserialize)]
pub struct Endpoints {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub jwks_uri: String,
    #[serde(default)]
    pub code_challenge_methods_supported: Option<Vec<String>>,
}

/// The document last fetched, and for which issuer.
#[derive(Default)]
pub struct Discovery {
    cached: Mutex<Option<(String, Endpoints, Instant)>>,
}

impl Discovery {
    /// `issuer`'s endpoints, fetched unless a fresh copy is kept.
    pub async fn endpoints(
        &self,
        http: &reqwest::Client,
        issuer: &str,
    ) -> Result<Endpoints, SignInError> {
        if let Ok(cached) = self.cached.lock()
            && let Some((of, endpoints, at)) = cached.as_ref()
            && of == issuer
            && at.elapsed() < FRESH
        {
            return Ok(endpoints.clone());
        }
        let url = format!(
            "{}/.well-known/openid-configuration",
            issuer.trim_end_matches('/')
        );
        let body = get(http.get(&url)).await.map_err(|e| {
            tracing::warn!(%url, "cannot read the OIDC discovery document: {e:#}");
            SignInError::ProviderUnavailable
        })?;
        let endpoints: Endpoints =
            serde_json::from_slice(&body).map_err(|_| SignInError::ProviderUnavailable)?;
        if endpoints.issuer != issuer {
            tracing::warn!(%url, "the discovery document names another issuer");
            return Err(SignInError::ProviderUnavailable);
        }
        // PKCE with S256 is required; a provider that says it lacks it would ignore it.
        if let Some(methods) = &endpoints.code_challenge_methods_supported
            && !methods.iter().any(|m| m == "S256")
        {
            tracing::warn!(%url, "the provider does not support PKCE with S256");
            return Err(SignInError::ProviderUnavailable);
        }
        if let Ok(mut cached) = self.cached.lock() {
            *cached = Some((issuer.to_owned(), endpoints.clone(), Instant::now()));
        }
        Ok(endpoints)
    }
}

/// The body of a successful answer to `request`, at most [`BODY_MAX`] bytes.
pub async fn get(request: reqwest::RequestBuilder) -> anyhow::Result<Vec<u8>> {
    crate::auth::jwt::bounded(request, FETCH_TIMEOUT, BODY_MAX).await
}
