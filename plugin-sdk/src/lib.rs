//! Write wasmgate plugins: providers (implement [`Provider`], call [`export_provider!`]),
//! routers (implement `Router`, call `export_router!`), limiters (implement `Limiter`, call
//! `export_limiter!`) and dialects (implement `Dialect`, call `export_dialect!`).
//!
//! A provider plugin is a pure translator between OpenAI's API and one upstream's wire format. The
//! host does all network I/O and calls the plugin on a fresh instance per request, so a plugin
//! keeps no state between calls: everything arrives as arguments. A router plugin orders the
//! targets of a virtual model, from the live statistics the host passes it. A limiter plugin
//! admits or refuses requests (rate limits, budgets) with [`counters`] the host keeps. A dialect
//! plugin translates one client API (Anthropic's Messages, OpenAI's Responses) to the canonical
//! Chat Completions form that providers take, and the answers back.
//!
//! Each kind has a cargo feature, `provider` (the default), `router`, `limiter` and `dialect`,
//! which brings
//! its bindings and API. A plugin enables its own kind's only: a router depends on this crate with
//! `default-features = false, features = ["router"]`. Several together work too, since a component
//! exports only the kinds whose export macro it calls.
//!
//! A plugin that answers every chat request with "hello", without any upstream:
//!
#![cfg_attr(feature = "provider", doc = "```")]
#![cfg_attr(not(feature = "provider"), doc = "```ignore")]
//! use wasmgate_plugin_sdk::{CanonicalRequest, Completion, Entry, NoOptions, NoStream};
//! use wasmgate_plugin_sdk::{PluginError, Prepared, Provider, serde_json::json};
//!
//! struct Hello;
//!
//! impl Provider for Hello {
//!     type Settings = NoOptions;
//!     type Decoder = NoStream;
//!     const LOCAL: bool = true;
//!
//!     fn prepare(_: &Entry<NoOptions>, req: CanonicalRequest) -> Result<Prepared, PluginError> {
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
//! A router that tries the targets in reverse config order:
//!
#![cfg_attr(feature = "router", doc = "```")]
#![cfg_attr(not(feature = "router"), doc = "```ignore")]
//! use wasmgate_plugin_sdk::routing::config_order;
//! use wasmgate_plugin_sdk::{NoOptions, RouteRequest, Router, Target};
//!
//! struct Reverse;
//!
//! impl Router for Reverse {
//!     type Options = NoOptions;
//!
//!     fn route(_: &NoOptions, _: &RouteRequest, targets: &[Target]) -> Result<Vec<u32>, String> {
//!         Ok(config_order(targets).rev().collect())
//!     }
//! }
//!
//! wasmgate_plugin_sdk::export_router!(Reverse);
//! ```
//!
//! A limiter that lets 100 requests a minute through per scope (a key, a user, ...):
//!
#![cfg_attr(feature = "limiter", doc = "```")]
#![cfg_attr(not(feature = "limiter"), doc = "```ignore")]
//! use wasmgate_plugin_sdk::limits::Reservation;
//! use wasmgate_plugin_sdk::{Decision, Denial, DenialCode, LimitRequest, Limiter, NoOptions};
//! use wasmgate_plugin_sdk::{Period, Settlement};
//!
//! struct Hundred;
//!
//! impl Limiter for Hundred {
//!     type Options = NoOptions;
//!
//!     fn check(_: &NoOptions, request: &LimitRequest) -> Decision {
//!         let key = format!("req:minute:{}", request.scope_key);
//!         match Reservation::new().add(key, Period::Minute, 1, 100) {
//!             Ok(_) => Decision::Allow(Vec::new()),
//!             Err(over) => Decision::Deny(Denial {
//!                 code: DenialCode::RateLimitExceeded,
//!                 message: "100 requests a minute".to_owned(),
//!                 retry_after_ms: over.resets_in_ms,
//!                 headers: Vec::new(),
//!             }),
//!         }
//!     }
//!
//!     fn settle(_: &NoOptions, _: &LimitRequest, _: &Settlement) {}
//! }
//!
//! wasmgate_plugin_sdk::export_limiter!(Hundred);
//! ```
//!
//! A dialect whose clients send `{"model", "prompt"}` and get `{"text"}` back, unstreamed:
//!
#![cfg_attr(feature = "dialect", doc = "```")]
#![cfg_attr(not(feature = "dialect"), doc = "```ignore")]
//! use wasmgate_plugin_sdk::canonical::{ChatAnswer, ChatBody, ChatContent, ChatMessage};
//! use wasmgate_plugin_sdk::serde_json::{Value, json};
//! use wasmgate_plugin_sdk::{
//!     AnswerInfo, Call, Canonical, Declaration, Decoded, Dialect, Failure, Framing,
//!     NoStreamEncoder, Route, RouteKind, Usage,
//! };
//!
//! struct Prompt;
//!
//! impl Dialect for Prompt {
//!     type Encoder = NoStreamEncoder;
//!
//!     fn describe() -> Declaration {
//!         let route = Route::new("POST", "/v1/prompt", "prompt", RouteKind::Call);
//!         Declaration {
//!             name: "prompt".into(),
//!             routes: vec![route],
//!             keys: vec![],
//!             typed_events: false,
//!             answer_id_prefix: "prompt_".into(),
//!             chains_turns: false,
//!             native_answers_guarded: true,
//!         }
//!     }
//!
//!     fn decode(call: &Call) -> Result<Decoded, Failure> {
//!         let body: Value = serde_json::from_str(&call.body)
//!             .map_err(|_| Failure::invalid_request("the body is not JSON"))?;
//!         let (Some(model), Some(prompt)) = (body["model"].as_str(), body["prompt"].as_str())
//!         else {
//!             return Err(Failure::invalid_request("`model` and `prompt` are required"));
//!         };
//!         let user = ChatMessage::User { content: ChatContent::Text(prompt.to_owned()) };
//!         let chat = ChatBody { model: model.to_owned(), messages: vec![user], ..ChatBody::default() };
//!         Ok(Decoded {
//!             operation: Canonical::ChatCompletions,
//!             framing: Framing::Sse,
//!             model: model.to_owned(),
//!             stream: false,
//!             body: chat.to_json()?,
//!             dropped: Vec::new(),
//!             echo: String::new(),
//!         })
//!     }
//!
//!     fn encode(_: &AnswerInfo, completion: &str, _: Option<Usage>) -> Result<String, Failure> {
//!         let (message, _) = ChatAnswer::parse(completion)?.into_message();
//!         Ok(json!({"text": message.content.unwrap_or_default()}).to_string())
//!     }
//!
//!     fn encode_error(_: u16, error: &Failure) -> String {
//!         json!({"error": error.message}).to_string()
//!     }
//! }
//!
//! wasmgate_plugin_sdk::export_dialect!(Prompt);
//! ```
//!
//! Build any of them as a `cdylib` for `wasm32-wasip2`, which emits a component directly.
//!
//! Modules:
//! - [`sse`]: an incremental Server-Sent-Events parser for streamed upstream bodies.
//! - [`sse_stream`]: a stream decoder for SSE upstreams, built from a per-event translator.
//! - [`chat`]: the chat request as types, and OpenAI's completion and chunk JSON, for plugins
//!   that translate to another wire format.
//! - [`embeddings`]: the embeddings request as types, and OpenAI's embeddings list.
//! - [`openai_compat`]: pass-through responses and streams for upstreams that speak OpenAI's API.
//! - [`native`]: native pass-through of a client dialect (Messages, Responses) to an upstream
//!   that speaks it, with the usage read from its bodies and events.
//! - [`log`]: log lines through the host.
//! - [`compaction`]: the gateway's own Responses compaction item, which the Responses dialect
//!   writes and every plugin that passes Responses bodies on turns back into a message.
//! - [`openai`]: OpenAI's error and usage shapes, which many upstreams share.
//! - [`http`]: building upstream requests and checking header names and values.
//! - `routing`: the choices most routers make: healthy targets, ranking, weighted picks.
//! - `counters`: the host's counters, which limiters count requests, tokens and money with.
//! - `limits`: reservations over several counters, and `x-ratelimit-*` headers.
//! - `canonical`: the Chat Completions request a dialect decodes into, and the answers and
//!   chunks it encodes, as types.
//! - the crate root: the contract types, [`Provider`], [`StreamDecoder`], [`Entry`], [`Auth`], [`calls`],
//!   `Router`, `Limiter`, `Dialect`, `StreamEncoder`, `Failure`, [`parse_options`], [`count_tokens`] and the error helpers
//!   ([`error_kind_for_status`], `PluginError::...`).
//!
//! Only [`log`], [`compaction`], [`parse_options`], [`count_tokens`], the error helpers and the shared types are
//! in every feature; the rest belongs to its kind's feature.
//!
//! Built natively (for unit tests) the host imports are not there: [`log`] writes nothing,
//! [`count_tokens`] estimates one token per four bytes and `counters` keeps its counters in the
//! test's own thread (see `counters::memory`).

#[cfg(feature = "provider")]
mod adapter;
#[cfg(feature = "cache-key")]
mod cache_key;
#[cfg(feature = "dialect")]
pub mod canonical;
#[cfg(feature = "provider")]
pub mod chat;
pub mod compaction;
#[cfg(feature = "limiter")]
pub mod counters;
#[cfg(feature = "dialect")]
mod dialect;
#[cfg(feature = "provider")]
pub mod embeddings;
#[cfg(feature = "provider")]
mod entry;
mod error;
#[cfg(feature = "guard")]
pub mod guard;
mod host;
#[cfg(feature = "provider")]
pub mod http;
#[cfg(any(
    feature = "router",
    feature = "limiter",
    feature = "guard",
    feature = "cache-key"
))]
mod kept_options;
#[cfg(feature = "limiter")]
mod limiter;
#[cfg(feature = "limiter")]
pub mod limits;
pub mod log;
#[cfg(feature = "provider")]
pub mod native;
#[cfg(feature = "provider")]
pub mod openai;
#[cfg(feature = "provider")]
pub mod openai_compat;
mod options;
#[cfg(feature = "provider")]
pub mod passthrough;
#[cfg(feature = "provider")]
mod provider;
#[cfg(feature = "guard")]
mod request_texts;
#[cfg(feature = "router")]
mod router;
#[cfg(feature = "router")]
pub mod routing;
#[cfg(feature = "provider")]
pub mod sse;
#[cfg(feature = "provider")]
pub mod sse_stream;
mod usage;

#[cfg(not(any(
    feature = "provider",
    feature = "router",
    feature = "limiter",
    feature = "dialect",
    feature = "guard",
    feature = "cache-key"
)))]
compile_error!(
    "enable the feature of the kind of plugin being built: `provider`, `router`, `limiter`, \
     `dialect`, `guard` or `cache-key`"
);

/// Generates the bindings of the world `$world` when the feature `$feature` is on, and re-exports
/// `$uses` (paths within the world's bindings) from `crate::wit`. Every world imports `host`
/// (and with it `types`): the first kind enabled, in the order of the calls below (none of the
/// `$earlier` features on), generates those at `crate::wit`; a later one generates only its own
/// items, in the module `$module`, so that its `exports` does not clash with the first world's.
/// Either way the world's `exports` (which its export macro looks for) is at
/// `crate::wit::$module::exports`.
macro_rules! world {
    ($feature:tt, $world:tt, $module:ident, after [$($earlier:tt),*],
     uses [$($($segment:ident)::+),+]) => {
        #[cfg(all(feature = $feature, not(any($(feature = $earlier),*))))]
        wit_bindgen::generate!({
            path: "../wit",
            world: $world,
            pub_export_macro: true,
            additional_derives: [PartialEq],
        });
        #[cfg(all(feature = $feature, not(any($(feature = $earlier),*))))]
        pub mod $module {
            pub use super::exports;
        }
        #[cfg(all(feature = $feature, not(any($(feature = $earlier),*))))]
        pub use self::{$($($segment)::+),+};

        #[cfg(all(feature = $feature, any($(feature = $earlier),*)))]
        pub mod $module {
            wit_bindgen::generate!({
                path: "../wit",
                world: $world,
                pub_export_macro: true,
                additional_derives: [PartialEq],
                with: {
                    "wasmgate:plugin/types@0.1.0": crate::wit::wasmgate::plugin::types,
                    "wasmgate:plugin/host@0.1.0": crate::wit::wasmgate::plugin::host,
                },
            });
        }
        #[cfg(all(feature = $feature, any($(feature = $earlier),*)))]
        pub use self::$module::{$($($segment)::+),+};
    };
}

/// The generated bindings, one world per kind of plugin enabled (see `world!`).
#[expect(
    missing_docs,
    reason = "generated modules and traits; the WIT documents the items"
)]
mod wit {
    world! {
        "provider", "provider-plugin", provider_world,
        after [],
        uses [exports::wasmgate::plugin::provider]
    }
    world! {
        "router", "router-plugin", router_world,
        after ["provider"],
        uses [exports::wasmgate::plugin::router]
    }
    world! {
        "limiter", "limiter-plugin", limiter_world,
        after ["provider", "router"],
        uses [exports::wasmgate::plugin::limiter, wasmgate::plugin::counters]
    }
    world! {
        "dialect", "dialect-plugin", dialect_world,
        after ["provider", "router", "limiter"],
        uses [exports::wasmgate::plugin::dialect]
    }
    world! {
        "guard", "guard-plugin", guard_world,
        after ["provider", "router", "limiter", "dialect"],
        uses [exports::wasmgate::plugin::guard]
    }
    world! {
        "cache-key", "cache-key-plugin", cache_key_world,
        after ["provider", "router", "limiter", "dialect", "guard"],
        uses [exports::wasmgate::plugin::cache_key]
    }
}

#[cfg(feature = "cache-key")]
pub use cache_key::{CacheKey, KeyRequestExt};
#[cfg(feature = "dialect")]
pub use dialect::{Dialect, NoStreamEncoder, StreamEncoder, openai_type};
#[cfg(feature = "provider")]
pub use entry::{Auth, Entry};
pub use error::error_kind_for_status;
#[cfg(feature = "guard")]
pub use guard::{AnswerGuard, Guard, PassAnswers};
pub use host::count_tokens;
#[cfg(feature = "limiter")]
pub use limiter::Limiter;
#[cfg(feature = "provider")]
pub use openai::{openai_error, openai_usage, openai_usage_in_body};
pub use options::{NoOptions, parse_options};
#[cfg(feature = "provider")]
pub use provider::{NoStream, Provider, StreamDecoder};

/// A provider's calls as the host makes them, through the SDK (the entry read, the key and
/// headers added): for a plugin's unit tests.
#[cfg(feature = "provider")]
pub mod calls {
    pub use crate::adapter::{
        describe, native_dialects, parse_response, passthrough, prepare, prepare_count, validate,
    };
}
#[cfg(feature = "router")]
pub use router::Router;
pub use serde_json;
#[cfg(feature = "cache-key")]
pub use wit::cache_key::{KeyDecision, KeyRequest};
#[cfg(feature = "limiter")]
pub use wit::counters::{Counter, Period};
#[cfg(feature = "dialect")]
pub use wit::dialect::{
    AnswerInfo, Call, Canonical, Declaration, Decoded, Event, Failure, Framing, KeySource, Route,
    RouteKind,
};
#[cfg(feature = "guard")]
pub use wit::guard::{
    AnswerEvent, Consult, ConsultReply, Finding, GuardInfo, Refusal, Release, RequestVerdict,
    Rewrite, Stop, StreamVerdict, TextDelta, ToolCallDelta,
};
#[cfg(feature = "limiter")]
pub use wit::limiter::{Decision, Denial, DenialCode, LimitRequest, Settlement};
#[cfg(feature = "provider")]
pub use wit::provider::{
    CanonicalRequest, Completion, Description, FormRequest, Metered, NativeCall, Operation,
    PassthroughAuth, PassthroughCall, PlainOperation, Prepared, ProviderConfig, RawRequest,
    RequestInfo, StreamOutput,
};
#[cfg(feature = "router")]
pub use wit::router::{CircuitState, RouteRequest, Target};
pub use wit::wasmgate::plugin::types::{
    ConfigError, ErrorKind, HttpRequest, HttpResponse, LogLevel, PluginError, Usage,
};

#[cfg(feature = "provider")]
impl CanonicalRequest {
    /// What `parse_response` and stream decoders are told of this request.
    pub fn info(&self) -> RequestInfo {
        RequestInfo {
            operation: self.operation,
            native: self.native.clone(),
            model: self.model.clone(),
            stream: self.stream,
        }
    }
}

/// What the `export_*!` macros expand to. Not part of the API. The generated export macros
/// look for the bindings under `<path>::exports::...`.
#[doc(hidden)]
pub mod __private {
    #[cfg(feature = "provider")]
    pub use crate::adapter::Adapter;
    #[cfg(feature = "provider")]
    pub use crate::wit::provider_world::exports;

    /// The router's bindings, apart from the provider's.
    #[cfg(feature = "router")]
    pub mod router {
        pub use crate::router::RouterAdapter;
        pub use crate::wit::router_world::exports;
    }

    /// The dialect's bindings, apart from the other kinds'.
    #[cfg(feature = "dialect")]
    pub mod dialect {
        pub use crate::dialect::DialectAdapter;
        pub use crate::wit::dialect_world::exports;
    }

    /// The cache-key policy's bindings, apart from the other kinds'.
    #[cfg(feature = "cache-key")]
    pub mod cache_key {
        pub use crate::cache_key::CacheKeyAdapter;
        pub use crate::wit::cache_key_world::exports;
    }

    /// The guard's bindings, apart from the other kinds'.
    #[cfg(feature = "guard")]
    pub mod guard {
        pub use crate::guard::GuardAdapter;
        pub use crate::wit::guard_world::exports;
    }

    /// The limiter's bindings, apart from the other kinds'.
    #[cfg(feature = "limiter")]
    pub mod limiter {
        pub use crate::limiter::LimiterAdapter;
        pub use crate::wit::limiter_world::exports;
    }
}

/// Exports a [`Provider`] as the plugin's `wasmgate:plugin/provider` implementation. Call it once,
/// in the plugin crate, with the type that implements [`Provider`].
#[cfg(feature = "provider")]
#[macro_export]
macro_rules! export_provider {
    ($provider:ty) => {
        const _: () = {
            type __WasmgateExport = $crate::__private::Adapter<$provider>;
            $crate::__export_provider_plugin_impl!(__WasmgateExport with_types_in $crate::__private);
        };
    };
}

/// Exports a [`Router`] as the plugin's `wasmgate:plugin/router` implementation. Call it once, in
/// the plugin crate, with the type that implements [`Router`].
#[cfg(feature = "router")]
#[macro_export]
macro_rules! export_router {
    ($router:ty) => {
        const _: () = {
            type __WasmgateExport = $crate::__private::router::RouterAdapter<$router>;
            $crate::__export_router_plugin_impl!(
                __WasmgateExport with_types_in $crate::__private::router
            );
        };
    };
}

/// Exports a [`Limiter`] as the plugin's `wasmgate:plugin/limiter` implementation. Call it once,
/// in the plugin crate, with the type that implements [`Limiter`].
#[cfg(feature = "limiter")]
#[macro_export]
macro_rules! export_limiter {
    ($limiter:ty) => {
        const _: () = {
            type __WasmgateExport = $crate::__private::limiter::LimiterAdapter<$limiter>;
            $crate::__export_limiter_plugin_impl!(
                __WasmgateExport with_types_in $crate::__private::limiter
            );
        };
    };
}

/// Exports a `Dialect` as the plugin's `wasmgate:plugin/dialect` implementation. Call it once, in
/// the plugin crate, with the type that implements `Dialect`.
#[cfg(feature = "dialect")]
#[macro_export]
macro_rules! export_dialect {
    ($dialect:ty) => {
        const _: () = {
            type __WasmgateExport = $crate::__private::dialect::DialectAdapter<$dialect>;
            $crate::__export_dialect_plugin_impl!(
                __WasmgateExport with_types_in $crate::__private::dialect
            );
        };
    };
}

/// Exports a `Guard` as the plugin's `wasmgate:plugin/guard` implementation. Call it once, in the
/// plugin crate, with the type that implements `Guard`.
#[cfg(feature = "guard")]
#[macro_export]
macro_rules! export_guard {
    ($guard:ty) => {
        const _: () = {
            type __WasmgateExport = $crate::__private::guard::GuardAdapter<$guard>;
            $crate::__export_guard_plugin_impl!(
                __WasmgateExport with_types_in $crate::__private::guard
            );
        };
    };
}

/// Exports a `CacheKey` as the plugin's `wasmgate:plugin/cache-key` implementation. Call it
/// once, in the plugin crate, with the type that implements `CacheKey`.
#[cfg(feature = "cache-key")]
#[macro_export]
macro_rules! export_cache_key {
    ($policy:ty) => {
        const _: () = {
            type __WasmgateExport = $crate::__private::cache_key::CacheKeyAdapter<$policy>;
            $crate::__export_cache_key_plugin_impl!(
                __WasmgateExport with_types_in $crate::__private::cache_key
            );
        };
    };
}
