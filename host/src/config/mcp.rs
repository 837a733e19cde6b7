//! The `mcp:` section of the config: the MCP servers the gateway's `/mcp` endpoint merges, how
//! their names are kept apart, who may call which tools, and the endpoint's sessions and limits.

use indexmap::IndexMap;
use schemars::JsonSchema;

use super::config_error::ConfigError;
use crate::secret::Secret;

/// The MCP gateway. `/mcp` answers 404 while `servers` is empty.
#[derive(Clone, Debug, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpConfig {
    /// The upstream MCP servers, by name (lower-case letters, digits and `-`: the name is the
    /// default prefix of their tools, and appears in records and metrics).
    #[serde(default)]
    #[schemars(extend("examples" = [{"files": {"transport": "stdio", "command": "python3", "args": ["files_server.py"]}, "search": {"url": "https://search.internal/mcp"}}]))]
    pub servers: IndexMap<String, McpServer>,
    /// Signs the session ids `/mcp` hands out, so that any replica holding the same secret
    /// serves any session (no sticky routing). At least 32 bytes. Without it each process signs
    /// with a random secret of its own, and a session lives only as long as its replica.
    #[serde(default)]
    #[schemars(extend("examples" = ["${WASMGATE_MCP_SESSION_SECRET}"]))]
    pub session_secret: Option<Secret>,
    /// Seconds a session id is valid after `initialize`; the client then starts a new session.
    #[serde(default = "default_session_ttl_s")]
    #[schemars(range(min = 1), extend("examples" = [86400]))]
    pub session_ttl_s: u64,
    /// Items per page of a merged listing (`tools/list`, `prompts/list`, `resources/list`).
    #[serde(default = "default_page_size")]
    #[schemars(range(min = 1), extend("examples" = [100]))]
    pub page_size: usize,
    /// Tool calls per minute per API key, over every server (counted on `limits.store`, so on
    /// Redis it holds across replicas). No limit when unset.
    #[serde(default)]
    #[schemars(range(min = 1), extend("examples" = [600]))]
    pub calls_per_minute: Option<u32>,
    /// Event streams of the older HTTP+SSE transport (`GET /mcp/sse`) one API key may hold open
    /// on one replica at a time; a further one is refused with 429.
    #[serde(default = "default_sse_streams_per_key")]
    #[schemars(range(min = 1), extend("examples" = [8]))]
    pub sse_streams_per_key: usize,
    /// Which servers and tools each project's keys may use (a key's own `tools` narrows it
    /// further). A project not listed may use every tool.
    #[serde(default)]
    #[schemars(extend("examples" = [{"support": {"tools": ["search/*", "files/read_*"]}}]))]
    pub projects: IndexMap<String, McpProject>,
}

/// What one project's keys may call.
#[derive(Clone, Debug, Default, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpProject {
    /// `<server>/<tool>` patterns (`*` stands for any run of characters), matched against the
    /// server's name and the tool's own name (without the prefix). Empty allows nothing.
    #[schemars(extend("examples" = [["search/*", "files/read_*"]]))]
    pub tools: Vec<String>,
}

/// One upstream MCP server.
#[derive(Clone, Debug, PartialEq, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpServer {
    /// How the gateway reaches it.
    #[serde(default)]
    pub transport: McpTransport,
    /// `http` and `sse`: the server's endpoint.
    #[serde(default)]
    #[schemars(extend("examples" = ["https://search.internal/mcp"]))]
    pub url: Option<String>,
    /// `http` and `sse`: sent as `Authorization: Bearer <token>`. When unset it is read from
    /// `<NAME>_MCP_TOKEN` in the environment (`my-search` → `MY_SEARCH_MCP_TOKEN`), else from the
    /// credentials file's `mcp-<name>` entry (`wasmgate login mcp-<name>`); none is sent if
    /// neither has one.
    #[serde(default)]
    #[schemars(extend("examples" = ["${SEARCH_MCP_TOKEN}"]))]
    pub token: Option<Secret>,
    /// `stdio`: the program the gateway starts (and restarts when it exits).
    #[serde(default)]
    #[schemars(extend("examples" = ["python3"]))]
    pub command: Option<String>,
    /// `stdio`: its arguments.
    #[serde(default)]
    #[schemars(extend("examples" = [["files_server.py", "--root", "/srv/files"]]))]
    pub args: Vec<String>,
    /// `stdio`: its environment. It gets these and `PATH`, `HOME`, `LANG` only: the gateway's
    /// own environment (its keys) is not passed on.
    #[serde(default)]
    #[schemars(extend("examples" = [{"FILES_ROOT": "/srv/files"}]))]
    pub env: IndexMap<String, Secret>,
    /// `stdio`: the working directory.
    #[serde(default)]
    #[schemars(extend("examples" = ["/srv/tools"]))]
    pub cwd: Option<std::path::PathBuf>,
    /// What its tools' and prompts' names start with in the merged view (resource URIs get
    /// `<prefix>+` in front). `<name>_` by default; no prefix may begin another server's.
    #[serde(default)]
    #[schemars(extend("examples" = ["files_"]))]
    pub prefix: Option<String>,
    /// Milliseconds one call to it may take (listings and tool calls alike).
    #[serde(default = "default_timeout_ms")]
    #[schemars(range(min = 1), extend("examples" = [30000]))]
    pub timeout_ms: u64,
}

/// How an upstream MCP server is reached.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(extend("examples" = ["stdio"]))]
pub enum McpTransport {
    /// Streamable HTTP, the current MCP transport.
    #[default]
    Http,
    /// A program the gateway starts, speaking MCP on its standard input and output.
    Stdio,
    /// The older HTTP+SSE transport (an SSE stream, and POSTs to the endpoint it names).
    Sse,
}

// By hand: a derived `Default` would give 0 where serde gives the defaults below.
impl Default for McpConfig {
    fn default() -> Self {
        Self {
            servers: IndexMap::new(),
            session_secret: None,
            session_ttl_s: default_session_ttl_s(),
            page_size: default_page_size(),
            calls_per_minute: None,
            sse_streams_per_key: default_sse_streams_per_key(),
            projects: IndexMap::new(),
        }
    }
}

fn default_session_ttl_s() -> u64 {
    86_400
}

fn default_page_size() -> usize {
    100
}

fn default_sse_streams_per_key() -> usize {
    8
}

fn default_timeout_ms() -> u64 {
    30_000
}

/// Bytes of a server name, at most (it becomes a metric label and a ledger value).
pub const SERVER_NAME_MAX: usize = 48;

impl McpServer {
    /// The prefix of its names in the merged view.
    pub fn prefix_for(&self, name: &str) -> String {
        self.prefix.clone().unwrap_or_else(|| format!("{name}_"))
    }

    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.timeout_ms)
    }
}

/// Checks `mcp:`, naming the key at fault.
pub(super) fn validate(mcp: &McpConfig) -> Result<(), ConfigError> {
    if let Some(secret) = &mcp.session_secret
        && secret.expose().len() < 32
    {
        return Err(ConfigError::key(
            "mcp.session_secret",
            "must be at least 32 bytes",
        ));
    }
    for (key, value) in [
        ("session_ttl_s", mcp.session_ttl_s),
        ("page_size", mcp.page_size as u64),
        ("sse_streams_per_key", mcp.sse_streams_per_key as u64),
        (
            "calls_per_minute",
            mcp.calls_per_minute.map_or(1, u64::from),
        ),
    ] {
        if value == 0 {
            return Err(ConfigError::key(format!("mcp.{key}"), "must be at least 1"));
        }
    }
    let mut prefixes: Vec<(String, &str)> = Vec::new();
    for (name, server) in &mcp.servers {
        let at = |key: &str| format!("mcp.servers.{name}.{key}");
        let plain = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
        if name.is_empty() || name.len() > SERVER_NAME_MAX || !name.chars().all(plain) {
            return Err(ConfigError::key(
                format!("mcp.servers.{name}"),
                format!(
                    "a server name is 1 to {SERVER_NAME_MAX} lower-case letters, digits or `-`"
                ),
            ));
        }
        match server.transport {
            McpTransport::Http | McpTransport::Sse => {
                let url = server.url.as_deref().unwrap_or_default();
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(ConfigError::key(
                        at("url"),
                        "an http:// or https:// URL is needed for this transport",
                    ));
                }
                if server.command.is_some() {
                    return Err(ConfigError::key(at("command"), "only for `stdio`"));
                }
            }
            McpTransport::Stdio => {
                if server.command.as_deref().is_none_or(str::is_empty) {
                    return Err(ConfigError::key(
                        at("command"),
                        "a program is needed for `stdio`",
                    ));
                }
                if server.url.is_some() {
                    return Err(ConfigError::key(at("url"), "not for `stdio`"));
                }
            }
        }
        if server.timeout_ms == 0 {
            return Err(ConfigError::key(at("timeout_ms"), "must be at least 1"));
        }
        let prefix = server.prefix_for(name);
        let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
        if prefix.len() > 64 || !prefix.chars().all(allowed) {
            return Err(ConfigError::key(
                at("prefix"),
                "at most 64 letters, digits, `_`, `-` or `.`",
            ));
        }
        if let Some((_, other)) = prefixes
            .iter()
            .find(|(p, _)| p.starts_with(&prefix) || prefix.starts_with(p.as_str()))
        {
            return Err(ConfigError::key(
                at("prefix"),
                format!(
                    "`{prefix}` and the prefix of `{other}` begin one another: merged names \
                     could collide"
                ),
            ));
        }
        prefixes.push((prefix, name));
    }
    for (project, rules) in &mcp.projects {
        crate::ledger::keys::check_tool_patterns(&rules.tools)
            .map_err(|e| ConfigError::key(format!("mcp.projects.{project}.tools"), e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use crate::config::Config;

    fn error(yaml: &str) -> String {
        Config::from_yaml(yaml).err().unwrap().to_string()
    }

    #[test]
    fn servers_need_what_their_transport_needs() {
        assert!(
            error("mcp: { servers: { a: { transport: stdio } } }")
                .contains("mcp.servers.a.command")
        );
        assert!(error("mcp: { servers: { a: { url: 'ftp://x' } } }").contains("mcp.servers.a.url"));
        assert!(
            error("mcp: { servers: { A_b: { url: 'http://x' } } }").contains("mcp.servers.A_b")
        );
        let ok = Config::from_yaml(
            "mcp: { servers: { a: { url: 'http://x/mcp' }, b: { transport: stdio, command: srv } } }",
        )
        .unwrap();
        assert_eq!(ok.mcp.servers["a"].prefix_for("a"), "a_");
        let none = Config::from_yaml("{}").unwrap();
        assert_eq!((none.mcp.session_ttl_s, none.mcp.page_size), (86_400, 100));
    }

    #[test]
    fn prefixes_that_begin_one_another_are_refused() {
        let e = error(
            "mcp: { servers: { a: { url: 'http://x', prefix: 'ab' }, b: { url: 'http://y', prefix: 'a' } } }",
        );
        assert!(e.contains("mcp.servers.b.prefix"), "{e}");
        assert!(error("mcp: { session_secret: short }").contains("mcp.session_secret"));
    }
}
