//! The entry's `options`, which the SDK reads into [`Settings`] for each call, and the
//! credentials they (or the entry's `api_key`) give.
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
use wasmgate_plugin_sdk::http::check_header;
use wasmgate_plugin_sdk::{ConfigError, Entry};

use crate::sigv4::Credentials;

/// The `options:` of an entry. No `Debug`: it holds secrets.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    region: Option<String>,
    access_key_id: Option<String>,
    secret_access_key: Option<String>,
    session_token: Option<String>,
}

impl Settings {
    /// The AWS region, if it is a region name (lower-case letters, digits and `-`).
    pub fn region(&self) -> Result<&str, ConfigError> {
        let region = (self.region.as_deref())
            .ok_or_else(|| ConfigError::at("region", "required: the AWS region, e.g. us-east-1"))?;
        let valid = !region.is_empty()
            && region
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !valid {
            return Err(ConfigError::at(
                "region",
                "must be an AWS region name such as us-east-1",
            ));
        }
        Ok(region)
    }
}

/// The entry's credentials: from `options`, else from its `api_key`.
pub fn credentials(entry: &Entry<Settings>) -> Result<Credentials, ConfigError> {
    let options = &entry.settings;
    let (access_key_id, secret_access_key) =
        match (&options.access_key_id, &options.secret_access_key) {
            (Some(id), Some(secret)) => (id.clone(), secret.clone()),
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
            (None, None) => from_api_key(entry.api_key.as_deref())?,
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
    Ok(Credentials {
        access_key_id,
        secret_access_key,
        session_token: options.session_token.clone(),
    })
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
