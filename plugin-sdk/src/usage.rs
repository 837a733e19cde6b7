//! Conveniences for [`Usage`].

use crate::Usage;

/// Nothing counted.
impl Default for Usage {
    fn default() -> Self {
        Usage {
            input_tokens: 0,
            output_tokens: 0,
            cached_input_tokens: 0,
            cache_write_tokens: 0,
            reasoning_tokens: 0,
            images: 0,
            search_units: 0,
            audio_ms: 0,
            characters: 0,
        }
    }
}

impl Usage {
    /// Prompt and completion tokens, with nothing cached and no images.
    pub fn tokens(input_tokens: u64, output_tokens: u64) -> Self {
        Usage {
            input_tokens,
            output_tokens,
            ..Usage::default()
        }
    }
}
