//! The log subscriber: level from `--log-level`, the config, or `RUST_LOG`; text or JSON lines.

use tracing_subscriber::EnvFilter;

use crate::config::{LogFormat, ObservabilityConfig};

/// Installs the global subscriber. The command line (already merged into `config`) wins over
/// the file, and both over `RUST_LOG`; the default is `info`.
pub fn init(config: &ObservabilityConfig) {
    let filter = match &config.log_level {
        Some(level) => EnvFilter::try_new(level).unwrap_or_else(|_| EnvFilter::new("info")),
        None => EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
    };
    // Colours only for a person at a terminal: escape codes in a log file break grep.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    let result = match config.log_format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Text => builder.try_init(),
    };
    // A second init (tests start several gateways in one process) keeps the first subscriber.
    drop(result);
}
