//! The `cache:` section of the config: where answers are kept, for how long, and which
//! requests may be answered from it (per model, per key).

use schemars::JsonSchema;

use super::ConfigError;

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
