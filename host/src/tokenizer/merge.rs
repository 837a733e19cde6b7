//! Byte-pair merging as tiktoken does it, counting the tokens a piece of text becomes.
//!
//! The two loops mirror tiktoken's `_byte_pair_merge` (short pieces) and
//! `_byte_pair_merge_large` (long ones, with a heap), so that the count equals tiktoken's
//! for every piece: the adjacent pair whose concatenation has the lowest rank merges first, the
//! leftmost on a tie, until no adjacent pair is a token.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::vocabulary::{Rank, Vocabulary};

/// Pieces shorter than this take the quadratic loop, longer ones the heap (tiktoken's split:
/// for short pieces scanning a small array beats a heap).
const SHORT: usize = 100;

/// How many tokens `piece` (one match of the pre-tokenisation regex) encodes to.
pub(super) fn count(vocabulary: &Vocabulary, piece: &[u8]) -> usize {
    match piece.len() {
        0 => 0,
        // Every single byte is a token (checked by build/vocabulary.rs), and most pieces are
        // whole tokens: no merging for either.
        1 => 1,
        _ if vocabulary.rank(piece).is_some() => 1,
        len if len < SHORT => count_short(vocabulary, piece),
        _ => count_long(vocabulary, piece),
    }
}

/// tiktoken's `_byte_pair_merge`, in a stack array: parts are (start, rank of merging this
/// part with the next one).
fn count_short(vocabulary: &Vocabulary, piece: &[u8]) -> usize {
    let rank = |bytes: &[u8]| vocabulary.rank(bytes).unwrap_or(Rank::MAX);
    let mut parts = [(0usize, Rank::MAX); SHORT + 1];
    let mut len = piece.len() + 1;
    for (i, part) in parts.iter_mut().enumerate().take(len) {
        let pair = piece.get(i..i + 2).map_or(Rank::MAX, rank);
        *part = (i, pair);
    }
    // The rank of merging part i with part i + 1 once part i + 1 has absorbed part i + 2.
    let merged = |parts: &[(usize, Rank)], len: usize, i: usize| {
        if i + 3 < len {
            rank(&piece[parts[i].0..parts[i + 3].0])
        } else {
            Rank::MAX
        }
    };
    loop {
        let mut min = (Rank::MAX, 0);
        for (i, &(_, pair)) in parts[..len - 1].iter().enumerate() {
            if pair < min.0 {
                min = (pair, i);
            }
        }
        let (pair, i) = min;
        if pair == Rank::MAX {
            return len - 1;
        }
        if i > 0 {
            parts[i - 1].1 = merged(&parts, len, i - 1);
        }
        parts[i].1 = merged(&parts, len, i);
        parts.copy_within(i + 2..len, i + 1);
        len -= 1;
    }
}

/// A candidate merge of the token starting at `start` with the one after it.
#[derive(PartialEq, Eq)]
struct Merge {
    start: usize,
    rank: Rank,
}

/// The heap pops the lowest rank first, the leftmost start on a tie.
impl Ord for Merge {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .rank
            .cmp(&self.rank)
            .then_with(|| other.start.cmp(&self.start))
    }
}

impl PartialOrd for Merge {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The token starting at some byte: where it ends, where the one after it ends, the rank of
/// their merge, and where the token before it starts.
struct Token {
    prev: usize,
    end: usize,
    next_end: usize,
    next_rank: Rank,
}

/// tiktoken's `_byte_pair_merge_large`: a heap of candidate merges, stale ones skipped when
/// they come off it. Each merge turns two tokens into one.
fn count_long(vocabulary: &Vocabulary, piece: &[u8]) -> usize {
    let mut tokens: Vec<Token> = (0..piece.len())
        .map(|i| Token {
            prev: i.wrapping_sub(1),
            end: i + 1,
            next_end: i + 2,
            next_rank: Rank::MAX,
        })
        .collect();
    let mut heap = BinaryHeap::with_capacity(piece.len());
    for (start, pair) in piece.windows(2).enumerate() {
        if let Some(rank) = vocabulary.rank(pair) {
            heap.push(Merge { start, rank });
            tokens[start].next_rank = rank;
        }
    }
    let propose = |tokens: &mut [Token], heap: &mut BinaryHeap<Merge>, start, next_end| {
        let token: &mut Token = &mut tokens[start];
        token.next_end = next_end;
        token.next_rank = Rank::MAX;
        if let Some(rank) = piece.get(start..next_end).and_then(|b| vocabulary.rank(b)) {
            heap.push(Merge { start, rank });
            token.next_rank = rank;
        }
    };
    let mut count = piece.len();
    while let Some(left) = heap.pop() {
        if left.rank != tokens[left.start].next_rank {
            continue; // stale: one of its two tokens has merged since
        }
        let left_start = left.start;
        let right_start = tokens[left_start].end;
        let right_end = tokens[left_start].next_end;
        let right_next_end = tokens[right_start].next_end;
        tokens[left_start].end = right_end;
        propose(&mut tokens, &mut heap, left_start, right_next_end);
        if let Some(after) = tokens.get_mut(right_end) {
            after.prev = left_start;
        }
        if left_start > 0 {
            let prev_start = tokens[left_start].prev;
            propose(&mut tokens, &mut heap, prev_start, right_end);
        }
        tokens[right_start].next_rank = Rank::MAX;
        count -= 1;
    }
    count
}
