//! The auth stage: who a request comes from, and so which project its usage belongs to.
//!
//! Every route but `/health` and `/metrics` passes here first. A request names its project with
//! `x-project-id` and proves it with `Authorization: Bearer <key>` or `x-api-key: <key>` (as
//! Anthropic's clients send it). Where a key is required (the
//! `/usage/*` endpoints always, `/v1/*` with `auth.required`), a missing, unknown or revoked key
//! is a 401 and a key of another project a 403. A request without `x-project-id` gets its key's
//! project, so that OpenAI clients work unchanged. On an open gateway (`/v1/*` without
//! `auth.required`) a valid key still decides the project, and any other `Authorization` (OpenAI
//! SDKs always send one) is ignored.
//!
//! Before any of that, the headers must be unambiguous: `Authorization`, `x-api-key` or
//! `x-project-id` sent twice is a 400 (which copy counts would otherwise depend on the server),
//! and an `x-project-id` outside [`crate::auth::check_project`]'s rule is a 400 naming it.
//!
//! An expired key is a 401 even on an open gateway: the key is ours and the client should learn
//! it has run out, rather than be served anonymously past its end.

use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;

use super::context::Context;
use super::error::ApiError;
use crate::auth::Caller;
use crate::ledger::KeyLimits;
use crate::ledger::time::now_us;
use crate::state::AppState;

/// Where usage goes on an open gateway when the request names no project.
const DEFAULT_PROJECT: &str = "default";

/// The project header.
const PROJECT: &str = "x-project-id";

/// Headers that say who the caller is: sent twice, they are ambiguous.
const SINGLE: [&str; 3] = ["authorization", "x-api-key", PROJECT];

/// The auth stage of `/v1/*`: the key checked as `auth.required` asks, the caller kept in the
/// context. A refused request keeps the unchecked caller its record is written under.
pub async fn auth(state: &AppState, cx: &mut Context, headers: &HeaderMap) -> Result<(), ApiError> {
    let span = cx.trace.stage("auth");
    let required = cx.gateway.config.auth.required;
    cx.caller = span.scope(caller(state, headers, required)).await?;
    Ok(())
}

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
    };
    let Some(key) = presented_key(headers)? else {
        return if required {
            Err(ApiError::MissingApiKey)
        } else {
            Ok(anonymous())
        };
    };
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
