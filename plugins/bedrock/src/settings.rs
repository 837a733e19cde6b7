//! The entry's `base_url`, `api_key` and `options`, checked once at start-up and re-read per
//! request.
//!
//! ```yaml
//! providers:
//!   bedrock:
//!     plugin: bedrock
//!     options:
//!       region: us-east-1            # required
//!       access_key_id: AKIA...       # with secret_access_key, or both in api_key
//!       secret_access_key: ...
//!       session_token: ...           # optional, for temporary credentials
//! ```
//!
//! Credentials may instead come from the entry's `api_key` as `ACCESS_KEY_ID:SECRET_ACCESS_KEY`
//! (secret access keys hold no `:`), which keeps them out of `options` and lets them come from
//! the same place as other providers' keys. Keys in `options` win when both are given.

use serde::Deserialize;
use wasmgate_plugin_sdk::http::{check_header, is_http_url};
use wasmgate_plugin_sdk::{ConfigError, ProviderConfig};

use crate::sigv4::Credentials;

/// The `options:` of an entry, as written in the config. No `Debug`: it holds secrets.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {
    region: Option<String>,
    access_key_id: Option<String>,
    secret_access_key: Option<String>,
    session_token: Option<String>,
}

/// An entry's settings, known to be usable.
pub struct Settings {
    pub base_url: String,
    pub region: String,
    pub credentials: Credentials,
}

impl Settings {
    pub fn from_config(config: &ProviderConfig) -> Result<Self, ConfigError> {
        let options: Options = wasmgate_plugin_sdk::options(config)?;
        let region = options
            .region
            .ok_or_else(|| ConfigError::at("region", "required: the AWS region, e.g. us-east-1"))?;
        let region_ok = !region.is_empty()
            && region
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !region_ok {
            return Err(ConfigError::at(
                "region",
                "must be an AWS region name such as us-east-1",
            ));
        }
        let base_url = match &config.base_url {
            Some(url) => url.trim_end_matches('/').to_owned(),
            None => format!("https://bedrock-runtime.{region}.amazonaws.com"),
        };
        if !is_http_url(&base_url) || base_url.contains(['?', '#']) {
            return Err(ConfigError::at(
                "base_url",
                "must be an absolute http:// or https:// URL without a query",
            ));
        }
        let (access_key_id, secret_access_key) =
            match (options.access_key_id, options.secret_access_key) {
                (Some(id), Some(secret)) => (id, secret),
                (Some(_), None) => {
                    return Err(ConfigError::at(
                        "secret_access_key",
                        "required with access_key_id",
                    ));
                }
                (None, Some(_)) => {
                    return Err(ConfigError::at(
                        "access_key_id",
                        "required with secret_access_key",
                    ));
                }
                (None, None) => from_api_key(config.api_key.as_deref())?,
            };
        if access_key_id.is_empty() || secret_access_key.is_empty() {
            return Err(ConfigError::at(
                "access_key_id",
                "the access key id and secret must not be empty",
            ));
        }
        check_header("authorization", &access_key_id)
            .map_err(|_| ConfigError::at("access_key_id", "contains a control character"))?;
        if let Some(token) = &options.session_token {
            // Never echo the token in the message.
            check_header("x-amz-security-token", token)
                .map_err(|_| ConfigError::at("session_token", "contains a control character"))?;
        }
        Ok(Settings {
            base_url,
            region,
            credentials: Credentials {
                access_key_id,
                secret_access_key,
                session_token: options.session_token,
            },
        })
    }
}

/// `ACCESS_KEY_ID:SECRET_ACCESS_KEY` from the entry's `api_key`.
fn from_api_key(api_key: Option<&str>) -> Result<(String, String), ConfigError> {
    match api_key.and_then(|key| key.split_once(':')) {
        Some((id, secret)) => Ok((id.to_owned(), secret.to_owned())),
        None => Err(ConfigError::new(
            "credentials required: set options access_key_id and secret_access_key, or api_key \
             as ACCESS_KEY_ID:SECRET_ACCESS_KEY",
        )),
    }
}
