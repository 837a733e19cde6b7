//! The last check before an upstream request leaves: the URL a plugin built must stay where its
//! provider entry's base URL points, whatever the plugin did with the client's model name.
//!
//! A plugin joins client-controlled names into URLs; one that forgets to escape them could send
//! the entry's key to another path (`models/../../v1/other`) or add a query. The URL parser
//! would quietly resolve dot segments, drop line breaks and read `\` as `/`, so the raw text is
//! checked first: no control characters, spaces or backslashes, no user information, no
//! fragment, no dot segment in any encoding. Then the parsed URL must have the base URL's
//! scheme, host and port, and a path under its path. An entry without a base URL (a third-party
//! plugin with its own default) gets the first checks only.

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, Mutex};

use reqwest::Url;

use crate::plugins::HttpRequest;

/// Why a plugin's upstream URL was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("is not an absolute http:// or https:// URL")]
    NotHttp,
    #[error("holds a control character, a space or a backslash")]
    BadCharacter,
    #[error("carries user information (`user@`)")]
    Userinfo,
    #[error("has a fragment (`#`)")]
    Fragment,
    #[error("has a `.` or `..` path segment")]
    DotSegment,
    #[error("leaves the provider's base URL")]
    OutsideBase,
}

/// Where one provider entry's upstream requests may go.
#[derive(Debug, Clone)]
pub struct Scope {
    /// The entry's name, for the log line of a refusal.
    provider: String,
    /// `None`: the entry has no base URL, so only the structural checks apply.
    base: Option<Base>,
    /// The last few URLs admitted, by their text. A provider's requests go to a few URLs over
    /// and over, and parsing one (the `url` crate, IDNA for its host) was 2 % of the plain
    /// path's CPU. The checks depend on the text and the base alone, so a kept answer is the
    /// one a fresh check gives; refusals are not kept (each is logged).
    admitted: Arc<Mutex<Kept>>,
}

/// URLs admitted, by their text: [`KEPT`] at most, the oldest replaced first.
#[derive(Debug, Default)]
struct Kept {
    urls: Vec<(Box<str>, Url)>,
    next: usize,
}

const KEPT: usize = 4;

impl Kept {
    fn get(&self, text: &str) -> Option<Url> {
        let (_, url) = self.urls.iter().find(|(kept, _)| **kept == *text)?;
        Some(url.clone())
    }

    fn keep(&mut self, text: &str, url: &Url) {
        let entry = (Box::from(text), url.clone());
        if self.urls.len() < KEPT {
            self.urls.push(entry);
        } else {
            self.urls[self.next] = entry;
            self.next = (self.next + 1) % KEPT;
        }
    }
}

/// The parts of a base URL a request must share.
#[derive(Debug, Clone)]
struct Base {
    scheme: String,
    host: String,
    port: Option<u16>,
    /// Without a trailing `/`; empty for the root.
    path: String,
}

/// A request whose URL passed [`Scope::admit`]: the only kind [`super::send`] sends.
pub struct Admitted {
    pub(super) request: HttpRequest,
    pub(super) url: Url,
}

impl Admitted {
    /// The URL that passed.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// The body the plugin built.
    pub fn body(&self) -> &[u8] {
        &self.request.body
    }

    /// The headers the plugin set.
    pub fn headers(&self) -> &[(String, String)] {
        &self.request.headers
    }
}

impl Scope {
    /// The scope of entry `provider` with `base_url`; an error says why the base URL cannot
    /// serve as one (it is checked like a request's URL, and must have no query or fragment).
    pub fn new(provider: &str, base_url: Option<&str>) -> Result<Self, String> {
        let base = match base_url {
            None => None,
            Some(text) => {
                let url = structural(text).map_err(|r| format!("the base URL {r}"))?;
                if url.query().is_some() {
                    return Err("the base URL has a query".to_owned());
                }
                Some(Base {
                    scheme: url.scheme().to_owned(),
                    host: url.host_str().unwrap_or_default().to_owned(),
                    port: url.port_or_known_default(),
                    path: url.path().trim_end_matches('/').to_owned(),
                })
            }
        };
        Ok(Self {
            provider: provider.to_owned(),
            base,
            admitted: Arc::default(),
        })
    }

    /// Checks the URL of `request`. A refusal is logged as a warning, with the URL shown
    /// without its query (which may hold a key) and cut short.
    pub fn admit(&self, request: HttpRequest) -> Result<Admitted, Refusal> {
        match self.check(&request.url) {
            Ok(url) => Ok(Admitted { request, url }),
            Err(refusal) => {
                tracing::warn!(
                    provider = self.provider.as_str(),
                    url = ?Shown(&request.url),
                    "refused an upstream request: its URL {refusal}"
                );
                Err(refusal)
            }
        }
    }

    fn check(&self, text: &str) -> Result<Url, Refusal> {
        // Contended (another worker checks at once): checked afresh rather than waited for.
        if let Some(url) = self
            .admitted
            .try_lock()
            .ok()
            .and_then(|kept| kept.get(text))
        {
            return Ok(url);
        }
        let url = self.check_afresh(text)?;
        if let Ok(mut kept) = self.admitted.try_lock() {
            kept.keep(text, &url);
        }
        Ok(url)
    }

    fn check_afresh(&self, text: &str) -> Result<Url, Refusal> {
        let url = structural(text)?;
        let Some(base) = &self.base else {
            return Ok(url);
        };
        let same_origin = url.scheme() == base.scheme
            && url.host_str() == Some(base.host.as_str())
            && url.port_or_known_default() == base.port;
        let path = url.path();
        let under = base.path.is_empty()
            || path
                .strip_prefix(base.path.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'));
        if same_origin && under {
            Ok(url)
        } else {
            Err(Refusal::OutsideBase)
        }
    }
}

/// The checks that need no base URL, on the text as the plugin wrote it (before the parser
/// could normalise anything away), then on the parsed URL.
fn structural(text: &str) -> Result<Url, Refusal> {
    if text
        .chars()
        .any(|c| c.is_control() || c.is_whitespace() || c == '\\')
    {
        return Err(Refusal::BadCharacter);
    }
    let (scheme, rest) = text.split_once("://").ok_or(Refusal::NotHttp)?;
    if !(scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https")) {
        return Err(Refusal::NotHttp);
    }
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, after) = rest.split_at(authority_end);
    if authority.is_empty() {
        return Err(Refusal::NotHttp);
    }
    if authority.contains('@') {
        return Err(Refusal::Userinfo);
    }
    if text.contains('#') {
        return Err(Refusal::Fragment);
    }
    let path = after.split('?').next().unwrap_or_default();
    if path.split('/').any(is_dot_segment) {
        return Err(Refusal::DotSegment);
    }
    let url = Url::parse(text).map_err(|_| Refusal::NotHttp)?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Refusal::Userinfo);
    }
    if url.fragment().is_some() {
        return Err(Refusal::Fragment);
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(Refusal::NotHttp);
    }
    Ok(url)
}

/// Whether any segment of `path` is, or decodes to, a dot segment.
pub fn dot_segment(path: &str) -> bool {
    path.split('/').any(is_dot_segment)
}

/// Whether a raw path segment is, or decodes to, a dot segment: `.`, `..`, `%2e%2E`, `.%2e`,
/// or one hidden under further encoding (`%252e%252e`) or behind an encoded separator
/// (`..%2Fx`), which an upstream that decodes before routing would act on.
fn is_dot_segment(segment: &str) -> bool {
    /// Decodings tried; a segment still encoded past them is refused as deliberately obscure.
    const ROUNDS: usize = 4;
    let mut text = Cow::Borrowed(segment);
    for _ in 0..ROUNDS {
        if text
            .split(['/', '\\'])
            .any(|part| part == "." || part == "..")
        {
            return true;
        }
        // Most segments have nothing to decode: no allocation for them.
        if !text.contains('%') {
            return false;
        }
        let decoded = percent_decode(&text);
        if decoded == *text {
            return false;
        }
        text = Cow::Owned(decoded);
    }
    true
}

/// `%XX` sequences decoded once; anything else (a `%` without two hex digits) is kept.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                let value = hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0);
                out.push(u8::try_from(value).unwrap_or(b'?'));
                i += 3;
            }
            (byte, _, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A URL for a log line: without user information, query or fragment, at most [`SHOWN`]
/// characters, and (through `Debug`) with control characters escaped.
struct Shown<'a>(&'a str);

/// Characters of a refused URL a log line shows.
const SHOWN: usize = 200;

impl fmt::Debug for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.0.split(['?', '#']).next().unwrap_or_default();
        let text = match text.split_once("://") {
            Some((scheme, rest)) => {
                let authority_end = rest.find('/').unwrap_or(rest.len());
                let (authority, path) = rest.split_at(authority_end);
                let host = authority.rsplit('@').next().unwrap_or_default();
                format!("{scheme}://{host}{path}")
            }
            None => text.to_owned(),
        };
        fmt::Debug::fmt(&shorten(&text, SHOWN), f)
    }
}

/// `text` cut to at most `max` characters, with `…` where it was cut.
pub fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((end, _)) => format!("{}…", &text[..end]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(base: Option<&str>) -> Scope {
        Scope::new("p", base).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn urls_under_the_base_pass() {
        let gemini = scope(Some("https://generativelanguage.googleapis.com/v1beta"));
        for url in [
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:generateContent",
            "https://generativelanguage.googleapis.com/v1beta/models/x%3Fkey%3Dabc:streamGenerateContent?alt=sse",
            "https://GenerativeLanguage.googleapis.com:443/v1beta/models/a%2Fb:embedContent",
            "https://generativelanguage.googleapis.com/v1beta",
        ] {
            assert!(gemini.check(url).is_ok(), "{url}");
        }
        let root = scope(Some("http://127.0.0.1:9000/"));
        assert!(root.check("http://127.0.0.1:9000/model/x/converse").is_ok());
        let bedrock_arn =
            "http://127.0.0.1:9000/model/arn%3Aaws%3Ab%3Ainference-profile%2Fus.x/converse";
        assert!(root.check(bedrock_arn).is_ok());
        let azure = scope(Some("https://res.openai.azure.com"));
        let url = "https://res.openai.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21";
        assert!(azure.check(url).is_ok());
    }

    #[test]
    fn urls_outside_the_base_are_refused() {
        let base = scope(Some("https://api.example.com/v1"));
        for url in [
            "http://api.example.com/v1/chat",
            "https://api.example.com:8443/v1/chat",
            "https://other.example.com/v1/chat",
            "https://api.example.com.evil.example/v1/chat",
            "https://api.example.com/v10/chat",
            "https://api.example.com/v2/chat",
            "https://api.example.com/",
        ] {
            assert_eq!(base.check(url).err(), Some(Refusal::OutsideBase), "{url}");
        }
    }

    #[test]
    fn dot_segments_are_refused_in_every_encoding() {
        let base = scope(Some("https://api.example.com/v1beta"));
        for url in [
            "https://api.example.com/v1beta/models/../../v1/other:generateContent",
            "https://api.example.com/v1beta/..",
            "https://api.example.com/v1beta/./x",
            "https://api.example.com/v1beta/%2e%2e/x",
            "https://api.example.com/v1beta/%2E%2E/x",
            "https://api.example.com/v1beta/.%2E/x",
            "https://api.example.com/v1beta/%2e./x",
            "https://api.example.com/v1beta/%2e/x",
            "https://api.example.com/v1beta/%252e%252e/x",
            "https://api.example.com/v1beta/x/..%2Fy",
            "https://api.example.com/v1beta/x/..%5Cy",
            "https://api.example.com/v1beta/%25252525252e/x",
        ] {
            assert_eq!(base.check(url).err(), Some(Refusal::DotSegment), "{url}");
        }
        // Dots inside a name are not dot segments.
        assert!(
            base.check("https://api.example.com/v1beta/a..b/.x/...")
                .is_ok()
        );
    }

    #[test]
    fn structural_faults_are_refused_with_or_without_a_base() {
        for base in [None, Some("https://api.example.com/v1")] {
            let scope = scope(base);
            let cases = [
                (
                    "https://api.example.com/v1/x\r\nInjected: 1",
                    Refusal::BadCharacter,
                ),
                ("https://api.example.com/v1/x\ny", Refusal::BadCharacter),
                ("https://api.example.com/v1/x\ty", Refusal::BadCharacter),
                ("https://api.example.com/v1/x y", Refusal::BadCharacter),
                ("https://api.example.com/v1/x\u{7f}", Refusal::BadCharacter),
                (
                    "https://api.example.com/v1\\..\\..\\admin",
                    Refusal::BadCharacter,
                ),
                ("https://user:pw@api.example.com/v1/x", Refusal::Userinfo),
                (
                    "https://api.example.com@evil.example/v1/x",
                    Refusal::Userinfo,
                ),
                ("https://api.example.com/v1/x#frag", Refusal::Fragment),
                ("https://api.example.com/v1/x?a=1#frag", Refusal::Fragment),
                ("ftp://api.example.com/v1/x", Refusal::NotHttp),
                ("https:///v1/x", Refusal::NotHttp),
                ("/v1/x", Refusal::NotHttp),
                ("https://api.exa mple.com/v1/x", Refusal::BadCharacter),
            ];
            for (url, refusal) in cases {
                assert_eq!(scope.check(url).err(), Some(refusal), "{url:?} {base:?}");
            }
        }
        // Without a base, a well-formed URL anywhere passes: only the base can contain it.
        assert!(scope(None).check("https://anywhere.example/x?y=1").is_ok());
    }

    #[test]
    fn base_urls_are_checked_too() {
        assert!(Scope::new("p", Some("https://u:p@api.example.com")).is_err());
        assert!(Scope::new("p", Some("https://api.example.com/v1?x=1")).is_err());
        assert!(Scope::new("p", Some("https://api.example.com/v1#x")).is_err());
        assert!(Scope::new("p", Some("api.example.com")).is_err());
    }

    #[test]
    fn log_lines_show_no_query_no_userinfo_and_no_more_than_a_line() {
        let shown = format!(
            "{:?}",
            Shown("https://u:secret@api.example.com/v1/x\r\ny?key=abc#f")
        );
        assert_eq!(shown, r#""https://api.example.com/v1/x\r\ny""#);
        let long = format!("https://h/{}", "a".repeat(1000));
        assert!(format!("{:?}", Shown(&long)).chars().count() <= SHOWN + 3);
        assert_eq!(shorten("ab", 2), "ab");
        assert_eq!(shorten("abc", 2), "ab…");
        assert_eq!(shorten("ééé", 1), "é…");
    }

    #[test]
    fn a_kept_url_is_the_one_a_fresh_check_gives_and_refusals_are_not_kept() {
        let base = scope(Some("https://api.example.com/v1"));
        let texts: Vec<String> = (0..2 * KEPT)
            .map(|i| format!("https://api.example.com/v1/models/m{i}:generate?key=k"))
            .collect();
        // Twice over more URLs than are kept: each answer, kept or not, is a fresh check's.
        for _ in 0..2 {
            for text in &texts {
                let checked = base.check(text).unwrap();
                assert_eq!(checked, base.check_afresh(text).unwrap());
                assert_eq!(checked.as_str(), text);
            }
        }
        assert_eq!(crate::sync::lock(&base.admitted).urls.len(), KEPT);
        let outside = "https://api.example.com/v2/chat";
        for _ in 0..2 {
            assert_eq!(base.check(outside), Err(Refusal::OutsideBase));
        }
        let kept = crate::sync::lock(&base.admitted);
        assert!(kept.urls.iter().all(|(text, _)| &**text != outside));
    }
}
