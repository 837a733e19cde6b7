//! Signing in to the console through `console.oidc`'s provider.
//!
//! - `GET /console/login` sends the browser to the provider (see [`crate::auth::oidc::flow`]).
//! - `GET /console/callback` is where the provider sends it back: the session cookie is set
//!   and the browser goes on to `/ui/`.
//! - `GET /console/session` tells the page whether sign-in by OIDC is on and who is signed in,
//!   with the session's CSRF token (readable by the console's own origin only: no CORS).
//! - `POST /console/logout` ends the session in this browser (its cookie is deleted; being
//!   stateless, a copy of the cookie stays valid until its expiry, `session_ttl_s`).

use std::sync::Arc;

use axum::Json;
use axum::extract::{Query, State};
use axum::http::header::{CACHE_CONTROL, LOCATION, SET_COOKIE};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use super::admin_auth::{csrf, session};
use super::routes::{Outbound, Table, methods};
use crate::auth::oidc::SignInError;
use crate::auth::oidc::flow::{self, Callback, LOGIN_COOKIE, LOGIN_TTL};
use crate::auth::oidc::session::{SESSION_COOKIE, cookie, read_cookie};
use crate::config::console::OidcConfig;
use crate::error::ApiError;
use crate::ledger::time::{format_utc, now_us};
use crate::state::AppState;

/// Where the login cookie is sent back: the callback only.
const LOGIN_PATH: &str = "/console/";

pub fn routes(table: Table) -> Table {
    // The authorization code goes to the identity provider's token endpoint, never to a model.
    let sign_in = Outbound::Nothing("a console sign-in, with the identity provider");
    table
        .route("/console/login", methods().get(sign_in, login))
        .route("/console/callback", methods().get(sign_in, callback))
        .route("/console/session", methods().get(sign_in, current))
        .route("/console/logout", methods().post(sign_in, logout))
}

fn config(state: &AppState) -> Result<OidcConfig, ApiError> {
    let gateway = state.gateway.load();
    gateway
        .config
        .console
        .oidc
        .clone()
        .ok_or(ApiError::OidcNotConfigured)
}

fn now() -> i64 {
    now_us() / 1_000_000
}

/// A `303 See Other` to `location`, setting `cookies`; never cached.
fn redirect(location: &str, cookies: &[String]) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    if let Ok(location) = HeaderValue::from_str(location) {
        headers.insert(LOCATION, location);
    }
    for value in cookies {
        if let Ok(value) = HeaderValue::from_str(value) {
            headers.append(SET_COOKIE, value);
        }
    }
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

async fn login(State(state): State<Arc<AppState>>) -> Result<Response, ApiError> {
    let config = config(&state)?;
    let started = flow::start(&config, &state.oidc, &state.http, now())
        .await
        .map_err(ApiError::SignIn)?;
    let remembered = cookie(
        LOGIN_COOKIE,
        &started.cookie,
        LOGIN_PATH,
        LOGIN_TTL.unsigned_abs(),
        config.secure_cookie(),
    );
    Ok(redirect(&started.location, &[remembered]))
}

#[derive(Deserialize)]
struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
}

async fn callback(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Query(query): Query<CallbackQuery>,
) -> Result<Response, ApiError> {
    let config = config(&state)?;
    let secure = config.secure_cookie();
    // The login cookie is spent whatever happens: a state is good for one try.
    let forget = cookie(LOGIN_COOKIE, "", LOGIN_PATH, 0, secure);
    let refused = |e: SignInError| {
        let mut response = ApiError::SignIn(e).into_response();
        if let Ok(value) = HeaderValue::from_str(&forget) {
            response.headers_mut().append(SET_COOKIE, value);
        }
        response
    };
    if query.error.is_some() {
        return Ok(refused(SignInError::ProviderRefused));
    }
    let (Some(code), Some(returned)) = (query.code.as_deref(), query.state.as_deref()) else {
        return Ok(refused(SignInError::ProviderRefused));
    };
    let finished = flow::finish(
        &config,
        &state.oidc,
        &state.jwks,
        &state.http,
        read_cookie(&headers, LOGIN_COOKIE),
        Callback {
            code,
            state: returned,
        },
        now(),
    )
    .await;
    let session = match finished {
        Ok(session) => session,
        Err(e) => return Ok(refused(e)),
    };
    let Some(sealed) = session.seal(config.session_secret.expose().as_bytes()) else {
        return Ok(refused(SignInError::TooManyRoles));
    };
    tracing::info!(subject = %session.sub, "console sign-in");
    let kept = cookie(SESSION_COOKIE, &sealed, "/", config.session_ttl_s, secure);
    Ok(redirect("/ui/", &[kept, forget]))
}

async fn current(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    let on = state.gateway.load().config.console.oidc.is_some();
    let session = session(&state, &headers).map(|s| {
        json!({
            "subject": s.sub,
            "name": s.name,
            "roles": s.roles,
            "expires_at": format_utc(s.exp.saturating_mul(1_000_000)),
            "csrf": s.csrf,
        })
    });
    (
        [(CACHE_CONTROL, HeaderValue::from_static("no-store"))],
        Json(json!({"oidc": on, "session": session})),
    )
        .into_response()
}

async fn logout(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let config = config(&state)?;
    if let Some(session) = session(&state, &headers) {
        csrf(&session, &headers)?;
    }
    let forget = cookie(SESSION_COOKIE, "", "/", 0, config.secure_cookie());
    let mut response = Json(json!({"signed_out": true})).into_response();
    if let Ok(value) = HeaderValue::from_str(&forget) {
        response.headers_mut().append(SET_COOKIE, value);
    }
    Ok(response)
}
