//! Write wasmgate provider plugins: implement [`Provider`], call [`export_provider!`].
//!
//! A provider plugin is a pure translator between OpenAI's API and one upstream's wire format. The
//! host does all network I/O and calls the plugin on a fresh instance per request, so a plugin
//! keeps no state between calls: everything arrives as arguments.
//!
//! A plugin that answers every chat request with "hello", without any upstream:
//!
//! ```
//! use wasmgate_plugin_sdk::{CanonicalRequest, Completion, NoStream, PluginError, Prepared};
//! use wasmgate_plugin_sdk::{Provider, ProviderConfig, serde_json::json};
//!
//! struct Hello;
//!
//! impl Provider for Hello {
//!     type Decoder = NoStream;
//!
//!     fn prepare(_: &ProviderConfig, req: CanonicalRequest) -> Result<Prepared, PluginError> {
//!         let message = json!({"role": "assistant", "content": "hello"});
//!         let choice = json!({"index": 0, "message": message, "finish_reason": "stop"});
//!         let body = json!({"object": "chat.completion", "model": req.model, "choices": [choice]});
//!         Ok(Prepared::Local(Completion { body: body.to_string(), usage: None }))
//!     }
//! }
//!
//! wasmgate_plugin_sdk::export_provider!(Hello);
//! ```
//!
//! Build it as a `cdylib` for `wasm32-wasip2`, which emits a component directly.
//!
//! Modules:
//! - [`sse`]: an incremental Server-Sent-Events parser for streamed upstream bodies.
//! - [`sse_stream`]: a stream decoder for SSE upstreams, built from a per-event translator.
//! - [`chat`]: the chat request as types, and OpenAI's completion and chunk JSON, for plugins
//!   that translate to another wire format.
//! - [`embeddings`]: the embeddings request as types, and OpenAI's embeddings list.
//! - [`openai_compat`]: pass-through responses and streams for upstreams that speak OpenAI's API.
//! - [`log`]: log lines through the host.
//! - [`openai`]: OpenAI's error and usage shapes, which many upstreams share.
//! - [`http`]: building upstream requests and checking header names and values.
//! - the crate root: the contract types, [`Provider`], [`StreamDecoder`], [`options`],
//!   [`count_tokens`] and the error helpers ([`error_kind_for_status`], `PluginError::...`).
//!
//! Built natively (for unit tests) the host imports are not there: [`log`] writes nothing and
//! [`count_tokens`] estimates one token per four bytes.

mod adapter;
pub mod chat;
pub mod embeddings;
mod error;
mod host;
pub mod http;
pub mod log;
pub mod openai;
pub mod openai_compat;
mod options;
mod provider;
pub mod sse;
pub mod sse_stream;
mod usage;

#[expect(
    missing_docs,
    reason = "generated modules and traits; the WIT documents the items"
)]
mod wit {
    wit_bindgen::generate!({
        path: "../wit",
        world: "provider-plugin",
        pub_export_macro: true,
        additional_derives: [PartialEq],
    });
}

pub use error::error_kind_for_status;
pub use host::count_tokens;
pub use openai::{openai_error, openai_usage, openai_usage_in_body};
pub use options::options;
pub use provider::{NoStream, Provider, StreamDecoder};
pub use serde_json;
pub use wit::exports::wasmgate::plugin::provider::{
    CanonicalRequest, Completion, Operation, Prepared, ProviderConfig, RequestInfo, StreamOutput,
};

impl CanonicalRequest {
    /// What `parse_response` and stream decoders are told of this request.
    pub fn info(&self) -> RequestInfo {
        RequestInfo {
            operation: self.operation,
            model: self.model.clone(),
            stream: self.stream,
        }
    }
}
pub use wit::wasmgate::plugin::types::{
    ConfigError, ErrorKind, HttpRequest, HttpResponse, LogLevel, PluginError, Usage,
};

/// What [`export_provider!`] expands to. Not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use crate::adapter::Adapter;
    // The generated export macro looks for the bindings under `<path>::exports::...`.
    pub use crate::wit::exports;
}

/// Exports a [`Provider`] as the plugin's `wasmgate:plugin/provider` implementation. Call it once,
/// in the plugin crate, with the type that implements [`Provider`].
#[macro_export]
macro_rules! export_provider {
    ($provider:ty) => {
        const _: () = {
            type __WasmgateExport = $crate::__private::Adapter<$provider>;
            $crate::__export_provider_plugin_impl!(__WasmgateExport with_types_in $crate::__private);
        };
    };
}
