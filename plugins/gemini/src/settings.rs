//! The entry's `base_url` and `options`, checked once at start-up and re-read per request.

use serde::Deserialize;
use wasmgate_plugin_sdk::http::is_http_url;
use wasmgate_plugin_sdk::{ConfigError, ProviderConfig};

const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// The `options:` of an entry. There are none yet; the struct makes any key an error.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {}

/// An entry's settings, known to be usable.
pub struct Settings {
    pub base_url: String,
}

impl Settings {
    pub fn from_config(config: &ProviderConfig) -> Result<Self, ConfigError> {
        let base_url = config.base_url.as_deref().unwrap_or(DEFAULT_BASE_URL);
        if !is_http_url(base_url) {
            return Err(ConfigError::at(
                "base_url",
                "must be an absolute http:// or https:// URL",
            ));
        }
        let Options {} = wasmgate_plugin_sdk::options(config)?;
        Ok(Settings {
            base_url: base_url.to_owned(),
        })
    }
}
