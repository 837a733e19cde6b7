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

use super::caller::caller;
use super::context::Context;
use crate::error::ApiError;
use crate::state::AppState;

/// The auth stage of `/v1/*`: the key checked as `auth.required` asks, the caller kept in the
/// context. A refused request keeps the unchecked caller its record is written under.
pub async fn auth(state: &AppState, cx: &mut Context, headers: &HeaderMap) -> Result<(), ApiError> {
    let span = cx.trace.stage("auth");
    let required = cx.gateway.config.auth.required;
    cx.caller = span.scope(caller(state, headers, required)).await?;
    Ok(())
}
