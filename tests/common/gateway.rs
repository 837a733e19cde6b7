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

    /// A config with the local `echo` entry serving `echo-1`, and nothing else.
    pub fn echo() -> GatewayBuilder {
        Self::builder().provider("echo", Provider::echo().models(["echo-1"]))
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
    /// and providers that exist only for tests. (A config without `plugins:` gets them anyway;
    /// one that sets a `plugins.` key through [`GatewayBuilder::set`] gets this directory too.)
    pub fn test_plugins(self) -> Self {
        let dir = test_plugins_dir().display().to_string();
        self.set("plugins.dir", dir)
            .set("plugins.max_instances", 64)
    }

    /// Sets the key at a dotted `path` (`server.max_body_bytes`, `ledger.url`) to `value`,
    /// making the mappings on the way and keeping their other keys.
    pub fn set(mut self, path: &str, value: impl Into<Value>) -> Self {
        let mut keys = path.split('.');
        let last = keys.next_back().expect("a key");
        let mut map = &mut self.root;
        for key in keys {
            let entry = map
                .entry(Value::from(key))
                .or_insert_with(|| Value::Mapping(Mapping::new()));
            map = entry
                .as_mapping_mut()
                .unwrap_or_else(|| panic!("{key} in {path} is not a mapping"));
        }
        map.insert(Value::from(last), value.into());
        self
    }

    /// [`GatewayBuilder::set`] with a value written as YAML (`"{ enabled: true }"`).
    pub fn set_yaml(self, path: &str, yaml: &str) -> Self {
        let value: Value = serde_yaml::from_str(yaml)
            .unwrap_or_else(|e| panic!("bad YAML for {path}: {e}\n{yaml}"));
        self.set(path, value)
    }

    /// Appends a rule of limit policy `policy` over `scope` (`project`, `key`, ...) with
    /// `options` (YAML) to `limits.rules`.
    pub fn limit(mut self, policy: &str, scope: &str, options: &str) -> Self {
        let options: Value = serde_yaml::from_str(options).expect("options as YAML");
        let mut rule = Mapping::new();
        rule.insert(Value::from("policy"), Value::from(policy));
        rule.insert(Value::from("scope"), Value::from(scope));
        rule.insert(Value::from("options"), options);
        let limits = self
            .root
            .entry(Value::from("limits"))
            .or_insert_with(|| Value::Mapping(Mapping::new()))
            .as_mapping_mut()
            .expect("limits: is a mapping");
        limits
            .entry(Value::from("rules"))
            .or_insert_with(|| Value::Sequence(Vec::new()))
            .as_sequence_mut()
            .expect("limits.rules is a list")
            .push(Value::Mapping(rule));
        self
    }

    /// `server: { host: 127.0.0.1, port: 0 }`: for the real binary (`binary::Gateway::serve`)
    /// on a config file, which says in its log which port it took.
    pub fn any_port(self) -> Self {
        self.set("server.host", "127.0.0.1").set("server.port", 0)
    }

    /// `auth.required: true`: every request needs a key of the ledger.
    pub fn auth_required(self) -> Self {
        self.set("auth.required", true)
    }

    /// The ledger at `url` (the default is an in-memory SQLite database).
    pub fn ledger(self, url: &str) -> Self {
        self.set("ledger.url", url)
    }

    /// Appends a `guards:` entry.
    pub fn guard(mut self, guard: Guard) -> Self {
        let guards = self
            .root
            .entry(Value::from("guards"))
            .or_insert_with(|| Value::Sequence(Vec::new()));
        guards
            .as_sequence_mut()
            .expect("guards: is a list")
            .push(Value::Mapping(guard.0));
        self
    }

    /// Adds (or replaces) the `routing:` entry `name`.
    pub fn route(mut self, name: &str, route: Route) -> Self {
        let routing = self
            .root
            .entry(Value::from("routing"))
            .or_insert_with(|| Value::Mapping(Mapping::new()));
        routing
            .as_mapping_mut()
            .expect("routing: is a mapping")
            .insert(Value::from(name), Value::Mapping(route.0));
        self
    }

    /// The config as YAML, as written: for a config file of the real binary, or for
    /// [`TestGateway::start`].
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
        TestGateway::start(&self.in_process().to_yaml()).await
    }

    /// Starts the gateway, or says why it would not.
    pub async fn try_start(self) -> anyhow::Result<TestGateway> {
        TestGateway::try_start(&self.in_process().to_yaml()).await
    }

    /// A config that sets `plugins.` keys but no `dir` gets the test plugins' directory, as
    /// one without `plugins:` gets it from [`TestGateway::start`].
    fn in_process(self) -> Self {
        match self.root.get("plugins") {
            Some(Value::Mapping(plugins)) if !plugins.contains_key("dir") => {
                let dir = test_plugins_dir().display().to_string();
                self.set("plugins.dir", dir)
            }
            _ => self,
        }
    }
}

/// One `providers:` entry.
#[derive(Clone)]
#[must_use]
pub struct Provider(Mapping);

impl Provider {
    /// An entry of `plugin`, with nothing else set.
    pub fn plugin(plugin: &str) -> Self {
        Provider(Mapping::new()).set("plugin", plugin)
    }

    /// An entry of preset `preset` (its plugin, base URL and models from the built-in presets).
    pub fn preset(preset: &str) -> Self {
        Provider(Mapping::new()).set("preset", preset)
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

/// One `guards:` entry.
#[derive(Clone)]
#[must_use]
pub struct Guard(Mapping);

impl Guard {
    /// An entry of guard plugin `plugin`, on both sides, enforcing.
    pub fn plugin(plugin: &str) -> Self {
        Guard(Mapping::new()).set("plugin", plugin)
    }

    /// The name verdicts carry (the plugin's by default).
    pub fn name(self, name: &str) -> Self {
        self.set("name", name)
    }

    /// `request` or `answer` only.
    pub fn apply(self, side: &str) -> Self {
        self.set("apply", side)
    }

    /// `monitor`: verdicts are recorded, not acted on.
    pub fn monitor(self) -> Self {
        self.set("mode", "monitor")
    }

    /// The entry's `options:`, as YAML (`"{ phrases: [falcon] }"`).
    pub fn options(self, yaml: &str) -> Self {
        let options: Value = serde_yaml::from_str(yaml).expect("options as YAML");
        self.set("options", options)
    }

    /// Any other key of the entry, its value as YAML (`scope`, `fail_open`, ...).
    pub fn yaml(self, key: &str, yaml: &str) -> Self {
        let value: Value = serde_yaml::from_str(yaml).expect("a value as YAML");
        self.set(key, value)
    }

    pub fn set(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.0.insert(Value::from(key), value.into());
        self
    }
}

/// One `routing:` entry.
#[derive(Clone)]
#[must_use]
pub struct Route(Mapping);

impl Route {
    /// A virtual model served by `policy` over `targets` (`entry/model`).
    pub fn new<'a>(policy: &str, targets: impl IntoIterator<Item = &'a str>) -> Self {
        let targets: Vec<Value> = targets.into_iter().map(Value::from).collect();
        Route(Mapping::new())
            .set("policy", policy)
            .set("targets", Value::Sequence(targets))
    }

    /// Any other key of the entry, its value as YAML (`retry`, `options`, ...).
    pub fn yaml(self, key: &str, yaml: &str) -> Self {
        let value: Value = serde_yaml::from_str(yaml).expect("a value as YAML");
        self.set(key, value)
    }

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
