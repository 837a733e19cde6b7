//! Hot reload: on SIGHUP, or when the config file or a plugin file changes, the config and every
//! plugin it names are loaded anew and swapped in as one [`Gateway`]. Requests hold the snapshot
//! they started with, so those in flight (streams included) finish on the old one; a config or
//! plugin that does not load leaves the running gateway in place.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures_util::{Stream, StreamExt};
use tokio_util::sync::CancellationToken;

mod audit;

use crate::config::{Config, ConfigError, ConfigSource};
use crate::gateway::{Gateway, StartupError};
use crate::state::AppState;

/// How often the config file and the plugin directory are checked for changes.
pub const POLL_INTERVAL: Duration = Duration::from_secs(1);

/// What asked for a reload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    Signal,
    FileChange,
}

impl fmt::Display for Trigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Signal => "SIGHUP",
            Self::FileChange => "file change",
        })
    }
}

/// Why a reload was rejected. Each names the key or the plugin at fault.
#[derive(Debug, thiserror::Error)]
pub enum ReloadError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Gateway(#[from] StartupError),
    #[error("the reload task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}

/// Completes a config just read, before it is validated by loading: the command-line overrides,
/// and anything else `serve` adds to the file. Run on every read, so a reload keeps them.
pub type Prepare = Box<dyn Fn(&mut Config) + Send + Sync>;

/// Reads the config again when asked, and swaps in the gateway it describes.
pub struct Reloader {
    source: ConfigSource,
    prepare: Prepare,
    /// 1 for the config read at start-up, one more for each successful reload.
    generation: u64,
    /// The files as they were when the running config was read.
    seen: Fingerprint,
    /// The running config's text, for the audit log's entry of the next reload.
    snapshot: audit::Snapshot,
}

impl Reloader {
    /// Reads the first config. The files are noted before they are read, so a change made while
    /// the gateway starts is picked up by the first poll rather than missed.
    pub fn start(source: ConfigSource, prepare: Prepare) -> Result<(Self, Config), ConfigError> {
        let config_stamp = source.path().and_then(FileStamp::of);
        let snapshot = audit::Snapshot::of(&source);
        let config = read(&source, &prepare)?;
        let seen = Fingerprint {
            config: config_stamp,
            plugins: plugin_stamps(&config.plugins.dir),
        };
        let reloader = Self {
            source,
            prepare,
            generation: 1,
            seen,
            snapshot,
        };
        Ok((reloader, config))
    }

    pub fn source(&self) -> &ConfigSource {
        &self.source
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Loads the config and its plugins and swaps them in; returns the new generation. On error
    /// the running gateway is untouched.
    pub async fn reload(&mut self, state: &AppState, trigger: Trigger) -> Result<u64, ReloadError> {
        let config_stamp = self.source.path().and_then(FileStamp::of);
        let snapshot = audit::Snapshot::of(&self.source);
        let loaded = read(&self.source, &self.prepare);
        // Noted whatever the outcome: a rejected file is not retried every poll, only when it
        // changes again.
        self.seen = Fingerprint {
            config: config_stamp,
            plugins: match &loaded {
                Ok(config) => plugin_stamps(&config.plugins.dir),
                Err(_) => self.seen.plugins.clone(),
            },
        };
        let mut config = loaded?;
        let current = state.gateway.load_full();
        let kept = keep_restart_only(&current.config, &mut config);
        if !kept.is_empty() {
            tracing::warn!(
                "config reload: {} cannot change without a restart; keeping the running values",
                kept.join(", ")
            );
        }
        // Compiling a changed component takes a CPU for 100 ms or more: that happens on a
        // blocking thread, not on a worker that is serving requests.
        let runtime = tokio::runtime::Handle::current();
        let plugins = state.plugins.clone();
        let gateway = tokio::task::spawn_blocking(move || {
            runtime.block_on(Gateway::load_replacing(config, &plugins, Some(&current)))
        })
        .await??;
        let mcp = gateway.config.mcp.clone();
        state.gateway.store(Arc::new(gateway));
        if mcp.session_secret != state.mcp.config().session_secret {
            tracing::warn!(
                "config reload: mcp.session_secret cannot change without a restart; keeping the \
                 running secret"
            );
        }
        let (started, retired) = state.mcp.reload(&mcp, &state.http);
        if started + retired > 0 {
            tracing::info!("config reload: MCP servers: {started} started, {retired} retired");
        }
        self.generation += 1;
        let change = audit::change(
            &self.source,
            &trigger.to_string(),
            &self.snapshot,
            &snapshot,
            self.generation,
        );
        self.snapshot = snapshot;
        let store = state.ledger.store();
        let appended = tokio::task::spawn_blocking(move || {
            store.append_audit(change, crate::ledger::time::now_us())
        })
        .await;
        if !matches!(appended, Ok(Ok(_))) {
            // The new config already serves: the failure is reported, not undone.
            tracing::error!("config reload: the audit log did not take the reload");
        }
        Ok(self.generation)
    }

    /// [`Reloader::reload`], with one log line for the outcome.
    pub async fn reload_logged(&mut self, state: &AppState, trigger: Trigger) {
        match self.reload(state, trigger).await {
            Ok(generation) => {
                let gateway = state.gateway.load();
                tracing::info!(
                    "config reloaded ({trigger}): generation {generation}, {} providers, {} \
                     virtual models, {} limit rules",
                    gateway.providers.len(),
                    gateway.routes.len(),
                    gateway.config.limits.rules.len(),
                );
            }
            Err(e) => tracing::error!(
                "config reload ({trigger}) rejected, still serving generation {}: {e}",
                self.generation
            ),
        }
    }

    /// Reloads on each item of `hangup` (SIGHUP) and when the config file or a `*.wasm` file of
    /// the plugin directory changes, until `stop` is cancelled. A change is acted on once the
    /// files have held still for one `poll`, so a file caught half-written is not loaded.
    pub async fn watch(
        mut self,
        state: Arc<AppState>,
        mut hangup: impl Stream<Item = ()> + Unpin,
        stop: CancellationToken,
        poll: Duration,
    ) {
        let mut ticker = tokio::time::interval(poll);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut changed: Option<Fingerprint> = None;
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                Some(()) = hangup.next() => {
                    changed = None;
                    self.reload_logged(&state, Trigger::Signal).await;
                }
                _ = ticker.tick() => {
                    // A stat per file of a small directory: microseconds, fine on this thread.
                    let dir = state.gateway.load().config.plugins.dir.clone();
                    let now = Fingerprint {
                        config: self.source.path().and_then(FileStamp::of),
                        plugins: plugin_stamps(&dir),
                    };
                    if now == self.seen {
                        changed = None;
                    } else if changed.as_ref() == Some(&now) {
                        changed = None;
                        self.reload_logged(&state, Trigger::FileChange).await;
                    } else {
                        changed = Some(now);
                    }
                }
            }
        }
    }
}

fn read(source: &ConfigSource, prepare: &Prepare) -> Result<Config, ConfigError> {
    let mut config = source.load()?;
    prepare(&mut config);
    Ok(config)
}

/// Puts back the running values of keys that only take effect at start-up (the listener, the
/// plugin engine's limits, the ledger, the log subscriber); returns the keys that differed.
fn keep_restart_only(running: &Config, new: &mut Config) -> Vec<&'static str> {
    fn keep<T: PartialEq + Clone>(
        kept: &mut Vec<&'static str>,
        key: &'static str,
        running: &T,
        new: &mut T,
    ) {
        if running != new {
            new.clone_from(running);
            kept.push(key);
        }
    }
    let mut kept = Vec::new();
    let k = &mut kept;
    keep(k, "server.host", &running.server.host, &mut new.server.host);
    keep(k, "server.port", &running.server.port, &mut new.server.port);
    let (old, new_server) = (&running.server, &mut new.server);
    keep(
        k,
        "server.max_body_bytes",
        &old.max_body_bytes,
        &mut new_server.max_body_bytes,
    );
    keep(
        k,
        "server.max_body_bytes_in_flight",
        &old.max_body_bytes_in_flight,
        &mut new_server.max_body_bytes_in_flight,
    );
    let (old, plugins) = (&running.plugins, &mut new.plugins);
    keep(
        k,
        "plugins.cache_dir",
        &old.cache_dir,
        &mut plugins.cache_dir,
    );
    keep(
        k,
        "plugins.call_timeout_ms",
        &old.call_timeout_ms,
        &mut plugins.call_timeout_ms,
    );
    keep(
        k,
        "plugins.call_wall_timeout_ms",
        &old.call_wall_timeout_ms,
        &mut plugins.call_wall_timeout_ms,
    );
    keep(
        k,
        "plugins.memory_limit_mib",
        &old.memory_limit_mib,
        &mut plugins.memory_limit_mib,
    );
    keep(
        k,
        "plugins.max_instances",
        &old.max_instances,
        &mut plugins.max_instances,
    );
    keep(
        k,
        "plugins.instance_wait_ms",
        &old.instance_wait_ms,
        &mut plugins.instance_wait_ms,
    );
    keep(
        k,
        "plugins.stream_share_percent",
        &old.stream_share_percent,
        &mut plugins.stream_share_percent,
    );
    keep(
        k,
        "server.max_connections",
        &running.server.max_connections,
        &mut new.server.max_connections,
    );
    keep(k, "ledger.url", &running.ledger.url, &mut new.ledger.url);
    keep(
        k,
        "ledger.queue_capacity",
        &running.ledger.queue_capacity,
        &mut new.ledger.queue_capacity,
    );
    // The log subscriber (and whatever else `observability:` configures) is installed once per
    // process. The section is compared through `Debug` so that keys added to it later are
    // covered without a matching edit here.
    if format!("{:?}", running.observability) != format!("{:?}", new.observability) {
        new.observability.clone_from(&running.observability);
        kept.push("observability");
    }
    kept
}

/// What the watcher compares: the config file and each plugin component.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fingerprint {
    config: Option<FileStamp>,
    plugins: BTreeMap<OsString, FileStamp>,
}

/// A file's modification time and length: a rewrite changes at least one of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileStamp {
    modified: Option<SystemTime>,
    len: u64,
}

impl FileStamp {
    /// Follows symbolic links, so a swapped link (as Kubernetes does for a mounted ConfigMap)
    /// counts as a change.
    fn of(path: &Path) -> Option<Self> {
        let meta = std::fs::metadata(path).ok()?;
        Some(Self {
            modified: meta.modified().ok(),
            len: meta.len(),
        })
    }
}

/// The `*.wasm` files of `dir`; none when it does not exist (the built-in plugins serve).
fn plugin_stamps(dir: &Path) -> BTreeMap<OsString, FileStamp> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return BTreeMap::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|ext| ext == "wasm"))
        .filter_map(|e| Some((e.file_name(), FileStamp::of(&e.path())?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(yaml: &str) -> Config {
        Config::from_yaml(yaml).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn restart_only_keys_are_named_and_keep_their_running_values() {
        let running = config(
            "server: { port: 9000, max_body_bytes: 100 }\nledger: { url: 'sqlite::memory:' }\n",
        );
        let mut new = config(
            "server: { port: 9001, max_body_bytes: 100, shutdown_timeout_ms: 5 }\n\
             plugins: { dir: ./elsewhere, max_instances: 3 }\n\
             ledger: { url: 'sqlite://x.db' }\n\
             observability: { log_format: json }\n",
        );
        let kept = keep_restart_only(&running, &mut new);
        assert_eq!(
            kept,
            [
                "server.port",
                "plugins.max_instances",
                "ledger.url",
                "observability"
            ]
        );
        assert_eq!(new.server.port, 9000);
        assert_eq!(new.plugins.max_instances, running.plugins.max_instances);
        assert_eq!(new.ledger.url, "sqlite::memory:");
        assert_eq!(
            new.observability.log_format,
            running.observability.log_format
        );
        // What reloads is left as the new file says.
        assert_eq!(new.server.shutdown_timeout_ms, 5);
        assert_eq!(new.plugins.dir, Path::new("./elsewhere"));
    }

    #[test]
    fn an_unchanged_config_keeps_nothing() {
        let running = config("providers: { e: { plugin: echo } }\n");
        let mut new = running.clone();
        assert!(keep_restart_only(&running, &mut new).is_empty());
    }

    #[test]
    fn only_wasm_files_of_the_plugin_directory_count() {
        let dir =
            std::env::temp_dir().join(format!("wasmgate-reload-stamps-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.join("a.wasm"), b"x").unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.join("notes.txt"), b"x").unwrap_or_else(|e| panic!("{e}"));
        let stamps = plugin_stamps(&dir);
        assert_eq!(
            stamps.keys().collect::<Vec<_>>(),
            [&OsString::from("a.wasm")]
        );
        std::fs::write(dir.join("a.wasm"), b"xy").unwrap_or_else(|e| panic!("{e}"));
        assert_ne!(plugin_stamps(&dir), stamps);
        assert!(plugin_stamps(&dir.join("missing")).is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
