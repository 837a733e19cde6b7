//! Client-controlled text made safe to echo: cut to a bounded prefix (marked, with the original
//! length) and with control and invisible formatting characters escaped, so that no request can
//! make an error body, a log line or a metric label as large or as misleading as it likes.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Bytes of one piece of client input an error message or log field repeats, at most.
pub const ECHO: usize = 256;
/// Bytes of a whole error message (which may relay an upstream's), at most.
pub const MESSAGE: usize = 4096;

/// `text` cut to at most `max` bytes (at a character boundary, marked with the original
/// length) with unprintable characters escaped as `\u{..}`; borrowed when already fine.
pub fn clip(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max && !text.chars().any(unprintable) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(max.min(text.len()) + 32);
    for c in text.chars() {
        let before = out.len();
        if unprintable(c) {
            let _ = write!(out, "{}", c.escape_unicode());
        } else {
            out.push(c);
        }
        if out.len() > max {
            out.truncate(before);
            let _ = write!(out, "…[cut: {} bytes]", text.len());
            break;
        }
    }
    Cow::Owned(out)
}

/// `text` clipped to [`ECHO`] bytes: a piece of client input inside a message.
pub fn echo(text: &str) -> Cow<'_, str> {
    clip(text, ECHO)
}

/// Control characters, and the invisible ones that reorder or hide text (bidirectional
/// overrides, zero-width characters, the byte-order mark): what a log or label must not carry.
pub fn unprintable(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{200B}'..='\u{200F}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{2069}'
                | '\u{FEFF}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_clean_text_is_borrowed() {
        assert!(matches!(
            clip("gpt-4o-mini", 16),
            Cow::Borrowed("gpt-4o-mini")
        ));
    }

    #[test]
    fn long_text_is_cut_at_a_character_boundary_and_marked() {
        let text = "é".repeat(10_000);
        let clipped = clip(&text, 101);
        assert!(clipped.starts_with(&"é".repeat(50)), "{clipped}");
        assert!(clipped.ends_with("…[cut: 20000 bytes]"), "{clipped}");
        assert!(clipped.len() <= 101 + "…[cut: 20000 bytes]".len());
    }

    #[test]
    fn control_and_bidi_characters_are_escaped() {
        assert_eq!(
            clip("a\nb\u{1b}[31m\u{202E}", 64),
            "a\\u{a}b\\u{1b}[31m\\u{202e}"
        );
        // The escapes count towards the bound.
        let newlines = "\n".repeat(1000);
        let clipped = clip(&newlines, 64);
        assert!(clipped.len() < 64 + 24, "{clipped}");
    }
}
