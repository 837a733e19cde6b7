//! Building upstream requests, reading upstream responses, checking configured headers.

use crate::{HttpRequest, HttpResponse, PluginError, Prepared};

impl HttpRequest {
    /// A `method` request to `url` with no headers and no body.
    pub fn new(method: impl Into<String>, url: impl Into<String>) -> Self {
        HttpRequest {
            method: method.into(),
            url: url.into(),
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// A `GET` of `url`.
    pub fn get(url: impl Into<String>) -> Self {
        Self::new("GET", url)
    }

    /// A `POST` of `body` to `url`, with `content-type: application/json`.
    pub fn post_json(url: impl Into<String>, body: impl Into<Vec<u8>>) -> Self {
        let mut request = Self::new("POST", url);
        request.body = body.into();
        request.header("content-type", "application/json")
    }

    /// Adds a header, replacing any of the same name (compared case-insensitively).
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.set_header(name, value);
        self
    }

    /// Sets a header, replacing any of the same name (compared case-insensitively).
    pub fn set_header(&mut self, name: impl Into<String>, value: impl Into<String>) {
        let name = name.into();
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(&name));
        self.headers.push((name, value.into()));
    }
}

impl Prepared {
    /// The upstream request inside, if this goes upstream.
    pub fn request_mut(&mut self) -> Option<&mut HttpRequest> {
        match self {
            Prepared::Upstream(http) => Some(http),
            Prepared::UpstreamForm(form) => Some(&mut form.request),
            Prepared::UpstreamRaw(raw) => Some(&mut raw.request),
            Prepared::Local(_) | Prepared::LocalStream(_) => None,
        }
    }
}

impl HttpResponse {
    /// Whether the status is 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The first value of header `name`, compared case-insensitively.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// `body` written as JSON, for an upstream request.
pub fn json_body(body: &impl serde::Serialize) -> Result<Vec<u8>, PluginError> {
    serde_json::to_vec(body)
        .map_err(|_| PluginError::upstream("could not write the upstream request"))
}

/// Joins a configured base URL and an endpoint path with exactly one `/` between them, whether
/// or not the user wrote a trailing slash.
pub fn join_url(base: &str, path: &str) -> String {
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

/// Percent-encodes `value` as one URL path segment, for a client-controlled name (a model, a
/// deployment) that goes into an upstream URL: every byte but RFC 3986's unreserved characters
/// (`A-Z a-z 0-9 - . _ ~`) is encoded, so `/`, `?`, `#`, `%`, `@`, `:`, `\` and control
/// characters cannot change what the URL means. `None` for `""`, `"."` and `".."`, which no
/// encoding can make one plain segment (`%2e%2e` is still `..` to URL parsers).
///
/// ```
/// use wasmgate_plugin_sdk::http::path_segment;
///
/// assert_eq!(path_segment("gemini-2.0-flash").as_deref(), Some("gemini-2.0-flash"));
/// assert_eq!(path_segment("a/../b?k=1").as_deref(), Some("a%2F..%2Fb%3Fk%3D1"));
/// assert_eq!(path_segment(".."), None);
/// ```
pub fn path_segment(value: &str) -> Option<String> {
    if matches!(value, "" | "." | "..") {
        return None;
    }
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(byte >> 4)]));
            out.push(char::from(HEX[usize::from(byte & 0x0f)]));
        }
    }
    Some(out)
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// Whether `url` is an absolute `http://` or `https://` URL with a host, the only kind the host
/// sends requests to.
pub fn is_http_url(url: &str) -> bool {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    rest.is_some_and(|rest| !rest.is_empty() && !rest.starts_with('/'))
}

/// Checks that `name` is an HTTP header name (an RFC 9110 token) and `value` a header value with
/// no control characters, so that a config entry cannot smuggle a line break into a request.
pub fn check_header(name: &str, value: &str) -> Result<(), String> {
    let is_token_char = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    if name.is_empty() || !name.bytes().all(is_token_char) {
        return Err(format!("`{name}` is not a valid header name"));
    }
    if value.chars().any(|c| c.is_control() && c != '\t') {
        return Err(format!(
            "the value of header `{name}` contains a control character"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_url_has_one_slash() {
        assert_eq!(join_url("https://a/v1", "/models"), "https://a/v1/models");
        assert_eq!(join_url("https://a/v1/", "models"), "https://a/v1/models");
        assert_eq!(join_url("https://a/v1//", "/models"), "https://a/v1/models");
    }

    #[test]
    fn path_segments_are_one_segment_whatever_the_name() {
        let cases = [
            ("gpt-4o", "gpt-4o"),
            ("anthropic.claude-v2:1", "anthropic.claude-v2%3A1"),
            ("../../v1/other", "..%2F..%2Fv1%2Fother"),
            ("%2e%2e", "%252e%252e"),
            ("x?key=abc&alt=json", "x%3Fkey%3Dabc%26alt%3Djson"),
            ("x#f", "x%23f"),
            ("u@evil", "u%40evil"),
            ("a\\b", "a%5Cb"),
            ("x\r\nH: 1", "x%0D%0AH%3A%201"),
            ("é", "%C3%A9"),
            ("...", "..."),
        ];
        for (name, segment) in cases {
            assert_eq!(path_segment(name).as_deref(), Some(segment), "{name:?}");
        }
        for name in ["", ".", ".."] {
            assert_eq!(path_segment(name), None, "{name:?}");
        }
    }

    #[test]
    fn http_urls() {
        assert!(is_http_url("https://api.openai.com/v1"));
        assert!(is_http_url("http://127.0.0.1:8080"));
        assert!(!is_http_url("ftp://x"));
        assert!(!is_http_url("https://"));
        assert!(!is_http_url("api.openai.com"));
    }

    #[test]
    fn header_replaces_case_insensitively() {
        let req = HttpRequest::post_json("https://a", "{}")
            .header("Authorization", "Bearer a")
            .header("authorization", "Bearer b");
        assert_eq!(
            req.headers,
            vec![
                ("content-type".to_string(), "application/json".to_string()),
                ("authorization".to_string(), "Bearer b".to_string()),
            ]
        );
    }

    #[test]
    fn headers_are_checked() {
        assert!(check_header("x-api-key", "abc def").is_ok());
        assert!(check_header("bad name", "v").is_err());
        assert!(check_header("", "v").is_err());
        assert!(check_header("x", "a\r\nInjected: 1").is_err());
    }
}
