//! Log lines through the host, which tags them with the plugin's name and the request id.
//!
//! Never log secrets (API keys, signed URLs) or prompt text. Built natively (in unit tests) these
//! write nothing.

use crate::LogLevel;

/// Writes `message` to the gateway's log at `level`.
pub fn log(level: LogLevel, message: &str) {
    #[cfg(target_arch = "wasm32")]
    crate::wit::wasmgate::plugin::host::log(level, message);
    #[cfg(not(target_arch = "wasm32"))]
    let _ = (level, message);
}

/// Diagnostics for plugin authors.
pub fn debug(message: &str) {
    log(LogLevel::Debug, message);
}

/// Normal operation.
pub fn info(message: &str) {
    log(LogLevel::Info, message);
}

/// Something odd that did not fail the request.
pub fn warn(message: &str) {
    log(LogLevel::Warn, message);
}

/// A failure.
pub fn error(message: &str) {
    log(LogLevel::Error, message);
}
