//! The `cache:` section of the config: where answers are kept, for how long, and which
//! requests may be answered from it (per model, per key).

use schemars::JsonSchema;

use super::config_error::ConfigError;

/// The response cache. Off unless `enabled` (or a rule) turns it on.
#[derive(Clone, Debug, PartialEq, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CacheConfig {
    /// Answers requests from the cache (unless a rule says otherwise for their model or key).
    #[serde(default)]
    #[schemars(extend("examples" = [true]))]
    pub enabled: bool,
    /// `memory` (this process only) or `redis://host:port` (shared by every replica). Read at
    /// start-up: a reload keeps the store the gateway started with.
    #[serde(default = "default_store")]
    #[schemars(extend("examples" = ["redis://127.0.0.1:6379"]))]
    pub store: String,
    /// Bytes the in-memory store holds at most (compressed answers and their keys); the least
    /// used answers are evicted past it.
    #[serde(default = "default_memory_bytes")]
    #[schemars(range(min = 1), extend("examples" = [268_435_456]))]
    pub memory_bytes: u64,
    /// Bytes of one answer (uncompressed) at most: a larger answer, or a stream that grows past
    /// it, is not kept.
    #[serde(default = "default_max_entry_bytes")]
    #[schemars(range(min = 1), extend("examples" = [1_048_576]))]
    pub max_entry_bytes: u64,
    /// Seconds an answer is served for. A client's `x-wasmgate-cache-ttl` may shorten it.
    #[serde(default = "default_ttl_s")]
    #[schemars(range(min = 1), extend("examples" = [3600]))]
    pub ttl_s: u64,
    /// Who shares answers: `project` (every key of a project) or `key` (each key alone).
    #[serde(default)]
    #[schemars(extend("examples" = ["key"]))]
    pub scope: CacheScope,
    /// Part of every key: change it to start afresh without clearing the store.
    #[serde(default)]
    #[schemars(extend("examples" = ["v2"]))]
    pub namespace: String,
    /// Per model or key: the first rule that matches a request decides for it.
    #[serde(default)]
    #[schemars(extend("examples" = [[{"models": ["gpt-4o"], "ttl_s": 600}, {"keys": ["key_eval"], "namespace": "eval"}]]))]
    pub rules: Vec<CacheRule>,
    /// Semantic mode: a request that misses may be answered with the answer to an earlier one
    /// whose last user turn means the same, by the embeddings `model`. Off unless `enabled`
    /// (or a rule's `semantic`) turns it on.
    #[serde(default)]
    #[schemars(extend("examples" = [{"enabled": true, "model": "openai/text-embedding-3-small", "threshold": 0.95}]))]
    pub semantic: Option<SemanticConfig>,
    /// A cache-key policy plugin: decides what of a request goes into its key (or that it is not
    /// cached at all). Every request the cache serves passes through it.
    #[serde(default)]
    #[schemars(extend("examples" = [{"plugin": "py-cache-key", "options": {"tags": ["system-reminder"]}}]))]
    pub key_plugin: Option<KeyPluginConfig>,
}

/// The semantic mode's settings.
#[derive(Clone, Debug, PartialEq, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SemanticConfig {
    /// Looks up every cached request semantically (unless a rule's `semantic` says otherwise).
    #[serde(default)]
    #[schemars(extend("examples" = [true]))]
    pub enabled: bool,
    /// The embeddings model, as a client would name it (`provider/model`, or a virtual model):
    /// called through the gateway's own routing, its usage recorded under the caller's project.
    #[schemars(extend("examples" = ["openai/text-embedding-3-small"]))]
    pub model: String,
    /// The cosine similarity at or above which an earlier answer is served (0 to 1).
    #[serde(default = "default_threshold")]
    #[schemars(range(min = 0.0, max = 1.0), extend("examples" = [0.95]))]
    pub threshold: f32,
    /// Lets requests that carry tool results hit too. Off by default: an agent's turn after a
    /// tool call depends on the tool's exact output, which the last user turn does not show.
    #[serde(default)]
    #[schemars(extend("examples" = [false]))]
    pub tool_results: bool,
    /// Vectors kept under one scope at most (the newest): the most a lookup compares.
    #[serde(default = "default_per_scope")]
    #[schemars(range(min = 1), extend("examples" = [64]))]
    pub max_per_scope: u32,
    /// Bytes the in-process vectors take at most (a `redis://` store keeps them in Redis).
    #[serde(default = "default_vector_bytes")]
    #[schemars(range(min = 1), extend("examples" = [67_108_864]))]
    pub memory_bytes: u64,
    /// Bytes of a last user turn embedded at most: a longer one is looked up exactly only.
    #[serde(default = "default_max_text_bytes")]
    #[schemars(range(min = 1), extend("examples" = [8192]))]
    pub max_text_bytes: u32,
    /// Milliseconds the embedding may take: a slower one is a miss.
    #[serde(default = "default_embed_timeout_ms")]
    #[schemars(range(min = 1), extend("examples" = [2000]))]
    pub timeout_ms: u64,
}

/// The cache-key policy plugin.
#[derive(Clone, Debug, PartialEq, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KeyPluginConfig {
    /// The plugin, one of the operator's own in `plugins.dir`.
    #[schemars(extend("examples" = ["py-cache-key"]))]
    pub plugin: String,
    /// Passed to the plugin, which validates it.
    #[serde(default)]
    #[schemars(extend("examples" = [{"tags": ["system-reminder"]}]))]
    pub options: serde_json::Map<String, serde_json::Value>,
}

fn default_threshold() -> f32 {
    0.95
}

fn default_per_scope() -> u32 {
    64
}

fn default_vector_bytes() -> u64 {
    64 << 20
}

fn default_max_text_bytes() -> u32 {
    8192
}

fn default_embed_timeout_ms() -> u64 {
    2000
}

/// Who shares cached answers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    /// Every key of a project (never across projects).
    #[default]
    Project,
    /// Each API key alone.
    Key,
}

/// Settings for the requests to some models or from some keys.
#[derive(Clone, Debug, PartialEq, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CacheRule {
    /// Models as clients name them (a virtual model's name, or `provider/model`); any when
    /// empty.
    #[serde(default)]
    #[schemars(extend("examples" = [["openai/gpt-4o", "smart"]]))]
    pub models: Vec<String>,
    /// API key ids; any when empty.
    #[serde(default)]
    #[schemars(extend("examples" = [["key_01J9Z"]]))]
    pub keys: Vec<String>,
    /// On or off for these requests; the section's `enabled` when absent.
    #[schemars(extend("examples" = [false]))]
    pub enabled: Option<bool>,
    /// Their TTL in seconds; the section's when absent.
    #[schemars(range(min = 1), extend("examples" = [600]))]
    pub ttl_s: Option<u64>,
    /// Their namespace; the section's when absent.
    #[schemars(extend("examples" = ["eval"]))]
    pub namespace: Option<String>,
    /// Semantic lookups for these requests; `semantic.enabled` when absent.
    #[schemars(extend("examples" = [true]))]
    pub semantic: Option<bool>,
}

impl Default for CacheConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            store: default_store(),
            memory_bytes: default_memory_bytes(),
            max_entry_bytes: default_max_entry_bytes(),
            ttl_s: default_ttl_s(),
            scope: CacheScope::default(),
            namespace: String::new(),
            rules: Vec::new(),
            semantic: None,
            key_plugin: None,
        }
    }
}

fn default_store() -> String {
    "memory".to_owned()
}

fn default_memory_bytes() -> u64 {
    256 << 20
}

fn default_max_entry_bytes() -> u64 {
    1 << 20
}

fn default_ttl_s() -> u64 {
    3600
}

/// Bytes of a namespace, at most (it is hashed, but also logged).
const NAMESPACE_MAX: usize = 64;

impl CacheConfig {
    /// Whether any request can use the cache: the pipeline does no cache work otherwise.
    pub fn in_use(&self) -> bool {
        self.enabled || self.rules.iter().any(|r| r.enabled == Some(true))
    }

    /// The checks serde cannot make, with the key at fault.
    pub fn check(&self) -> Result<(), ConfigError> {
        if self.store != "memory" && !self.store.starts_with("redis://") {
            return Err(ConfigError::key(
                "cache.store",
                "must be `memory` or a redis:// URL",
            ));
        }
        for (path, value) in [
            ("cache.memory_bytes", self.memory_bytes),
            ("cache.max_entry_bytes", self.max_entry_bytes),
            ("cache.ttl_s", self.ttl_s),
        ] {
            if value == 0 {
                return Err(ConfigError::key(path, "must be at least 1"));
            }
        }
        check_namespace("cache.namespace", &self.namespace)?;
        for (i, rule) in self.rules.iter().enumerate() {
            if rule.ttl_s == Some(0) {
                return Err(ConfigError::key(
                    format!("cache.rules[{i}].ttl_s"),
                    "must be at least 1",
                ));
            }
            if let Some(namespace) = &rule.namespace {
                check_namespace(&format!("cache.rules[{i}].namespace"), namespace)?;
            }
            if rule.semantic == Some(true) && self.semantic.is_none() {
                return Err(ConfigError::key(
                    format!("cache.rules[{i}].semantic"),
                    "needs a `cache.semantic` section naming the embeddings model",
                ));
            }
        }
        if let Some(semantic) = &self.semantic {
            semantic.check()?;
        }
        Ok(())
    }
}

impl SemanticConfig {
    fn check(&self) -> Result<(), ConfigError> {
        if self.model.trim().is_empty() {
            return Err(ConfigError::key(
                "cache.semantic.model",
                "must name an embeddings model",
            ));
        }
        if !(self.threshold > 0.0 && self.threshold <= 1.0) {
            return Err(ConfigError::key(
                "cache.semantic.threshold",
                "must be above 0 and at most 1",
            ));
        }
        for (path, value) in [
            (
                "cache.semantic.max_per_scope",
                u64::from(self.max_per_scope),
            ),
            ("cache.semantic.memory_bytes", self.memory_bytes),
            (
                "cache.semantic.max_text_bytes",
                u64::from(self.max_text_bytes),
            ),
            ("cache.semantic.timeout_ms", self.timeout_ms),
        ] {
            if value == 0 {
                return Err(ConfigError::key(path, "must be at least 1"));
            }
        }
        Ok(())
    }
}

fn check_namespace(path: &str, namespace: &str) -> Result<(), ConfigError> {
    if namespace.len() > NAMESPACE_MAX || namespace.chars().any(char::is_control) {
        return Err(ConfigError::key(
            path,
            format!("has at most {NAMESPACE_MAX} bytes and no control characters"),
        ));
    }
    Ok(())
}
