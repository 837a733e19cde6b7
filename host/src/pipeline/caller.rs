//! Who a request comes from, from its headers alone: its key (checked against the gateway's
//! keys as `auth.required` asks) or its JWT (verified against `auth.jwt`'s issuers, on an open
//! gateway too: a client that sends one means to be known by it) and the project it names; and
//! the unchecked caller a refused request's record is written under. A leaf: the request's context starts with
//! [`anonymous`], and the auth stage (`auth.rs`) fills in the checked caller.

use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;

use crate::auth::{Caller, jwt};
use crate::error::ApiError;
use crate::gateway::Gateway;
use crate::ledger::KeyLimits;
use crate::ledger::time::now_us;
use crate::state::AppState;

/// Where usage goes on an open gateway when the request names no project.
const DEFAULT_PROJECT: &str = "default";

/// The project header.
const PROJECT: &str = "x-project-id";

/// Headers that say who the caller is: sent twice, they are ambiguous.
const SINGLE: [&str; 3] = ["authorization", "x-api-key", PROJECT];

/// Checks the request's key; `required` says whether an anonymous caller may pass.
pub async fn caller(
    state: &AppState,
    headers: &HeaderMap,
    required: bool,
) -> Result<Caller, ApiError> {
    if let Some(name) = SINGLE
        .into_iter()
        .find(|name| headers.get_all(*name).iter().nth(1).is_some())
    {
        return Err(ApiError::DuplicateHeader(name));
    }
    let claimed = claimed_project(headers)?;
    let anonymous = || Caller {
        project: claimed
            .clone()
            .unwrap_or_else(|| DEFAULT_PROJECT.to_owned()),
        key_id: None,
        limits: KeyLimits::default(),
        user: None,
    };
    let Some(key) = presented_key(headers)? else {
        return if required {
            Err(ApiError::MissingApiKey)
        } else {
            Ok(anonymous())
        };
    };
    let gateway = state.gateway.load();
    if !gateway.config.auth.jwt.is_empty() && jwt::looks_like(key) {
        return token_caller(state, &gateway, key, claimed).await;
    }
    let found = match state.keys.find(key).await {
        Ok(found) => found.filter(|k| k.revoked_us.is_none()),
        Err(e) if required => return Err(ApiError::LedgerUnavailable(format!("{e:#}"))),
        Err(e) => {
            tracing::warn!("cannot look up an API key, the request counts as anonymous: {e:#}");
            None
        }
    };
    match found {
        Some(key) if key.limits.expired(now_us()) => Err(ApiError::ExpiredApiKey),
        Some(key) => match claimed {
            Some(project) if project != key.project => Err(ApiError::WrongProject(project)),
            _ => Ok(Caller {
                project: key.project,
                key_id: Some(key.id),
                limits: key.limits,
                user: None,
            }),
        },
        None if required => Err(ApiError::InvalidApiKey),
        None => Ok(anonymous()),
    }
}

/// An unchecked caller, for the record of a refused request: the project the request names if
/// it is a valid one (else [`DEFAULT_PROJECT`], so that no refused request writes a project id
/// of its own choosing into the ledger); no key.
pub fn anonymous(headers: &HeaderMap) -> Caller {
    let project = match claimed_project(headers) {
        Ok(Some(project)) if headers.get_all(PROJECT).iter().nth(1).is_none() => project,
        Ok(_) | Err(_) => DEFAULT_PROJECT.to_owned(),
    };
    Caller {
        project,
        key_id: None,
        limits: KeyLimits::default(),
        user: None,
    }
}

/// The caller a bearer JWT stands for, once verified; a token naming another project than
/// `x-project-id` is a 403, as a key of another project is.
async fn token_caller(
    state: &AppState,
    gateway: &Gateway,
    token: &str,
    claimed: Option<String>,
) -> Result<Caller, ApiError> {
    let identity = jwt::verify(&state.jwks, &gateway.config.auth.jwt, token)
        .await
        .map_err(ApiError::InvalidToken)?;
    // As `/admin/keys` refuses a key naming a guard the config lacks.
    if (identity.limits.guards.iter()).any(|name| gateway.guards.named(name).is_none()) {
        return Err(ApiError::InvalidToken(jwt::Refusal::UnknownGuard));
    }
    match claimed {
        Some(project) if project != identity.project => Err(ApiError::WrongProject(project)),
        _ => Ok(Caller {
            project: identity.project,
            key_id: Some(identity.key_id),
            limits: identity.limits,
            user: identity.user,
        }),
    }
}

/// The project the request names (`x-project-id`), if any; a 400 for one no project could have.
fn claimed_project(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get(PROJECT) else {
        return Ok(None);
    };
    let project = value.to_str().map(str::trim).unwrap_or("\u{0}");
    if project.is_empty() {
        return Ok(None);
    }
    crate::auth::check_project(project).map_err(|rule| ApiError::InvalidHeader {
        header: PROJECT,
        message: format!("The header `{PROJECT}` must be {rule}."),
    })?;
    Ok(Some(project.to_owned()))
}

/// The key the request presents: `Authorization: Bearer <key>` (OpenAI's clients, and
/// Anthropic's with an auth token) or `x-api-key: <key>` (Anthropic's with an API key). Both
/// with different keys is a 400: which one counts would otherwise be the gateway's guess.
fn presented_key(headers: &HeaderMap) -> Result<Option<&str>, ApiError> {
    let api_key = headers
        .get(X_API_KEY)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|k| !k.is_empty());
    match (bearer(headers), api_key) {
        (Some(bearer), Some(api_key)) if bearer != api_key => Err(ApiError::InvalidHeader {
            header: X_API_KEY,
            message: "`Authorization` and `x-api-key` carry different keys: send the key in one \
                      of them."
                .to_owned(),
        }),
        (Some(key), _) | (None, Some(key)) => Ok(Some(key)),
        (None, None) => Ok(None),
    }
}

/// Anthropic's key header.
const X_API_KEY: &str = "x-api-key";

pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, key) = value.split_once(' ')?;
    let key = key.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !key.is_empty()).then_some(key)
}
