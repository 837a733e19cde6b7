//! The auth stage: who a request comes from, and so which project its usage belongs to.
//!
//! A request names its project with `x-project-id` and proves it with `Authorization: Bearer
//! <key>`. Where a key is required (the `/usage/*` endpoints always, `/v1/*` with
//! `auth.required`), a missing, unknown or revoked key is a 401 and a key of another project a
//! 403. A request without `x-project-id` gets its key's project, so that OpenAI clients work
//! unchanged. On an open gateway (`/v1/*` without `auth.required`) a valid key still decides the
//! project, and any other `Authorization` (OpenAI SDKs always send one) is ignored.

use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;

use super::error::ApiError;
use crate::auth::Caller;
use crate::state::AppState;

/// Where usage goes on an open gateway when the request names no project.
const DEFAULT_PROJECT: &str = "default";

/// Checks the request's key; `required` says whether an anonymous caller may pass.
pub async fn caller(
    state: &AppState,
    headers: &HeaderMap,
    required: bool,
) -> Result<Caller, ApiError> {
    let claimed = claimed_project(headers);
    let anonymous = || anonymous(headers);
    let Some(key) = bearer(headers) else {
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
        Some(key) => match claimed {
            Some(project) if project != key.project => Err(ApiError::WrongProject(project)),
            _ => Ok(Caller {
                project: key.project,
                key_id: Some(key.id),
            }),
        },
        None if required => Err(ApiError::InvalidApiKey),
        None => Ok(anonymous()),
    }
}

/// An unchecked caller: the project the request names, else [`DEFAULT_PROJECT`]; no key.
pub fn anonymous(headers: &HeaderMap) -> Caller {
    Caller {
        project: claimed_project(headers).unwrap_or_else(|| DEFAULT_PROJECT.to_owned()),
        key_id: None,
    }
}

/// The project the request names (`x-project-id`), if any.
fn claimed_project(headers: &HeaderMap) -> Option<String> {
    headers
        .get("x-project-id")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, key) = value.split_once(' ')?;
    let key = key.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !key.is_empty()).then_some(key)
}
