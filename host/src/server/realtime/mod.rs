//! The Realtime API: `GET /v1/realtime?model=` upgraded to a socket that the gateway relays
//! to the routed upstream's own realtime socket (OpenAI's, Azure OpenAI's v1), events both ways
//! as text messages (audio travels inside them as base64). See `docs/src/realtime.md`.
//!
//! At the upgrade, before any socket: the key (a bearer key, or the browser's
//! `openai-insecure-api-key.<key>` subprotocol), the key's models, the route, a seat among
//! `server.websocket`'s sessions, and the upstream socket itself ([`upstream`]); a refusal is
//! the HTTP error in OpenAI's shape. On the socket ([`session`]): the client's events pass the
//! request guards and each `response.create` the limit rules ([`client_events`]); each
//! response the upstream finishes is one ledger record ([`meter`]), its text through the
//! answer guards on the way to the client ([`answers`]). Audio passes unread: while an answer
//! guard applies whose entry does not exempt `realtime`, a response with audio output is
//! refused, as is what would show the upstream's own copy of an answer
//! (`conversation.item.retrieve`).

mod admission;
mod answers;
mod client_events;
mod meter;
mod refusal;
mod session;
mod upgraded;
mod upstream;

use std::sync::Arc;
use std::time::Instant;

use axum::extract::ws::WebSocketUpgrade;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};

use crate::auth::Caller;
use crate::config::guards::BlindRoute;
use crate::error::ApiError;
use crate::gateway::{Gateway, ResolveError, Target};
use crate::pipeline::caller::caller;
use crate::pipeline::guard::body as body_guards;
use crate::pipeline::guard::check;
use crate::pipeline::request::end_user::UserInfo;
use crate::pipeline::route::{plan, route_request};
use crate::server::responses_ws::refusal::Refusal as SeatRefusal;
use crate::state::AppState;
use refusal::{Refusal, refused};
use upgraded::Session;

/// The subprotocol a browser puts its key in (it cannot set headers on a socket).
const KEY_PROTOCOL: &str = "openai-insecure-api-key.";

/// `GET /v1/realtime?model=`: the session, or why there is none.
pub async fn upgrade(
    State(state): State<Arc<AppState>>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let Ok(upgrade) = upgrade else {
        return Refusal::NotAnUpgrade.into_response();
    };
    let headers = with_protocol_key(headers);
    let gateway = state.gateway.load_full();
    let bounds = gateway.config.server.websocket.clone();
    let who = match caller(&state, &headers, gateway.config.auth.required).await {
        Ok(who) => who,
        Err(error) => return refused(&error),
    };
    let Some(model) = model_of(query.as_deref()) else {
        return Refusal::NoModel.into_response();
    };
    // Before routing, so a refusal says nothing of whether the model exists.
    if !who.limits.allows_model(&model) {
        return refused(&ApiError::ModelNotAllowed(model));
    }
    let guards = match body_guards::applying(&gateway, &who, &model) {
        Ok(guards) => guards,
        Err(error) => return refused(&error),
    };
    let blind = match answers_unread(&gateway, &who, &model) {
        Ok(blind) => blind,
        Err(error) => return refused(&error),
    };
    let holder = match &who.key_id {
        Some(key) => format!("key {key}"),
        None => format!("project {}", who.project),
    };
    let seat =
        match (state.sockets).admit(&holder, bounds.max_sessions_per_key, bounds.max_sessions) {
            Ok(seat) => seat,
            Err(refusal) => return SeatRefusal::Seats(refusal).into_response(),
        };
    let redactor = gateway.secrets.for_request(&headers);
    let opened = open(
        &state,
        &gateway,
        &who,
        &model,
        &headers,
        &redactor,
        bounds.max_message_bytes,
    )
    .await;
    let (provider, target_model, socket) = match opened {
        Ok(opened) => opened,
        Err(error) => return refused(&error),
    };
    let session = Session {
        state: Arc::clone(&state),
        gateway,
        caller: who,
        headers,
        model,
        provider,
        target_model,
        id: format!("rtsess_{}", uuid::Uuid::now_v7().simple()),
        guards,
        blind,
        bounds: bounds.clone(),
    };
    upgrade
        .protocols(["realtime"])
        .read_buffer_size(8 * 1024)
        .max_message_size(bounds.max_message_bytes)
        .max_frame_size(bounds.max_message_bytes)
        .on_upgrade(move |client| async move {
            let sockets = state.sockets.clone();
            sockets
                .track(session::serve(session, client, socket, seat))
                .await;
        })
}

/// The first answer guard that applies and whose entry does not exempt `realtime`: what
/// passes unread (audio) is refused while there is one.
fn answers_unread(
    gateway: &Gateway,
    who: &Caller,
    model: &str,
) -> Result<Option<String>, ApiError> {
    let answering = (check::applying(gateway, who, model)?.into_iter())
        .filter(|&i| gateway.guards.get(i).is_some_and(|g| g.apply.answer()));
    let blind = (gateway.guards).not_exempting(answering, BlindRoute::Realtime);
    Ok(blind.map(|guard| guard.name.to_string()))
}

/// `model` from the query.
fn model_of(query: Option<&str>) -> Option<String> {
    form_urlencoded::parse(query?.as_bytes())
        .find(|(name, _)| name == "model")
        .map(|(_, value)| value.into_owned())
        .filter(|model| !model.is_empty())
}

/// The headers with a browser's key (the `openai-insecure-api-key.<key>` subprotocol) as its
/// bearer key, when it sent no other, and that subprotocol gone.
fn with_protocol_key(mut headers: HeaderMap) -> HeaderMap {
    let Some(offered) = (headers.get(header::SEC_WEBSOCKET_PROTOCOL))
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
    else {
        return headers;
    };
    let (keys, kept): (Vec<&str>, Vec<&str>) = (offered.split(',').map(str::trim))
        .filter(|p| !p.is_empty())
        .partition(|p| p.starts_with(KEY_PROTOCOL));
    let Some(key) = keys.first().map(|p| &p[KEY_PROTOCOL.len()..]) else {
        return headers;
    };
    if !headers.contains_key(header::AUTHORIZATION)
        && let Ok(mut bearer) = HeaderValue::from_str(&format!("Bearer {key}"))
    {
        bearer.set_sensitive(true);
        headers.insert(header::AUTHORIZATION, bearer);
    }
    match HeaderValue::from_str(&kept.join(", ")) {
        Ok(kept) if !kept.is_empty() => {
            headers.insert(header::SEC_WEBSOCKET_PROTOCOL, kept);
        }
        _ => {
            headers.remove(header::SEC_WEBSOCKET_PROTOCOL);
        }
    }
    headers
}

/// The upstream socket of `model`'s target (the provider's index and its model name with it):
/// a virtual model's targets in its router's order, the next tried while one cannot be reached.
async fn open(
    state: &AppState,
    gateway: &Gateway,
    who: &Caller,
    model: &str,
    headers: &HeaderMap,
    redactor: &crate::redact::Redactor,
    max_message: usize,
) -> Result<(usize, String, upstream::Socket), ApiError> {
    let targets: Vec<String> = match gateway.routes.get(model) {
        Some(route) => {
            let observed = route.observed(&state.stats, Instant::now());
            let random = uuid::Uuid::new_v4().as_u64_pair().0;
            let facts = route_request(model, &who.project, &UserInfo::default(), 0, true, random);
            let order = plan(route, model, &facts, &observed).await?;
            (order.iter())
                .filter_map(|&i| route.targets.get(i).map(|t| t.id.clone()))
                .collect()
        }
        None => vec![model.to_owned()],
    };
    let mut last = None;
    for id in &targets {
        let target = match gateway.resolve(id) {
            Ok(target) => target,
            Err(ResolveError::NotFound) => return Err(ApiError::ModelNotFound(id.clone())),
            Err(ResolveError::Ambiguous(candidates)) => {
                return Err(ApiError::AmbiguousModel {
                    model: id.clone(),
                    candidates,
                });
            }
        };
        let Target { provider, model } = target;
        let index = (gateway.providers.iter())
            .position(|p| std::ptr::eq(p, provider))
            .ok_or_else(|| ApiError::ModelNotFound(id.clone()))?;
        match upstream::open(provider, model, headers, redactor, max_message).await {
            Ok(socket) => return Ok((index, model.to_owned(), socket)),
            Err(error) if error.is_target_failure() => {
                tracing::info!(target = id.as_str(), "a realtime upstream failed: {error}");
                last = Some(error);
            }
            Err(error) => return Err(error),
        }
    }
    Err(last.unwrap_or_else(|| ApiError::ModelNotFound(model.to_owned())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_browser_s_key_subprotocol_becomes_its_bearer_key() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::SEC_WEBSOCKET_PROTOCOL,
            HeaderValue::from_static("realtime, openai-insecure-api-key.sk-abc"),
        );
        let headers = with_protocol_key(headers);
        assert_eq!(headers[header::AUTHORIZATION], "Bearer sk-abc");
        assert_eq!(headers[header::SEC_WEBSOCKET_PROTOCOL], "realtime");
        assert_eq!(
            model_of(Some("a=1&model=gpt-realtime")).as_deref(),
            Some("gpt-realtime")
        );
        assert_eq!(model_of(Some("model=")), None);
    }
}
