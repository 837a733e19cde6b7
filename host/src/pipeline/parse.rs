//! The parse stage: the canonical body the edge's way in read (or decoded) checked into the
//! canonical request the later stages work on; a multipart upload is read by `upload.rs`. It
//! never asks which dialect the client spoke.

use axum::http::HeaderMap;

use super::context::Context;
use super::request::ClientRequest;
use super::request::body::Reservation;
use super::request::inbound::Inbound;
use super::request::upload;
use crate::error::ApiError;
use crate::state::AppState;

/// Parses the body into `cx.request`. The returned reservation is the body's share of the
/// budget: keep it while the request is being answered.
pub async fn parse(
    state: &AppState,
    cx: &mut Context,
    headers: &HeaderMap,
    inbound: Inbound,
) -> Result<Reservation, ApiError> {
    let reservation = match inbound {
        Inbound::Upload(body) => {
            let (request, reservation) = upload::read(state, cx.operation, headers, body).await?;
            cx.request = request;
            reservation
        }
        Inbound::Json {
            operation,
            bytes,
            reservation,
        } => {
            cx.request = ClientRequest::parse(operation, &bytes)?;
            reservation
        }
    };
    // A JWT's user is who the request is for, whatever the body says.
    if let Some(user) = &cx.caller.user {
        cx.request.user.id = Some(user.clone());
    }
    if let Some(telemetry) = &mut cx.telemetry {
        let (request, redactor) = (&cx.request, &cx.redactor);
        telemetry.request(
            &redactor.text(&request.model),
            request.max_output_tokens(),
            || redactor.string(request.prompt_json()),
        );
    }
    Ok(reservation)
}
