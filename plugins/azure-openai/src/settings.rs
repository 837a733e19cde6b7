//! The entry's `options`, which the SDK reads into [`Settings`] for each call, and the URLs of
//! a resource's deployments.

use std::collections::BTreeMap;

use serde::Deserialize;
use wasmgate_plugin_sdk::http::{join_url, path_segment};
use wasmgate_plugin_sdk::{ConfigError, PluginError};

/// How Responses requests reach this entry.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ResponsesMode {
    /// Passed through to the v1 API's `/openai/v1/responses`.
    Native,
    /// Translated into chat completions by the host's Responses dialect.
    Translate,
}

/// The `options:` of an entry.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// The `api-version` query parameter.
    #[serde(default = "default_api_version")]
    api_version: String,
    /// Model name -> deployment name, for deployments not named after their model.
    #[serde(default)]
    deployments: BTreeMap<String, String>,
    /// Whether the resource serves the Responses API (`/openai/v1/responses`); `native` by
    /// default, `translate` for a region or resource that does not.
    #[serde(default = "native")]
    pub responses: ResponsesMode,
}

/// The latest generally available inference API version when this was written.
fn default_api_version() -> String {
    "2024-10-21".to_owned()
}

fn native() -> ResponsesMode {
    ResponsesMode::Native
}

impl Settings {
    /// What the types cannot say: the API version and deployments are names Azure takes.
    pub fn check(&self) -> Result<(), ConfigError> {
        if self.api_version.is_empty() || !self.api_version.chars().all(is_name_char) {
            return Err(ConfigError::at(
                "api_version",
                "must look like 2024-10-21 or 2025-01-01-preview",
            ));
        }
        for (model, deployment) in &self.deployments {
            if !is_deployment_name(deployment) {
                return Err(ConfigError::at(
                    format!("deployments.{model}"),
                    "a deployment name has only letters, digits, `-`, `_` and `.`",
                ));
            }
        }
        Ok(())
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

    /// The URL of `path` (e.g. `chat/completions`) on the deployment that serves `model`.
    pub fn url(&self, base_url: &str, model: &str, path: &str) -> Result<String, PluginError> {
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
            join_url(base_url, &endpoint),
            self.api_version
        ))
    }

    /// The URL of `path` (`files`, `batches/{id}`) on the resource's data plane, outside any
    /// deployment: where the Files and Batch APIs are.
    pub fn resource_url(&self, base_url: &str, path: &str) -> String {
        format!(
            "{}?api-version={}",
            join_url(base_url, &format!("openai/{path}")),
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
