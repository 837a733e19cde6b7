//! The entry's `options`, which the SDK reads into [`Settings`] for each call.

use std::num::NonZeroU64;

use serde::Deserialize;
use wasmgate_plugin_sdk::ConfigError;
use wasmgate_plugin_sdk::http::check_header;

/// The `options:` of an entry.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// Sent as `anthropic-version`; the API version the translation was written against by
    /// default.
    #[serde(default = "default_version")]
    pub version: String,
    /// `max_tokens` for requests that set neither `max_tokens` nor `max_completion_tokens`:
    /// Anthropic requires it, and OpenAI clients often leave it out.
    default_max_tokens: Option<NonZeroU64>,
    /// Beta features, sent as one `anthropic-beta` header.
    #[serde(default)]
    pub beta: Vec<String>,
}

fn default_version() -> String {
    "2023-06-01".to_owned()
}

impl Settings {
    /// The `max_tokens` of a request that sets none.
    pub fn default_max_tokens(&self) -> u64 {
        self.default_max_tokens.map_or(4096, NonZeroU64::get)
    }

    /// What the types cannot say: the version and betas are header values, one beta a name.
    pub fn check(&self) -> Result<(), ConfigError> {
        check_header("anthropic-version", &self.version)
            .map_err(|msg| ConfigError::at("version", msg))?;
        for (i, beta) in self.beta.iter().enumerate() {
            if beta.is_empty() || beta.contains(',') {
                return Err(ConfigError::at(
                    format!("beta[{i}]"),
                    "must be one non-empty beta name",
                ));
            }
            check_header("anthropic-beta", beta)
                .map_err(|msg| ConfigError::at(format!("beta[{i}]"), msg))?;
        }
        Ok(())
    }
}
