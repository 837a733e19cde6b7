//! The authorization code flow with PKCE (RFC 7636, S256), state and nonce.
//!
//! [`start`] sends the browser to the provider with a fresh state, nonce and code challenge,
//! and keeps the state, the nonce and the verifier in a signed, short-lived cookie (not in
//! memory: the provider may send the browser back to another replica). [`finish`] checks the
//! state the provider sent back against that cookie, exchanges the code at the token endpoint
//! (client secret over HTTP Basic, with the verifier), and verifies the ID token: signature
//! against the issuer's JWKS (the cache `auth.jwt` uses), `iss`, `aud` (and `azp`), `exp`,
//! then the nonce; its claims give the roles of the [`Session`] it returns.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::discovery::{Discovery, get};
use super::refusal::SignInError;
use super::roles::granted;
use super::session::Session;
use super::signed::{self, Purpose};
use crate::auth::jwt::{Jwks, Refusal};
use crate::config::console::OidcConfig;

/// The cookie that holds a sign-in in progress.
pub const LOGIN_COOKIE: &str = "wasmgate_oidc_login";
/// Seconds a sign-in may take at the provider.
pub const LOGIN_TTL: i64 = 600;
/// Seconds at least between two JWKS fetches for an unknown key id.
const JWKS_COOLDOWN: Duration = Duration::from_secs(30);
/// The signing algorithms an ID token may use: asymmetric ones only (RFC 8725 §3.1).
const ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// A sign-in in progress, as its cookie holds it.
#[derive(Serialize, Deserialize)]
struct Login {
    state: String,
    nonce: String,
    verifier: String,
    exp: i64,
}

/// Where the browser goes to sign in, and the cookie value that remembers it.
pub struct Started {
    pub location: String,
    pub cookie: String,
}

/// 244 random bits, as 64 hex digits (a valid PKCE verifier: 43 to 128 unreserved characters).
fn random() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

fn secret(config: &OidcConfig) -> &[u8] {
    config.session_secret.expose().as_bytes()
}

/// Starts a sign-in: the provider's authorization URL and the cookie to set.
pub async fn start(
    config: &OidcConfig,
    discovery: &Discovery,
    http: &reqwest::Client,
    now: i64,
) -> Result<Started, SignInError> {
    let endpoints = discovery.endpoints(http, &config.issuer).await?;
    let login = Login {
        state: random(),
        nonce: random(),
        verifier: random(),
        exp: now + LOGIN_TTL,
    };
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(login.verifier.as_bytes()));
    let mut location = reqwest::Url::parse(&endpoints.authorization_endpoint)
        .map_err(|_| SignInError::ProviderUnavailable)?;
    location
        .query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", &config.client_id)
        .append_pair("redirect_uri", &config.redirect_url)
        .append_pair("scope", &config.scopes.join(" "))
        .append_pair("state", &login.state)
        .append_pair("nonce", &login.nonce)
        .append_pair("code_challenge", &challenge)
        .append_pair("code_challenge_method", "S256");
    let cookie = signed::sign(secret(config), Purpose::Login, &login)
        .ok_or(SignInError::NoLoginInProgress)?;
    Ok(Started {
        location: location.into(),
        cookie,
    })
}

/// What the provider's redirect back carries.
pub struct Callback<'a> {
    pub code: &'a str,
    pub state: &'a str,
}

/// The token endpoint's answer (RFC 6749 §5.1; OIDC Core §3.1.3.3).
#[derive(Deserialize)]
struct TokenAnswer {
    id_token: String,
}

/// Finishes a sign-in: checks the state against the cookie `login` (the value of
/// [`LOGIN_COOKIE`]), exchanges the code, verifies the ID token, and gives the session.
pub async fn finish(
    config: &OidcConfig,
    discovery: &Discovery,
    jwks: &Jwks,
    http: &reqwest::Client,
    login: Option<&str>,
    callback: Callback<'_>,
    now: i64,
) -> Result<Session, SignInError> {
    let login: Login = login
        .and_then(|cookie| signed::open(secret(config), Purpose::Login, cookie))
        .filter(|login: &Login| login.exp > now)
        .ok_or(SignInError::NoLoginInProgress)?;
    if !same(&login.state, callback.state) {
        return Err(SignInError::BadState);
    }
    let endpoints = discovery.endpoints(http, &config.issuer).await?;
    let form = form_urlencoded::Serializer::new(String::new())
        .append_pair("grant_type", "authorization_code")
        .append_pair("code", callback.code)
        .append_pair("redirect_uri", &config.redirect_url)
        .append_pair("code_verifier", &login.verifier)
        .finish();
    // RFC 6749 §2.3.1: the id and the secret are form-encoded before Basic's base64.
    let encode = |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let basic = STANDARD.encode(format!(
        "{}:{}",
        encode(&config.client_id),
        encode(config.client_secret.expose())
    ));
    let request = http
        .post(&endpoints.token_endpoint)
        .header(http::header::AUTHORIZATION, format!("Basic {basic}"))
        .header(
            http::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .header(http::header::ACCEPT, "application/json")
        .body(form);
    let body = get(request).await.map_err(|e| {
        tracing::warn!("the OIDC token endpoint refused the code: {e:#}");
        SignInError::ProviderRefused
    })?;
    let answer: TokenAnswer =
        serde_json::from_slice(&body).map_err(|_| SignInError::ProviderRefused)?;
    let claims = verify(config, jwks, &endpoints.jwks_uri, &answer.id_token).await?;
    match claims.get("nonce").and_then(Value::as_str) {
        Some(nonce) if same(nonce, &login.nonce) => {}
        _ => return Err(SignInError::BadNonce),
    }
    let sub = claims
        .get("sub")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty() && s.len() <= 255)
        .ok_or(SignInError::MalformedToken)?;
    let name = ["preferred_username", "email", "name"]
        .iter()
        .find_map(|claim| claims.get(*claim).and_then(Value::as_str))
        .map(|n| n.chars().take(128).collect());
    let roles = granted(&config.roles, &claims);
    if roles.none() {
        return Err(SignInError::NoRole);
    }
    Ok(Session {
        sub: sub.to_owned(),
        name,
        roles,
        exp: now + i64::try_from(config.session_ttl_s).unwrap_or(i64::MAX / 2),
        csrf: random(),
    })
}

/// Compares in constant time.
fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The claims of `token`, once its signature, issuer, audience and expiry are checked.
async fn verify(
    config: &OidcConfig,
    jwks: &Jwks,
    jwks_uri: &str,
    token: &str,
) -> Result<Map<String, Value>, SignInError> {
    let header = jsonwebtoken::decode_header(token).map_err(|_| SignInError::MalformedToken)?;
    let algorithm = ALGORITHMS
        .into_iter()
        .find(|a| *a == header.alg)
        .ok_or(SignInError::BadSignature)?;
    let key = jwks
        .key(jwks_uri, header.kid.as_deref(), JWKS_COOLDOWN)
        .await
        .map_err(|refusal| match refusal {
            Refusal::KeysUnavailable => SignInError::ProviderUnavailable,
            _ => SignInError::BadSignature,
        })?;
    if key.algorithm.is_some_and(|alg| alg != algorithm) {
        return Err(SignInError::BadSignature);
    }
    let mut validation = Validation::new(algorithm);
    validation.set_issuer(&[&config.issuer]);
    validation.set_audience(&[&config.client_id]);
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    validation.leeway = config.clock_skew;
    let data =
        jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, &validation).map_err(|e| {
            match e.kind() {
                ErrorKind::ExpiredSignature => SignInError::Expired,
                ErrorKind::InvalidAudience => SignInError::WrongAudience,
                ErrorKind::InvalidIssuer => SignInError::WrongIssuer,
                ErrorKind::InvalidSignature
                | ErrorKind::InvalidEcdsaKey
                | ErrorKind::InvalidRsaKey(_)
                | ErrorKind::InvalidEddsaKey
                | ErrorKind::InvalidKeyFormat
                | ErrorKind::InvalidAlgorithm => SignInError::BadSignature,
                _ => SignInError::MalformedToken,
            }
        })?;
    let claims = data.claims;
    // OIDC Core §3.1.3.7: with several audiences, `azp` names the client; if present, it must.
    let audiences = match claims.get("aud") {
        Some(Value::Array(many)) => many.len(),
        _ => 1,
    };
    match claims.get("azp").and_then(Value::as_str) {
        Some(azp) if azp != config.client_id => return Err(SignInError::WrongAudience),
        None if audiences > 1 => return Err(SignInError::WrongAudience),
        _ => {}
    }
    Ok(claims)
}
