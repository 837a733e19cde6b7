//! Built-in provider presets (`presets.yaml`): ready entries for the OpenAI-compatible hosts.
//! `providers: { groq: { preset: groq } }` is expanded, before the entry is read, into the
//! preset's plugin, base URL, catalog provider, options and model list; every key the entry sets
//! itself wins, and `options` are merged key by key.

use std::sync::LazyLock;

use indexmap::IndexMap;
use serde::Deserialize;
use serde_yaml::{Mapping, Value};

use super::config_error::ConfigError;
use crate::catalog::Catalog;

/// The presets' text, embedded in the binary.
pub const PRESETS_YAML: &str = include_str!("presets.yaml");

static PRESETS: LazyLock<IndexMap<String, Preset>> = LazyLock::new(|| {
    serde_yaml::from_str(PRESETS_YAML).unwrap_or_else(|e| {
        // A unit test parses the embedded file, so this is not reached in a tested build.
        tracing::error!("the built-in provider presets do not load: {e}");
        IndexMap::new()
    })
});

/// One preset of `presets.yaml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Preset {
    /// The host's name, for people.
    pub name: String,
    /// Where the host documents its base URL and authentication.
    pub docs: String,
    pub plugin: String,
    pub base_url: String,
    /// The catalog provider whose prices apply and, unless `passthrough`, whose models the entry
    /// serves.
    pub catalog: String,
    /// Any model name passes through (local servers serve whatever is installed).
    #[serde(default)]
    pub passthrough: bool,
    /// Plugin options: how the key is sent.
    #[serde(default)]
    pub options: Mapping,
}

/// Every preset, by the name `preset:` takes.
pub fn presets() -> &'static IndexMap<String, Preset> {
    &PRESETS
}

impl Preset {
    /// Fills the keys `entry` leaves out. The model list is the catalog's (built-in and
    /// overrides) for the preset's provider, as it stands when the config loads.
    fn apply(&self, entry: &mut Mapping, catalog: &Catalog) {
        let mut fill = |key: &str, value: Value| {
            let key = Value::from(key);
            if !entry.contains_key(&key) {
                entry.insert(key, value);
            }
        };
        fill("plugin", Value::from(self.plugin.as_str()));
        fill("base_url", Value::from(self.base_url.as_str()));
        fill("catalog", Value::from(self.catalog.as_str()));
        if !self.passthrough {
            let models = catalog
                .model_names(&self.catalog)
                .map(Value::from)
                .collect();
            fill("models", Value::Sequence(models));
        }
        let key = Value::from("options");
        match entry.get_mut(&key) {
            Some(Value::Mapping(options)) => {
                for (name, value) in &self.options {
                    if !options.contains_key(name) {
                        options.insert(name.clone(), value.clone());
                    }
                }
            }
            // Not a mapping: the typed reading of the entry reports it.
            Some(_) => {}
            None if self.options.is_empty() => {}
            None => {
                entry.insert(key, Value::Mapping(self.options.clone()));
            }
        }
    }
}

/// Expands every `providers.<name>.preset` of the config `root`, in place.
pub fn expand(root: &mut Value, catalog: &Catalog) -> Result<(), ConfigError> {
    let Some(providers) = root.get_mut("providers").and_then(Value::as_mapping_mut) else {
        return Ok(());
    };
    for (name, entry) in providers.iter_mut() {
        let Some(entry) = entry.as_mapping_mut() else {
            continue;
        };
        let Some(preset) = entry.get("preset") else {
            continue;
        };
        let at = format!("providers.{}.preset", name.as_str().unwrap_or_default());
        let Some(preset) = preset.as_str() else {
            return Err(ConfigError::key(at, "must be the name of a preset"));
        };
        let Some(found) = presets().get(preset) else {
            let known: Vec<&str> = presets().keys().map(String::as_str).collect();
            return Err(ConfigError::key(
                at,
                format!("unknown preset `{preset}` (known: {})", known.join(", ")),
            ));
        };
        found.apply(entry, catalog);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_presets_parse_and_name_known_plugins_and_catalog_providers() {
        let parsed: IndexMap<String, Preset> =
            serde_yaml::from_str(PRESETS_YAML).unwrap_or_else(|e| panic!("presets.yaml: {e}"));
        let expected = [
            "groq",
            "mistral",
            "deepseek",
            "together",
            "fireworks",
            "openrouter",
            "xai",
            "perplexity",
            "deepinfra",
            "cerebras",
            "ollama",
            "vllm",
            "lmstudio",
        ];
        assert_eq!(
            parsed.keys().map(String::as_str).collect::<Vec<_>>(),
            expected
        );
        assert_eq!(presets().len(), expected.len());
        for (name, preset) in &parsed {
            assert_eq!(preset.plugin, "openai", "{name}");
            assert!(
                preset.base_url.starts_with("https://")
                    || (preset.passthrough && preset.base_url.starts_with("http://127.0.0.1:")),
                "{name}: {}",
                preset.base_url
            );
            assert!(
                Catalog::builtin().has_provider(&preset.catalog),
                "{name}: no catalog provider `{}`",
                preset.catalog
            );
            assert!(preset.docs.starts_with("https://"), "{name}");
        }
    }

    fn load(yaml: &str) -> Result<crate::config::Config, String> {
        crate::config::Config::from_yaml(yaml).map_err(|e| e.to_string())
    }

    #[test]
    fn a_preset_fills_in_plugin_base_url_catalog_options_and_the_catalogs_models() {
        let config = load("providers:\n  groq: { preset: groq, api_key: gsk-test }\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let groq = &config.providers["groq"];
        assert_eq!(groq.preset.as_deref(), Some("groq"));
        assert_eq!(groq.plugin, "openai");
        assert_eq!(
            groq.base_url.as_deref(),
            Some("https://api.groq.com/openai/v1")
        );
        assert_eq!(groq.catalog.as_deref(), Some("groq"));
        assert_eq!(groq.options["auth_header"], "authorization");
        assert_eq!(groq.api_key.as_ref().map(|k| k.expose()), Some("gsk-test"));
        let catalog: Vec<&str> = Catalog::builtin().model_names("groq").collect();
        assert!(catalog.contains(&"llama-3.1-8b-instant"));
        assert_eq!(groq.models, catalog);
    }

    #[test]
    fn every_preset_loads_as_a_valid_entry_without_a_key() {
        let mut yaml = String::from("providers:\n");
        for name in presets().keys() {
            // Named apart from the preset, so the catalog provider comes from the preset.
            yaml.push_str(&format!("  my-{name}: {{ preset: {name} }}\n"));
        }
        let config = load(&yaml).unwrap_or_else(|e| panic!("{e}"));
        for (name, preset) in presets() {
            let entry = &config.providers[&format!("my-{name}")];
            assert_eq!(entry.catalog.as_deref(), Some(preset.catalog.as_str()));
            assert!(entry.api_key.is_none(), "{name}");
            assert_eq!(entry.models.is_empty(), preset.passthrough, "{name}");
        }
    }

    #[test]
    fn keys_the_entry_sets_win_and_options_merge_key_by_key() {
        let config = load(
            r#"
providers:
  fast:
    preset: groq
    base_url: http://127.0.0.1:9999/v1
    models: [my-model]
    timeout_ms: 1234
    options: { headers: { x-team: a } }
  local:
    preset: ollama
    models: [llama3.2]
"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let fast = &config.providers["fast"];
        assert_eq!(fast.base_url.as_deref(), Some("http://127.0.0.1:9999/v1"));
        assert_eq!(fast.models, ["my-model"]);
        assert_eq!(fast.timeout_ms, 1234);
        assert_eq!(fast.options["headers"]["x-team"], "a");
        assert_eq!(fast.options["auth_header"], "authorization");
        assert_eq!(fast.catalog.as_deref(), Some("groq"));
        assert_eq!(config.providers["local"].models, ["llama3.2"]);
    }

    #[test]
    fn catalog_models_added_in_the_config_join_the_presets_model_list() {
        let config = load(
            r#"
catalog:
  providers:
    - provider: groq
      models: [{model: brand-new, kind: chat, input_per_mtok: 1, output_per_mtok: 2}]
providers:
  groq: { preset: groq }
"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            config.providers["groq"]
                .models
                .iter()
                .any(|m| m == "brand-new")
        );
    }

    #[test]
    fn an_unknown_or_mistyped_preset_is_named_by_its_key() {
        let e = load("providers:\n  x: { preset: grok }\n")
            .err()
            .unwrap_or_default();
        assert!(e.starts_with("config key `providers.x.preset`"), "{e}");
        assert!(e.contains("grok") && e.contains("groq"), "{e}");
        let e = load("providers:\n  x: { preset: [groq] }\n")
            .err()
            .unwrap_or_default();
        assert!(e.starts_with("config key `providers.x.preset`"), "{e}");
        // An entry without a preset still needs its plugin.
        let e = load("providers:\n  x: { base_url: 'http://a' }\n")
            .err()
            .unwrap_or_default();
        assert!(e.contains("providers.x") && e.contains("plugin"), "{e}");
    }
}
