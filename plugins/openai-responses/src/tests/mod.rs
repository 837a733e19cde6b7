//! Native tests of the `responses` dialect: decoding requests (the API reference's examples and
//! each field), encoding answers, streams, and errors.

mod compact;
mod decode;
mod encode;
mod stream;

use serde_json::Value;
use wasmgate_plugin_sdk::{Call, Decoded, Dialect, Failure};

use crate::Responses;

/// Decodes `body` and returns the canonical body as JSON and the dropped names.
fn decode(body: &Value) -> (Value, Vec<String>) {
    let decoded = decode_full(body).unwrap_or_else(|e| panic!("decode failed: {e:?}"));
    let canonical = serde_json::from_str(&decoded.body).unwrap();
    (canonical, decoded.dropped)
}

fn decode_full(body: &Value) -> Result<Decoded, Failure> {
    Responses::decode(&Call::new("responses", body.to_string()))
}
