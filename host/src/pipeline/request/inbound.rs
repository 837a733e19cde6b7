//! What the edge's way in hands the parse stage: a JSON body in its operation's canonical form
//! with its share of the body budget, or a multipart upload still to be read.

use axum::body::{Body, Bytes};

use super::body::Reservation;
use crate::plugins::Operation;

/// What the edge's way in hands the parse stage.
pub enum Inbound {
    /// A JSON body in `operation`'s canonical form, and its share of the body budget (kept
    /// while the request is being answered).
    Json {
        operation: Operation,
        bytes: Bytes,
        reservation: Reservation,
    },
    /// A multipart upload (Chat Completions' audio endpoints), which the parse stage reads.
    Upload(Body),
}
