//! Writes the `o200k_base` vocabulary as two flat files for `src/tokenizer/`: every ordinary
//! token's bytes concatenated in rank order, and each rank's end offset in them.
//!
//! tiktoken-rs holds the vocabulary as 200,000 heap-allocated `Vec`s in two hash maps (41 MiB);
//! laid out flat at build time it sits in the binary's read-only data and the gateway only
//! builds a small index over it.

use std::path::Path;

/// The files written to OUT_DIR, read by `src/tokenizer/vocabulary.rs` with `include_bytes!`.
pub const BYTES_FILE: &str = "o200k_base.bytes";
pub const ENDS_FILE: &str = "o200k_base.ends";

/// Ranks above this are not looked for. o200k_base's ordinary ranks end just under 200,000; the
/// bound only has to be above them, and the check below notices a vocabulary that reaches it.
const RANK_BOUND: u32 = 1 << 20;

pub fn write(out_dir: &Path) -> Result<(), String> {
    let bpe = tiktoken_rs::o200k_base().map_err(|e| format!("loading o200k_base: {e}"))?;
    // Special tokens decode too, but ordinary encoding never produces them.
    let special: Vec<u32> = bpe
        .special_tokens()
        .into_iter()
        .flat_map(|token| bpe.encode_with_special_tokens(token))
        .collect();
    let mut bytes = Vec::new();
    let mut ends: Vec<u32> = Vec::new();
    let mut ordinary = 0usize;
    for rank in 0..RANK_BOUND {
        // A rank that is not a token (a gap) gets an empty entry, so that index = rank.
        let token = match bpe.decode_bytes(&[rank]) {
            Ok(token) if !special.contains(&rank) => token,
            Ok(_) | Err(_) => Vec::new(),
        };
        if token.is_empty() {
            continue;
        }
        ordinary += 1;
        // Gaps before this rank: empty entries that end where the last token did.
        ends.resize(rank as usize, offset(bytes.len())?);
        bytes.extend_from_slice(&token);
        ends.push(offset(bytes.len())?);
    }
    check(&bytes, &ends, ordinary)?;
    let ends: Vec<u8> = ends.iter().flat_map(|end| end.to_le_bytes()).collect();
    for (name, data) in [(BYTES_FILE, &bytes), (ENDS_FILE, &ends)] {
        let path = out_dir.join(name);
        std::fs::write(&path, data).map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    Ok(())
}

fn offset(len: usize) -> Result<u32, String> {
    u32::try_from(len).map_err(|_| "the vocabulary exceeds 4 GiB".to_owned())
}

/// What the counter relies on: every byte is a token of its own (so any text splits into
/// tokens), no token appears twice, and the vocabulary ended well before the search did.
fn check(bytes: &[u8], ends: &[u32], ordinary: usize) -> Result<(), String> {
    if ends.len() >= (RANK_BOUND / 2) as usize {
        return Err(format!("o200k_base has ranks up to {}", ends.len()));
    }
    if ordinary < 199_000 {
        return Err(format!("o200k_base has only {ordinary} ordinary tokens"));
    }
    let mut seen = std::collections::HashSet::new();
    let mut start = 0usize;
    for &end in ends {
        let token = &bytes[start..end as usize];
        if !token.is_empty() && !seen.insert(token) {
            return Err(format!("o200k_base has the token {token:?} twice"));
        }
        start = end as usize;
    }
    match (0..=u8::MAX).find(|byte| !seen.contains(&[*byte][..])) {
        Some(byte) => Err(format!("o200k_base has no token for the byte {byte:#04x}")),
        None => Ok(()),
    }
}
