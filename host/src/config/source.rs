//! Where the config comes from: a file (which can be reloaded) or the embedded default.

use std::fmt;
use std::path::{Path, PathBuf};

use super::config_error::ConfigError;
use super::config_file::Config;

/// The config used when no file is given and `./config.yaml` does not exist: it runs with no key
/// and no network (the `echo` provider), and shows how the `openai` provider is set up.
pub const DEFAULT_CONFIG: &str = include_str!("default.yaml");

/// The origin of the running config, kept so that a reload reads the same place again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigSource {
    File(PathBuf),
    /// [`DEFAULT_CONFIG`]: there is no file to watch.
    Embedded,
}

impl ConfigSource {
    /// `explicit` if given, else `./config.yaml` if it exists, else the embedded default.
    pub fn discover(explicit: Option<&Path>) -> Self {
        if let Some(path) = explicit {
            return Self::File(path.to_owned());
        }
        let local = Path::new("config.yaml");
        if local.exists() {
            Self::File(local.to_owned())
        } else {
            Self::Embedded
        }
    }

    /// Reads and validates the config this source names.
    pub fn load(&self) -> Result<Config, ConfigError> {
        match self {
            Self::File(path) => Config::from_file(path),
            Self::Embedded => Config::from_yaml(DEFAULT_CONFIG),
        }
    }

    /// The file to watch for changes, if any.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Self::File(path) => Some(path),
            Self::Embedded => None,
        }
    }
}

impl fmt::Display for ConfigSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::File(path) if path == Path::new("config.yaml") => f.write_str("./config.yaml"),
            Self::File(path) => write!(f, "{}", path.display()),
            Self::Embedded => f.write_str("embedded default"),
        }
    }
}
