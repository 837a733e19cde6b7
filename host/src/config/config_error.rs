//! Why a config could not be used.

use std::path::PathBuf;

/// Why a config could not be used. Each variant names the key or file at fault.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    // Not `source`: that would make the I/O error the cause as well, printed twice in a chain.
    #[error("cannot read config file {path}: {cause}")]
    Read {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("config is not valid YAML: {0}")]
    Yaml(String),
    #[error("config key `{path}`: {message}")]
    Key { path: String, message: String },
}

impl ConfigError {
    pub(crate) fn key(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Key {
            path: path.into(),
            message: message.into(),
        }
    }
}
