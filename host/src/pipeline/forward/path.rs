//! The path and query of a pass-through request, checked before they are joined to an entry's
//! base URL: whatever the client writes, the URL stays under that base.
//!
//! The URL guard ([`crate::upstream::Scope`]) checks the joined URL again; these checks are
//! stricter, since the whole path is the client's: only the characters RFC 3986 allows in a
//! path, no empty, `.` or `..` segment in any encoding, no encoded `/` or `\` (an upstream that
//! decodes before routing would see another path), no `%` that is not an escape, no encoded
//! control character, no `@`, and bounded lengths.

use crate::upstream::Refusal;

/// Bytes of a path, at most.
const PATH_MAX: usize = 2048;
/// Bytes of a query, at most.
const QUERY_MAX: usize = 4096;

/// Why a pass-through path or query was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BadPath {
    #[error("is empty or longer than the gateway forwards")]
    Length,
    #[error("has a character a URL path may not hold, or `@`")]
    Character,
    #[error("has an empty, `.` or `..` segment")]
    Segment,
    #[error("has an encoded `/`, `\\`, `%` or control character")]
    Encoded,
    #[error("query is malformed or too long")]
    Query,
}

/// `path` (after `<prefix>/<entry>`, starting with `/`) if it may be forwarded.
pub fn check_path(path: &str) -> Result<&str, BadPath> {
    if path.len() < 2 || path.len() > PATH_MAX || !path.starts_with('/') {
        return Err(BadPath::Length);
    }
    let rest = &path[1..];
    for segment in rest.split('/') {
        if segment.is_empty() || segment == "." || segment == ".." {
            return Err(BadPath::Segment);
        }
        if !segment.bytes().all(path_byte) {
            return Err(BadPath::Character);
        }
        check_escapes(segment)?;
    }
    // The URL guard's own decoding of dot segments, on what is left.
    if crate::upstream::dot_segment(path) {
        return Err(BadPath::Segment);
    }
    Ok(path)
}

/// `query` (without `?`) if it may be forwarded: URL query characters, escapes well-formed.
pub fn check_query(query: &str) -> Result<&str, BadPath> {
    let allowed = |b: u8| path_byte(b) || b == b'/' || b == b'?';
    if query.len() > QUERY_MAX || !query.bytes().all(allowed) {
        return Err(BadPath::Query);
    }
    check_escapes(query).map_err(|_| BadPath::Query)?;
    Ok(query)
}

/// RFC 3986's `pchar` but `@`: unreserved, sub-delims, `:` and `%`.
fn path_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:%".contains(&b)
}

/// Every `%` starts an escape of two hex digits that decodes to none of `/`, `\`, `%` or a
/// control character.
fn check_escapes(text: &str) -> Result<(), BadPath> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(at) = bytes[i..].iter().position(|&b| b == b'%') {
        let start = i + at;
        let hex = bytes
            .get(start + 1..start + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok())
            .ok_or(BadPath::Encoded)?;
        if hex < 0x20 || hex == 0x7f || matches!(hex, b'/' | b'\\' | b'%') {
            return Err(BadPath::Encoded);
        }
        i = start + 3;
    }
    Ok(())
}

/// Why the joined URL was refused, as the path's own error.
impl From<Refusal> for BadPath {
    fn from(refusal: Refusal) -> Self {
        match refusal {
            Refusal::DotSegment => BadPath::Segment,
            Refusal::NotHttp
            | Refusal::BadCharacter
            | Refusal::Userinfo
            | Refusal::Fragment
            | Refusal::OutsideBase => BadPath::Character,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_paths_pass() {
        for path in [
            "/fine_tuning/jobs",
            "/vector_stores/vs_123/files",
            "/models/gemini-2.5-flash:generateContent",
            "/files/file-abc/content",
            "/a%20b",
        ] {
            assert_eq!(check_path(path), Ok(path), "{path}");
        }
        assert!(check_query("limit=10&after=ft-1").is_ok());
        assert!(check_query("").is_ok());
    }

    #[test]
    fn hostile_paths_are_refused() {
        for path in [
            "",
            "/",
            "files",
            "/../admin",
            "/a/../../b",
            "/a/./b",
            "/%2e%2e/x",
            "/%2E./x",
            "/.%2e/x",
            "/%252e%252e/x",
            "/a%2fb",
            "/a%2F..%2Fb",
            "/a%5cb",
            "/a\\b",
            "//evil.example/x",
            "/http://evil.example",
            "/a//b",
            "/user@evil.example",
            "/a%00b",
            "/a%0d%0aHost:x",
            "/a%zz",
            "/a%",
            "/a b",
            "/a#frag",
            "/a?b",
            "/é",
        ] {
            assert!(check_path(path).is_err(), "{path:?} passed");
        }
        assert!(check_path(&format!("/{}", "a".repeat(PATH_MAX))).is_err());
        for query in ["a=b#c", "a=%0a", "a=\u{7f}", "a b", "a=%"] {
            assert!(check_query(query).is_err(), "{query:?} passed");
        }
    }
}
