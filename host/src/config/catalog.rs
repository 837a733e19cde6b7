//! The `catalog:` section: models that extend or replace the built-in catalog, from a file and
//! inline, in the schema of `models.yaml`. Checked when the config loads, like every other key,
//! and the source of every price the gateway uses (cost accounting, budgets, `/v1/models`).

use std::path::PathBuf;

use serde::Deserialize;

use super::config_error::ConfigError;
use crate::catalog::{Catalog, CatalogError, CatalogFile, ProviderBlock};

/// `catalog:` in the config.
///
/// ```yaml
/// catalog:
///   file: ./models.local.yaml        # the schema of the built-in models.yaml
///   providers:                       # the same schema inline; applied after the file
///     - provider: openai
///       models:
///         - {model: gpt-4o-mini, kind: chat, input_per_mtok: 0.12, output_per_mtok: 0.5}
/// ```
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CatalogConfig {
    /// A catalog file, read when the config loads (a relative path is taken from the working
    /// directory, as `plugins.dir` is).
    #[serde(default)]
    #[schemars(extend("examples" = ["./models.local.yaml"]))]
    pub file: Option<PathBuf>,
    /// Provider blocks, each with its models: a model replaces the catalog's model of the same
    /// provider and name whole, or is added.
    #[serde(default)]
    #[schemars(extend("examples" = [[{"provider": "openai", "models": [{"model": "gpt-4o-mini", "kind": "chat", "input_per_mtok": 0.15, "output_per_mtok": 0.6}]}]]))]
    pub providers: Vec<ProviderBlock>,
}

impl CatalogConfig {
    /// The built-in catalog with the file's models merged over it, then the inline ones.
    pub fn load(&self) -> Result<Catalog, ConfigError> {
        let mut catalog = Catalog::builtin().clone();
        if let Some(path) = &self.file {
            let file = Catalog::from_file(path).map_err(|e| {
                ConfigError::key("catalog.file", format!("{}: {e}", path.display()))
            })?;
            catalog = catalog.merge(&file);
        }
        if !self.providers.is_empty() {
            let inline = Catalog::try_from(CatalogFile {
                providers: self.providers.clone(),
            })
            .map_err(|e| match e {
                // The inline blocks sit under `catalog.` in the config.
                CatalogError::Key { path, message } => {
                    ConfigError::key(format!("catalog.{path}"), message)
                }
                other => ConfigError::key("catalog", other.to_string()),
            })?;
            catalog = catalog.merge(&inline);
        }
        Ok(catalog)
    }
}

/// The default of a config built without [`super::Config::from_yaml`]: the built-in catalog.
pub(super) fn builtin() -> std::sync::Arc<Catalog> {
    std::sync::Arc::new(Catalog::builtin().clone())
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    fn load(yaml: &str) -> Result<Config, String> {
        Config::from_yaml(yaml).map_err(|e| e.to_string())
    }

    /// USD per million tokens → the catalog's pico-USD per token.
    fn mtok(usd: f64) -> Option<i64> {
        Some((usd * 1e6).round() as i64)
    }

    #[test]
    fn without_a_catalog_key_the_prices_are_the_builtin_ones() {
        let config = load("{}").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            config.models.len(),
            crate::catalog::Catalog::builtin().len()
        );
    }

    #[test]
    fn inline_models_replace_and_add_and_a_file_comes_first() {
        let dir = std::env::temp_dir().join(format!("wasmgate-catalog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        let file = dir.join("models.yaml");
        std::fs::write(
            &file,
            "providers:\n  - provider: openai\n    models:\n      \
             - {model: gpt-4o-mini, kind: chat, input_per_mtok: 0.1, output_per_mtok: 0.4}\n      \
             - {model: from-file, kind: embeddings, input_per_mtok: 0.01}\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let yaml = format!(
            r#"
catalog:
  file: {}
  providers:
    - provider: openai
      models:
        - {{model: gpt-4o-mini, kind: chat, input_per_mtok: 0.2, output_per_mtok: 0.8, cached_input_per_mtok: 0.05}}
    - provider: acme
      source: our contract
      models:
        - {{model: acme-1, kind: chat, context_window: 8000, input_per_mtok: 1, output_per_mtok: 2}}
"#,
            file.display()
        );
        let config = load(&yaml).unwrap_or_else(|e| panic!("{e}"));
        let mini = config.models.lookup("openai", "gpt-4o-mini");
        // The inline entry wins over the file's, and replaces the built-in one whole.
        assert_eq!(mini.map(|m| m.prices.input), Some(mtok(0.2)));
        assert_eq!(mini.map(|m| m.prices.cached_input), Some(mtok(0.05)));
        assert!(config.models.lookup("openai", "from-file").is_some());
        assert!(config.models.lookup("acme", "acme-1").is_some());
        assert!(
            config.models.lookup("openai", "gpt-4o").is_some(),
            "the rest stays"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_provider_entry_may_name_a_catalog_provider_the_config_adds() {
        let yaml = r#"
catalog:
  providers: [{provider: acme, models: [{model: m, kind: chat}]}]
providers:
  mine: { plugin: openai, catalog: acme }
"#;
        load(yaml).unwrap_or_else(|e| panic!("{e}"));
        let e = load("providers:\n  mine: { plugin: openai, catalog: nobody }\n")
            .err()
            .unwrap_or_default();
        assert!(e.starts_with("config key `providers.mine.catalog`"), "{e}");
    }

    #[test]
    fn bad_entries_are_config_errors_naming_the_key() {
        let error = |yaml: &str| {
            load(yaml)
                .err()
                .unwrap_or_else(|| panic!("accepted: {yaml}"))
        };
        let e = error(
            "catalog: {providers: [{provider: p, models: [{model: m, kind: chat, input_per_mtok: -1}]}]}",
        );
        assert!(
            e.starts_with("config key `catalog.providers[0].models[0].input_per_mtok`"),
            "{e}"
        );
        let e = error("catalog: {providers: [{provider: p, models: [{model: m, kind: audio}]}]}");
        assert!(
            e.starts_with("config key `catalog.providers[0].models[0].kind`"),
            "{e}"
        );
        let e = error(
            "catalog: {providers: [{provider: p, models: [{model: m, kind: chat, prize: 1}]}]}",
        );
        assert!(
            e.starts_with("config key `catalog.providers[0].models[0].prize`"),
            "{e}"
        );
        let e = error("catalog: {models: []}");
        assert!(
            e.starts_with("config key `catalog.models`") && e.contains("unknown field"),
            "{e}"
        );
        let e = error("catalog: 3");
        assert!(e.starts_with("config key `catalog`"), "{e}");
        let e = error("catalog: {file: /nonexistent/wasmgate-models.yaml}");
        assert!(e.starts_with("config key `catalog.file`"), "{e}");
    }
}
