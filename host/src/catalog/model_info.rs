//! One model of the catalog: its kind, context window, capabilities and prices.

use std::str::FromStr;

use serde::Deserialize;

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
    // Speech to speech over a socket (`/v1/realtime`), by text and audio tokens.
    Realtime,
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
            Self::Realtime => "realtime",
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
            "realtime" => Ok(Self::Realtime),
            other => Err(format!(
                "unknown kind `{other}` (expected chat, embeddings, images, moderation, rerank, \
                 transcription, speech or realtime)"
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
    /// Per audio prompt token not served from a cache, per audio prompt token served from it,
    /// and per audio completion token (a realtime model's; its text tokens are at `input`,
    /// `cached_input` and `output`).
    pub audio_input: Option<i64>,
    pub cached_audio_input: Option<i64>,
    pub audio_output: Option<i64>,
    /// Per prompt token, per completion token, per cached prompt token and per token written to
    /// the cache of a request run through the provider's Batch API; `None` where the catalog
    /// knows no batch price.
    pub batch_input: Option<i64>,
    pub batch_output: Option<i64>,
    pub batch_cached_input: Option<i64>,
    pub batch_cache_write: Option<i64>,
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
        // Anthropic's batch discount applies to cache writes too.
        info.prices.cache_write = p.batch_cache_write.or(p.cache_write);
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
            Kind::Realtime => {
                self.prices.input.is_some()
                    && self.prices.output.is_some()
                    && self.prices.audio_input.is_some()
                    && self.prices.audio_output.is_some()
            }
        }
    }
}
