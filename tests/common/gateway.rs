//! One way for a test to say which gateway it wants: providers as typed entries, the rest of the
//! config as YAML fragments, started in-process.
//!
//! ```ignore
//! let gateway = Gateway::builder()
//!     .provider("openai", Provider::openai(&mock.base_url()).models(["gpt-4o-mini"]))
//!     .provider("echo", Provider::echo().models(["echo-1"]))
//!     .yaml("routing: { smart: { policy: fallback, targets: [openai/gpt-4o-mini] } }")
//!     .start()
//!     .await;
//! ```

use serde_yaml::{Mapping, Value};

use super::{TestGateway, test_plugins_dir};

/// The key the `openai` entries send upstream: the mocks check for it, and tests that nothing
/// leaks look for it.
pub const UPSTREAM_KEY: &str = "sk-upstream-secret";

/// A gateway config being put together; [`GatewayBuilder::start`] starts it.
pub struct Gateway;

impl Gateway {
    /// A config with no providers yet.
    pub fn builder() -> GatewayBuilder {
        GatewayBuilder {
            root: Mapping::new(),
            providers: Mapping::new(),
        }
    }

    /// The suite's usual pair: an `openai` entry on the OpenAI mock at `base_url` (whose
    /// `error-*`, `slow`, `endless` and `garbage` models misbehave as named) and the local
    /// `echo`, both serving `shared-model`.
    pub fn standard(base_url: &str) -> GatewayBuilder {
        let openai = Provider::openai(base_url)
            .models([
                "gpt-4o-mini",
                "text-embedding-3-small",
                "dall-e-3",
                "slow",
                "endless",
                "garbage",
                "error-400",
                "error-401",
                "error-404",
                "error-429",
                "error-500",
                "error-503",
                "shared-model",
            ])
            .timeout_ms(1500);
        Self::builder()
            .provider("openai", openai)
            .provider("echo", Provider::echo().models(["echo-1", "shared-model"]))
    }
}

/// See [`Gateway::builder`].
#[must_use]
pub struct GatewayBuilder {
    root: Mapping,
    providers: Mapping,
}

impl GatewayBuilder {
    /// Adds (or replaces) the `providers:` entry `name`.
    pub fn provider(mut self, name: &str, provider: Provider) -> Self {
        self.providers
            .insert(Value::from(name), Value::Mapping(provider.0));
        self
    }

    /// Merges the top-level keys of a YAML fragment (`routing:`, `limits:`, `catalog:`, ...)
    /// into the config; a key given twice takes the later value. An empty fragment adds nothing.
    pub fn yaml(mut self, fragment: &str) -> Self {
        let parsed: Value = serde_yaml::from_str(fragment)
            .unwrap_or_else(|e| panic!("bad YAML fragment: {e}\n{fragment}"));
        match parsed {
            Value::Null => {}
            Value::Mapping(map) => {
                for (key, value) in map {
                    if key.as_str() == Some("providers") {
                        let Value::Mapping(entries) = value else {
                            panic!("providers: is not a mapping")
                        };
                        self.providers.extend(entries);
                    } else {
                        self.root.insert(key, value);
                    }
                }
            }
            other => panic!("a YAML fragment must be a mapping, not {other:?}"),
        }
        self
    }

    /// Plugins from the test tree too (`tests/plugins`, `tests/policies`): routers, limiters
    /// and providers that exist only for tests. (A config without `plugins:` gets them anyway.)
    pub fn test_plugins(self) -> Self {
        let dir = test_plugins_dir().display().to_string();
        self.yaml(&format!("plugins: {{ dir: '{dir}', max_instances: 64 }}"))
    }

    /// The config as YAML, as [`TestGateway::start`] takes it.
    pub fn to_yaml(&self) -> String {
        let mut root = self.root.clone();
        if !self.providers.is_empty() {
            root.insert(
                Value::from("providers"),
                Value::Mapping(self.providers.clone()),
            );
        }
        serde_yaml::to_string(&Value::Mapping(root)).expect("config as YAML")
    }

    /// Starts the gateway; panics if it does not start.
    pub async fn start(self) -> TestGateway {
        TestGateway::start(&self.to_yaml()).await
    }

    /// Starts the gateway, or says why it would not.
    pub async fn try_start(self) -> anyhow::Result<TestGateway> {
        TestGateway::try_start(&self.to_yaml()).await
    }
}

/// One `providers:` entry.
#[must_use]
pub struct Provider(Mapping);

impl Provider {
    /// An entry of `plugin`, with nothing else set.
    pub fn plugin(plugin: &str) -> Self {
        Provider(Mapping::new()).set("plugin", plugin)
    }

    /// An `openai` entry at `base_url` (a mock), sending [`UPSTREAM_KEY`].
    pub fn openai(base_url: &str) -> Self {
        Self::plugin("openai")
            .base_url(base_url)
            .api_key(UPSTREAM_KEY)
    }

    /// An entry of the local `echo` plugin.
    pub fn echo() -> Self {
        Self::plugin("echo")
    }

    /// An entry of `plugin` at `base_url` with `api_key` (the strict mocks of other providers).
    pub fn at(plugin: &str, base_url: &str, api_key: &str) -> Self {
        Self::plugin(plugin).base_url(base_url).api_key(api_key)
    }

    pub fn base_url(self, url: &str) -> Self {
        self.set("base_url", url)
    }

    pub fn api_key(self, key: &str) -> Self {
        self.set("api_key", key)
    }

    pub fn models<'a>(self, models: impl IntoIterator<Item = &'a str>) -> Self {
        let models: Vec<Value> = models.into_iter().map(Value::from).collect();
        self.set("models", Value::Sequence(models))
    }

    pub fn timeout_ms(self, ms: u64) -> Self {
        self.set("timeout_ms", ms)
    }

    /// The entry's `options:`, as YAML (`"{ responses: native }"`).
    pub fn options(self, yaml: &str) -> Self {
        let options: Value = serde_yaml::from_str(yaml).expect("options as YAML");
        self.set("options", options)
    }

    /// Any other key of the entry (`catalog`, `preset`, ...).
    pub fn set(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.0.insert(Value::from(key), value.into());
        self
    }
}

/// The three strict mocks the dialect tests (Messages, Responses) translate between: OpenAI
/// (which also speaks Responses), Anthropic and Gemini.
pub struct Upstreams {
    pub openai: super::mock_openai::MockOpenAi,
    pub anthropic: super::mock_providers::MockProvider,
    pub gemini: super::mock_providers::MockProvider,
}

impl Upstreams {
    pub async fn start() -> Self {
        Upstreams {
            openai: super::mock_openai::MockOpenAi::start().await,
            anthropic: super::mock_providers::MockProvider::anthropic().await,
            gemini: super::mock_providers::MockProvider::gemini().await,
        }
    }

    /// An `openai` entry of `models` on the OpenAI mock, with the key its Responses API checks.
    pub fn openai<'a>(&self, models: impl IntoIterator<Item = &'a str>) -> Provider {
        let key = super::mock_openai::responses::API_KEY;
        Provider::at("openai", &self.openai.base_url(), key)
            .models(models)
            .timeout_ms(5000)
    }

    /// An `anthropic` entry of `models` on the Anthropic mock.
    pub fn anthropic<'a>(&self, models: impl IntoIterator<Item = &'a str>) -> Provider {
        let key = super::mock_providers::KEY;
        Provider::at("anthropic", &self.anthropic.base_url(), key)
            .models(models)
            .timeout_ms(5000)
    }

    /// A `gemini` entry of `models` on the Gemini mock.
    pub fn gemini<'a>(&self, models: impl IntoIterator<Item = &'a str>) -> Provider {
        let key = super::mock_providers::KEY;
        Provider::at("gemini", &self.gemini.base_url(), key)
            .models(models)
            .timeout_ms(5000)
    }
}

/// A `catalog:` fragment pricing the OpenAI mock's never-ending model `endless` at `input` and
/// `output` USD per million tokens.
pub fn endless_catalog(input: i64, output: i64) -> String {
    format!(
        "catalog: {{ providers: [{{ provider: openai, models: [{{ model: endless, kind: chat, \
         context_window: 128000, capabilities: {{ tools: true }}, input_per_mtok: {input}, \
         output_per_mtok: {output} }}] }}] }}"
    )
}
