//! A provider's config entry, read once per call: its base URL, key and headers checked, its
//! `options` parsed into the plugin's own `Settings`.
//!
//! Two options belong to every provider and are read here, not by the plugin:
//! - `headers`: extra headers for every upstream request (they win over the plugin's own);
//! - `auth_header`: the header that carries the entry's key instead of the plugin's usual one.
//!   `authorization` sends `Bearer <key>`, any other name the bare key (Azure's `api-key`).

use core::fmt;
use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::http::{check_header, is_http_url, join_url};
use crate::options::{from_object, parse_object};
use crate::{ConfigError, HttpRequest, Prepared, Provider, ProviderConfig};

/// How a provider sends its entry's API key upstream, unless the entry's `auth_header` says
/// otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Auth {
    /// `authorization: Bearer <key>` (OpenAI, Cohere and most others).
    Bearer,
    /// The bare key in this header (`x-api-key`, `api-key`, `x-goog-api-key`).
    Header(&'static str),
    /// The plugin uses the key itself (it signs requests, as Bedrock does): the SDK sends no
    /// key, and the entry may not set `auth_header`.
    Own,
}

/// The options every provider takes, besides its own.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Common {
    #[serde(default)]
    headers: BTreeMap<String, String>,
    auth_header: Option<String>,
}

const COMMON_KEYS: [&str; 2] = ["headers", "auth_header"];

/// One config entry of a provider, checked: what `validate`, `prepare` and `parse_response` get
/// instead of the raw [`ProviderConfig`].
pub struct Entry<S> {
    /// The entry's name, the prefix of its model ids.
    pub name: String,
    /// The entry's `base_url`, else the provider's default, an absolute `http(s)://` URL with
    /// no query. Empty only for a provider that answers locally ([`Provider::LOCAL`]) and was
    /// given none.
    pub base_url: String,
    /// The entry's API key, if it has a non-empty one. Send it only upstream.
    pub api_key: Option<String>,
    /// The model names the entry declares.
    pub models: Vec<String>,
    /// The entry's `options`, read into the plugin's type (without the common keys).
    pub settings: S,
    /// The header the key goes in, and whether as `Bearer <key>`; `None`: it is not sent.
    key_header: Option<(String, bool)>,
    /// The `headers` option, checked.
    headers: Vec<(String, String)>,
}

impl<S> Entry<S> {
    /// Reads `config` for provider `P`: the common options, then `P::Settings`, then the base
    /// URL (the entry's, else `P::default_base_url`). Errors name the key at fault.
    pub fn read<P: Provider<Settings = S>>(config: &ProviderConfig) -> Result<Self, ConfigError>
    where
        S: DeserializeOwned,
    {
        let mut options = parse_object(&config.options)?;
        let mut common = serde_json::Map::new();
        for key in COMMON_KEYS {
            if let Some(value) = options.remove(key) {
                common.insert(key.to_owned(), value);
            }
        }
        let common: Common = from_object(common)?;
        let settings: S = from_object(options)?;

        // None at all is refused after the plugin's own checks (`calls::validate`), which can
        // say better why its options gave no default (Bedrock: no `region`).
        let base_url = match (config.base_url.clone(), P::default_base_url(&settings)) {
            (Some(url), _) | (None, Some(url)) => base_url(url)?,
            (None, None) => String::new(),
        };
        let api_key = config.api_key.clone().filter(|k| !k.is_empty());
        if let Some(key) = &api_key
            && key.chars().any(char::is_control)
        {
            // Never echo the key.
            return Err(ConfigError::at("api_key", "contains a control character"));
        }
        let key_header = match (common.auth_header, P::AUTH) {
            (Some(_), Auth::Own) => {
                return Err(ConfigError::at(
                    "auth_header",
                    "this provider uses the key itself and sends it in no header",
                ));
            }
            (Some(name), _) => {
                let name = name.to_ascii_lowercase();
                check_header(&name, "").map_err(|msg| ConfigError::at("auth_header", msg))?;
                let bearer = name == "authorization";
                Some((name, bearer))
            }
            (None, Auth::Bearer) => Some(("authorization".to_owned(), true)),
            (None, Auth::Header(name)) => Some((name.to_owned(), false)),
            (None, Auth::Own) => None,
        };
        let mut headers = Vec::with_capacity(common.headers.len());
        for (name, value) in common.headers {
            check_header(&name, &value)
                .map_err(|msg| ConfigError::at(format!("headers.{name}"), msg))?;
            headers.push((name, value));
        }
        Ok(Entry {
            name: config.name.clone(),
            base_url,
            api_key,
            models: config.models.clone(),
            settings,
            key_header,
            headers,
        })
    }

    /// `path` under the entry's base URL, with one `/` between them.
    pub fn url(&self, path: &str) -> String {
        join_url(&self.base_url, path)
    }

    /// Adds the key (in the provider's header, or the entry's `auth_header`) and the entry's
    /// `headers` to `request`. The SDK does this to every upstream request `prepare` returns,
    /// after the plugin's own headers, so a plugin calls it only for requests it builds
    /// elsewhere.
    pub fn authorize(&self, request: &mut HttpRequest) {
        if let (Some((name, bearer)), Some(key)) = (&self.key_header, &self.api_key) {
            let value = if *bearer {
                format!("Bearer {key}")
            } else {
                key.clone()
            };
            request.set_header(name.as_str(), value);
        }
        for (name, value) in &self.headers {
            request.set_header(name.as_str(), value.as_str());
        }
    }

    /// [`Entry::authorize`] on the upstream request inside `prepared`, if any.
    pub(crate) fn authorize_prepared(&self, prepared: &mut Prepared) {
        if let Some(http) = prepared.request_mut() {
            self.authorize(http);
        }
    }
}

/// The key stays out of logs and panics.
impl<S: fmt::Debug> fmt::Debug for Entry<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("name", &self.name)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "***"))
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// A base URL the host can send to and paths can be joined to: `http(s)://host...` with no
/// query or fragment (a path joined after `?` would land in the query).
fn base_url(url: String) -> Result<String, ConfigError> {
    if !is_http_url(&url) || url.contains(['?', '#']) {
        return Err(ConfigError::at(
            "base_url",
            "must be an absolute http:// or https:// URL without a query",
        ));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;
    use crate::{CanonicalRequest, NoStream, Operation, PluginError, calls};

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Settings {
        region: Option<String>,
    }

    /// Bearer by default, a default base URL derived from its options, like Bedrock's.
    struct Regional;

    impl Provider for Regional {
        type Settings = Settings;
        type Decoder = NoStream;
        const SYSTEM: Option<&'static str> = Some("regional");

        fn default_base_url(settings: &Settings) -> Option<String> {
            Some(format!("https://{}.example", settings.region.as_deref()?))
        }

        fn prepare(entry: &Entry<Settings>, _: CanonicalRequest) -> Result<Prepared, PluginError> {
            let http = HttpRequest::get(entry.url("models")).header("x-plugin", "own");
            Ok(Prepared::Upstream(http))
        }
    }

    /// Signs with its key itself.
    struct Signing;

    impl Provider for Signing {
        type Settings = crate::NoOptions;
        type Decoder = NoStream;
        const AUTH: Auth = Auth::Own;

        fn prepare(
            e: &Entry<crate::NoOptions>,
            _: CanonicalRequest,
        ) -> Result<Prepared, PluginError> {
            Ok(Prepared::Upstream(HttpRequest::get(e.url("x"))))
        }
    }

    fn config(base_url: Option<&str>, api_key: Option<&str>, options: &str) -> ProviderConfig {
        ProviderConfig {
            name: "p".into(),
            base_url: base_url.map(Into::into),
            api_key: api_key.map(Into::into),
            models: vec![],
            options: options.into(),
        }
    }

    fn sent(config: &ProviderConfig) -> HttpRequest {
        let request = CanonicalRequest {
            operation: Operation::ListModels,
            model: "m".into(),
            body: "{}".into(),
            stream: false,
            headers: vec![],
            native: None,
        };
        match calls::prepare::<Regional>(config, request) {
            Ok(Prepared::Upstream(http)) => http,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_default_base_url_comes_from_the_settings() {
        let described = calls::describe::<Regional>(&config(None, None, r#"{"region": "eu"}"#));
        assert_eq!(
            described.default_base_url.as_deref(),
            Some("https://eu.example")
        );
        assert_eq!(described.system.as_deref(), Some("regional"));
        let unreadable = calls::describe::<Regional>(&config(None, None, r#"{"regio": "eu"}"#));
        assert_eq!(unreadable.default_base_url, None);

        let http = sent(&config(None, None, r#"{"region": "eu"}"#));
        assert_eq!(http.url, "https://eu.example/models");
        let http = sent(&config(Some("http://127.0.0.1:9/v1/"), None, "{}"));
        assert_eq!(http.url, "http://127.0.0.1:9/v1/models");
    }

    #[test]
    fn base_urls_are_checked_and_required() {
        let key = |base_url: Option<&str>| {
            calls::validate::<Regional>(&config(base_url, None, "{}"))
                .unwrap_err()
                .key
        };
        assert_eq!(key(None).as_deref(), Some("base_url"));
        assert_eq!(key(Some("example.com")).as_deref(), Some("base_url"));
        assert_eq!(key(Some("https://h/v1?k=1")).as_deref(), Some("base_url"));
        assert_eq!(key(Some("https://h/v1#f")).as_deref(), Some("base_url"));
        assert!(calls::validate::<Regional>(&config(Some("https://h/v1"), None, "{}")).is_ok());
    }

    #[test]
    fn the_key_and_headers_are_added_after_the_plugin_s_own() {
        let http = sent(&config(Some("https://h"), Some("sk-1"), "{}"));
        assert!(
            http.headers
                .contains(&("authorization".into(), "Bearer sk-1".into()))
        );
        assert!(http.headers.contains(&("x-plugin".into(), "own".into())));

        let options = r#"{"auth_header": "X-Key", "headers": {"x-plugin": "mine", "x-b": "1"}}"#;
        let http = sent(&config(Some("https://h"), Some("sk-1"), options));
        let header = |name: &str| {
            http.headers
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(header("x-key"), Some("sk-1"));
        assert_eq!(header("authorization"), None);
        assert_eq!(header("x-plugin"), Some("mine"));
        assert_eq!(header("x-b"), Some("1"));

        let http = sent(&config(Some("https://h"), Some(""), "{}"));
        assert_eq!(
            http.headers,
            vec![("x-plugin".to_owned(), "own".to_owned())]
        );
    }

    #[test]
    fn common_options_fail_with_their_key() {
        let err = |options: &str, key: Option<&str>| {
            let err = calls::validate::<Regional>(&config(Some("https://h"), key, options));
            err.unwrap_err().key
        };
        assert_eq!(
            err(r#"{"headers": {"x": "a\nb"}}"#, None).as_deref(),
            Some("headers.x")
        );
        assert_eq!(
            err(r#"{"headers": {"a b": "1"}}"#, None).as_deref(),
            Some("headers.a b")
        );
        assert_eq!(
            err(r#"{"auth_header": "a:b"}"#, None).as_deref(),
            Some("auth_header")
        );
        assert_eq!(err(r#"{"regon": "eu"}"#, None).as_deref(), Some("regon"));
        assert_eq!(err("{}", Some("sk\r\nx: 1")).as_deref(), Some("api_key"));
    }

    #[test]
    fn a_provider_that_signs_gets_no_key_header() {
        let cfg = config(Some("https://h"), Some("id:secret"), "{}");
        let request = CanonicalRequest {
            operation: Operation::ListModels,
            model: "m".into(),
            body: "{}".into(),
            stream: false,
            headers: vec![],
            native: None,
        };
        let Ok(Prepared::Upstream(http)) = calls::prepare::<Signing>(&cfg, request) else {
            panic!("not upstream");
        };
        assert!(http.headers.is_empty());
        let cfg = config(
            Some("https://h"),
            Some("id:secret"),
            r#"{"auth_header": "x-key"}"#,
        );
        let err = calls::validate::<Signing>(&cfg).unwrap_err();
        assert_eq!(err.key.as_deref(), Some("auth_header"));
    }

    #[test]
    fn the_key_stays_out_of_debug() {
        let entry = Entry::read::<Regional>(&config(Some("https://h"), Some("sk-secret"), "{}"));
        let text = format!("{:?}", entry.unwrap());
        assert!(!text.contains("sk-secret"), "{text}");
    }
}
