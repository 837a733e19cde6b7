//! The entry's `base_url` and `options`, checked once at start-up and re-read per request.

use std::collections::BTreeMap;

use serde::Deserialize;
use wasmgate_plugin_sdk::http::{is_http_url, join_url, path_segment};
use wasmgate_plugin_sdk::{ConfigError, PluginError, ProviderConfig};

/// The latest generally available inference API version when this was written.
const DEFAULT_API_VERSION: &str = "2024-10-21";

/// The `options:` of an entry, as written in the config.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {
    /// The `api-version` query parameter.
    api_version: Option<String>,
    /// Model name -> deployment name, for deployments not named after their model.
    #[serde(default)]
    deployments: BTreeMap<String, String>,
    /// Whether the resource serves the Responses API (`/openai/v1/responses`); `native` by
    /// default, `translate` for a region or resource that does not.
    responses: Option<ResponsesMode>,
}

/// How Responses requests reach this entry.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ResponsesMode {
    /// Passed through to the v1 API's `/openai/v1/responses`.
    Native,
    /// Translated into chat completions by the host's Responses dialect.
    Translate,
}

/// An entry's settings, known to be usable.
pub struct Settings {
    /// The resource endpoint, e.g. `https://my-resource.openai.azure.com`.
    base_url: String,
    api_version: String,
    deployments: BTreeMap<String, String>,
    pub responses: ResponsesMode,
}

impl Settings {
    pub fn from_config(config: &ProviderConfig) -> Result<Self, ConfigError> {
        // Every Azure resource has its own endpoint: there is no default.
        let base_url = config.base_url.as_deref().ok_or_else(|| {
            ConfigError::at(
                "base_url",
                "is required: the resource endpoint, e.g. https://my-resource.openai.azure.com",
            )
        })?;
        if !is_http_url(base_url) {
            return Err(ConfigError::at(
                "base_url",
                "must be an absolute http:// or https:// URL",
            ));
        }
        let options: Options = wasmgate_plugin_sdk::options(config)?;
        let api_version = options
            .api_version
            .unwrap_or_else(|| DEFAULT_API_VERSION.to_owned());
        if api_version.is_empty() || !api_version.chars().all(is_name_char) {
            return Err(ConfigError::at(
                "api_version",
                "must look like 2024-10-21 or 2025-01-01-preview",
            ));
        }
        for (model, deployment) in &options.deployments {
            if !is_deployment_name(deployment) {
                return Err(ConfigError::at(
                    format!("deployments.{model}"),
                    "a deployment name has only letters, digits, `-`, `_` and `.`",
                ));
            }
        }
        Ok(Settings {
            base_url: base_url.to_owned(),
            api_version,
            deployments: options.deployments,
            responses: options.responses.unwrap_or(ResponsesMode::Native),
        })
    }

    /// The deployment that serves `model`: its mapping, else the model's own name, checked to be
    /// a name Azure would take.
    pub fn deployment<'a>(&'a self, model: &'a str) -> Result<&'a str, PluginError> {
        let deployment = self.deployments.get(model).map_or(model, String::as_str);
        if is_deployment_name(deployment) {
            Ok(deployment)
        } else {
            Err(PluginError::invalid_request(format!(
                "`{model}` is not a valid Azure deployment name; map it to one with the \
                 `deployments` option"
            ))
            .with_param("model"))
        }
    }

    /// The URL of the v1 API's Responses endpoint. The v1 API takes the deployment from the
    /// body's `model` and needs no `api-version`.
    pub fn responses_url(&self) -> String {
        join_url(&self.base_url, "openai/v1/responses")
    }

    /// The URL of `path` (e.g. `chat/completions`) on the deployment that serves `model`.
    pub fn url(&self, model: &str, path: &str) -> Result<String, PluginError> {
        // The name goes into the URL path: refuse anything Azure would not take as a name, and
        // escape what is left as one segment all the same.
        let deployment = self.deployment(model)?;
        let Some(deployment) = path_segment(deployment) else {
            return Err(PluginError::invalid_request(format!(
                "`{model}` is not a valid Azure deployment name"
            ))
            .with_param("model"));
        };
        let endpoint = format!("openai/deployments/{deployment}/{path}");
        Ok(format!(
            "{}?api-version={}",
            join_url(&self.base_url, &endpoint),
            self.api_version
        ))
    }

    /// The URL of `path` (`files`, `batches/{id}`) on the resource's data plane, outside any
    /// deployment: where the Files and Batch APIs are.
    pub fn resource_url(&self, path: &str) -> String {
        format!(
            "{}?api-version={}",
            join_url(&self.base_url, &format!("openai/{path}")),
            self.api_version
        )
    }

    /// The model names of the `deployments` option.
    pub fn model_names(&self) -> impl Iterator<Item = &str> {
        self.deployments.keys().map(String::as_str)
    }
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')
}

fn is_deployment_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(is_name_char) && name != "." && name != ".."
}
