//! Rust bindings of the WIT contract in `wit/` (the host side of its `host` interface is
//! `host_imports.rs`).

/// The provider world; it also owns the Rust types of the shared `types` and `host` interfaces.
pub mod provider_world {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "provider-plugin",
        exports: { default: async },
    });
}

/// The router world, reusing the provider world's shared interfaces.
pub mod router_world {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "router-plugin",
        exports: { default: async },
        with: {
            "wasmgate:plugin/types": crate::plugins::bindings::provider_world::wasmgate::plugin::types,
            "wasmgate:plugin/host": crate::plugins::bindings::provider_world::wasmgate::plugin::host,
        },
    });
}

/// The limiter world: the host also provides `counters`, async (Redis) and trappable (a store
/// that cannot be reached fails the call rather than answering a guess).
pub mod limiter_world {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "limiter-plugin",
        exports: { default: async },
        imports: { "wasmgate:plugin/counters": async | trappable },
        with: {
            "wasmgate:plugin/types": crate::plugins::bindings::provider_world::wasmgate::plugin::types,
            "wasmgate:plugin/host": crate::plugins::bindings::provider_world::wasmgate::plugin::host,
        },
    });
}

/// The dialect world, reusing the provider world's shared interfaces.
pub mod dialect_world {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "dialect-plugin",
        exports: { default: async },
        with: {
            "wasmgate:plugin/types": crate::plugins::bindings::provider_world::wasmgate::plugin::types,
            "wasmgate:plugin/host": crate::plugins::bindings::provider_world::wasmgate::plugin::host,
        },
    });
}

/// The guard world, reusing the provider world's shared interfaces.
pub mod guard_world {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "guard-plugin",
        exports: { default: async },
        with: {
            "wasmgate:plugin/types": crate::plugins::bindings::provider_world::wasmgate::plugin::types,
            "wasmgate:plugin/host": crate::plugins::bindings::provider_world::wasmgate::plugin::host,
        },
    });
}

/// The cache-key policy world, reusing the provider world's shared interfaces.
pub mod cache_key_world {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "cache-key-plugin",
        exports: { default: async },
        with: {
            "wasmgate:plugin/types": crate::plugins::bindings::provider_world::wasmgate::plugin::types,
            "wasmgate:plugin/host": crate::plugins::bindings::provider_world::wasmgate::plugin::host,
        },
    });
}

pub use cache_key_world::exports::wasmgate::plugin::cache_key as cache_key_types;
pub use cache_key_world::{CacheKeyPlugin, CacheKeyPluginPre};
pub use dialect_world::exports::wasmgate::plugin::dialect as dialect_types;
pub use dialect_world::{DialectPlugin, DialectPluginPre};
pub use guard_world::exports::wasmgate::plugin::guard as guard_types;
pub use guard_world::{GuardPlugin, GuardPluginPre};
pub use limiter_world::exports::wasmgate::plugin::limiter as limiter_types;
pub use limiter_world::wasmgate::plugin::counters as counter_types;
pub use limiter_world::{LimiterPlugin, LimiterPluginPre};
pub use provider_world::exports::wasmgate::plugin::provider as provider_types;
pub use provider_world::wasmgate::plugin::types;
pub use provider_world::{ProviderPlugin, ProviderPluginPre};
pub use router_world::exports::wasmgate::plugin::router as router_types;
pub use router_world::{RouterPlugin, RouterPluginPre};
