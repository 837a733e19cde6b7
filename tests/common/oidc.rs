//! A minimal OpenID Connect provider on 127.0.0.1 that follows the spec where the gateway
//! relies on it: a discovery document, a JWKS, an authorization endpoint that signs in the
//! user the test chose (no form: it issues a code at once, bound to the client, the redirect
//! URI, the PKCE challenge and the nonce), and a token endpoint that checks the client's
//! secret (HTTP Basic), the redirect URI, the code (once) and the PKCE verifier before it
//! answers an ID token signed RS256 with a real key. A test can make its next ID token go
//! wrong in one way (another audience, expired, another nonce, signed by another key).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Form, Json};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::jwks::{SigningKey, now};

pub const CLIENT_ID: &str = "wasmgate-console";
pub const CLIENT_SECRET: &str = "console-client-secret";
/// What the gateway's sessions are signed with in the tests.
pub const SESSION_SECRET: &str = "a-session-secret-of-at-least-32-bytes!";

/// One way to spoil the next ID token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spoil {
    Audience,
    Expired,
    Nonce,
    ForeignKey,
}

/// A code issued and not yet exchanged.
struct Grant {
    redirect_uri: String,
    challenge: String,
    nonce: String,
    sub: String,
    groups: Vec<String>,
}

struct Inner {
    issuer: String,
    redirect_uri: String,
    key: SigningKey,
    foreign: SigningKey,
    user: Mutex<(String, Vec<String>)>,
    codes: Mutex<HashMap<String, Grant>>,
    spoil: Mutex<Option<Spoil>>,
    exchanged: Mutex<usize>,
}

/// The provider; its `issuer` is its base URL.
pub struct Provider {
    pub issuer: String,
    inner: Arc<Inner>,
}

impl Provider {
    /// A provider for [`CLIENT_ID`] whose only registered redirect URI is `redirect_uri`.
    pub async fn start(redirect_uri: &str) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let issuer = format!("http://{}", listener.local_addr().unwrap());
        let inner = Arc::new(Inner {
            issuer: issuer.clone(),
            redirect_uri: redirect_uri.to_owned(),
            key: SigningKey::rsa("idp-1"),
            foreign: SigningKey::rsa("idp-1"),
            user: Mutex::new(("nobody".to_owned(), Vec::new())),
            codes: Mutex::default(),
            spoil: Mutex::default(),
            exchanged: Mutex::default(),
        });
        let app = axum::Router::new()
            .route(
                "/.well-known/openid-configuration",
                axum::routing::get(discovery),
            )
            .route("/jwks", axum::routing::get(jwks))
            .route("/authorize", axum::routing::get(authorize))
            .route("/token", axum::routing::post(token))
            .with_state(Arc::clone(&inner));
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self { issuer, inner }
    }

    /// Who the next sign-in is, with the groups its ID token lists.
    pub fn sign_in_as(&self, sub: &str, groups: &[&str]) {
        *self.inner.user.lock().unwrap() = (
            sub.to_owned(),
            groups.iter().map(|g| (*g).to_owned()).collect(),
        );
    }

    /// Spoils the next ID token.
    pub fn spoil_next(&self, spoil: Spoil) {
        *self.inner.spoil.lock().unwrap() = Some(spoil);
    }

    /// Codes exchanged for tokens.
    pub fn exchanged(&self) -> usize {
        *self.inner.exchanged.lock().unwrap()
    }

    /// The `console:` section of a gateway config trusting this provider, `redirect_url` as
    /// registered: `ops` are admins, `acme-leads` manage `acme`, `acme-devs` and `beta-devs`
    /// read their projects.
    pub fn console_yaml(&self) -> String {
        format!(
            "console:\n  oidc:\n    issuer: {}\n    client_id: {CLIENT_ID}\n    client_secret: \
             {CLIENT_SECRET}\n    redirect_url: {}\n    session_secret: {SESSION_SECRET}\n    \
             clock_skew: 5\n    roles:\n      claim: groups\n      admin: [ops]\n      projects:\n        \
             acme: {{admin: [acme-leads], viewer: [acme-devs]}}\n        beta: {{viewer: [beta-devs]}}\n",
            self.issuer, self.inner.redirect_uri
        )
    }
}

async fn discovery(State(inner): State<Arc<Inner>>) -> Json<Value> {
    let at = |path: &str| format!("{}{path}", inner.issuer);
    Json(json!({
        "issuer": inner.issuer,
        "authorization_endpoint": at("/authorize"),
        "token_endpoint": at("/token"),
        "jwks_uri": at("/jwks"),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic"],
    }))
}

async fn jwks(State(inner): State<Arc<Inner>>) -> Json<Value> {
    Json(json!({"keys": [inner.key.jwk]}))
}

fn error(status: StatusCode, code: &str) -> Response {
    (status, Json(json!({"error": code}))).into_response()
}

async fn authorize(
    State(inner): State<Arc<Inner>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let param = |name: &str| query.get(name).cloned().unwrap_or_default();
    // OIDC Core §3.1.2.1: an unknown client or unregistered redirect URI is never redirected to.
    if param("client_id") != CLIENT_ID || param("redirect_uri") != inner.redirect_uri {
        return error(StatusCode::BAD_REQUEST, "invalid_request");
    }
    let scopes: Vec<String> = param("scope").split(' ').map(str::to_owned).collect();
    if param("response_type") != "code"
        || !scopes.iter().any(|s| s == "openid")
        || param("code_challenge_method") != "S256"
        || param("code_challenge").len() != 43
        || param("state").is_empty()
        || param("nonce").is_empty()
    {
        return error(StatusCode::BAD_REQUEST, "invalid_request");
    }
    let code = uuid::Uuid::new_v4().simple().to_string();
    let (sub, groups) = inner.user.lock().unwrap().clone();
    inner.codes.lock().unwrap().insert(
        code.clone(),
        Grant {
            redirect_uri: param("redirect_uri"),
            challenge: param("code_challenge"),
            nonce: param("nonce"),
            sub,
            groups,
        },
    );
    let mut back = reqwest::Url::parse(&inner.redirect_uri).unwrap();
    back.query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("state", &param("state"))
        .append_pair("iss", &inner.issuer);
    Redirect::to(back.as_str()).into_response()
}

async fn token(
    State(inner): State<Arc<Inner>>,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let param = |name: &str| form.get(name).cloned().unwrap_or_default();
    let basic = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
        .and_then(|b| STANDARD.decode(b).ok())
        .and_then(|b| String::from_utf8(b).ok());
    if basic.as_deref() != Some(&format!("{CLIENT_ID}:{CLIENT_SECRET}")) {
        return error(StatusCode::UNAUTHORIZED, "invalid_client");
    }
    if param("grant_type") != "authorization_code" {
        return error(StatusCode::BAD_REQUEST, "unsupported_grant_type");
    }
    // A code is good once, whatever the outcome.
    let Some(grant) = inner.codes.lock().unwrap().remove(&param("code")) else {
        return error(StatusCode::BAD_REQUEST, "invalid_grant");
    };
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(param("code_verifier").as_bytes()));
    if param("redirect_uri") != grant.redirect_uri || challenge != grant.challenge {
        return error(StatusCode::BAD_REQUEST, "invalid_grant");
    }
    let spoil = inner.spoil.lock().unwrap().take();
    let mut claims = json!({
        "iss": inner.issuer,
        "sub": grant.sub,
        "aud": CLIENT_ID,
        "iat": now(),
        "exp": now() + 300,
        "nonce": grant.nonce,
        "groups": grant.groups,
        "preferred_username": format!("{}@example.test", grant.sub),
    });
    let mut key = &inner.key;
    match spoil {
        Some(Spoil::Audience) => claims["aud"] = json!("another-client"),
        Some(Spoil::Expired) => {
            claims["iat"] = json!(now() - 900);
            claims["exp"] = json!(now() - 600);
        }
        Some(Spoil::Nonce) => claims["nonce"] = json!("not-the-nonce"),
        Some(Spoil::ForeignKey) => key = &inner.foreign,
        None => {}
    }
    *inner.exchanged.lock().unwrap() += 1;
    Json(json!({
        "access_token": uuid::Uuid::new_v4().simple().to_string(),
        "token_type": "Bearer",
        "expires_in": 300,
        "id_token": key.sign(&claims),
    }))
    .into_response()
}
