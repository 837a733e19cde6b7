//! MCP tool calls through the gateway's `/mcp`: what the gateway adds to one `tools/call`
//! (its key, session, permission, guards and record) over calling the MCP server directly. The
//! server is the mock's `/mcp` (one tool, `echo`, answered at once over Streamable HTTP as
//! JSON); the gateway reaches it over its kept connection (rmcp's client). The same figures as
//! the API rows: the p50 at concurrency 1 and requests/s at 64.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde_json::json;

use crate::Args;
use crate::load::{Load, Oha, Req};
use crate::process::{Gateway, Server};
use crate::scenario::{Setup, post};

/// How long the gateway may take to connect to the MCP server after it started.
const CONNECT_LIMIT: Duration = Duration::from_secs(30);

fn call(tool: &str, headers: Vec<(String, String)>) -> Req {
    let mut all = vec![
        ("content-type".to_owned(), "application/json".to_owned()),
        (
            "accept".to_owned(),
            "application/json, text/event-stream".to_owned(),
        ),
        ("mcp-protocol-version".to_owned(), "2025-06-18".to_owned()),
    ];
    all.extend(headers);
    Req {
        name: format!("tools/call {tool}"),
        path: "/mcp".to_owned(),
        headers: all,
        body: json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": tool, "arguments": {"text": "hello from gatebench"}}})
        .to_string(),
    }
}

/// One call, checked: a 200 whose JSON-RPC answer is a result with the tool's text.
fn check(addr: &str, req: &Req) -> anyhow::Result<String> {
    let headers: Vec<(&str, &str)> = req
        .headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let (status, answer) = post(addr, &req.path, &headers, &req.body)?;
    anyhow::ensure!(
        status == 200 && answer.contains("\"result\"") && answer.contains("hello from gatebench"),
        "{}: {status} {}",
        req.name,
        answer.chars().take(400).collect::<String>()
    );
    Ok(answer)
}

/// A session of the gateway's `/mcp` for `key`: its id, once the MCP server is connected and
/// its tool listed.
fn session(addr: &str, key: &str) -> anyhow::Result<String> {
    let auth = format!("Bearer {key}");
    let headers = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("authorization", auth.as_str()),
    ];
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "gatebench", "version": "1"}}})
    .to_string();
    let (status, answer) = post(addr, "/mcp", &headers, &init)?;
    anyhow::ensure!(status == 200, "initialize: {status} {answer}");
    let id = answer
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        })
        .context("initialize gave no session id")?;
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let mut with_session = headers.to_vec();
    with_session.push(("mcp-session-id", &id));
    let started = Instant::now();
    loop {
        let (status, answer) = post(addr, "/mcp", &with_session, &list)?;
        if status == 200 && answer.contains("bench_echo") {
            return Ok(id);
        }
        anyhow::ensure!(
            started.elapsed() < CONNECT_LIMIT,
            "the gateway did not list the mock's tool: {status} {answer}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

pub fn table(args: &Args, oha: &Oha, dir: &Path) -> anyhow::Result<()> {
    let mock = Server::mock(&args.mock)?;
    let config = format!(
        "{}mcp:\n  servers:\n    bench:\n      url: http://{}/mcp\n",
        args.with_plugins_dir(&Setup::Plain.config(&mock.addr)),
        mock.addr
    );
    drop(Gateway::start(&args.gateway, dir, &config)?);
    let gateway = Gateway::start(&args.gateway, dir, &config)?;
    let key = gateway.create_key(&args.gateway)?;
    let session = session(&gateway.addr, &key)?;
    let direct = call(
        "echo",
        vec![("mcp-session-id".to_owned(), "bench-session".to_owned())],
    );
    let through = call(
        "bench_echo",
        vec![
            ("authorization".to_owned(), format!("Bearer {key}")),
            ("mcp-session-id".to_owned(), session),
        ],
    );
    check(&mock.addr, &direct)?;
    check(&gateway.addr, &through)?;
    println!("\nMCP tool calls (`tools/call`, answered at once by the server), JSON answers");
    println!(
        "| target | p50 c=1 | added p50 | calls/s c=64 | of direct | gateway CPU/call (user + kernel) | RSS peak |"
    );
    println!("|---|---|---|---|---|---|---|");
    let base_latency = oha.run(&direct, &mock.addr, Load::Sequential)?;
    let base_rate = oha.run(&direct, &mock.addr, Load::Concurrent)?;
    println!(
        "| MCP server called directly | {:.0} µs | — | {:.0} | — | — | — |",
        base_latency.p50_us, base_rate.rps
    );
    let latency = oha.run(&through, &gateway.addr, Load::Sequential)?;
    let before = gateway.sample()?;
    let rate = oha.run(&through, &gateway.addr, Load::Concurrent)?;
    let cpu = gateway
        .sample()?
        .per(&before, rate.count)
        .map_or("—".to_owned(), |s| {
            format!("{:.0} + {:.0} µs", s.user_us, s.system_us)
        });
    println!(
        "| wasmgate /mcp, provider + ledger config | {:.0} µs | {:.0} µs | {:.0} | {:.2} | {cpu} | {:.0} MiB |",
        latency.p50_us,
        latency.p50_us - base_latency.p50_us,
        rate.rps,
        rate.rps / base_rate.rps,
        gateway.peak_kib()? as f64 / 1024.0,
    );
    Ok(())
}
