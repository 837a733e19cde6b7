//! Why a catalog could not be loaded.

use std::path::PathBuf;

/// Why a catalog could not be loaded. Each variant names the file or key at fault.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("cannot read catalog file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("catalog is not valid YAML: {0}")]
    Yaml(String),
    #[error("catalog key `{path}`: {message}")]
    Key { path: String, message: String },
}

impl CatalogError {
    pub(crate) fn key(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Key {
            path: path.into(),
            message: message.into(),
        }
    }
}
