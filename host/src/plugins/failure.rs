//! Why a plugin call or a plugin's loading failed, where the plugin did not say so itself.

use std::path::PathBuf;
use std::sync::Arc;

/// Why a plugin call failed without the plugin reporting an error of its own.
#[derive(Debug, thiserror::Error)]
pub enum PluginFailure {
    #[error("plugin `{plugin}` trapped: {detail}")]
    Trapped { plugin: Arc<str>, detail: String },
    #[error("plugin `{plugin}` ran past its {ms} ms {bound}")]
    TimedOut {
        plugin: Arc<str>,
        ms: u64,
        bound: TimeBound,
    },
    #[error("plugin `{plugin}` exceeded its {mib} MiB memory limit")]
    OutOfMemory { plugin: Arc<str>, mib: u64 },
    #[error("no instance of plugin `{plugin}` came free within {waited_ms} ms")]
    Saturated { plugin: Arc<str>, waited_ms: u64 },
}

impl PluginFailure {
    /// The failure's kind, as metrics label it.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Trapped { .. } => "trapped",
            Self::TimedOut { .. } => "timeout",
            Self::OutOfMemory { .. } => "out_of_memory",
            Self::Saturated { .. } => "saturated",
        }
    }

    pub fn plugin(&self) -> &str {
        match self {
            Self::Trapped { plugin, .. }
            | Self::TimedOut { plugin, .. }
            | Self::OutOfMemory { plugin, .. }
            | Self::Saturated { plugin, .. } => plugin,
        }
    }
}

/// Which of a call's time bounds it ran past.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeBound {
    /// Its own CPU time (`plugins.call_timeout_ms`).
    Cpu,
    /// The wall-clock backstop (`plugins.call_wall_timeout_ms`).
    WallClock,
}

impl std::fmt::Display for TimeBound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Cpu => "CPU-time budget",
            Self::WallClock => "wall-clock deadline",
        })
    }
}

/// Why a plugin could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("no plugin `{name}`: {path} does not exist and no built-in plugin has that name")]
    NotFound { name: String, path: PathBuf },
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("plugin `{name}` cannot be used: {detail}")]
    Invalid { name: String, detail: String },
}
