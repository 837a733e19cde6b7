//! The `batches:` section of the config: OpenAI's Files and Batch APIs through the gateway
//! (`/v1/files`, `/v1/batches`), how uploads are held while their lines are checked, and how
//! often batches in progress are asked after.

use std::path::PathBuf;

use schemars::JsonSchema;

use super::config_error::ConfigError;

/// Files and batches.
#[derive(Clone, Debug, PartialEq, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchesConfig {
    /// Milliseconds between two rounds of asking the upstreams after the batches not yet
    /// metered (a client's `GET /v1/batches/{id}` also asks at once).
    #[serde(default = "default_poll_interval_ms")]
    #[schemars(range(min = 100), extend("examples" = [60000]))]
    pub poll_interval_ms: u64,
    /// Bytes of one uploaded file, at most (OpenAI takes up to 512 MB; a batch input file up
    /// to 200 MB). Uploads are not held in memory and do not count against `server.max_body_bytes`.
    #[serde(default = "default_max_file_bytes")]
    #[schemars(range(min = 1), extend("examples" = [209_715_200]))]
    pub max_file_bytes: u64,
    /// Where an upload is written while its lines are checked, before it goes upstream (and
    /// removed then); the system's temporary directory when absent.
    #[serde(default)]
    #[schemars(extend("examples" = ["/var/tmp/wasmgate"]))]
    pub spool_dir: Option<PathBuf>,
}

impl Default for BatchesConfig {
    fn default() -> Self {
        Self {
            poll_interval_ms: default_poll_interval_ms(),
            max_file_bytes: default_max_file_bytes(),
            spool_dir: None,
        }
    }
}

fn default_poll_interval_ms() -> u64 {
    60_000
}

fn default_max_file_bytes() -> u64 {
    512 << 20
}

impl BatchesConfig {
    pub fn check(&self) -> Result<(), ConfigError> {
        if self.poll_interval_ms < 100 {
            return Err(ConfigError::key(
                "batches.poll_interval_ms",
                "must be at least 100",
            ));
        }
        if self.max_file_bytes == 0 {
            return Err(ConfigError::key(
                "batches.max_file_bytes",
                "must be at least 1",
            ));
        }
        Ok(())
    }

    pub fn poll_interval(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.poll_interval_ms)
    }

    pub fn spool_dir(&self) -> PathBuf {
        self.spool_dir.clone().unwrap_or_else(std::env::temp_dir)
    }
}
