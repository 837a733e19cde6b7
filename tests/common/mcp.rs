//! MCP servers and clients for the MCP gateway's tests: servers written with the official Python
//! SDK (`tests/mcp/*.py`), started here (Streamable HTTP) or by the gateway (stdio), and the
//! official Python and TypeScript SDKs as clients (`tests/mcp/client.py`, `client.mjs`), all from
//! `target/sdk-clients/` (`scripts/sdk-clients.sh`). Missing SDKs fail the tests, never skip them.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use super::gateway::{Gateway, GatewayBuilder, Guard};
use super::sdk::{installed, root};

/// The virtual environment's Python, which has the `mcp` package.
pub fn python() -> PathBuf {
    installed(root().join("target/sdk-clients/py/bin/python"))
}

/// `tests/mcp/<name>`.
pub fn script(name: &str) -> PathBuf {
    root().join("tests/mcp").join(name)
}

/// A port nobody listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `tests/mcp/http_server.py`, a Streamable HTTP MCP server, in a process of its own.
pub struct HttpMcpServer {
    pub port: u16,
    token: Option<String>,
    /// It speaks the older HTTP+SSE transport.
    legacy: bool,
    child: tokio::process::Child,
}

impl HttpMcpServer {
    /// Starts it on a free port; with `token`, it refuses requests without that bearer token.
    pub async fn start(token: Option<&str>) -> Self {
        Self::start_with(token, false).await
    }

    /// The same server over the older HTTP+SSE transport.
    pub async fn start_legacy(token: Option<&str>) -> Self {
        Self::start_with(token, true).await
    }

    async fn start_with(token: Option<&str>, legacy: bool) -> Self {
        let port = free_port();
        let child = spawn(port, token, legacy).await;
        Self {
            port,
            token: token.map(str::to_owned),
            legacy,
            child,
        }
    }

    /// Where a client reaches it: the endpoint, or the event stream of the older transport.
    pub fn url(&self) -> String {
        let path = if self.legacy { "sse" } else { "mcp" };
        format!("http://127.0.0.1:{}/{path}", self.port)
    }

    /// Kills the process and starts a new one on the same port: every upstream session it
    /// handed out is gone (it answers them 404), as when a server expires its sessions.
    pub async fn restart(&mut self) {
        self.stop().await;
        self.child = spawn(self.port, self.token.as_deref(), self.legacy).await;
    }

    /// Kills the process (the server is down until [`Self::restart`]).
    pub async fn stop(&mut self) {
        let _ = self.child.kill().await;
        let _ = self.child.wait().await;
    }
}

async fn spawn(port: u16, token: Option<&str>, legacy: bool) -> tokio::process::Child {
    let mut command = tokio::process::Command::new(python());
    command
        .arg(script("http_server.py"))
        .arg(port.to_string())
        .arg(token.unwrap_or("-"))
        .args(legacy.then_some("sse"))
        .kill_on_drop(true)
        .stdout(std::process::Stdio::null());
    let child = command.spawn().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the MCP server on {port} did not start"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    child
}

/// `config` with an `mcp:` section merging `http` (as `search`, with its token) and the stdio
/// server (as `files`).
pub fn with_servers(config: GatewayBuilder, http: &HttpMcpServer, token: &str) -> GatewayBuilder {
    let args = vec![serde_yaml::Value::from(
        script("stdio_server.py").display().to_string(),
    )];
    config
        .set(
            "mcp.session_secret",
            "test-secret-test-secret-test-secret-1",
        )
        .set("mcp.servers.search.url", http.url())
        .set("mcp.servers.search.token", token)
        .set("mcp.servers.search.timeout_ms", 10_000)
        .set("mcp.servers.files.transport", "stdio")
        .set("mcp.servers.files.command", python().display().to_string())
        .set("mcp.servers.files.args", serde_yaml::Value::Sequence(args))
        .set("mcp.servers.files.timeout_ms", 10_000)
}

/// Runs the Python SDK client's `steps` on one session against `url` with `key`; its outcomes.
pub async fn python_client(url: &str, key: &str, steps: Value) -> Value {
    python_client_on(url, key, steps, false).await
}

/// The same over the older HTTP+SSE transport (`url` is the event stream's).
pub async fn python_sse_client(url: &str, key: &str, steps: Value) -> Value {
    python_client_on(url, key, steps, true).await
}

async fn python_client_on(url: &str, key: &str, steps: Value, sse: bool) -> Value {
    let mut command = tokio::process::Command::new(python());
    command.arg(script("client.py")).args([
        "--url",
        url,
        "--key",
        key,
        "--steps",
        &steps.to_string(),
    ]);
    if sse {
        command.arg("--sse");
    }
    run(command).await
}

/// Runs the TypeScript SDK client (`tests/mcp/client.mjs`) with the same steps.
pub async fn typescript_client(url: &str, key: &str, steps: Value) -> Value {
    let modules = installed(root().join("target/sdk-clients/js/node_modules"));
    installed(modules.join("@modelcontextprotocol/sdk"));
    let mut command = tokio::process::Command::new("node");
    command
        .arg(script("client.mjs"))
        .args(["--url", url, "--key", key, "--steps", &steps.to_string()])
        .env("NODE_PATH", modules);
    run(command).await
}

async fn run(mut command: tokio::process::Command) -> Value {
    command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(120), command.output())
        .await
        .expect("the MCP client did not finish within 120 s")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "MCP client failed:\n{stdout}\n{stderr}"
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"))
}

/// The MCP calls of `key`'s project in the gateway's request log, newest first, once `n` are
/// recorded (records are written in batches).
pub async fn calls(gateway: &super::TestGateway, key: &str, n: usize) -> Vec<Value> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let page: Value = super::http()
            .post(gateway.url("/usage/requests"))
            .bearer_auth(key)
            .json(&serde_json::json!({"dialect": "mcp"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let data = page["data"].as_array().cloned().unwrap_or_default();
        if data.len() >= n {
            return data;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{n} MCP calls not recorded: {page}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until every MCP server of the gateway is connected (it connects in the background, and
/// a stdio server's Python takes a second or two to start).
pub async fn connected(gateway: &super::TestGateway) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !gateway
        .state
        .mcp
        .servers()
        .iter()
        .all(|s| s.peer().is_some())
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the MCP servers did not connect"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The token the test HTTP server demands, which the gateway holds in its config.
pub const TOKEN: &str = "upstream-token-7f3a";

/// The usual setup of the MCP tests: the HTTP server (with [`TOKEN`]), a gateway merging it
/// (`search`) and the stdio server (`files`), connected, and a key of one project.
pub struct McpGateway {
    pub server: HttpMcpServer,
    pub gateway: super::TestGateway,
    pub key: String,
}

/// What a test changes in [`McpGateway`]'s setup.
#[must_use]
pub struct McpSetup {
    mcp: String,
    guards: Vec<Guard>,
    project: String,
}

impl McpGateway {
    pub fn builder() -> McpSetup {
        McpSetup {
            mcp: String::new(),
            guards: Vec::new(),
            project: "acme".to_owned(),
        }
    }

    /// The setup as it comes.
    pub async fn start() -> Self {
        Self::builder().start().await
    }

    /// `/mcp`.
    pub fn url(&self) -> String {
        self.gateway.url("/mcp")
    }

    /// The Python SDK client's `steps` on one session of `/mcp`, with the key.
    pub async fn python(&self, steps: Value) -> Value {
        python_client(&self.url(), &self.key, steps).await
    }

    /// The key's MCP calls once `n` are recorded.
    pub async fn calls(&self, n: usize) -> Vec<Value> {
        calls(&self.gateway, &self.key, n).await
    }

    pub async fn stop(self) {
        self.gateway.stop().await;
    }
}

impl McpSetup {
    /// Keys added to the `mcp:` section, as YAML (`calls_per_minute: 2`).
    pub fn mcp(mut self, keys: &str) -> Self {
        keys.clone_into(&mut self.mcp);
        self
    }

    /// A guard on the gateway (on tool calls too).
    pub fn guard(mut self, guard: Guard) -> Self {
        self.guards.push(guard);
        self
    }

    /// The project of the key (`acme` unless told).
    pub fn project(mut self, project: &str) -> Self {
        project.clone_into(&mut self.project);
        self
    }

    pub async fn start(self) -> McpGateway {
        let server = HttpMcpServer::start(Some(TOKEN)).await;
        let mut config = with_servers(Gateway::builder(), &server, TOKEN);
        let keys: serde_yaml::Mapping = serde_yaml::from_str(&self.mcp).unwrap_or_default();
        for (key, value) in keys {
            let key = key.as_str().expect("an mcp key");
            config = config.set(&format!("mcp.{key}"), value);
        }
        for guard in self.guards {
            config = config.guard(guard);
        }
        let gateway = config.start().await;
        connected(&gateway).await;
        let key = gateway.api_key(&self.project).await;
        McpGateway {
            server,
            gateway,
            key,
        }
    }
}
