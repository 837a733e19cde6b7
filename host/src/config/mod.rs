//! The gateway's configuration: serde structs for `config.yaml`, loading and validation.

pub mod alerts;
mod auth;
pub mod batches;
pub mod cache;
mod catalog;
mod config_error;
mod config_file;
pub mod console;
mod dialects;
pub mod guards;
mod interpolate;
mod limits;
mod load;
pub mod mcp;
mod observability;
mod overrides;
pub mod passthrough;
mod plugins;
pub mod presets;
mod provider_entry;
pub mod reference;
mod resources;
mod routing;
pub mod schema;
mod schema_transforms;
mod server;
mod source;
#[cfg(test)]
mod tests;
mod validate;
mod websocket;

pub use auth::{AuthConfig, JwtAlgorithm, JwtBudgetPeriod, JwtClaims, JwtIssuer};
pub use catalog::CatalogConfig;
pub use config_error::ConfigError;
pub use config_file::Config;
pub use dialects::{DialectEntry, DialectsConfig};
pub use limits::{LimitRule, LimitScope, LimitsConfig};
pub use observability::{LogFormat, ObservabilityConfig, TracesConfig};
pub use overrides::Overrides;
pub use plugins::PluginsConfig;
pub use provider_entry::ProviderEntry;
pub use routing::{BreakerConfig, RetryConfig, RouteEntry, TargetDetail, TargetEntry};
pub use server::ServerConfig;
pub use source::{ConfigSource, DEFAULT_CONFIG};
pub use websocket::WebsocketConfig;
