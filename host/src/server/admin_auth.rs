//! Who an admin or console call comes from, and what they may do: an admin key from its
//! `Authorization` header (checked on every call, so a revoked one stops at once), or a console
//! session from its signed cookie (`console.oidc`), whose roles decide.
//!
//! | role            | admin API keys              | `/admin/audit` | `/usage/*`          |
//! |-----------------|-----------------------------|----------------|---------------------|
//! | admin key/admin | every project               | yes            | (a project's key)   |
//! | project_admin   | its projects' keys, budgets | no             | its projects        |
//! | viewer          | no                          | no             | its projects        |
//!
//! A write made with a session needs the session's CSRF token in `x-csrf-token` and must not
//! come from another site (`Sec-Fetch-Site`); a write with an admin key needs neither: no
//! browser adds that header by itself.

use axum::http::HeaderMap;

use super::store_call::blocking;
use crate::auth;
use crate::auth::oidc::Session;
use crate::auth::oidc::session::{CSRF_HEADER, SESSION_COOKIE, read_cookie};
use crate::error::ApiError;
use crate::ledger::AdminKey;
use crate::ledger::time::now_us;
use crate::state::AppState;

/// Who made an admin call.
pub(super) enum Principal {
    Key(AdminKey),
    Session(Session),
}

/// Whether the call reads or changes something: a change with a session is checked for CSRF.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Access {
    Read,
    Write,
}

impl Principal {
    /// Who the audit log names: the admin key's id, or the OIDC subject.
    pub fn actor(&self) -> String {
        match self {
            Self::Key(key) => format!("admin:{}", key.id),
            Self::Session(session) => format!("oidc:{}", session.sub),
        }
    }

    /// Where the change came from, for the audit log.
    pub fn origin(&self) -> &'static str {
        match self {
            Self::Key(_) => "admin API",
            Self::Session(_) => "console",
        }
    }

    /// Refuses anyone but an admin key or an admin session.
    pub fn require_admin(&self, what: &str) -> Result<(), ApiError> {
        match self {
            Self::Session(s) if !s.roles.admin => Err(ApiError::RoleForbidden(format!(
                "{what} needs the admin role"
            ))),
            _ => Ok(()),
        }
    }

    /// Refuses a session that does not manage `project`.
    pub fn require_manager(&self, project: &str) -> Result<(), ApiError> {
        match self {
            Self::Session(s) if !s.roles.manages(project) => Err(ApiError::RoleForbidden(format!(
                "managing the keys of project `{}` needs its project_admin role",
                crate::clip::echo(project)
            ))),
            _ => Ok(()),
        }
    }

    /// The projects whose keys this principal may list: `None` for all of them.
    pub fn managed(&self) -> Option<Vec<String>> {
        match self {
            Self::Key(_) => None,
            Self::Session(s) => s.roles.managed(),
        }
    }
}

/// The principal of `headers`: an `Authorization` header means an admin key (see [`admin`]);
/// without one, a valid session cookie; else a 401.
pub(super) async fn principal(
    state: &AppState,
    headers: &HeaderMap,
    access: Access,
) -> Result<Principal, ApiError> {
    if headers.get("authorization").is_some() {
        return admin(state, headers).await.map(Principal::Key);
    }
    let session = session(state, headers).ok_or(ApiError::AdminKeyRequired)?;
    if access == Access::Write {
        csrf(&session, headers)?;
    }
    Ok(Principal::Session(session))
}

/// The valid console session `headers` carry, if `console.oidc` is on and one does.
pub(super) fn session(state: &AppState, headers: &HeaderMap) -> Option<Session> {
    let gateway = state.gateway.load();
    let oidc = gateway.config.console.oidc.as_ref()?;
    let cookie = read_cookie(headers, SESSION_COOKIE)?;
    Session::open(
        oidc.session_secret.expose().as_bytes(),
        cookie,
        now_us() / 1_000_000,
    )
}

/// Refuses a write whose CSRF token is not the session's, or that another site started.
pub(super) fn csrf(session: &Session, headers: &HeaderMap) -> Result<(), ApiError> {
    let token = headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok());
    let cross_site = headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|site| site == "cross-site" || site == "same-site");
    match token {
        Some(token) if !cross_site && session.csrf_matches(token) => Ok(()),
        _ => Err(ApiError::CsrfRefused),
    }
}

/// The admin key of `headers`: no key is a 401; a valid project key a 403 (it names a real
/// credential, of the wrong kind); anything else a 401.
pub(super) async fn admin(state: &AppState, headers: &HeaderMap) -> Result<AdminKey, ApiError> {
    if headers.get_all("authorization").iter().nth(1).is_some() {
        return Err(ApiError::DuplicateHeader("authorization"));
    }
    let Some(secret) = crate::pipeline::caller::bearer(headers) else {
        return Err(ApiError::AdminKeyRequired);
    };
    let hash = auth::hash(secret);
    let found = blocking(state, move |store| store.admin_key_by_hash(&hash)).await?;
    if let Some(key) = found.filter(|k| k.revoked_us.is_none()) {
        return Ok(key);
    }
    match state.keys.find(secret).await {
        Ok(Some(key)) if key.revoked_us.is_none() => Err(ApiError::NotAnAdminKey),
        Ok(_) => Err(ApiError::InvalidApiKey),
        Err(e) => Err(ApiError::LedgerUnavailable(format!("{e:#}"))),
    }
}

/// The project a `/usage/*` question is about: a project key's (as before), or, with a console
/// session and no key, the `x-project-id` header's (or the session's only project), which its
/// roles must let it read.
pub(super) async fn usage_project(
    state: &AppState,
    headers: &HeaderMap,
) -> Result<String, ApiError> {
    if headers.get("authorization").is_none()
        && let Some(session) = session(state, headers)
    {
        let named = headers
            .get("x-project-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let only = (session.roles.projects.len() == 1)
            .then(|| session.roles.projects.keys().next().cloned())
            .flatten();
        let Some(project) = named.or(only) else {
            return Err(ApiError::InvalidField {
                param: "x-project-id".to_owned(),
                message: "x-project-id: name the project whose usage to read".to_owned(),
            });
        };
        if !session.roles.reads(&project) {
            return Err(ApiError::RoleForbidden(format!(
                "reading the usage of project `{}` needs a role in it",
                crate::clip::echo(&project)
            )));
        }
        return Ok(project);
    }
    Ok(crate::pipeline::caller::caller(state, headers, true)
        .await?
        .project)
}
