//! The WebAssembly plugin host: the only module that touches wasmtime.
//!
//! One `Engine` (epoch interruption, pooling allocator) serves every plugin. Each component is
//! compiled once (cached precompiled on disk, and kept in memory by name while its file stays the
//! same, so a reload does not load it again), turned into an `InstancePre`, and every call
//! gets a fresh `Store` with a CPU-time budget (and a much longer wall-clock backstop) and a
//! memory cap, so a plugin that traps, loops or eats memory fails only the request it was serving,
//! while a host starved of CPU (a container at its quota) fails none.

mod bindings;
mod cache;
mod cache_key;
mod counter_store;
mod cpu;
mod dialect;
mod failure;
mod guard;
mod host;
mod host_imports;
mod limiter;
mod limits;
mod load;
mod loaded;
mod observer;
mod operation_names;
mod provider;
mod registry;
mod router;
mod sandbox;
mod slots;
mod state;
mod ticker;

pub use bindings::cache_key_types::{KeyDecision, KeyRequest};
pub use bindings::counter_types::{Counter, Period};
pub use bindings::dialect_types::{
    AnswerInfo, Call as DialectCallRequest, Canonical, Declaration, Decoded, Event as DialectEvent,
    Failure, Framing, KeySource, Route as DialectRoute, RouteKind,
};
pub use bindings::guard_types::{
    AnswerEvent, Consult, ConsultReply, Finding, GuardInfo, Refusal, Release, RequestVerdict,
    Rewrite, Stop, StreamVerdict, TextDelta, ToolCallDelta,
};
pub use bindings::limiter_types::{Decision, Denial, DenialCode, LimitRequest, Settlement};
pub use bindings::provider_types::{
    CanonicalRequest, Completion, Metered, NativeCall, Operation, PassthroughAuth, PassthroughCall,
    PlainOperation, ProviderConfig, RequestInfo, StreamOutput,
};
pub use bindings::router_types::{CircuitState, RouteRequest, Target as RouteTarget};
pub use bindings::types::{
    ConfigError as PluginConfigError, ErrorKind, HttpRequest, HttpResponse, PluginError, Usage,
};
pub use cache_key::CacheKeyPlugin;
pub use counter_store::CounterStore;
pub use dialect::{DialectCall, DialectPlugin, DialectStream};
pub use failure::{LoadError, PluginFailure, TimeBound};
pub use guard::{AnswerGuardCall, GuardPlugin};
pub use host::{PluginHost, PluginWork, default_cache_dir};
pub use limiter::LimiterPlugin;
pub use limits::PluginLimits;
pub use observer::{CallEnd, CallObserver, Unobserved};
pub use operation_names::{OperationNames, names as operation_names};
pub use provider::{PluginCall, Prepared, ProviderPlugin, ProviderStream};
pub use registry::{DialectRegistry, Matched, Mounted, MountedRoute, RegistryError, Unmatched};
pub use router::RouterPlugin;
pub use slots::{InstanceUsage, SlotKind};
