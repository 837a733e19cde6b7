//! The canonical request the stages work on, and what reading it takes: the body read under the
//! budget of bytes held at once ([`body`]), its top-level fields as raw JSON text
//! ([`raw_json`]), the checks of each operation's fields ([`client`], [`operations`]), the end
//! user named in `extra` ([`end_user`]), and a multipart upload read as it arrives
//! ([`upload`]). Nothing here knows a stage: the stages import it, never the other way.

pub mod body;
pub mod check;
pub mod client;
pub mod end_user;
pub mod inbound;
mod operations;
#[cfg(test)]
mod props;
pub mod raw_json;
pub mod upload;

pub use check::{MODEL_MAX, check_model};
pub use client::ClientRequest;
