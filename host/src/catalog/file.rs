//! The catalog's file format (`models.yaml`, override files, a config section) and its
//! conversion into the typed [`Catalog`], which rejects what could not be billed correctly.

use indexmap::IndexMap;
use serde::Deserialize;

use super::by_provider::{Catalog, ProviderModels};
use super::catalog_error::CatalogError;
use super::model_info::{Capabilities, Kind, ModelInfo, Prices};

/// A whole catalog file: provider blocks, each with its models.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CatalogFile {
    #[serde(default)]
    pub providers: Vec<ProviderBlock>,
}

/// One provider's models and where their prices were read.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProviderBlock {
    /// The provider's name, as `provider/model` ids use it (`openai`, `bedrock`, ...).
    #[schemars(extend("examples" = ["azure-openai"]))]
    pub provider: String,
    /// Where the prices come from and when they were read; required in the built-in catalog.
    #[serde(default)]
    #[schemars(extend("examples" = ["our negotiated rate, 2026-11"]))]
    pub source: Option<String>,
    /// What a request sent through the provider's Batch API costs, as a fraction of the model's
    /// price (OpenAI's and Azure's batches: 0.5), for the models that give no batch price of
    /// their own.
    #[serde(default)]
    #[schemars(extend("examples" = [0.5]))]
    pub batch_discount: Option<f64>,
    /// The provider's models: each replaces the catalog's model of that name, or is added.
    #[serde(default)]
    pub models: Vec<ModelEntry>,
}

/// One model, prices in USD as providers publish them.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelEntry {
    /// The name the provider's API takes.
    #[schemars(extend("examples" = ["gpt-4o-mini"]))]
    pub model: String,
    /// What the model is for: `chat`, `embeddings` or `images`.
    pub kind: Kind,
    /// Tokens of prompt and answer together, at most.
    #[serde(default)]
    #[schemars(extend("examples" = [128000]))]
    pub context_window: Option<u64>,
    /// What the model can do, as `/v1/models` reports it.
    #[serde(default)]
    pub capabilities: CapabilitiesEntry,
    /// USD per million prompt tokens not served from a cache.
    #[serde(default)]
    #[schemars(extend("examples" = [0.15]))]
    pub input_per_mtok: Option<f64>,
    /// USD per million completion tokens.
    #[serde(default)]
    #[schemars(extend("examples" = [0.6]))]
    pub output_per_mtok: Option<f64>,
    /// USD per million prompt tokens served from the prompt cache.
    #[serde(default)]
    #[schemars(extend("examples" = [0.075]))]
    pub cached_input_per_mtok: Option<f64>,
    /// USD per million prompt tokens written to the prompt cache.
    #[serde(default)]
    #[schemars(extend("examples" = [3.75]))]
    pub cache_write_per_mtok: Option<f64>,
    /// USD per generated image.
    #[serde(default)]
    #[schemars(extend("examples" = [0.04]))]
    pub per_image: Option<f64>,
    /// USD per thousand searches (rerank search units), as Cohere publishes it.
    #[serde(default)]
    #[schemars(extend("examples" = [2.0]))]
    pub per_1k_searches: Option<f64>,
    /// USD per minute of audio transcribed, as OpenAI publishes Whisper's price; billed per
    /// second, rounded to the nearest.
    #[serde(default)]
    #[schemars(extend("examples" = [0.006]))]
    pub per_audio_minute: Option<f64>,
    /// USD per million characters of text spoken (text-to-speech).
    #[serde(default)]
    #[schemars(extend("examples" = [15.0]))]
    pub per_mchar: Option<f64>,
    /// USD per million audio prompt tokens not served from a cache (a realtime model's).
    #[serde(default)]
    #[schemars(extend("examples" = [32.0]))]
    pub audio_input_per_mtok: Option<f64>,
    /// USD per million audio prompt tokens served from the prompt cache.
    #[serde(default)]
    #[schemars(extend("examples" = [0.4]))]
    pub cached_audio_input_per_mtok: Option<f64>,
    /// USD per million audio completion tokens.
    #[serde(default)]
    #[schemars(extend("examples" = [64.0]))]
    pub audio_output_per_mtok: Option<f64>,
    /// USD per million prompt tokens of a batch request, where it is not the provider's
    /// `batch_discount` of `input_per_mtok`.
    #[serde(default)]
    #[schemars(extend("examples" = [0.075]))]
    pub batch_input_per_mtok: Option<f64>,
    /// USD per million completion tokens of a batch request, likewise.
    #[serde(default)]
    #[schemars(extend("examples" = [0.3]))]
    pub batch_output_per_mtok: Option<f64>,
}

/// Capabilities; any left out is false.
#[derive(Debug, Clone, Copy, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CapabilitiesEntry {
    /// It takes tools (function calling).
    #[serde(default)]
    pub tools: bool,
    /// It takes images in the prompt.
    #[serde(default)]
    pub vision: bool,
    /// It can be held to answering JSON (`response_format`).
    #[serde(default)]
    pub json_mode: bool,
}

/// The most a catalog price may be: far above any real one, and small enough that token
/// counts times prices cannot overflow.
const MAX_USD: f64 = 1_000_000.0;

/// USD per million tokens → pico-USD per token (1 USD/Mtok = 10^6 pico-USD/token).
fn per_mtok_to_pico(usd: f64) -> Option<i64> {
    usd_to_pico(usd, 1e6)
}

/// USD → pico-USD.
fn per_unit_to_pico(usd: f64) -> Option<i64> {
    usd_to_pico(usd, 1e12)
}

/// USD per thousand → pico-USD per one.
fn per_thousand_to_pico(usd: f64) -> Option<i64> {
    usd_to_pico(usd, 1e9)
}

/// USD per minute → pico-USD per second.
fn per_minute_to_pico_per_second(usd: f64) -> Option<i64> {
    usd_to_pico(usd, 1e12 / 60.0)
}

fn usd_to_pico(usd: f64, scale: f64) -> Option<i64> {
    if !usd.is_finite() || !(0.0..=MAX_USD).contains(&usd) {
        return None;
    }
    // Finite and at most 10^18, so the cast is exact in range; rounding absorbs binary-fraction
    // noise (0.0028 * 1e6 = 2800.0000000000005).
    Some((usd * scale).round() as i64)
}

fn check_name(value: &str, at: impl FnOnce() -> String, what: &str) -> Result<(), CatalogError> {
    if value.trim().is_empty() || value.contains(char::is_whitespace) {
        return Err(CatalogError::key(
            at(),
            format!("{what} must be non-empty, without spaces"),
        ));
    }
    Ok(())
}

impl TryFrom<CatalogFile> for Catalog {
    type Error = CatalogError;

    fn try_from(file: CatalogFile) -> Result<Self, Self::Error> {
        let mut providers: IndexMap<String, ProviderModels> = IndexMap::new();
        for (b, block) in file.providers.into_iter().enumerate() {
            let at = |key: &str| format!("providers[{b}].{key}");
            check_name(&block.provider, || at("provider"), "a provider name")?;
            if block.provider.contains('/') {
                return Err(CatalogError::key(at("provider"), "must not contain `/`"));
            }
            if providers.contains_key(&block.provider) {
                return Err(CatalogError::key(
                    at("provider"),
                    format!("provider `{}` has an earlier block", block.provider),
                ));
            }
            if let Some(d) = block.batch_discount
                && !(d.is_finite() && (0.0..=1.0).contains(&d))
            {
                return Err(CatalogError::key(
                    at("batch_discount"),
                    "must be a fraction from 0 to 1",
                ));
            }
            let mut models = IndexMap::new();
            for (m, entry) in block.models.into_iter().enumerate() {
                let at = |key: &str| format!("providers[{b}].models[{m}].{key}");
                check_name(&entry.model, || at("model"), "a model name")?;
                if models.contains_key(&entry.model) {
                    return Err(CatalogError::key(
                        at("model"),
                        format!("`{}/{}` is listed twice", block.provider, entry.model),
                    ));
                }
                let info = model_info(&block.provider, entry, block.batch_discount, &at)?;
                models.insert(info.model.clone(), std::sync::Arc::new(info));
            }
            providers.insert(
                block.provider,
                ProviderModels {
                    source: block.source.filter(|s| !s.trim().is_empty()),
                    models,
                },
            );
        }
        Ok(Catalog { providers })
    }
}

fn model_info(
    provider: &str,
    entry: ModelEntry,
    batch_discount: Option<f64>,
    at: &dyn Fn(&str) -> String,
) -> Result<ModelInfo, CatalogError> {
    let price = |value: Option<f64>, key: &str, convert: fn(f64) -> Option<i64>| {
        value
            .map(|usd| {
                convert(usd).ok_or_else(|| {
                    CatalogError::key(at(key), format!("must be a price between 0 and {MAX_USD}"))
                })
            })
            .transpose()
    };
    let prices = Prices {
        input: price(entry.input_per_mtok, "input_per_mtok", per_mtok_to_pico)?,
        output: price(entry.output_per_mtok, "output_per_mtok", per_mtok_to_pico)?,
        cached_input: price(
            entry.cached_input_per_mtok,
            "cached_input_per_mtok",
            per_mtok_to_pico,
        )?,
        cache_write: price(
            entry.cache_write_per_mtok,
            "cache_write_per_mtok",
            per_mtok_to_pico,
        )?,
        per_image: price(entry.per_image, "per_image", per_unit_to_pico)?,
        per_search_unit: price(
            entry.per_1k_searches,
            "per_1k_searches",
            per_thousand_to_pico,
        )?,
        per_audio_second: price(
            entry.per_audio_minute,
            "per_audio_minute",
            per_minute_to_pico_per_second,
        )?,
        // Per million characters converts as per million tokens does.
        per_character: price(entry.per_mchar, "per_mchar", per_mtok_to_pico)?,
        audio_input: price(
            entry.audio_input_per_mtok,
            "audio_input_per_mtok",
            per_mtok_to_pico,
        )?,
        cached_audio_input: price(
            entry.cached_audio_input_per_mtok,
            "cached_audio_input_per_mtok",
            per_mtok_to_pico,
        )?,
        audio_output: price(
            entry.audio_output_per_mtok,
            "audio_output_per_mtok",
            per_mtok_to_pico,
        )?,
        batch_input: None,
        batch_output: None,
        batch_cached_input: None,
        batch_cache_write: None,
    };
    // A batch price given wins; else the provider's discount of the model's own.
    let discounted = |p: Option<i64>| Some((p? as f64 * batch_discount?).round() as i64);
    let prices = Prices {
        batch_input: price(
            entry.batch_input_per_mtok,
            "batch_input_per_mtok",
            per_mtok_to_pico,
        )?
        .or(discounted(prices.input)),
        batch_output: price(
            entry.batch_output_per_mtok,
            "batch_output_per_mtok",
            per_mtok_to_pico,
        )?
        .or(discounted(prices.output)),
        batch_cached_input: discounted(prices.cached_input),
        batch_cache_write: discounted(prices.cache_write),
        ..prices
    };
    if entry.context_window == Some(0) {
        return Err(CatalogError::key(
            at("context_window"),
            "must be at least 1",
        ));
    }
    Ok(ModelInfo {
        provider: provider.to_owned(),
        model: entry.model,
        kind: entry.kind,
        context_window: entry.context_window,
        capabilities: Capabilities {
            tools: entry.capabilities.tools,
            vision: entry.capabilities.vision,
            json_mode: entry.capabilities.json_mode,
        },
        prices,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_usd_to_pico() {
        assert_eq!(per_mtok_to_pico(0.15), Some(150_000));
        assert_eq!(per_mtok_to_pico(0.0028), Some(2_800));
        assert_eq!(per_mtok_to_pico(0.003625), Some(3_625));
        assert_eq!(per_mtok_to_pico(75.0), Some(75_000_000));
        assert_eq!(per_unit_to_pico(0.04), Some(40_000_000_000));
        assert_eq!(per_mtok_to_pico(-1.0), None);
        assert_eq!(per_mtok_to_pico(f64::NAN), None);
        assert_eq!(per_mtok_to_pico(f64::INFINITY), None);
        assert_eq!(per_unit_to_pico(MAX_USD * 2.0), None);
        assert_eq!(per_thousand_to_pico(2.0), Some(2_000_000_000));
        assert_eq!(per_minute_to_pico_per_second(0.006), Some(100_000_000));
    }
}
