//! `guards:`: content policies (guard plugins) applied to requests before they leave and to
//! answers as they come back, in order, each in a scope and a mode.

use schemars::JsonSchema;
use serde::Deserialize;

use super::config_error::ConfigError;

/// One entry of `guards:`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GuardEntry {
    /// The guard plugin: `redact`, `deny`, or one of the operator's own in `plugins.dir`.
    #[schemars(extend("examples" = ["redact"]))]
    pub plugin: String,
    /// The name its verdicts are recorded and counted under; the plugin's name by default.
    /// Letters, digits, `-` and `_`, at most 64 bytes, unique among the guards.
    #[serde(default)]
    #[schemars(extend("examples" = ["no-cards"]))]
    pub name: Option<String>,
    /// Passed to the plugin, which validates it.
    #[serde(default)]
    #[schemars(extend("examples" = [{"kinds": {"card": "placeholder", "email": "mask"}}]))]
    pub options: serde_json::Map<String, serde_json::Value>,
    /// What it checks: the request, the answer, or both.
    #[serde(default)]
    pub apply: GuardApply,
    /// Which requests it applies to; every request when empty.
    #[serde(default)]
    pub scope: GuardScope,
    /// Guards run in ascending order (then in the order they are listed).
    #[serde(default)]
    #[schemars(extend("examples" = [10]))]
    pub order: i32,
    /// `enforce`, or `monitor`: the verdict is recorded and nothing is changed.
    #[serde(default)]
    pub mode: GuardMode,
    /// A guard that traps, runs out of time or memory fails its request (closed) unless this is
    /// set: then its verdict is recorded as `error` and the request goes on without it.
    #[serde(default)]
    pub fail_open: bool,
    /// Where the guard's outside verdicts come from (a moderation service, an operator's policy
    /// endpoint): the host makes the calls the guard asks for, to this URL only.
    #[serde(default)]
    pub endpoint: Option<GuardEndpoint>,
    /// Routes whose requests carry what no guard can read (an uploaded file's bytes, token ids)
    /// that this guard lets through: checked on what it can read, sent on with the rest. Any
    /// other such request this guard applies to is refused (400, `guard_cannot_inspect`).
    #[serde(default)]
    #[schemars(extend("examples" = [["audio.transcriptions"]]))]
    pub exempt: Vec<BlindRoute>,
}

/// A route whose requests may carry what no guard can read.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema, PartialEq, Eq)]
pub enum BlindRoute {
    /// `POST /v1/audio/transcriptions`: the audio file (the form's text fields are read).
    #[serde(rename = "audio.transcriptions")]
    AudioTranscriptions,
    /// `POST /v1/audio/translations`: the audio file.
    #[serde(rename = "audio.translations")]
    AudioTranslations,
    /// `POST /v1/embeddings`: an `input` given as token ids.
    #[serde(rename = "embeddings")]
    Embeddings,
    /// `POST /v1/completions`: a `prompt` given as token ids.
    #[serde(rename = "completions")]
    Completions,
    /// A pass-through route (`<passthrough.prefix>/...`): a body that is not JSON or text, or
    /// one sent compressed.
    #[serde(rename = "passthrough")]
    Passthrough,
    /// `POST /v1/files`: a file whose purpose is not `batch` (its lines are read).
    #[serde(rename = "files")]
    Files,
    /// `GET /v1/realtime`: a session's answers (text and audio deltas) and its audio (the
    /// client's text is read). An answer guard that applies refuses the session without it.
    #[serde(rename = "realtime")]
    Realtime,
}

impl BlindRoute {
    /// The route's name, as `exempt` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Self::AudioTranscriptions => "audio.transcriptions",
            Self::AudioTranslations => "audio.translations",
            Self::Embeddings => "embeddings",
            Self::Completions => "completions",
            Self::Passthrough => "passthrough",
            Self::Files => "files",
            Self::Realtime => "realtime",
        }
    }
}

/// The one HTTP endpoint a guard may ask the host to call for it.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GuardEndpoint {
    /// The URL the guard's calls are POSTed to (`http` or `https`).
    #[schemars(extend("examples" = ["https://api.openai.com/v1/moderations"]))]
    pub url: String,
    /// Sent as `Authorization: Bearer`; the guard never sees it. Never logged.
    #[serde(default)]
    #[schemars(extend("examples" = ["${OPENAI_API_KEY}"]))]
    pub api_key: Option<crate::secret::Secret>,
    /// How long one call may take, connection included.
    #[serde(default = "default_endpoint_timeout_ms")]
    #[schemars(range(min = 1, max = 60000), extend("examples" = [2000]))]
    pub timeout_ms: u64,
    /// What a call that times out or fails means: `refuse` (fail closed: the request is
    /// refused, a streamed answer stopped, with 503) or `allow` (the guard lets through what it
    /// was checking, and the verdict is recorded as `error`).
    #[serde(default)]
    pub on_failure: EndpointFailure,
}

fn default_endpoint_timeout_ms() -> u64 {
    2000
}

/// What an outside verdict that does not come means.
#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
#[schemars(extend("examples" = ["refuse"]))]
pub enum EndpointFailure {
    /// Fail closed.
    #[default]
    Refuse,
    /// Let through what was being checked.
    Allow,
}

/// What a guard checks.
#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum GuardApply {
    Request,
    Answer,
    #[default]
    Both,
}

impl GuardApply {
    pub fn request(self) -> bool {
        matches!(self, Self::Request | Self::Both)
    }

    pub fn answer(self) -> bool {
        matches!(self, Self::Answer | Self::Both)
    }
}

/// Whether a guard's verdicts are carried out.
#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum GuardMode {
    #[default]
    Enforce,
    Monitor,
}

/// The requests a guard applies to: those matching every list given (a list matches when it
/// names the request's value).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GuardScope {
    /// Projects, by name.
    #[serde(default)]
    #[schemars(extend("examples" = [["support"]]))]
    pub projects: Vec<String>,
    /// API keys, by id (never the key itself).
    #[serde(default)]
    #[schemars(extend("examples" = [["key_7f3a"]]))]
    pub keys: Vec<String>,
    /// Models as clients name them: `provider/model`, a bare model name, or a virtual model of
    /// `routing:`.
    #[serde(default)]
    #[schemars(extend("examples" = [["openai/gpt-4o", "smart"]]))]
    pub models: Vec<String>,
    /// Applies only to the requests of keys that name it (`wasmgate keys create --guards`),
    /// whatever the lists above say.
    #[serde(default)]
    #[schemars(extend("examples" = [true]))]
    pub only_named: bool,
}

/// The longest guard name: it becomes a metric label and a ledger value.
pub const NAME_MAX: usize = 64;

/// Whether `name` can name a guard (also what a key's `guards` are checked with).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= NAME_MAX
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

impl GuardEntry {
    /// The name its verdicts are recorded under.
    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.plugin)
    }
}

/// Checks `guards:`, naming the key at fault.
pub(super) fn validate(guards: &[GuardEntry]) -> Result<(), ConfigError> {
    let mut names = std::collections::HashSet::new();
    for (i, guard) in guards.iter().enumerate() {
        if !valid_name(&guard.plugin) {
            return Err(ConfigError::key(
                format!("guards[{i}].plugin"),
                "must be a plugin name (letters, digits, `-`, `_`)",
            ));
        }
        if !valid_name(guard.name()) {
            return Err(ConfigError::key(
                format!("guards[{i}].name"),
                "must be 1 to 64 letters, digits, `-` or `_`",
            ));
        }
        if let Some(endpoint) = &guard.endpoint {
            let at = |key: &str| format!("guards[{i}].endpoint.{key}");
            match reqwest::Url::parse(&endpoint.url) {
                Ok(url) if matches!(url.scheme(), "http" | "https") && url.has_host() => {}
                _ => return Err(ConfigError::key(at("url"), "must be an http(s) URL")),
            }
            if !(1..=60_000).contains(&endpoint.timeout_ms) {
                return Err(ConfigError::key(at("timeout_ms"), "must be 1 to 60000"));
            }
        }
        if !names.insert(guard.name().to_owned()) {
            return Err(ConfigError::key(
                format!("guards[{i}].name"),
                format!("`{}` names another guard too (set `name`)", guard.name()),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::config::Config;

    #[test]
    fn entries_are_read_with_their_defaults_and_checked() {
        let config = Config::from_yaml(
            "guards:\n  - plugin: redact\n  - plugin: deny\n    options: {phrases: [x]}\n    apply: request\n    mode: monitor\n    scope: {models: [smart]}\n",
        )
        .unwrap();
        let [redact, deny] = &config.guards[..] else {
            panic!("two guards");
        };
        assert_eq!(
            (redact.apply, redact.mode),
            (GuardApply::Both, GuardMode::Enforce)
        );
        assert_eq!(
            (deny.apply, deny.mode),
            (GuardApply::Request, GuardMode::Monitor)
        );
        assert_eq!(deny.scope.models, ["smart"]);

        let twice = Config::from_yaml("guards:\n  - plugin: redact\n  - plugin: redact\n");
        assert!(twice.unwrap_err().to_string().contains("guards[1].name"));
        let bad = Config::from_yaml("guards:\n  - plugin: redact\n    mode: audit\n");
        assert!(bad.unwrap_err().to_string().contains("guards[0].mode"));
        let exempt = Config::from_yaml(
            "guards:\n  - plugin: redact\n    exempt: [audio.transcriptions, embeddings]\n",
        )
        .unwrap();
        assert_eq!(
            exempt.guards[0].exempt,
            [BlindRoute::AudioTranscriptions, BlindRoute::Embeddings]
        );
        let bad = Config::from_yaml("guards:\n  - plugin: redact\n    exempt: [audio.speech]\n");
        assert!(
            bad.unwrap_err().to_string().contains("guards[0].exempt[0]"),
            "an unknown route is named by its key path"
        );
    }

    #[test]
    fn an_endpoint_is_an_http_url_with_a_bounded_deadline_and_fails_closed_by_default() {
        let config = Config::from_yaml(
            "guards:\n  - plugin: moderation\n    endpoint: {url: 'https://mod.example/v1/moderations', api_key: sk-x}\n",
        )
        .unwrap();
        let endpoint = config.guards[0].endpoint.as_ref().unwrap();
        assert_eq!(
            (endpoint.timeout_ms, endpoint.on_failure),
            (2000, EndpointFailure::Refuse)
        );
        for (yaml, key) in [
            ("{url: 'file:///etc/passwd'}", "guards[0].endpoint.url"),
            ("{url: 'not a url'}", "guards[0].endpoint.url"),
            (
                "{url: 'http://x', timeout_ms: 0}",
                "guards[0].endpoint.timeout_ms",
            ),
            (
                "{url: 'http://x', on_failure: maybe}",
                "guards[0].endpoint.on_failure",
            ),
        ] {
            let bad = Config::from_yaml(&format!(
                "guards:\n  - plugin: moderation\n    endpoint: {yaml}\n"
            ));
            let message = bad.unwrap_err().to_string();
            assert!(message.contains(key), "{yaml}: {message}");
        }
    }
}
