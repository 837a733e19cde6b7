//! What is measured: the APIs, the gateway's two configurations, and the rows of each.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use anyhow::Context as _;
use serde_json::{Value, json};

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Api {
    Chat,
    Messages,
    Responses,
}

impl Api {
    pub const ALL: [Api; 3] = [Api::Chat, Api::Messages, Api::Responses];

    pub fn name(self) -> &'static str {
        match self {
            Api::Chat => "chat",
            Api::Messages => "messages",
            Api::Responses => "responses",
        }
    }

    fn path(self) -> &'static str {
        match self {
            Api::Chat => "/v1/chat/completions",
            Api::Messages => "/v1/messages",
            Api::Responses => "/v1/responses",
        }
    }

    /// What the last bytes of a complete stream of this API contain.
    fn stream_end(self) -> &'static str {
        match self {
            Api::Chat => "data: [DONE]",
            Api::Messages => "message_stop",
            Api::Responses => "response.completed",
        }
    }
}

/// About 1 KiB of prompt, as the figures were measured with.
fn prompt() -> String {
    "lorem ipsum dolor sit amet ".repeat(33)
}

/// One row: an API called at an address with a model.
pub struct Row {
    pub name: String,
    pub api: Api,
    pub model: &'static str,
    /// Sends `Cache-Control: no-cache`: the response cache computes the key and keeps the
    /// answer, but does not read (a miss's work, on a body that would otherwise hit).
    pub no_cache: bool,
    /// Sends `Cache-Control: no-store`: looked up, never kept (a semantic miss every time).
    pub no_store: bool,
    /// Put before the prompt: another last user turn, so another exact key and (from the mock)
    /// another embedding.
    pub prefix: &'static str,
}

impl Row {
    pub fn direct(api: Api) -> Self {
        let model = match api {
            Api::Messages => "claude-sonnet-4-5",
            Api::Chat | Api::Responses => "gpt-4o-mini",
        };
        Row {
            name: format!("mock called directly ({})", api.path()),
            api,
            model,
            no_cache: false,
            no_store: false,
            prefix: "",
        }
    }

    pub fn path(&self) -> &'static str {
        self.api.path()
    }

    /// What oha sends for this row.
    pub fn req(&self, stream: bool) -> crate::load::Req {
        crate::load::Req {
            name: format!("{} (stream: {stream})", self.name),
            path: self.path().to_owned(),
            headers: self
                .headers()
                .into_iter()
                .map(|(n, v)| (n.to_owned(), v.to_owned()))
                .collect(),
            body: self.body(stream),
        }
    }

    /// The headers its API's clients send (the gateway needs no key: auth is off).
    pub fn headers(&self) -> Vec<(&'static str, &'static str)> {
        let mut headers = vec![("content-type", "application/json")];
        if self.no_cache {
            headers.push(("cache-control", "no-cache"));
        }
        if self.no_store {
            headers.push(("cache-control", "no-store"));
        }
        match self.api {
            Api::Chat | Api::Responses => headers.push(("authorization", "Bearer sk-bench")),
            Api::Messages => {
                headers.push(("x-api-key", "sk-ant-bench"));
                headers.push(("anthropic-version", "2023-06-01"));
            }
        }
        headers
    }

    /// One streamed request of this row as HTTP/1.1 text for `addr`, on a connection that
    /// closes after it (the stall and first-token clients write it to a socket of their own).
    pub fn streamed_request(&self, addr: &str) -> String {
        let body = self.body(true);
        let mut request = format!(
            "POST {} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\ncontent-length: {}\r\n",
            self.path(),
            body.len()
        );
        for (name, value) in self.headers() {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        request.push_str(&body);
        request
    }

    pub fn body(&self, stream: bool) -> String {
        let body: Value = match self.api {
            Api::Chat => {
                let mut body = json!({"model": self.model, "messages": [
                    {"role": "system", "content": "You are a helpful assistant."},
                    {"role": "user", "content": format!("{}{}", self.prefix, prompt())}]});
                if stream {
                    body["stream"] = json!(true);
                    body["stream_options"] = json!({"include_usage": true});
                }
                body
            }
            Api::Messages => json!({"model": self.model, "max_tokens": 256, "stream": stream,
                "system": "You are a helpful assistant.",
                "messages": [{"role": "user", "content": prompt()}]}),
            // `store: false`: a stored response costs a synchronous write (BENCHMARKS.md,
            // "Dialects"); what is measured here is the path itself.
            Api::Responses => json!({"model": self.model, "stream": stream, "store": false,
                "instructions": "You are a helpful assistant.", "input": prompt()}),
        };
        body.to_string()
    }

    /// One request of each kind must be answered in full before the row is measured.
    pub fn check(&self, addr: &str) -> anyhow::Result<()> {
        self.check_streams(addr, &[false, true])
    }

    /// One whole answer must come back (a paced stream would take too long to check).
    pub fn check_whole(&self, addr: &str) -> anyhow::Result<()> {
        self.check_streams(addr, &[false])
    }

    fn check_streams(&self, addr: &str, kinds: &[bool]) -> anyhow::Result<()> {
        for &stream in kinds {
            let (status, body) = post(addr, self.path(), &self.headers(), &self.body(stream))
                .with_context(|| format!("{}: checking request", self.name))?;
            anyhow::ensure!(
                status == 200,
                "{} (stream: {stream}) answered {status}: {}",
                self.name,
                body.chars().take(400).collect::<String>()
            );
            if stream {
                anyhow::ensure!(
                    body.contains(self.api.stream_end()),
                    "{}: the stream did not end with {}",
                    self.name,
                    self.api.stream_end()
                );
            }
        }
        Ok(())
    }
}

/// A gateway configuration.
#[derive(Clone, Copy)]
pub enum Setup {
    /// The provider plugin and the ledger (SQLite, a file, with its journal: the default).
    Plain,
    /// The same with `ledger.journal.enabled: false` (records wait in memory), for what the
    /// journal costs.
    NoJournal,
    /// The same with `ledger.journal.fsync: true`.
    JournalFsync,
    /// `Plain` with the provider plugin called for every request (`plain_path: false`), as
    /// before issue 38's plain path: what the plain path saves, in the same run.
    PluginPath,
    /// And a router (`cheapest`), a `rate-limit` per user and a `budget` per project.
    Policies,
    /// `Plain` with the built-in `redact` guard on requests and answers (issue 22's figures:
    /// what a guard costs per request and per streamed event).
    Redact,
    /// Plain, with the response cache on (in memory, bounded at [`CACHE_BYTES`]).
    Cache,
    /// The cache in semantic mode, embedding through the mock's `/v1/embeddings`.
    Semantic,
}

/// The in-memory cache's bound in the `Cache` setup: small, so that filling it is quick.
pub const CACHE_BYTES: u64 = 8 << 20;

impl Setup {
    /// The journal's two variants are measured on chat alone: the other APIs write the same
    /// records.
    pub fn for_api(api: Api) -> Vec<Setup> {
        match api {
            Api::Chat => vec![
                Setup::Plain,
                Setup::PluginPath,
                Setup::NoJournal,
                Setup::JournalFsync,
                Setup::Policies,
                Setup::Redact,
                Setup::Cache,
                Setup::Semantic,
            ],
            Api::Messages | Api::Responses => vec![Setup::Plain, Setup::Policies, Setup::Redact],
        }
    }

    /// More `ledger:` settings, after its `url`.
    pub fn ledger(self) -> &'static str {
        match self {
            Setup::Plain
            | Setup::PluginPath
            | Setup::Policies
            | Setup::Redact
            | Setup::Cache
            | Setup::Semantic => "",
            Setup::NoJournal => ", journal: { enabled: false }",
            Setup::JournalFsync => ", journal: { fsync: true }",
        }
    }

    pub fn config(self, mock: &str) -> String {
        let plain_path = match self {
            Setup::PluginPath => "\n    plain_path: false",
            _ => "",
        };
        let providers = format!(
            "providers:
  openai:
    plugin: openai
    base_url: http://{mock}/v1
    api_key: sk-bench
    models: [gpt-4o-mini]
    options: {{ responses: native }}{plain_path}
  chat:
    plugin: openai
    base_url: http://{mock}/v1
    api_key: sk-bench
    models: [gpt-4o-mini]
    options: {{ responses: translate }}
  embed:
    plugin: openai
    base_url: http://{mock}/v1
    api_key: sk-bench
    models: [text-embedding-3-small]
  anthropic:
    plugin: anthropic
    base_url: http://{mock}/v1
    api_key: sk-ant-bench
    models: [claude-sonnet-4-5]
"
        );
        let policies = match self {
            Setup::Plain | Setup::PluginPath => String::new(),
            Setup::Cache => format!("cache: {{ enabled: true, memory_bytes: {CACHE_BYTES} }}\n"),
            Setup::Semantic => "cache: { enabled: true, semantic: { enabled: true, model: embed/text-embedding-3-small, threshold: 0.9 } }\n".to_owned(),
            Setup::NoJournal | Setup::JournalFsync => String::new(),
            Setup::Redact => "guards:\n  - plugin: redact\n".to_owned(),
            Setup::Policies => "routing:
  v-openai: { policy: cheapest, targets: [openai/gpt-4o-mini] }
  v-chat: { policy: cheapest, targets: [chat/gpt-4o-mini] }
  v-anthropic: { policy: cheapest, targets: [anthropic/claude-sonnet-4-5] }
limits:
  store: memory
  rules:
    - { policy: rate-limit, scope: user, options: { requests_per_minute: 1000000000, tokens_per_minute: 1000000000000 } }
    - { policy: budget, scope: project, options: { daily_usd: 1000000000 } }
"
            .to_owned(),
        };
        format!("observability: {{ log_level: warn }}\n{providers}{policies}")
    }

    /// The rows of `api` in this setup: the native target, then a translated one where the API
    /// is not chat.
    pub fn rows(self, api: Api) -> Vec<Row> {
        let (label, virt) = match self {
            Setup::Plain => ("provider + ledger", false),
            Setup::PluginPath => ("provider + ledger, plugin path", false),
            Setup::NoJournal => ("provider + ledger, journal off", false),
            Setup::JournalFsync => ("provider + ledger, journal fsync", false),
            Setup::Policies => ("+ router + rate-limit + budget", true),
            Setup::Redact => ("provider + ledger + redact guard", false),
            Setup::Cache => {
                // The same body every time: after the first, every request is a hit; with
                // `no-cache`, every one a miss that is kept again.
                let row = |kind: &str, no_cache| Row {
                    name: format!("wasmgate {}, cache {kind}", api.name()),
                    api,
                    model: "openai/gpt-4o-mini",
                    no_cache,
                    no_store: false,
                    prefix: "",
                };
                return vec![row("hits", false), row("misses (no-cache)", true)];
            }
            Setup::Semantic => {
                // Warmed by one request whose last turn has the same embedding as the rows'
                // and another exact key: every request of the first row is an exact miss and a
                // semantic hit (hits are not kept, so it stays one). The second's turn is unlike
                // any kept, and `no-store` keeps it so: an exact and a semantic miss each time.
                let row = |kind: &str, prefix, no_store| Row {
                    name: format!("wasmgate {}, semantic {kind}", api.name()),
                    api,
                    model: "openai/gpt-4o-mini",
                    no_cache: false,
                    no_store,
                    prefix,
                };
                return vec![
                    row("hits", "", false),
                    row("misses (no-store)", "Another question: ", true),
                ];
            }
        };
        let model = |direct: &'static str, routed: &'static str| if virt { routed } else { direct };
        let row = |kind: &str, model: &'static str| Row {
            name: format!("wasmgate {}{kind}, {label}", api.name()),
            api,
            model,
            no_cache: false,
            no_store: false,
            prefix: "",
        };
        match api {
            Api::Chat => vec![row("", model("openai/gpt-4o-mini", "v-openai"))],
            Api::Messages => vec![
                row(
                    " native",
                    model("anthropic/claude-sonnet-4-5", "v-anthropic"),
                ),
                row(" translated", model("chat/gpt-4o-mini", "v-chat")),
            ],
            Api::Responses => vec![
                row(" native", model("openai/gpt-4o-mini", "v-openai")),
                row(" translated", model("chat/gpt-4o-mini", "v-chat")),
            ],
        }
    }
}

/// Fills the gateway's cache past [`CACHE_BYTES`] with `n` distinct chat requests (each its own
/// key), for the memory a full cache holds. Sequential and bounded by `n`.
pub fn fill_cache(addr: &str, n: usize) -> anyhow::Result<()> {
    let row = Row {
        name: "fill".to_owned(),
        api: Api::Chat,
        model: "openai/gpt-4o-mini",
        no_cache: false,
        no_store: false,
        prefix: "",
    };
    for i in 0..n {
        let body = json!({"model": row.model, "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": format!("{i} {}", prompt())}]})
        .to_string();
        let (status, _) = post(addr, row.path(), &row.headers(), &body)?;
        anyhow::ensure!(status == 200, "filling the cache: {status}");
    }
    Ok(())
}

/// One HTTP/1.1 exchange on a connection closed after it: the answer, head and body, read for
/// at most `timeout` and `limit` bytes.
fn exchange(addr: &str, request: &[u8], timeout: Duration, limit: u64) -> std::io::Result<String> {
    let mut socket = TcpStream::connect(addr)?;
    socket.set_read_timeout(Some(timeout))?;
    socket.write_all(request)?;
    let mut answer = Vec::new();
    socket.take(limit).read_to_end(&mut answer)?;
    Ok(String::from_utf8_lossy(&answer).into_owned())
}

/// The status code of an answer's status line.
fn status(answer: &str) -> Option<u16> {
    answer.split(' ').nth(1).and_then(|s| s.parse().ok())
}

/// A plain HTTP/1.1 POST, the connection closed after it: enough to check one answer.
pub fn post(
    addr: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> anyhow::Result<(u16, String)> {
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    let answer = exchange(addr, request.as_bytes(), Duration::from_secs(10), 16 << 20)?;
    let status = status(&answer).context("no status line")?;
    Ok((status, answer))
}

/// A plain HTTP/1.1 GET's status, or `None` if nothing answers yet.
pub fn get_status(addr: &str, path: &str) -> Option<u16> {
    status(&get_body(addr, path)?)
}

/// A plain HTTP/1.1 GET's whole answer, head and body.
pub fn get_body(addr: &str, path: &str) -> Option<String> {
    let request = format!("GET {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n");
    // `/metrics` runs past 64 KiB with a histogram per plugin call.
    exchange(addr, request.as_bytes(), Duration::from_secs(2), 4 << 20).ok()
}

/// Warms the `Semantic` setup: one request whose last turn embeds as the rows' do (the mock
/// ignores a leading `[warm] `) under another exact key, then time for its answer and vector
/// to be kept (off the answer's path).
pub fn warm_semantic(addr: &str) -> anyhow::Result<()> {
    let row = Row {
        name: "warm".to_owned(),
        api: Api::Chat,
        model: "openai/gpt-4o-mini",
        no_cache: false,
        no_store: false,
        prefix: "[warm] ",
    };
    let (status, _) = post(addr, row.path(), &row.headers(), &row.body(false))?;
    anyhow::ensure!(status == 200, "warming the semantic cache: {status}");
    std::thread::sleep(std::time::Duration::from_millis(300));
    Ok(())
}
