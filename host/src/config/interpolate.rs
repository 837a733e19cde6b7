//! `${VAR}` and `${VAR:-default}` interpolation of the config's string values.
//!
//! Done on the parsed YAML tree rather than on the text, so a value cannot inject YAML and an
//! error can name the key it happened at.

use serde_yaml::Value;

use super::config_error::ConfigError;

/// Replaces `${VAR}` in every string of `value`. A string that is exactly `${VAR}` with `VAR`
/// unset becomes null, as if the key were absent (so `api_key: ${OPENAI_API_KEY}` falls back to
/// the next source of the key); an unset variable inside a longer string is an error.
pub(super) fn interpolate(
    value: &mut Value,
    path: &mut Vec<String>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<(), ConfigError> {
    match value {
        Value::String(text) if text.contains("${") => {
            match expand(text, lookup).map_err(|m| ConfigError::key(path.join("."), m))? {
                Some(expanded) => *text = expanded,
                None => *value = Value::Null,
            }
        }
        Value::Mapping(map) => {
            for (key, item) in map.iter_mut() {
                path.push(
                    key.as_str()
                        .map_or_else(|| format!("{key:?}"), str::to_owned),
                );
                interpolate(item, path, lookup)?;
                path.pop();
            }
        }
        Value::Sequence(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                let last = path.pop().unwrap_or_default();
                path.push(format!("{last}[{i}]"));
                interpolate(item, path, lookup)?;
                path.pop();
                path.push(last);
            }
        }
        _ => {}
    }
    Ok(())
}

/// `Ok(None)` when the whole string is one unset variable with no default.
fn expand(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<Option<String>, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| "unterminated `${` in value".to_owned())?;
        let (name, default) = match after[..end].split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (&after[..end], None),
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("`${{{name}}}` is not a valid variable name"));
        }
        match (lookup(name), default) {
            (Some(v), _) => out.push_str(&v),
            (None, Some(d)) => out.push_str(d),
            (None, None) if text == format!("${{{name}}}") => return Ok(None),
            (None, None) => return Err(format!("environment variable {name} is not set")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        (name == "KEY").then(|| "sk-123".to_owned())
    }

    #[test]
    fn expands_set_variables_and_defaults() {
        assert_eq!(expand("${KEY}", &env), Ok(Some("sk-123".into())));
        assert_eq!(expand("a-${KEY}-b", &env), Ok(Some("a-sk-123-b".into())));
        assert_eq!(expand("${NOPE:-x}", &env), Ok(Some("x".into())));
    }

    #[test]
    fn a_lone_unset_variable_is_absent_and_an_embedded_one_an_error() {
        assert_eq!(expand("${NOPE}", &env), Ok(None));
        assert!(expand("Bearer ${NOPE}", &env).is_err());
    }

    #[test]
    fn errors_name_the_key() {
        let mut v: Value = serde_yaml::from_str("a:\n  b: [x, 'y ${NOPE}']").unwrap_or(Value::Null);
        let err = interpolate(&mut v, &mut Vec::new(), &env)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("`a.b[1]`"), "{err}");
    }
}
