//! {{name}}: a wasmgate cache-key policy. Requests to the models in `never` are not cached; the
//! others are keyed without their `temperature` when it is 0 (0 and absent answer alike).

use serde::Deserialize;
use wasmgate_plugin_sdk::{CacheKey, KeyDecision, KeyRequest, KeyRequestExt, export_cache_key};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Options {
    #[serde(default)]
    never: Vec<String>,
}

struct Plugin;

impl CacheKey for Plugin {
    type Options = Options;

    fn key(options: &Options, request: &KeyRequest) -> KeyDecision {
        if options.never.contains(&request.model) {
            return KeyDecision::Bypass;
        }
        let Some(mut fields) = request.fields_map() else {
            return KeyDecision::Keep;
        };
        if fields.get("temperature").and_then(|t| t.as_f64()) == Some(0.0) {
            fields.remove("temperature");
            return KeyRequest::replace(&fields);
        }
        KeyDecision::Keep
    }
}

export_cache_key!(Plugin);

#[cfg(test)]
mod tests {
    use super::*;

    fn request(fields: &str, model: &str) -> KeyRequest {
        KeyRequest {
            operation: "chat.completions".to_owned(),
            model: model.to_owned(),
            project: "p".to_owned(),
            fields: fields.to_owned(),
        }
    }

    #[test]
    fn a_model_never_cached_bypasses() {
        let options = Options { never: vec!["m".to_owned()] };
        assert_eq!(Plugin::key(&options, &request("{}", "m")), KeyDecision::Bypass);
    }

    #[test]
    fn temperature_zero_is_left_out() {
        let options = Options { never: vec![] };
        let decision = Plugin::key(&options, &request(r#"{"temperature":0,"n":1}"#, "x"));
        assert_eq!(decision, KeyDecision::Replace(r#"{"n":1}"#.to_owned()));
    }
}
