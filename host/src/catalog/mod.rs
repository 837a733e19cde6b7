//! The model catalog: every known provider model's kind, context window, capabilities and
//! prices, built in (`models.yaml`) and extended by overrides.
//!
//! Prices are integers from load on: pico-USD per token (and per image). Published prices go
//! down to $0.0028 per million tokens (DeepSeek cache hits), 2.8 nano-USD per token, so a
//! nano-USD unit would round real prices; pico-USD holds every price quoted to six decimals
//! of a dollar per million tokens exactly. Costs come out in micro-USD.

mod by_provider;
mod catalog_error;
mod cost;
mod file;
mod load;
mod model_info;
pub mod table;
#[cfg(test)]
mod tests;

pub use by_provider::Catalog;
pub use catalog_error::CatalogError;
pub use cost::{Metered, RealtimeTokens, cost_micros, metered_cost_micros, realtime_cost_micros};
pub use file::{CapabilitiesEntry, CatalogFile, ModelEntry, ProviderBlock};
pub use load::BUILTIN_YAML;
pub use model_info::{Capabilities, Kind, ModelInfo, Prices};
