//! The model catalog: every known provider model's kind, context window, capabilities and
//! prices, built in (`models.yaml`) and extended by overrides.
//!
//! Prices are integers from load on: pico-USD per token (and per image). Published prices go
//! down to $0.0028 per million tokens (DeepSeek cache hits), 2.8 nano-USD per token, so a
//! nano-USD unit would round real prices; pico-USD holds every price quoted to six decimals
//! of a dollar per million tokens exactly. Costs come out in micro-USD.

mod cost;
mod file;
pub mod table;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, LazyLock};

use indexmap::IndexMap;
use serde::Deserialize;

pub use cost::{Metered, cost_micros, metered_cost_micros};
pub use file::{CapabilitiesEntry, CatalogFile, ModelEntry, ProviderBlock};

/// The built-in catalog's text, embedded in the binary.
pub const BUILTIN_YAML: &str = include_str!("models.yaml");

static BUILTIN: LazyLock<Catalog> = LazyLock::new(|| {
    Catalog::from_yaml(BUILTIN_YAML).unwrap_or_else(|e| {
        // A unit test parses the embedded file, so this is not reached in a tested build.
        tracing::error!("the built-in model catalog does not load: {e}");
        Catalog::default()
    })
});

/// Why a catalog could not be loaded. Each variant names the file or key at fault.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("cannot read catalog file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("catalog is not valid YAML: {0}")]
    Yaml(String),
    #[error("catalog key `{path}`: {message}")]
    Key { path: String, message: String },
}

impl CatalogError {
    pub(crate) fn key(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Key {
            path: path.into(),
            message: message.into(),
        }
    }
}

/// What a model is for, which decides the endpoint that serves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Chat,
    Embeddings,
    Images,
    // Plain comments on these: a doc comment would turn the schema's list of values into
    // described alternatives. Moderation classifiers (`/v1/moderations`); rerankers
    // (`/v1/rerank`), per search or per token; speech to text (`/v1/audio/transcriptions` and
    // `translations`), per minute or per token; text to speech (`/v1/audio/speech`), per
    // character or per token.
    Moderation,
    Rerank,
    Transcription,
    Speech,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Self::Chat => "chat",
            Self::Embeddings => "embeddings",
            Self::Images => "images",
            Self::Moderation => "moderation",
            Self::Rerank => "rerank",
            Self::Transcription => "transcription",
            Self::Speech => "speech",
        }
    }
}

impl FromStr for Kind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "chat" => Ok(Self::Chat),
            "embeddings" | "embedding" => Ok(Self::Embeddings),
            "images" | "image" => Ok(Self::Images),
            "moderation" => Ok(Self::Moderation),
            "rerank" => Ok(Self::Rerank),
            "transcription" => Ok(Self::Transcription),
            "speech" => Ok(Self::Speech),
            other => Err(format!(
                "unknown kind `{other}` (expected chat, embeddings, images, moderation, rerank, \
                 transcription or speech)"
            )),
        }
    }
}

/// What a model accepts beyond plain text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Capabilities {
    /// Function calling.
    pub tools: bool,
    /// Image input.
    pub vision: bool,
    /// Structured output (`response_format`).
    pub json_mode: bool,
}

/// A model's prices in pico-USD (10^-12 USD); `None` where no public price was found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Prices {
    /// Per prompt token not served from a cache.
    pub input: Option<i64>,
    /// Per completion token (reasoning tokens included).
    pub output: Option<i64>,
    /// Per prompt token served from the provider's prompt cache.
    pub cached_input: Option<i64>,
    /// Per prompt token written to the prompt cache.
    pub cache_write: Option<i64>,
    /// Per generated image.
    pub per_image: Option<i64>,
    /// Per search unit (Cohere's rerank: one query over up to 100 documents).
    pub per_search_unit: Option<i64>,
    /// Per second of audio transcribed (billed rounded to the nearest second).
    pub per_audio_second: Option<i64>,
    /// Per character of text spoken.
    pub per_character: Option<i64>,
    /// Per prompt token, per completion token and per cached prompt token of a request run
    /// through the provider's Batch API; `None` where the catalog knows no batch price.
    pub batch_input: Option<i64>,
    pub batch_output: Option<i64>,
    pub batch_cached_input: Option<i64>,
}

/// One model of the catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelInfo {
    pub provider: String,
    /// The name the provider's API takes.
    pub model: String,
    pub kind: Kind,
    /// Tokens of context the model accepts, where known.
    pub context_window: Option<u64>,
    pub capabilities: Capabilities,
    pub prices: Prices,
}

impl ModelInfo {
    /// This model as its batch requests are billed: the batch prices in place of the input,
    /// output and cached-input ones. `None` when the catalog knows no batch price for it.
    pub fn at_batch_price(&self) -> Option<ModelInfo> {
        let p = self.prices;
        let (input, output) = (p.batch_input?, p.batch_output?);
        let mut info = self.clone();
        info.prices.input = Some(input);
        info.prices.output = Some(output);
        info.prices.cached_input = p.batch_cached_input.or(Some(input));
        Some(info)
    }

    /// Whether the catalog knows what this model's tokens (or images) cost.
    pub fn is_priced(&self) -> bool {
        match self.kind {
            Kind::Chat => self.prices.input.is_some() && self.prices.output.is_some(),
            Kind::Embeddings => self.prices.input.is_some(),
            Kind::Images => self.prices.per_image.is_some(),
            Kind::Moderation => self.prices.input.is_some(),
            Kind::Rerank => self.prices.per_search_unit.is_some() || self.prices.input.is_some(),
            Kind::Transcription => {
                self.prices.per_audio_second.is_some() || self.prices.input.is_some()
            }
            Kind::Speech => self.prices.per_character.is_some() || self.prices.input.is_some(),
        }
    }
}

#[derive(Debug, Clone, Default)]
struct ProviderModels {
    source: Option<String>,
    /// Shared, so that a request can hold its model's prices past a config reload without
    /// copying them, and merging catalogs copies no model.
    models: IndexMap<String, Arc<ModelInfo>>,
}

/// Models by provider, in the order the catalog lists them.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    providers: IndexMap<String, ProviderModels>,
}

impl Catalog {
    /// The catalog built into the binary, parsed on first use.
    pub fn builtin() -> &'static Catalog {
        &BUILTIN
    }

    /// Parses a catalog file's text (the schema of `models.yaml`).
    pub fn from_yaml(text: &str) -> Result<Self, CatalogError> {
        let value: serde_yaml::Value =
            serde_yaml::from_str(text).map_err(|e| CatalogError::Yaml(e.to_string()))?;
        if value.is_null() {
            return Ok(Self::default());
        }
        let file: CatalogFile = serde_path_to_error::deserialize(value).map_err(|e| {
            let path = e.path().to_string();
            CatalogError::key(path, e.into_inner().to_string())
        })?;
        Self::try_from(file)
    }

    pub fn from_file(path: &Path) -> Result<Self, CatalogError> {
        let text = std::fs::read_to_string(path).map_err(|source| CatalogError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::from_yaml(&text)
    }

    /// This catalog with `overrides` applied: an override replaces the model with the same
    /// provider and name, or adds it; a provider's source is replaced when the override has one.
    pub fn merge(&self, overrides: &Catalog) -> Catalog {
        let mut merged = self.clone();
        for (name, theirs) in &overrides.providers {
            let ours = merged.providers.entry(name.clone()).or_default();
            if theirs.source.is_some() {
                ours.source.clone_from(&theirs.source);
            }
            for (model, info) in &theirs.models {
                ours.models.insert(model.clone(), Arc::clone(info));
            }
        }
        merged
    }

    pub fn lookup(&self, provider: &str, model: &str) -> Option<&ModelInfo> {
        self.shared(provider, model).map(|info| &**info)
    }

    /// [`Catalog::lookup`], as a handle that outlives the catalog.
    pub fn shared(&self, provider: &str, model: &str) -> Option<&Arc<ModelInfo>> {
        self.providers.get(provider)?.models.get(model)
    }

    /// Every model, grouped by provider.
    pub fn models(&self) -> impl Iterator<Item = &ModelInfo> {
        self.providers
            .values()
            .flat_map(|p| p.models.values().map(|info| &**info))
    }

    /// The names of `provider`'s models, in catalog order; none for an unknown provider.
    pub fn model_names(&self, provider: &str) -> impl Iterator<Item = &str> {
        self.providers
            .get(provider)
            .into_iter()
            .flat_map(|p| p.models.keys().map(String::as_str))
    }

    /// Each provider's name and the source of its prices.
    pub fn providers(&self) -> impl Iterator<Item = (&str, Option<&str>)> {
        self.providers
            .iter()
            .map(|(name, p)| (name.as_str(), p.source.as_deref()))
    }

    pub fn has_provider(&self, provider: &str) -> bool {
        self.providers.contains_key(provider)
    }

    /// How many models the catalog holds.
    pub fn len(&self) -> usize {
        self.providers.values().map(|p| p.models.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
