//! `dialects:`: the client APIs served besides Chat Completions, each by its dialect plugin, and
//! the built-in dialects the gateway always serves: the one place in the host that names a
//! dialect (`tests/dialect_names.rs` holds every other host file to knowing none by name).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `dialects:`: the client APIs the gateway serves besides Chat Completions, each by the dialect
/// plugin that declares its routes and translates it for targets that do not speak it natively.
/// `messages` and `responses` are always served (by the built-in plugins unless set); any other
/// key adds a dialect (`gemini: { plugin: gemini-genai }`). A `<plugins.dir>/<plugin>.wasm` file
/// takes precedence over the built-in plugin of that name, as for providers.
// Not `deny_unknown_fields`: every other key is a dialect of the operator's naming.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct DialectsConfig {
    /// Anthropic's Messages API, `POST /v1/messages` and `/v1/messages/count_tokens`.
    #[serde(default = "default_messages_dialect")]
    pub messages: DialectEntry,
    /// OpenAI's Responses API, `POST /v1/responses`.
    #[serde(default = "default_responses_dialect")]
    pub responses: DialectEntry,
    /// More dialects, by a name of your choice (letters, digits, `-` and `_`).
    #[serde(flatten)]
    #[schemars(extend("examples" = [{"gemini": {"plugin": "gemini-genai"}}]))]
    pub more: std::collections::BTreeMap<String, DialectEntry>,
}

impl DialectsConfig {
    /// Every configured dialect, `(key, plugin)`, in a stable order.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &str)> {
        [
            ("messages", self.messages.plugin.as_str()),
            ("responses", self.responses.plugin.as_str()),
        ]
        .into_iter()
        .chain(
            self.more
                .iter()
                .map(|(k, v)| (k.as_str(), v.plugin.as_str())),
        )
    }
}

/// One entry of `dialects:`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DialectEntry {
    /// The dialect plugin's name: a built-in one, or `<plugins.dir>/<plugin>.wasm`.
    #[schemars(extend("examples" = ["anthropic-messages"]))]
    pub plugin: String,
}

impl Default for DialectsConfig {
    fn default() -> Self {
        Self {
            messages: default_messages_dialect(),
            responses: default_responses_dialect(),
            more: std::collections::BTreeMap::new(),
        }
    }
}

fn default_messages_dialect() -> DialectEntry {
    DialectEntry {
        plugin: "anthropic-messages".to_owned(),
    }
}

fn default_responses_dialect() -> DialectEntry {
    DialectEntry {
        plugin: "openai-responses".to_owned(),
    }
}
