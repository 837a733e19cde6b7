//! Token counting with OpenAI's `o200k_base` encoding, shared by the whole process.

use std::sync::LazyLock;

use tiktoken_rs::CoreBPE;

static O200K: LazyLock<Option<CoreBPE>> = LazyLock::new(|| match tiktoken_rs::o200k_base() {
    Ok(bpe) => Some(bpe),
    Err(e) => {
        tracing::error!("cannot load the o200k_base tokenizer, estimating tokens instead: {e}");
        None
    }
});

/// A handle to the process-wide tokenizer. Loading it takes a moment, so `serve` warms it at
/// start-up off the request path.
#[derive(Clone, Copy, Default)]
pub struct Tokenizer;

impl Tokenizer {
    /// Loads the encoding on a blocking thread so that the first request does not pay for it.
    pub fn warm(self) {
        tokio::task::spawn_blocking(|| LazyLock::force(&O200K));
    }

    pub fn count(self, text: &str) -> u32 {
        let n = match &*O200K {
            Some(bpe) => bpe.encode_ordinary(text).len(),
            // About four characters a token for English text.
            None => text.len().div_ceil(4),
        };
        u32::try_from(n).unwrap_or(u32::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_real_tokens() {
        assert_eq!(Tokenizer.count(""), 0);
        assert_eq!(Tokenizer.count("hello"), 1);
        assert!(Tokenizer.count("The quick brown fox jumps over the lazy dog.") >= 9);
    }
}
