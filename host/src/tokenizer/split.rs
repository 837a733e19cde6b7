//! o200k's pre-tokenising split for ASCII text, without the regex.
//!
//! The regex (`O200K_PATTERN` in `mod.rs`) costs about a fifth of a whole-chain request's
//! instructions, mostly in fancy-regex's VM for the `\s+(?!\S)` look-ahead. On ASCII every
//! Unicode class in the pattern is a simple byte test, and each alternative, tried in the
//! pattern's order with its backtracking, reduces to a scan forward, so this yields the very same
//! pieces. Any other text goes to the regex (`split_tests.rs` compares the two on generated text).
//!
//! On ASCII: `\p{Lu}` is `A-Z`; `\p{Ll}` is `a-z`; `\p{Lt}`, `\p{Lm}`, `\p{Lo}` and `\p{M}` are
//! empty; `\p{N}` is `0-9`; `\s` (Unicode `White_Space`) is tab, `\n`, `\v`, `\f`, `\r` and space.

/// The pieces of `text`, or `None` if the text is not ASCII.
pub(super) fn ascii_pieces(text: &str) -> Option<Pieces<'_>> {
    text.is_ascii().then_some(Pieces { text, at: 0 })
}

pub(super) struct Pieces<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Iterator for Pieces<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let start = self.at;
        if start >= self.text.len() {
            return None;
        }
        let end = piece_end(self.text.as_bytes(), start);
        self.at = end;
        // All ASCII, so every byte offset is a char boundary.
        self.text.get(start..end)
    }
}

/// Where the piece that starts at `i` (< `b.len()`) ends: the pattern's alternatives in order.
fn piece_end(b: &[u8], i: usize) -> usize {
    let c = b[i];
    // `[^\r\n\p{L}\p{N}]?[\p{Lu}…]*[\p{Ll}…]+(?i:'s|…)?` then the same with `+` and `*` swapped:
    // the prefix is taken only if a letter follows it; the first needs a lowercase letter after
    // the capitals, and when there is none the second takes the capitals alone, so together
    // they take capitals then lowercase letters, then a contraction.
    let word = if is_prefix(c) && b.get(i + 1).is_some_and(u8::is_ascii_alphabetic) {
        i + 1
    } else {
        i
    };
    if b[word].is_ascii_alphabetic() {
        let capitals = run(b, word, u8::is_ascii_uppercase);
        return contraction_end(b, run(b, capitals, u8::is_ascii_lowercase));
    }
    // `\p{N}{1,3}`
    if c.is_ascii_digit() {
        return run(b, i, u8::is_ascii_digit).min(i + 3);
    }
    // ` ?[^\s\p{L}\p{N}]+[\r\n/]*`
    let symbols = if c == b' ' { i + 1 } else { i };
    if b.get(symbols).is_some_and(|&s| is_symbol(s)) {
        let end = run(b, symbols, |&s| is_symbol(s));
        return run(b, end, |&s| matches!(s, b'\r' | b'\n' | b'/'));
    }
    // Here `c` is whitespace: every other byte was taken above.
    let blank = run(b, i, |&s| is_space(s));
    // `\s*[\r\n]+`: the greedy `\s*` gives back up to the last line break of the run.
    if let Some(last) = b[i..blank].iter().rposition(|&s| s == b'\r' || s == b'\n') {
        return i + last + 1;
    }
    // `\s+(?!\S)`: the whole run at the end of the text, else all but its last character, which
    // then starts the next piece; `\s+` when that leaves nothing.
    if blank == b.len() || blank - i < 2 {
        blank
    } else {
        blank - 1
    }
}

/// The end of the contraction (`'s`, `'t`, `'re`, `'ve`, `'m`, `'ll`, `'d`, any case) at `i`,
/// or `i` if there is none.
fn contraction_end(b: &[u8], i: usize) -> usize {
    if b.get(i) != Some(&b'\'') {
        return i;
    }
    let lower = |k: usize| b.get(i + k).map(u8::to_ascii_lowercase);
    match (lower(1), lower(2)) {
        (Some(b's' | b't' | b'm' | b'd'), _) => i + 2,
        (Some(b'r' | b'v'), Some(b'e')) | (Some(b'l'), Some(b'l')) => i + 3,
        _ => i,
    }
}

/// The end of the run of bytes from `i` that satisfy `test`.
fn run(b: &[u8], i: usize, test: impl Fn(&u8) -> bool) -> usize {
    b[i..]
        .iter()
        .position(|s| !test(s))
        .map_or(b.len(), |n| i + n)
}

/// `\s`: Unicode `White_Space` on ASCII (which, unlike `u8::is_ascii_whitespace`, has `\v`).
fn is_space(c: u8) -> bool {
    matches!(c, b'\t'..=b'\r' | b' ')
}

/// `[^\r\n\p{L}\p{N}]`
fn is_prefix(c: u8) -> bool {
    c != b'\r' && c != b'\n' && !c.is_ascii_alphanumeric()
}

/// `[^\s\p{L}\p{N}]`
fn is_symbol(c: u8) -> bool {
    !is_space(c) && !c.is_ascii_alphanumeric()
}

#[cfg(test)]
#[path = "split_tests.rs"]
mod tests;
