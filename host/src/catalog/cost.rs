//! What a request cost, from its token and image counts and the model's catalog prices.

use super::model_info::ModelInfo;

const PICO_PER_MICRO: i128 = 1_000_000;

/// The cost in micro-USD (rounded half up) of a request to `info`'s model.
///
/// - `input`: all prompt tokens, cached ones included (OpenAI's `prompt_tokens`); the
///   `cached_input` part of them is billed at the cached price.
/// - `cache_write`: prompt tokens written to the cache (Anthropic's
///   `cache_creation_input_tokens`), counted apart from `input`, billed at the cache-write price.
/// - `images`: generated images, at the per-image price.
///
/// Where the catalog has no cached or cache-write price, those tokens cost the input price;
/// a missing input, output or image price counts as zero (see [`ModelInfo::is_priced`]).
pub fn cost_micros(
    info: &ModelInfo,
    input: u64,
    output: u64,
    cached_input: u64,
    cache_write: u64,
    images: u64,
) -> i64 {
    metered_cost_micros(
        info,
        input,
        output,
        cached_input,
        cache_write,
        images,
        Metered::default(),
    )
}

/// What a request is billed for besides tokens and images.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Metered {
    /// Rerank search units.
    pub search_units: u64,
    /// Milliseconds of audio; billed in whole seconds, rounded to the nearest (as OpenAI bills
    /// Whisper).
    pub audio_ms: u64,
    /// Characters of text spoken.
    pub characters: u64,
}

/// [`cost_micros`], with the search units, audio and characters of `metered` at the model's
/// prices for them (zero where it has none).
pub fn metered_cost_micros(
    info: &ModelInfo,
    input: u64,
    output: u64,
    cached_input: u64,
    cache_write: u64,
    images: u64,
    metered: Metered,
) -> i64 {
    let prices = &info.prices;
    let audio_seconds = metered.audio_ms.saturating_add(500) / 1000;
    let input_price = prices.input.unwrap_or(0);
    let cached = cached_input.min(input);
    let terms = [
        (input - cached, input_price),
        (cached, prices.cached_input.unwrap_or(input_price)),
        (cache_write, prices.cache_write.unwrap_or(input_price)),
        (output, prices.output.unwrap_or(0)),
        (images, prices.per_image.unwrap_or(0)),
        (metered.search_units, prices.per_search_unit.unwrap_or(0)),
        (audio_seconds, prices.per_audio_second.unwrap_or(0)),
        (metered.characters, prices.per_character.unwrap_or(0)),
    ];
    // u64 counts times prices below 10^18 stay far inside i128.
    let pico: i128 = terms
        .iter()
        .map(|&(count, price)| i128::from(count) * i128::from(price))
        .sum();
    let micros = (pico + PICO_PER_MICRO / 2) / PICO_PER_MICRO;
    i64::try_from(micros).unwrap_or(i64::MAX)
}

/// One realtime response's tokens, as its `response.done` reports them: the prompt's text and
/// audio tokens (the cached ones among them apart) and the answer's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RealtimeTokens {
    pub text_input: u64,
    pub audio_input: u64,
    pub cached_text_input: u64,
    pub cached_audio_input: u64,
    pub text_output: u64,
    pub audio_output: u64,
}

/// The cost in micro-USD (rounded half up) of a realtime response at `info`'s prices: text at
/// the input, cached-input and output prices, audio at the audio ones. A cached token with no
/// cached price costs its input price; a missing price counts as zero (see
/// [`ModelInfo::is_priced`]).
pub fn realtime_cost_micros(info: &ModelInfo, tokens: RealtimeTokens) -> i64 {
    let p = &info.prices;
    let text_in = p.input.unwrap_or(0);
    let audio_in = p.audio_input.unwrap_or(0);
    let cached_text = tokens.cached_text_input.min(tokens.text_input);
    let cached_audio = tokens.cached_audio_input.min(tokens.audio_input);
    let terms = [
        (tokens.text_input - cached_text, text_in),
        (cached_text, p.cached_input.unwrap_or(text_in)),
        (tokens.audio_input - cached_audio, audio_in),
        (cached_audio, p.cached_audio_input.unwrap_or(audio_in)),
        (tokens.text_output, p.output.unwrap_or(0)),
        (tokens.audio_output, p.audio_output.unwrap_or(0)),
    ];
    let pico: i128 = terms
        .iter()
        .map(|&(count, price)| i128::from(count) * i128::from(price))
        .sum();
    let micros = (pico + PICO_PER_MICRO / 2) / PICO_PER_MICRO;
    i64::try_from(micros).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{Capabilities, Kind, Prices};

    /// Prices in USD per million tokens, as the catalog file writes them.
    fn model(input: f64, output: f64, cached: Option<f64>, write: Option<f64>) -> ModelInfo {
        let pico = |usd: f64| (usd * 1e6).round() as i64;
        ModelInfo {
            provider: "test".into(),
            model: "m".into(),
            kind: Kind::Chat,
            context_window: None,
            capabilities: Capabilities::default(),
            prices: Prices {
                input: Some(pico(input)),
                output: Some(pico(output)),
                cached_input: cached.map(pico),
                cache_write: write.map(pico),
                per_image: None,
                ..Prices::default()
            },
        }
    }

    #[test]
    fn bills_input_and_output() {
        // gpt-4o-mini: $0.15 in, $0.60 out per million.
        let m = model(0.15, 0.6, Some(0.075), None);
        assert_eq!(cost_micros(&m, 1_000_000, 1_000_000, 0, 0, 0), 750_000);
        // 1000 in + 500 out = 150 + 300 micro-USD.
        assert_eq!(cost_micros(&m, 1_000, 500, 0, 0, 0), 450);
        assert_eq!(cost_micros(&m, 0, 0, 0, 0, 0), 0);
    }

    #[test]
    fn cached_tokens_are_part_of_input_at_the_cached_price() {
        let m = model(0.15, 0.6, Some(0.075), None);
        // 10_000 prompt tokens of which 8_000 cached: 2_000 * 0.15 + 8_000 * 0.075 = 300 + 600.
        assert_eq!(cost_micros(&m, 10_000, 0, 8_000, 0, 0), 900);
        // More cached than input is clamped to the input.
        assert_eq!(cost_micros(&m, 1_000, 0, 5_000, 0, 0), 75);
    }

    #[test]
    fn cache_writes_are_billed_apart_at_the_write_price() {
        // claude-sonnet-4-6: $3 in, $15 out, $0.30 hit, $3.75 write.
        let m = model(3.0, 15.0, Some(0.3), Some(3.75));
        // 1_000 fresh + 10_000 read + 20_000 written + 500 out:
        // 3_000 + 3_000 + 75_000 + 7_500 micro-USD.
        assert_eq!(cost_micros(&m, 11_000, 500, 10_000, 20_000, 0), 88_500);
    }

    #[test]
    fn missing_cache_prices_fall_back_to_the_input_price() {
        let m = model(2.0, 6.0, None, None);
        assert_eq!(cost_micros(&m, 1_000, 0, 1_000, 1_000, 0), 4_000);
    }

    #[test]
    fn rounds_half_up_to_micro_usd() {
        // $0.50 per million tokens = 0.5 micro-USD per token.
        let half = model(0.5, 0.0, None, None);
        assert_eq!(cost_micros(&half, 1, 0, 0, 0, 0), 1);
        assert_eq!(cost_micros(&half, 3, 0, 0, 0, 0), 2);
        // deepseek-v4-flash: $0.14 in, $0.28 out, $0.0028 cache hits.
        let m = model(0.14, 0.28, Some(0.0028), None);
        assert_eq!(cost_micros(&m, 1, 0, 0, 0, 0), 0); // 0.14
        assert_eq!(cost_micros(&m, 4, 0, 0, 0, 0), 1); // 0.56
        assert_eq!(cost_micros(&m, 0, 5, 0, 0, 0), 1); // 1.4
        // A million cache hits cost exactly $0.0028: sub-nano prices are not rounded away.
        assert_eq!(cost_micros(&m, 1_000_000, 0, 1_000_000, 0, 0), 2_800);
    }

    #[test]
    fn images_are_billed_per_image_on_top_of_tokens() {
        let mut m = model(5.0, 0.0, Some(1.25), None);
        m.kind = Kind::Images;
        m.prices.per_image = Some(42_000_000_000); // $0.042
        // 100 prompt tokens ($5/M = 500 micro) + 2 images (84_000 micro).
        assert_eq!(cost_micros(&m, 100, 0, 0, 0, 2), 84_500);
    }

    #[test]
    fn searches_audio_and_characters_are_billed_at_their_prices() {
        let mut m = model(0.0, 0.0, None, None);
        m.prices.per_search_unit = Some(2_000_000_000); // $2 per 1000
        m.prices.per_audio_second = Some(100_000_000); // $0.006 per minute
        m.prices.per_character = Some(15_000_000); // $15 per million
        let metered = |search_units, audio_ms, characters| Metered {
            search_units,
            audio_ms,
            characters,
        };
        assert_eq!(
            metered_cost_micros(&m, 0, 0, 0, 0, 0, metered(3, 0, 0)),
            6_000
        );
        // 8.47 s bill as 8 s, 8.5 s as 9 s: $0.0008 and $0.0009.
        assert_eq!(
            metered_cost_micros(&m, 0, 0, 0, 0, 0, metered(0, 8_470, 0)),
            800
        );
        assert_eq!(
            metered_cost_micros(&m, 0, 0, 0, 0, 0, metered(0, 8_500, 0)),
            900
        );
        assert_eq!(
            metered_cost_micros(&m, 0, 0, 0, 0, 0, metered(0, 0, 1_000)),
            15_000
        );
    }

    #[test]
    fn huge_counts_saturate_instead_of_wrapping() {
        let m = model(600.0, 600.0, None, None);
        assert_eq!(
            cost_micros(&m, u64::MAX, u64::MAX, 0, u64::MAX, 0),
            i64::MAX
        );
    }

    #[test]
    fn unpriced_models_cost_nothing() {
        let mut m = model(0.0, 0.0, None, None);
        m.prices = Prices::default();
        assert!(!m.is_priced());
        assert_eq!(cost_micros(&m, 1_000, 1_000, 0, 0, 1), 0);
    }
}
