//! The entry's `base_url` and `options`, checked once at start-up and re-read per request.

use serde::Deserialize;
use wasmgate_plugin_sdk::http::is_http_url;
use wasmgate_plugin_sdk::{ConfigError, ProviderConfig};

const DEFAULT_BASE_URL: &str = "https://api.cohere.com/v2";

/// The `input_type`s the embed reference lists.
const INPUT_TYPES: [&str; 5] = [
    "search_document",
    "search_query",
    "classification",
    "clustering",
    "image",
];

/// The `options:` of an entry, as written in the config.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {
    /// The embed `input_type`, which OpenAI's request has no place for.
    input_type: Option<String>,
}

/// An entry's settings, known to be usable.
pub struct Settings {
    pub base_url: String,
    pub input_type: String,
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
        let options: Options = wasmgate_plugin_sdk::options(config)?;
        // Documents are what a gateway embeds most, to be searched later.
        let input_type = options
            .input_type
            .unwrap_or_else(|| "search_document".to_owned());
        if !INPUT_TYPES.contains(&input_type.as_str()) {
            return Err(ConfigError::at(
                "input_type",
                format!("must be one of {}", INPUT_TYPES.join(", ")),
            ));
        }
        Ok(Settings {
            base_url: base_url.to_owned(),
            input_type,
        })
    }
}
