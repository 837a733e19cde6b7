//! The parse stage: the body read whole (under the body budget) and checked into the
//! canonical request the later stages work on; a multipart upload is read by `upload.rs`. A
//! dialect other than Chat Completions is decoded into the canonical form here (by its plugin,
//! see `dialect.rs`), so that no stage between this one and the answer asks which it was.

use axum::body::Body;
use axum::http::HeaderMap;

use super::body::{self, Reservation};
use super::context::{Context, Dialect};
use super::dialect;
use super::error::ApiError;
use super::request::ClientRequest;
use super::upload;
use crate::plugins::Operation;
use crate::state::AppState;

/// Reads and parses the body into `cx.request`. The returned reservation is the body's share
/// of the budget: keep it while the request is being answered.
pub async fn parse(
    state: &AppState,
    cx: &mut Context,
    headers: &HeaderMap,
    body: Body,
) -> Result<Reservation, ApiError> {
    let reservation = match cx.operation {
        Operation::AudioTranscriptions | Operation::AudioTranslations => {
            let (request, reservation) = upload::read(state, cx.operation, headers, body).await?;
            cx.request = request;
            reservation
        }
        _ => {
            let (bytes, reservation) = body::read(state, body).await?;
            cx.request = match cx.dialect {
                Dialect::Chat => ClientRequest::parse(cx.operation, &bytes)?,
                Dialect::Plugin => dialect::decode(cx, headers, &bytes).await?,
            };
            reservation
        }
    };
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
