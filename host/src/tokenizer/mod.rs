//! Token counting with OpenAI's `o200k_base` encoding, exactly as tiktoken counts (the length of
//! `encode_ordinary`), shared by the whole process.
//!
//! Counting needs only the ranks of token bytes, not token ids out or a decoder, so this holds
//! an index over the vocabulary in the binary (about 1.3 MiB of heap) rather than tiktoken's
//! maps of 200,000 `Vec`s (41 MiB). The results are checked against tiktoken-rs in `tests.rs`.

mod merge;
mod split;
#[cfg(test)]
mod tests;
mod vocabulary;

use std::sync::LazyLock;

use fancy_regex::Regex;

use self::vocabulary::Vocabulary;

/// o200k_base's pre-tokenisation pattern, copied from tiktoken-rs 0.12
/// (`tiktoken_rs::O200K_BASE_PAT_STR`, which is OpenAI tiktoken's `openai_public.py`). The
/// `(?!\S)` look-ahead is why this takes fancy-regex, and why ASCII text, most prompts, goes
/// through the hand-written `split` instead.
const O200K_PATTERN: &str = concat!(
    r#"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"#,
    "|",
    r#"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"#,
    "|",
    r#"\p{N}{1,3}"#,
    "|",
    r#" ?[^\s\p{L}\p{N}]+[\r\n/]*"#,
    "|",
    r#"\s*[\r\n]+"#,
    "|",
    r#"\s+(?!\S)"#,
    "|",
    r#"\s+"#
);

/// The encoding: pre-tokenisation, then byte-pair merging of each piece.
struct Encoding {
    /// One compiled regex for every thread: fancy-regex keeps its matching scratch space in a
    /// pool, so sharing it is safe and costs no clones.
    pieces: Regex,
    vocabulary: Vocabulary,
}

impl Encoding {
    fn load() -> Result<Self, fancy_regex::Error> {
        Ok(Self {
            pieces: Regex::new(O200K_PATTERN)?,
            vocabulary: Vocabulary::load(),
        })
    }

    fn count(&self, text: &str) -> usize {
        if let Some(pieces) = split::ascii_pieces(text) {
            return pieces
                .map(|piece| merge::count(&self.vocabulary, piece.as_bytes()))
                .sum();
        }
        let mut tokens = 0;
        for piece in self.pieces.find_iter(text) {
            match piece {
                Ok(piece) => tokens += merge::count(&self.vocabulary, piece.as_str().as_bytes()),
                // Only fancy-regex's backtracking limit fails a match, and o200k's one
                // look-ahead backtracks a single character. tiktoken would panic here; an
                // estimate of the whole text is the closest answer that does not.
                Err(_) => return tokens.max(estimate(text)),
            }
        }
        tokens
    }
}

/// About four bytes a token for English text.
fn estimate(text: &str) -> usize {
    text.len().div_ceil(4)
}

static O200K: LazyLock<Option<Encoding>> = LazyLock::new(|| match Encoding::load() {
    Ok(encoding) => Some(encoding),
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
            Some(encoding) => encoding.count(text),
            None => estimate(text),
        };
        u32::try_from(n).unwrap_or(u32::MAX)
    }
}
