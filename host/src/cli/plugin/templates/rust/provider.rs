//! {{name}}: a wasmgate provider for an OpenAI-compatible upstream.
//!
//! The SDK reads the config entry for every call: `Settings` from its `options` (a misspelt key
//! fails when the config loads, naming it), the base URL (the entry's, else
//! `default_base_url`), and the `headers` and `auth_header` options every provider takes. It
//! adds the key and those headers to the request `prepare` returns, and reads OpenAI-format
//! answers by default.

use serde::Deserialize;
use wasmgate_plugin_sdk::openai_compat::{OpenAiStream, path, upstream};
use wasmgate_plugin_sdk::{CanonicalRequest, Entry, PluginError, Prepared, Provider, export_provider};

/// The entry's `options:`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {}

struct Plugin;

impl Provider for Plugin {
    type Settings = Settings;
    type Decoder = OpenAiStream;

    fn default_base_url(_: &Settings) -> Option<String> {
        Some("http://127.0.0.1:8000/v1".to_owned())
    }

    fn prepare(entry: &Entry<Settings>, request: CanonicalRequest) -> Result<Prepared, PluginError> {
        // Dialects (Messages, Responses, ...) are served natively only by plugins that list
        // them (`native_dialects`); this one gets them translated into chat completions.
        upstream(entry.url(path(request.operation)), request)
    }
}

export_provider!(Plugin);

#[cfg(test)]
mod tests {
    use wasmgate_plugin_sdk::calls::prepare;
    use wasmgate_plugin_sdk::{CanonicalRequest, Operation, Prepared, ProviderConfig};

    use super::Plugin;

    #[test]
    fn chat_goes_to_the_base_url_with_the_key() {
        let config = ProviderConfig {
            name: "p".into(), base_url: Some("https://llm.example/v1/".into()),
            api_key: Some("sk-1".into()), models: vec![], options: "{}".into(),
        };
        let request = CanonicalRequest {
            operation: Operation::ChatCompletions, model: "m".into(), body: "{}".into(),
            stream: false, headers: vec![], native: None,
        };
        let Ok(Prepared::Upstream(http)) = prepare::<Plugin>(&config, request) else { panic!("not upstream") };
        assert_eq!(http.url, "https://llm.example/v1/chat/completions");
        assert!(http.headers.contains(&("authorization".into(), "Bearer sk-1".into())));
    }
}
