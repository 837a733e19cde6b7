//! The smallest provider with settings of its own: an OpenAI-compatible upstream on
//! `127.0.0.1:<port>`, its key in `x-tiny-key`. It exists so that a test can show that a provider
//! the host has never heard of states its default base URL and telemetry name through the
//! contract, and that adding one touches no host file.

use serde::Deserialize;
use wasmgate_plugin_sdk::openai_compat::{OpenAiStream, path, upstream};
use wasmgate_plugin_sdk::{Auth, CanonicalRequest, Entry, PluginError, Prepared, Provider};

/// The entry's `options:`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    /// The local port the upstream listens on: the default base URL is
    /// `http://127.0.0.1:<port>/v1`.
    port: u16,
}

struct Tiny;

impl Provider for Tiny {
    type Settings = Settings;
    type Decoder = OpenAiStream;
    const SYSTEM: Option<&'static str> = Some("tiny");
    const AUTH: Auth = Auth::Header("x-tiny-key");

    fn default_base_url(settings: &Settings) -> Option<String> {
        Some(format!("http://127.0.0.1:{}/v1", settings.port))
    }

    fn prepare(
        entry: &Entry<Settings>,
        request: CanonicalRequest,
    ) -> Result<Prepared, PluginError> {
        upstream(entry.url(path(request.operation)), request)
    }
}

wasmgate_plugin_sdk::export_provider!(Tiny);
