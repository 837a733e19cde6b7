//! Who an admin call comes from: the admin key its `Authorization` header names, checked on
//! every call (so a revoked one stops at once), for the admin API and the audit log.

use axum::http::HeaderMap;

use super::usage::blocking;
use crate::auth;
use crate::error::ApiError;
use crate::ledger::AdminKey;
use crate::state::AppState;

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
