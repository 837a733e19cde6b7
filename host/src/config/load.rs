//! A config read from YAML text or a file: `${VAR}` interpolation, the catalog, presets, typed
//! deserialisation, then validation.

use std::path::Path;
use std::sync::Arc;

use super::catalog::CatalogConfig;
use super::config_error::ConfigError;
use super::config_file::Config;
use super::{interpolate, presets};

/// The `catalog:` section alone, its errors named from the config's root.
fn catalog_section(section: serde_yaml::Value) -> Result<CatalogConfig, ConfigError> {
    if section.is_null() {
        return Ok(CatalogConfig::default());
    }
    serde_path_to_error::deserialize(section).map_err(|e| {
        let path = match e.path().to_string() {
            root if root == "." => "catalog".to_owned(),
            path => format!("catalog.{path}"),
        };
        ConfigError::key(path, e.into_inner().to_string())
    })
}

impl Config {
    /// Parses YAML text: `${VAR}` interpolation, then typed deserialisation, then validation.
    pub fn from_yaml(text: &str) -> Result<Self, ConfigError> {
        let mut value: serde_yaml::Value =
            serde_yaml::from_str(text).map_err(|e| ConfigError::Yaml(e.to_string()))?;
        if value.is_null() {
            value = serde_yaml::Value::Mapping(Default::default());
        }
        interpolate::interpolate(&mut value, &mut Vec::new(), &|name| {
            std::env::var(name).ok()
        })?;
        // The catalog first: presets list its models, and it may add some.
        let section = value.get("catalog").cloned().unwrap_or_default();
        let models = Arc::new(catalog_section(section)?.load()?);
        presets::expand(&mut value, &models)?;
        let mut config: Config = serde_path_to_error::deserialize(value).map_err(|e| {
            let path = e.path().to_string();
            ConfigError::key(path, e.into_inner().to_string())
        })?;
        config.models = models;
        config.validate()?;
        Ok(config)
    }

    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|cause| ConfigError::Read {
            path: path.to_owned(),
            cause,
        })?;
        Self::from_yaml(&text)
    }
}
