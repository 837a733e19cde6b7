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

/// A handle to the process-wide tokenizer. Loading it takes a moment, so the gateway loads it
/// before it starts serving: a plugin's `count-tokens` call must not wait for it (and so run
/// past its deadline).
#[derive(Clone, Copy, Default)]
pub struct Tokenizer;

impl Tokenizer {
    /// Loads the encoding (once per process) on a blocking thread.
    pub async fn load(self) {
        if tokio::task::spawn_blocking(|| LazyLock::force(&O200K).is_some())
            .await
            .is_err()
        {
            tracing::error!("loading the tokenizer panicked");
        }
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
