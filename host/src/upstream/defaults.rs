//! Where the built-in provider plugins send requests when their entry names no `base_url`.
//!
//! The gateway hands this URL to the plugin as the entry's `base_url`, and checks every request
//! against it ([`super::Scope`]): the plugin and the guard then agree by construction, and this
//! table is the one place the gateway's defaults live. (The plugins keep the same defaults for
//! hosts that give none, such as their own test kit.) A third-party plugin gets none: only its
//! entry's `base_url` can contain its requests.

use serde_json::{Map, Value};

/// The base URL the built-in `plugin` uses by default, given its entry's `options`; `None` for
/// a plugin with no default (`azure-openai`: every resource has its own endpoint; `echo`: no
/// upstream) or one that is not built in.
pub fn base_url(plugin: &str, options: &Map<String, Value>) -> Option<String> {
    let fixed = match plugin {
        "openai" => "https://api.openai.com/v1",
        "anthropic" => "https://api.anthropic.com/v1",
        "gemini" => "https://generativelanguage.googleapis.com/v1beta",
        "cohere" => "https://api.cohere.com/v2",
        "bedrock" => return bedrock(options),
        _ => return None,
    };
    Some(fixed.to_owned())
}

/// Bedrock's runtime endpoint of the entry's `region`. A region that is no AWS region name
/// gives none: the plugin refuses the entry for it.
fn bedrock(options: &Map<String, Value>) -> Option<String> {
    let region = options.get("region")?.as_str()?;
    let valid = !region.is_empty()
        && region
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    valid.then(|| format!("https://bedrock-runtime.{region}.amazonaws.com"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_plugins_have_their_documented_defaults() {
        let none = Map::new();
        assert_eq!(
            base_url("openai", &none).as_deref(),
            Some("https://api.openai.com/v1")
        );
        assert_eq!(
            base_url("gemini", &none).as_deref(),
            Some("https://generativelanguage.googleapis.com/v1beta")
        );
        assert_eq!(base_url("azure-openai", &none), None);
        assert_eq!(base_url("echo", &none), None);
        assert_eq!(base_url("my-plugin", &none), None);
        assert_eq!(base_url("bedrock", &none), None);
        let region = |r: &str| {
            let options: Map<String, Value> = [("region".to_owned(), Value::from(r))]
                .into_iter()
                .collect();
            base_url("bedrock", &options)
        };
        assert_eq!(
            region("eu-west-3").as_deref(),
            Some("https://bedrock-runtime.eu-west-3.amazonaws.com")
        );
        assert_eq!(region("evil.example/x"), None);
        assert_eq!(region(""), None);
    }
}
