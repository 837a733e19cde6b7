//! The patterns a key or the config names models, MCP tools and pass-through routes with: `*`
//! stands for any run of characters (none too, `/` included), every other character for itself.

use wildmatch::WildMatchPattern;

/// `*` for any run. The single-character wildcard is NUL, which no pattern holds (every list of
/// patterns refuses control characters), so that `?` stays a character like any other.
type Pattern = WildMatchPattern<'*', '\0'>;

/// Whether `text` matches `pattern` whole, case-sensitively.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    Pattern::new(pattern).matches(text)
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn a_star_is_any_run_and_every_other_character_itself() {
        for (pattern, text, expected) in [
            ("openai/*", "openai/gpt-4o", true),
            ("openai/*", "openai/", true),
            ("openai/*", "anthropic/claude", false),
            ("gpt-4o", "gpt-4o", true),
            ("gpt-4o", "gpt-4o-mini", false),
            ("*mini", "openai/gpt-4o-mini", true),
            ("a*b*c", "axxbyyc", true),
            ("a*b*c", "axxbyy", false),
            ("a**c", "abc", true),
            ("*", "", true),
            ("", "", true),
            ("", "x", false),
            ("GPT-4o", "gpt-4o", false),
            ("gpt-4?", "gpt-4o", false),
            ("gpt-4?", "gpt-4?", true),
            ("m[1]", "m[1]", true),
            ("m[12]", "m1", false),
            ("{a,b}", "a", false),
            ("é*ü", "éaü", true),
        ] {
            assert_eq!(glob_match(pattern, text), expected, "{pattern} ~ {text}");
        }
    }
}
