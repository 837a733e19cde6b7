//! A session's start as both transports give it: the version both sides speak, the gateway's
//! capabilities, and the clock sessions are dated by.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::mcp::PROTOCOL_VERSIONS;

/// `initialize`'s answer: the version both sides speak (the client's when the gateway speaks
/// it, else the newest) and the gateway's capabilities.
pub(super) fn handshake(params: Option<&Value>) -> (&'static str, Value) {
    let asked = params
        .and_then(|p| p.get("protocolVersion"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let version = PROTOCOL_VERSIONS
        .into_iter()
        .find(|v| *v == asked)
        .unwrap_or(PROTOCOL_VERSIONS[0]);
    let result = json!({
        "protocolVersion": version,
        "capabilities": {
            "tools": {"listChanged": true},
            "prompts": {"listChanged": true},
            "resources": {"listChanged": true, "subscribe": false},
        },
        "serverInfo": {"name": "wasmgate", "version": env!("CARGO_PKG_VERSION")},
    });
    (version, result)
}

pub(super) fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
