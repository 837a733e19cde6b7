//! The host's services other than logging: token counting.

/// Counts the tokens of `text` with the host's tokenizer (OpenAI's `o200k_base`).
///
/// Built natively (in unit tests) there is no host: it estimates one token per four bytes.
pub fn count_tokens(text: &str) -> u32 {
    #[cfg(target_arch = "wasm32")]
    {
        crate::wit::wasmgate::plugin::host::count_tokens(text)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        u32::try_from(text.len().div_ceil(4)).unwrap_or(u32::MAX)
    }
}
