//! The entry's `base_url` and `options`, checked once at start-up and re-read per request.

use std::num::NonZeroU64;

use serde::Deserialize;
use wasmgate_plugin_sdk::http::{check_header, is_http_url};
use wasmgate_plugin_sdk::{ConfigError, ProviderConfig};

const DEFAULT_BASE_URL: &str = "https://api.anthropic.com/v1";
/// The API version the translation was written against.
const DEFAULT_VERSION: &str = "2023-06-01";
/// Anthropic requires `max_tokens`; OpenAI clients often leave it out.
const DEFAULT_MAX_TOKENS: u64 = 4096;

/// The `options:` of an entry, as written in the config.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {
    /// Sent as `anthropic-version`.
    version: Option<String>,
    /// `max_tokens` for requests that set neither `max_tokens` nor `max_completion_tokens`.
    default_max_tokens: Option<NonZeroU64>,
    /// Beta features, sent as one `anthropic-beta` header.
    #[serde(default)]
    beta: Vec<String>,
}

/// An entry's settings, known to be usable.
pub struct Settings {
    pub base_url: String,
    pub version: String,
    pub default_max_tokens: u64,
    pub beta: Vec<String>,
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
        let version = options
            .version
            .unwrap_or_else(|| DEFAULT_VERSION.to_owned());
        check_header("anthropic-version", &version)
            .map_err(|msg| ConfigError::at("version", msg))?;
        for (i, beta) in options.beta.iter().enumerate() {
            if beta.is_empty() || beta.contains(',') {
                return Err(ConfigError::at(
                    format!("beta[{i}]"),
                    "must be one non-empty beta name",
                ));
            }
            check_header("anthropic-beta", beta)
                .map_err(|msg| ConfigError::at(format!("beta[{i}]"), msg))?;
        }
        Ok(Settings {
            base_url: base_url.to_owned(),
            version,
            default_max_tokens: options
                .default_max_tokens
                .map_or(DEFAULT_MAX_TOKENS, NonZeroU64::get),
            beta: options.beta,
        })
    }
}
