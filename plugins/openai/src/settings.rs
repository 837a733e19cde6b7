//! The entry's `base_url` and `options`, checked once at start-up and re-read per request.

use std::collections::BTreeMap;

use serde::Deserialize;
use wasmgate_plugin_sdk::http::{check_header, is_http_url};
use wasmgate_plugin_sdk::{ConfigError, HttpRequest, ProviderConfig};

const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// OpenAI's own API, which serves Responses; compatible hosts mostly do not.
const OPENAI_HOST: &str = "api.openai.com";

/// How Responses requests reach this entry.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ResponsesMode {
    /// Passed through to `{base_url}/responses` as the client wrote them.
    Native,
    /// Translated into chat completions by the host's Responses dialect.
    Translate,
}

/// The `options:` of an entry, as written in the config.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {
    /// Sent as `OpenAI-Organization`.
    organization: Option<String>,
    /// Sent as `OpenAI-Project`.
    project: Option<String>,
    /// Extra headers for every request; they win over the plugin's own.
    #[serde(default)]
    headers: BTreeMap<String, String>,
    /// The header that carries the API key. `authorization` (the default) sends `Bearer <key>`;
    /// any other name sends the bare key, as Azure's `api-key` wants.
    auth_header: Option<String>,
    /// Whether the upstream serves the Responses API itself. Default: `native` for OpenAI's
    /// own base URL, `translate` for any other (most compatible hosts have no `/responses`).
    responses: Option<ResponsesMode>,
    /// Whether the upstream runs OpenAI's Files and Batch APIs. Default: yes for OpenAI's own
    /// base URL, no for any other.
    batches: Option<bool>,
}

/// An entry's settings, known to be usable.
pub struct Settings {
    pub base_url: String,
    pub responses: ResponsesMode,
    /// The upstream runs OpenAI's Files and Batch APIs.
    pub batches: bool,
    auth_header: String,
    /// Headers sent with every request, the organization and project first.
    headers: Vec<(String, String)>,
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

        let auth_header = options
            .auth_header
            .unwrap_or_else(|| "authorization".to_owned())
            .to_ascii_lowercase();
        check_header(&auth_header, "").map_err(|msg| ConfigError::at("auth_header", msg))?;

        let mut headers = Vec::new();
        let named = [
            ("organization", "openai-organization", options.organization),
            ("project", "openai-project", options.project),
        ];
        for (key, name, value) in named {
            if let Some(value) = value {
                check_header(name, &value).map_err(|msg| ConfigError::at(key, msg))?;
                headers.push((name.to_owned(), value));
            }
        }
        for (name, value) in options.headers {
            check_header(&name, &value)
                .map_err(|msg| ConfigError::at(format!("headers.{name}"), msg))?;
            headers.push((name, value));
        }

        let responses = options.responses.unwrap_or(if is_openai(base_url) {
            ResponsesMode::Native
        } else {
            ResponsesMode::Translate
        });

        Ok(Settings {
            base_url: base_url.to_owned(),
            responses,
            batches: options.batches.unwrap_or(is_openai(base_url)),
            auth_header,
            headers,
        })
    }

    /// Adds the key (when the entry has one) and the configured headers to `request`.
    pub fn apply_headers(&self, request: &mut HttpRequest, api_key: Option<&str>) {
        if let Some(key) = api_key.filter(|k| !k.is_empty()) {
            let value = if self.auth_header == "authorization" {
                format!("Bearer {key}")
            } else {
                key.to_owned()
            };
            request.set_header(self.auth_header.as_str(), value);
        }
        for (name, value) in &self.headers {
            request.set_header(name.as_str(), value.as_str());
        }
    }
}

/// Whether `base_url` is OpenAI's own API (`https://api.openai.com/...`).
fn is_openai(base_url: &str) -> bool {
    let rest = base_url.strip_prefix("https://").unwrap_or_default();
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    host.eq_ignore_ascii_case(OPENAI_HOST)
}
