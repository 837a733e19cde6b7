//! The edge's way in: the body read under the body budget, and a registry dialect's decoded
//! once by its plugin into the canonical form, what the way out needs kept on the request's
//! [`Translation`]. Chat Completions' body is the canonical one already; a multipart upload is
//! read by the parse stage.

use std::sync::Arc;

use axum::body::{Body, Bytes};

use super::dialect_call::answered;
use super::replay;
use super::translation::{FORWARDED, FORWARDED_MAX, Translation};
use crate::error::ApiError;
use crate::pipeline::context::Context;
use crate::pipeline::request::inbound::Inbound;
use crate::pipeline::request::raw_json::{self, Fields, MAX_FIELDS, Unreadable};
use crate::plugins::{
    Canonical, Decoded, DialectCallRequest, DialectPlugin, Matched, Operation, SlotKind,
};
use crate::state::AppState;

/// The edge's way in: reads the body (under the body budget) and decodes a dialect's into the
/// canonical form, keeping in `cx.translation` what the way out needs to answer in the dialect
/// (its plugin, the client's own body, the framing). Chat Completions' body is already
/// canonical; a multipart upload is read by the parse stage.
pub async fn decode(
    state: &AppState,
    cx: &mut Context,
    headers: &http::HeaderMap,
    body: Body,
) -> Result<Inbound, ApiError> {
    if matches!(
        cx.operation,
        Operation::AudioTranscriptions | Operation::AudioTranslations
    ) {
        return Ok(Inbound::Upload(body));
    }
    let (bytes, reservation) = crate::pipeline::request::body::read(state, body).await?;
    let Some(edge) = cx.edge.clone() else {
        return Ok(Inbound::Json {
            operation: cx.operation,
            bytes,
            reservation,
        });
    };
    let plugin = edge.dialect.plugin.clone();
    let mut fields = raw_json::object(&bytes, MAX_FIELDS).map_err(|e| match e {
        Unreadable::Syntax(_)
        | Unreadable::NotAnObject
        | Unreadable::TooDeep
        | Unreadable::TooManyFields => ApiError::InvalidJson(e.to_string()),
    })?;
    // A dialect that chains turns (`previous_response_id`) does so through the store.
    let keeper = if edge.dialect.chains_turns {
        replay::replay(cx, &mut fields).await?
    } else {
        None
    };
    let previous_id = fields
        .get("previous_response_id")
        .and_then(|raw| raw_json::string(raw));
    let decoded = decode_fields(&plugin, &edge, &fields).await?;
    if !decoded.dropped.is_empty() {
        tracing::debug!(
            dialect = edge.dialect.name.as_str(),
            dropped = decoded.dropped.join(",").as_str(),
            "fields the canonical form cannot carry were dropped"
        );
    }
    let canonical = canonical_operation(decoded.operation);
    cx.operation = canonical;
    fields.shift_remove("previous_response_id");
    let prefix = &edge.dialect.answer_id_prefix;
    cx.translation = Some(Translation {
        plugin,
        dialect: Arc::clone(&edge.dialect),
        route: edge.route().name.clone(),
        params: edge.params.clone(),
        framing: decoded.framing,
        native: fields,
        headers: forwarded(headers),
        echo: decoded.echo,
        answer_id: format!("{prefix}{}", uuid::Uuid::new_v4().simple()),
        created: u64::try_from(cx.arrived_us / 1_000_000).unwrap_or(0),
        keeper,
        previous_id,
    });
    Ok(Inbound::Json {
        operation: canonical,
        bytes: Bytes::from(decoded.body),
        reservation,
    })
}

/// The host's operation for a plugin's canonical one.
pub fn canonical_operation(canonical: Canonical) -> Operation {
    match canonical {
        Canonical::ChatCompletions => Operation::ChatCompletions,
        Canonical::Embeddings => Operation::Embeddings,
    }
}

/// The dialect plugin's decoding of a body on `edge`'s route, on an instance of its own.
pub async fn decode_fields(
    plugin: &DialectPlugin,
    edge: &Matched,
    fields: &Fields,
) -> Result<Decoded, ApiError> {
    let body = serde_json::to_string(fields).map_err(|e| ApiError::InvalidJson(e.to_string()))?;
    let request = DialectCallRequest {
        route: edge.route().name.clone(),
        params: edge.params.clone(),
        body,
    };
    let mut call = plugin
        .start(SlotKind::Call)
        .await
        .map_err(ApiError::plugin)?;
    answered(call.decode(&request).await)
}

/// The allowlisted client headers, bounded and printable.
pub fn forwarded(headers: &http::HeaderMap) -> Vec<(String, String)> {
    FORWARDED
        .iter()
        .filter_map(|name| {
            let value = headers.get(*name)?.to_str().ok()?.trim();
            (value.len() <= FORWARDED_MAX && !value.is_empty())
                .then(|| ((*name).to_owned(), value.to_owned()))
        })
        .collect()
}
