//! Which pass-through routes a caller may reach: `<entry>/<path>` patterns, as a key holds them
//! (`wasmgate keys --passthrough`, `/admin/keys`) and as the config's `passthrough.allow` does.

use super::glob::glob_match;

/// Patterns one key or the config may hold, at most (a list is read on every request).
pub const PATTERNS_MAX: usize = 64;
/// Bytes of one pattern, at most.
const PATTERN_MAX: usize = 300;

/// Why `pattern` is no pass-through pattern, if it is not: `<entry>/<path>` (`*` for any run
/// of characters), printable, bounded.
pub fn check_passthrough_pattern(pattern: &str) -> Result<(), String> {
    let printable = pattern.chars().all(|c| !c.is_control() && c != ' ');
    let shaped = pattern == "*" || pattern.split_once('/').is_some_and(|(e, _)| !e.is_empty());
    if pattern.is_empty() || pattern.len() > PATTERN_MAX || !printable || !shaped {
        return Err(format!(
            "passthrough: each pattern is `<entry>/<path>` (`*` for any run of characters), 1 \
             to {PATTERN_MAX} bytes without spaces or control characters"
        ));
    }
    Ok(())
}

/// Whether one of `patterns` lets a caller reach `path` (starting with `/`) of entry `entry`.
pub fn passthrough_allows(patterns: &[String], entry: &str, path: &str) -> bool {
    let target = format!("{entry}{path}");
    patterns.iter().any(|p| glob_match(p, &target))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_name_an_entry_and_a_path() {
        let patterns = ["openai/files*".to_owned(), "anthropic/v1/models".to_owned()];
        assert!(passthrough_allows(&patterns, "openai", "/files"));
        assert!(passthrough_allows(
            &patterns,
            "openai",
            "/files/file-1/content"
        ));
        assert!(!passthrough_allows(&patterns, "openai", "/vector_stores"));
        assert!(!passthrough_allows(&patterns, "openai2", "/files"));
        assert!(passthrough_allows(&patterns, "anthropic", "/v1/models"));
        assert!(!passthrough_allows(&patterns, "anthropic", "/v1/models/x"));
        assert!(passthrough_allows(&["*".to_owned()], "any", "/thing"));
        assert!(!passthrough_allows(&[], "openai", "/files"));
        for bad in ["", "openai", "/files", "openai/a b", "openai/\n"] {
            assert!(check_passthrough_pattern(bad).is_err(), "{bad:?}");
        }
        assert!(check_passthrough_pattern("openai/*").is_ok());
    }
}
