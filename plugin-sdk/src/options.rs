//! Reading a config entry's `options` into a plugin's own typed struct.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::ConfigError;

/// The options of a plugin that takes none: any key is refused.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoOptions {}

/// Deserializes a config entry's `options` (JSON text) into `T`. Give `T`
/// `#[serde(deny_unknown_fields)]` so that a misspelt option fails at start-up: the
/// [`ConfigError`] then names the failing key (a dotted path for nested options) and serde's
/// message lists the keys that are allowed.
///
/// An empty `options` string, or `null`, reads as `{}`.
pub fn parse_options<T: DeserializeOwned>(options: &str) -> Result<T, ConfigError> {
    from_object(parse_object(options)?)
}

/// A config entry's `options` (JSON text) as a JSON object; empty text or `null` as `{}`.
pub(crate) fn parse_object(options: &str) -> Result<Map<String, Value>, ConfigError> {
    let text = options.trim();
    let text = if text.is_empty() { "{}" } else { text };
    // Through a `Value` rather than straight from the text, so that messages carry no line and
    // column of a JSON document the user never wrote (their config is YAML).
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|err| ConfigError::new(format!("options are not valid JSON: {err}")))?;
    match value {
        Value::Null => Ok(Map::new()),
        // serde would also read a struct from a list of its fields in order: refuse that.
        Value::Object(object) => Ok(object),
        _ => Err(ConfigError::new("options must be a mapping")),
    }
}

/// Deserializes an options object into `T`, naming the failing key.
pub(crate) fn from_object<T: DeserializeOwned>(
    object: Map<String, Value>,
) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(Value::Object(object)).map_err(|err| {
        let path = err.path().to_string();
        let message = err.into_inner().to_string();
        if path == "." {
            ConfigError::new(format!("options: {message}"))
        } else {
            ConfigError::at(path, message)
        }
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code, reason = "only deserialized")]
    struct Opts {
        organization: Option<String>,
        #[serde(default)]
        headers: BTreeMap<String, String>,
        chunk_size: Option<core::num::NonZeroU32>,
    }

    #[test]
    fn empty_options_are_an_empty_object() {
        assert!(parse_options::<Opts>("").is_ok());
        assert!(parse_options::<Opts>("{}").is_ok());
        assert!(parse_options::<Opts>("null").is_ok());
    }

    #[test]
    fn unknown_key_is_named() {
        let err = parse_options::<Opts>(r#"{"organisation": "x"}"#).unwrap_err();
        assert_eq!(err.key.as_deref(), Some("organisation"));
        assert!(err.message.contains("`organization`"), "{}", err.message);
    }

    #[test]
    fn mistyped_values_are_named() {
        let err = parse_options::<Opts>(r#"{"organization": 3}"#).unwrap_err();
        assert_eq!(err.key.as_deref(), Some("organization"));
        assert!(!err.message.contains("line"), "{}", err.message);

        let err = parse_options::<Opts>(r#"{"headers": {"x-a": 1}}"#).unwrap_err();
        assert_eq!(err.key.as_deref(), Some("headers.x-a"));

        let err = parse_options::<Opts>(r#"{"chunk_size": 0}"#).unwrap_err();
        assert_eq!(err.key.as_deref(), Some("chunk_size"));
    }

    #[test]
    fn no_options_refuses_any_key() {
        assert!(parse_options::<NoOptions>("").is_ok());
        let err = parse_options::<NoOptions>(r#"{"x": 1}"#).unwrap_err();
        assert_eq!(err.key.as_deref(), Some("x"));
    }

    #[test]
    fn non_object_options_fail_without_a_key() {
        let err = parse_options::<Opts>("[1]").unwrap_err();
        assert_eq!(err.key, None);
        let err = parse_options::<Opts>("{").unwrap_err();
        assert_eq!(err.key, None);
    }
}
