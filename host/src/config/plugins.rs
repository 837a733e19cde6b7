//! `plugins:`: where plugins are found, and what each call may use, with defaults.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::Deserialize;

/// The longest wait for a plugin instance accepted: ten minutes.
pub(super) const MAX_INSTANCE_WAIT_MS: u64 = 600_000;
/// `plugins:`: where plugins are found, and what each call may use.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PluginsConfig {
    /// Where `<plugin>.wasm` components are looked up before the built-in ones.
    #[serde(default = "default_plugins_dir")]
    pub dir: PathBuf,
    /// Where compiled components are cached; defaults to the user's cache directory.
    #[serde(default)]
    #[schemars(extend("examples" = ["/var/cache/wasmgate"]))]
    pub cache_dir: Option<PathBuf>,
    /// CPU time one plugin call may use, in milliseconds: the plugin's own work, which a host
    /// starved of CPU does not stretch.
    #[serde(default = "default_call_timeout_ms")]
    #[schemars(range(min = 1))]
    pub call_timeout_ms: u64,
    /// Wall-clock time after which a plugin call is stopped whatever CPU time it used, in
    /// milliseconds; a backstop, 10 times `call_timeout_ms` unless given.
    #[serde(default)]
    #[schemars(range(min = 1), extend("examples" = [2000]))]
    pub call_wall_timeout_ms: Option<u64>,
    /// Linear-memory cap of one plugin instance, in MiB.
    #[serde(default = "default_memory_limit_mib")]
    #[schemars(range(min = 1, max = 4096))]
    pub memory_limit_mib: u64,
    /// Plugin instances alive at once (each request or open stream holds one); more wait.
    #[serde(default = "default_max_instances")]
    #[schemars(range(min = 1))]
    pub max_instances: u32,
    /// How long a request waits for a free instance before it fails with 503.
    #[serde(default = "default_instance_wait_ms")]
    #[schemars(range(min = 1, max = MAX_INSTANCE_WAIT_MS))]
    pub instance_wait_ms: u64,
    /// The share of `max_instances`, in percent, that open streams may hold, so that other
    /// requests, routers and limiters always find an instance.
    #[serde(default = "default_stream_share_percent")]
    #[schemars(range(min = 1, max = 100))]
    pub stream_share_percent: u8,
}

impl Default for PluginsConfig {
    fn default() -> Self {
        Self {
            dir: default_plugins_dir(),
            cache_dir: None,
            call_timeout_ms: default_call_timeout_ms(),
            call_wall_timeout_ms: None,
            memory_limit_mib: default_memory_limit_mib(),
            max_instances: default_max_instances(),
            instance_wait_ms: default_instance_wait_ms(),
            stream_share_percent: default_stream_share_percent(),
        }
    }
}

fn default_plugins_dir() -> PathBuf {
    PathBuf::from("./target/plugins")
}
fn default_call_timeout_ms() -> u64 {
    // Translating even a multi-megabyte body takes a few ms; 200 ms only stops runaway plugins.
    200
}
fn default_memory_limit_mib() -> u64 {
    64
}
fn default_max_instances() -> u32 {
    512
}

pub(super) fn default_instance_wait_ms() -> u64 {
    // Plugin calls take microseconds; a request that found no instance for two seconds is
    // better told to retry (elsewhere, behind a load balancer) than kept waiting.
    2_000
}
pub(super) fn default_stream_share_percent() -> u8 {
    75
}
