//! Known secrets, and their removal from text that leaves the gateway: what is relayed from an
//! upstream to the client (error messages, error events inside streams), log lines and spans,
//! and what the ledger stores.
//!
//! An upstream that repeats the key it received ("Incorrect API key provided: sk-...") would
//! otherwise hand the operator's key to every client and every log reader. The set holds every
//! provider entry's key (and its options' secrets), the passwords of `ledger.url` and of the
//! Redis URL of `limits.store`, and the OTLP header values; it is built with each loaded config
//! ([`crate::gateway::Gateway`]), so a reload that changes a key changes it too. Each request
//! adds its own credentials (the gateway key it sent). Secrets shorter than [`MIN_LEN`]
//! characters are left out: redacting them would redact ordinary words.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use aho_corasick::{AhoCorasick, MatchKind};
use http::HeaderMap;
use memchr::memmem;
use serde_json::Value;

use crate::config::Config;
use crate::ledger::UsageRecord;

/// What a secret is replaced with.
pub const REDACTED: &str = "[redacted]";
/// Secrets shorter than this, in characters, are not redacted.
pub const MIN_LEN: usize = 8;

/// The secrets of one loaded config, and the automaton that finds them all in one pass (a
/// request's fields are searched for a dozen secrets in tens of nanoseconds each, not a
/// microsecond).
#[derive(Default)]
pub struct Secrets {
    known: Vec<String>,
    /// `None` when there are no secrets; a longer secret wins over one it contains.
    matcher: Option<AhoCorasick>,
}

/// Never prints the secrets themselves.
impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secrets({} known)", self.known.len())
    }
}

/// Option keys (any part of the name, lower-cased) whose string values are secrets.
const SECRET_OPTIONS: [&str; 6] = [
    "secret",
    "token",
    "password",
    "api_key",
    "apikey",
    "authorization",
];
/// Header names (any part, lower-cased) whose values are secrets, in `options.headers` and
/// `observability.traces.headers`.
const SECRET_HEADERS: [&str; 5] = ["authorization", "key", "token", "secret", "cookie"];

impl Secrets {
    /// Every secret `config` holds.
    pub fn from_config(config: &Config) -> Self {
        let mut found = Vec::new();
        for entry in config.providers.values() {
            if let Some(key) = &entry.api_key {
                let key = key.expose();
                found.push(key.to_owned());
                // Bedrock's `ACCESS_KEY_ID:SECRET_ACCESS_KEY`: each half on its own.
                if let Some((id, secret)) = key.split_once(':') {
                    found.extend([id.to_owned(), secret.to_owned()]);
                }
            }
            for (name, value) in &entry.options {
                option_secrets(name, value, &mut found);
            }
        }
        for guard in &config.guards {
            if let Some(key) = guard.endpoint.as_ref().and_then(|e| e.api_key.as_ref()) {
                found.push(key.expose().to_owned());
            }
        }
        found.extend(url_passwords(&config.ledger.url));
        found.extend(url_passwords(&config.limits.store));
        if let Some(traces) = &config.observability.traces {
            for value in traces.headers.values() {
                header_secrets(value.expose(), &mut found);
            }
        }
        Self::new(found)
    }

    fn new(found: Vec<String>) -> Self {
        let mut known: Vec<String> = found
            .into_iter()
            .filter(|s| s.chars().count() >= MIN_LEN)
            .collect();
        known.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        known.dedup();
        let matcher = if known.is_empty() {
            None
        } else {
            // Building fails only past limits a config's few dozen keys are far from; then the
            // plain search below still redacts, slower.
            AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostLongest)
                .build(&known)
                .ok()
        };
        Self { known, matcher }
    }

    /// A redactor for one request: these secrets, and the credentials in its `headers`.
    pub fn for_request(self: &Arc<Self>, headers: &HeaderMap) -> Redactor {
        let mut own = Vec::new();
        for name in ["authorization", "x-api-key", "api-key", "x-goog-api-key"] {
            for value in headers.get_all(name) {
                if let Ok(value) = value.to_str() {
                    header_secrets(value, &mut own);
                }
            }
        }
        own.retain(|s| s.chars().count() >= MIN_LEN && !self.known.contains(s));
        own.sort_by_key(|s| std::cmp::Reverse(s.len()));
        own.dedup();
        Redactor {
            known: Arc::clone(self),
            own: own
                .iter()
                .map(|s| memmem::Finder::new(s.as_bytes()).into_owned())
                .collect(),
        }
    }

    /// `text` with these secrets replaced by [`REDACTED`].
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match &self.matcher {
            Some(matcher) if matcher.is_match(text) => {
                let mut out = String::with_capacity(text.len());
                matcher.replace_all_with(text, &mut out, |_, _, out| {
                    out.push_str(REDACTED);
                    true
                });
                Cow::Owned(out)
            }
            Some(_) => Cow::Borrowed(text),
            None => replace_all(text, &self.known),
        }
    }
}

/// The secrets one request must not leak: the config's and its own credentials.
#[derive(Clone, Default)]
pub struct Redactor {
    known: Arc<Secrets>,
    /// Searchers of the request's own credentials (one or two), longest first.
    own: Vec<memmem::Finder<'static>>,
}

impl Redactor {
    /// `text` with every secret replaced by [`REDACTED`].
    pub fn text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut text = Cow::Borrowed(text);
        for finder in &self.own {
            if finder.find(text.as_bytes()).is_some() {
                let secret = String::from_utf8_lossy(finder.needle()).into_owned();
                text = Cow::Owned(text.replace(&secret, REDACTED));
            }
        }
        match text {
            Cow::Borrowed(text) => self.known.redact(text),
            Cow::Owned(text) => Cow::Owned(self.known.redact(&text).into_owned()),
        }
    }

    /// [`Redactor::text`] for an owned string, which is kept when it holds no secret.
    pub fn string(&self, text: String) -> String {
        match self.text(&text) {
            Cow::Borrowed(_) => text,
            Cow::Owned(redacted) => redacted,
        }
    }

    /// The text of a usage record's redacted columns (see [`crate::ledger::columns::COLUMNS`]),
    /// before it is logged and stored.
    pub fn record(&self, record: &mut UsageRecord) {
        crate::ledger::columns::redact(record, &|text| self.string(text));
    }
}

/// `text` with each of `secrets` (longest first) replaced by [`REDACTED`], one search each.
fn replace_all<'a>(text: &'a str, secrets: &[String]) -> Cow<'a, str> {
    let mut text = Cow::Borrowed(text);
    for secret in secrets {
        if text.contains(secret.as_str()) {
            text = Cow::Owned(text.replace(secret.as_str(), REDACTED));
        }
    }
    text
}

/// The string values of option `name` that are secrets, looking inside mappings and lists (a
/// `headers` mapping by header name).
fn option_secrets(name: &str, value: &Value, found: &mut Vec<String>) {
    let lower = name.to_ascii_lowercase();
    match value {
        Value::String(text) if SECRET_OPTIONS.iter().any(|s| lower.contains(s)) => {
            header_secrets(text, found);
        }
        Value::Object(map) if lower == "headers" => {
            for (header, value) in map {
                let header = header.to_ascii_lowercase();
                if let Value::String(text) = value
                    && SECRET_HEADERS.iter().any(|s| header.contains(s))
                {
                    header_secrets(text, found);
                }
            }
        }
        Value::Object(map) => {
            for (key, value) in map {
                option_secrets(key, value, found);
            }
        }
        Value::Array(items) => {
            for item in items {
                option_secrets(name, item, found);
            }
        }
        Value::String(_) | Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// A credential header's value, and the credential alone when it follows a scheme
/// (`Bearer <key>`).
fn header_secrets(value: &str, found: &mut Vec<String>) {
    let value = value.trim();
    found.push(value.to_owned());
    if let Some((_scheme, credential)) = value.split_once(' ') {
        found.push(credential.trim().to_owned());
    }
}

/// The password of a `scheme://user:password@host/...` URL, and of a `password=` parameter,
/// as written and percent-decoded.
fn url_passwords(url: &str) -> Vec<String> {
    let mut found = Vec::new();
    if let Some((_, rest)) = url.split_once("://") {
        let authority = rest.split(['/', '?']).next().unwrap_or_default();
        if let Some((userinfo, _host)) = authority.rsplit_once('@')
            && let Some((_user, password)) = userinfo.split_once(':')
        {
            found.push(password.to_owned());
        }
    }
    if let Some((_, query)) = url.split_once('?') {
        found.extend(
            query
                .split('&')
                .filter_map(|pair| pair.strip_prefix("password="))
                .map(str::to_owned),
        );
    }
    let decoded: Vec<String> = found.iter().map(|p| percent_decoded(p)).collect();
    found.extend(decoded);
    found
}

fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |at: usize| {
            bytes
                .get(at)
                .and_then(|&b| char::from(b).to_digit(16))
                .and_then(|d| u8::try_from(d).ok())
        };
        match (bytes[i], hex(i + 1), hex(i + 2)) {
            (b'%', Some(high), Some(low)) => {
                out.push(high << 4 | low);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn config(yaml: &str) -> Config {
        Config::from_yaml(yaml).unwrap_or_else(|e| panic!("{e}"))
    }

    const YAML: &str = r#"
providers:
  openai: { plugin: openai, api_key: sk-provider-key-0123456789 }
  short: { plugin: openai, api_key: sk-1234 }
  bedrock:
    plugin: bedrock
    api_key: "AKIAIOSFODNN7EXAMPLE:wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    options: { region: us-east-1, session_token: session-token-abcdef }
  custom:
    plugin: openai
    options: { organization: org-not-a-secret, headers: { x-custom-key: header-secret-123, accept: application/json-ish } }
ledger: { url: "postgres://wasmgate:db%40password-1@db.internal:5432/wasmgate" }
limits: { store: "redis://:redis-password-2@127.0.0.1:6379" }
observability:
  traces: { otlp_endpoint: "http://127.0.0.1:4318", headers: { authorization: "Bearer otlp-token-3456" } }
"#;

    #[test]
    fn every_secret_of_the_config_is_redacted() {
        let secrets = Secrets::from_config(&config(YAML));
        let text = "key sk-provider-key-0123456789, aws AKIAIOSFODNN7EXAMPLE / \
                    wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY, session-token-abcdef, \
                    header-secret-123, db db@password-1 (db%40password-1), redis-password-2, \
                    Bearer otlp-token-3456";
        let redacted = secrets.redact(text);
        for secret in [
            "sk-provider-key",
            "AKIAIOSFODNN7EXAMPLE",
            "wJalrXUtnFEMI",
            "session-token",
            "header-secret",
            "password-1",
            "redis-password",
            "otlp-token",
        ] {
            assert!(!redacted.contains(secret), "{secret} in {redacted}");
        }
        assert!(
            redacted.starts_with("key [redacted], aws [redacted] / [redacted]"),
            "{redacted}"
        );
        // Not secrets: an organization, a non-credential header, a short key.
        let kept = "org-not-a-secret application/json-ish sk-1234";
        assert_eq!(secrets.redact(kept), kept);
        assert!(matches!(secrets.redact("nothing here"), Cow::Borrowed(_)));
        assert_eq!(format!("{secrets:?}"), "Secrets(11 known)");
    }

    #[test]
    fn a_request_adds_its_own_credentials() {
        let secrets = Arc::new(Secrets::from_config(&config(YAML)));
        let mut headers = HeaderMap::new();
        headers.insert(
            "authorization",
            "Bearer wg-gateway-key-abcdef"
                .parse()
                .unwrap_or_else(|e| panic!("{e}")),
        );
        headers.append(
            "x-api-key",
            "anthropic-style-key"
                .parse()
                .unwrap_or_else(|e| panic!("{e}")),
        );
        let redactor = secrets.for_request(&headers);
        assert_eq!(
            redactor
                .text("wg-gateway-key-abcdef anthropic-style-key sk-provider-key-0123456789 ok"),
            "[redacted] [redacted] [redacted] ok"
        );
        // Another request does not carry this one's key.
        let other = secrets.for_request(&HeaderMap::new());
        assert_eq!(other.text("wg-gateway-key-abcdef"), "wg-gateway-key-abcdef");
    }

    #[test]
    fn records_are_redacted_field_by_field() {
        let secrets = Arc::new(Secrets::new(vec!["sk-secret-999".to_owned()]));
        let redactor = secrets.for_request(&HeaderMap::new());
        let mut record = UsageRecord {
            project: "p-sk-secret-999".to_owned(),
            model: Some("m/sk-secret-999".to_owned()),
            user_tags: vec!["sk-secret-999".to_owned(), "vip".to_owned()],
            error_type: Some("http_401".to_owned()),
            ..UsageRecord::default()
        };
        redactor.record(&mut record);
        assert_eq!(record.project, "p-[redacted]");
        assert_eq!(record.model.as_deref(), Some("m/[redacted]"));
        assert_eq!(record.user_tags, ["[redacted]", "vip"]);
        assert_eq!(record.error_type.as_deref(), Some("http_401"));
    }

    #[test]
    fn short_secrets_are_ignored_and_long_ones_win() {
        let secrets = Secrets::new(vec![
            "1234567".to_owned(),
            "abcdefgh".to_owned(),
            "abcdefgh-longer".to_owned(),
        ]);
        assert_eq!(
            secrets.redact("1234567 abcdefgh-longer abcdefgh"),
            "1234567 [redacted] [redacted]"
        );
        // The plain search, used if the automaton cannot be built, agrees.
        assert_eq!(
            replace_all("1234567 abcdefgh-longer abcdefgh", &secrets.known),
            "1234567 [redacted] [redacted]"
        );
    }

    #[test]
    fn passwords_are_found_in_urls() {
        assert_eq!(
            url_passwords("postgres://u:p%40ss@h/db"),
            ["p%40ss", "p@ss"]
        );
        assert_eq!(
            url_passwords("postgresql://h/db?user=u&password=s3cret"),
            ["s3cret", "s3cret"]
        );
        assert!(url_passwords("redis://127.0.0.1:6379").is_empty());
        assert!(url_passwords("memory").is_empty());
        assert!(url_passwords("sqlite://./wasmgate.db").is_empty());
    }
}
