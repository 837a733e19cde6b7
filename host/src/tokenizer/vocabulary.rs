//! The `o200k_base` vocabulary, laid out flat at build time (`build/vocabulary.rs`), and an index
//! from a token's bytes to its rank.

use std::hash::BuildHasher;

use hashbrown::{DefaultHashBuilder, HashTable};

pub(super) type Rank = u32;

/// Every ordinary token's bytes, concatenated in rank order.
static BYTES: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/o200k_base.bytes"));
/// The end offset in `BYTES` of each rank's token, little-endian `u32`s; a rank that is not a
/// token has an empty one.
static ENDS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/o200k_base.ends"));

/// The token bytes stay in the binary's read-only data; the index holds only ranks (4 bytes and
/// a control byte a token, about 1.3 MiB), and looks a slice's bytes up through them.
pub(super) struct Vocabulary {
    ranks: HashTable<Rank>,
    hasher: DefaultHashBuilder,
}

impl Vocabulary {
    pub(super) fn load() -> Self {
        let hasher = DefaultHashBuilder::default();
        let count = ENDS.len() / 4;
        let mut ranks = HashTable::with_capacity(count);
        for rank in (0..count).filter_map(|rank| Rank::try_from(rank).ok()) {
            let token = token(rank);
            if !token.is_empty() {
                ranks.insert_unique(hasher.hash_one(token), rank, |&rank| {
                    hasher.hash_one(self::token(rank))
                });
            }
        }
        Self { ranks, hasher }
    }

    /// The rank of the token whose bytes are `bytes`, if there is one.
    #[inline]
    pub(super) fn rank(&self, bytes: &[u8]) -> Option<Rank> {
        self.ranks
            .find(self.hasher.hash_one(bytes), |&rank| token(rank) == bytes)
            .copied()
    }

    /// How many tokens the index holds.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.ranks.len()
    }
}

/// The bytes of the token of `rank` (empty for a rank that is not a token).
#[inline]
fn token(rank: Rank) -> &'static [u8] {
    let rank = rank as usize;
    let start = match rank.checked_sub(1) {
        Some(before) => end(before),
        None => 0,
    };
    BYTES.get(start..end(rank)).unwrap_or_default()
}

#[inline]
fn end(rank: usize) -> usize {
    let at = rank * 4;
    match ENDS.get(at..at + 4).and_then(|end| end.try_into().ok()) {
        Some(end) => u32::from_le_bytes(end) as usize,
        None => 0,
    }
}
