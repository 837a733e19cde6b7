//! Shared by the end-to-end tests: a gateway started in-process on port 0, mock upstreams, and
//! OpenAI clients pointed at the gateway.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod binary;
pub mod cost;
pub mod gateway;
pub mod genai;
pub mod guards;
pub mod js_guard;
pub mod jwks;
pub mod mcp;
pub mod mock_anthropic_batches;
pub mod mock_api;
pub mod mock_batches;
pub mod mock_bedrock;
pub mod mock_leaky;
pub mod mock_openai;
pub mod mock_passthrough;
pub mod mock_providers;
pub mod mock_raw;
pub mod mock_realtime;
pub mod oidc;
pub mod postgres;
pub mod redis;
pub mod scenario;
pub mod sdk;
pub mod sse;
pub mod tls_front;
pub mod websocket;

use std::net::SocketAddr;
use std::path::PathBuf;

use tokio::sync::oneshot;
use wasmgate::config::Config;

/// Where the build put the test-only plugin components (see host/build.rs).
pub fn test_plugins_dir() -> PathBuf {
    PathBuf::from(env!("WASMGATE_TEST_PLUGINS_DIR"))
}

/// A compiled-component cache shared by the tests, so each plugin is compiled once per run.
pub fn plugin_cache_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/test-plugin-cache")
}

/// A gateway running in this process on 127.0.0.1, port 0.
pub struct TestGateway {
    pub addr: SocketAddr,
    /// The gateway's shared state, for reading what it stored (the ledger).
    pub state: std::sync::Arc<wasmgate::state::AppState>,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl TestGateway {
    /// Starts a gateway on `yaml` (the `plugins:` key is filled in unless given).
    pub async fn start(yaml: &str) -> Self {
        Self::try_start(yaml)
            .await
            .unwrap_or_else(|e| panic!("gateway did not start: {e:#}"))
    }

    pub async fn try_start(yaml: &str) -> anyhow::Result<Self> {
        let mut config = Config::from_yaml(yaml)?;
        config.plugins.cache_dir = Some(plugin_cache_dir());
        if !yaml.contains("ledger:") {
            // Not the default ./wasmgate.db: tests run in parallel and leave no files behind.
            config.ledger.url = "sqlite::memory:".to_owned();
        }
        if config.ledger.url.starts_with("postgres") && config.ledger.journal.dir.is_none() {
            // Not the default ./wasmgate-journal, which would be one for every test of the
            // binary: a journal directory serves one gateway at a time.
            static JOURNALS: std::sync::atomic::AtomicUsize =
                std::sync::atomic::AtomicUsize::new(0);
            let n = JOURNALS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let dir = std::env::temp_dir()
                .join(format!("wasmgate-test-journal-{}-{n}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            config.ledger.journal.dir = Some(dir);
        }
        if !yaml.contains("plugins:") {
            config.plugins.dir = test_plugins_dir();
            config.plugins.max_instances = 64;
        }
        let state = wasmgate::build_state(config).await?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(wasmgate::server::run(listener, state.clone(), async move {
            let _ = rx.await;
        }));
        Ok(Self {
            addr,
            state,
            shutdown: Some(tx),
            task: Some(task),
        })
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// An async-openai client whose base URL is this gateway.
    pub fn openai(&self) -> async_openai::Client<async_openai::config::OpenAIConfig> {
        let config = async_openai::config::OpenAIConfig::new()
            .with_api_base(self.url("/v1"))
            .with_api_key("sk-client-key-not-forwarded");
        async_openai::Client::with_config(config)
    }

    /// A new API key of `project`, stored in this gateway's ledger database.
    pub async fn api_key(&self, project: &str) -> String {
        let (key, stored) = wasmgate::auth::generate(project, None, 0);
        self.store_key(stored).await;
        key
    }

    async fn store_key(&self, stored: wasmgate::ledger::ApiKey) {
        let store = self.state.ledger.store();
        // Store calls block (PostgreSQL's client refuses to run on an async worker).
        tokio::task::spawn_blocking(move || store.insert_key(&stored))
            .await
            .unwrap()
            .unwrap();
    }

    /// A new API key of project `default` that may reach `patterns` (`<entry>/<path glob>`) by
    /// pass-through routes.
    pub async fn passthrough_key(&self, patterns: &[&str]) -> String {
        let (key, mut stored) = wasmgate::auth::generate("default", None, 0);
        stored.limits.passthrough = patterns.iter().map(|p| (*p).to_owned()).collect();
        self.store_key(stored).await;
        key
    }

    /// The ledger's record of request `id`, once the writer has stored it (it flushes every
    /// 200 ms); panics after 10 s without one.
    pub async fn record_of(&self, id: &str) -> wasmgate::ledger::UsageRecord {
        let store = self.state.ledger.store();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let (store, key) = (store.clone(), id.to_owned());
            let found = tokio::task::spawn_blocking(move || store.record(&key))
                .await
                .unwrap()
                .unwrap();
            if let Some(record) = found {
                return record;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no ledger record for {id}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    /// The text `/metrics` answers now.
    pub async fn metrics(&self) -> String {
        http()
            .get(self.url("/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    /// Stops accepting, waits for requests in flight, and returns.
    pub async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.expect("server task").expect("server result");
        }
    }
}

impl Drop for TestGateway {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

/// [`gateway::Gateway::standard`]'s config, as YAML, for tests that add to it as text.
pub fn config_for(base_url: &str) -> String {
    gateway::Gateway::standard(base_url).to_yaml()
}

/// A plain HTTP client for requests an SDK would not send.
pub fn http() -> reqwest::Client {
    // reqwest is built without a default crypto provider (the gateway picks ring).
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// Every file under `dir`, in its subdirectories too (the ledger's journal keeps its segments in
/// a directory beside the database file): what a test that no secret is stored must read.
pub fn files_under(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}
