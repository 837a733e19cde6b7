//! The Responses API's WebSocket mode (`GET /v1/responses` upgraded): what a turn on the
//! gateway's socket costs against the same turn as a streamed `POST /v1/responses`, both to the
//! same native OpenAI entry (provider + ledger) on the mock, and the mock called directly. Each
//! figure is a turn at concurrency 1, from sending it to its `response.completed`: oha for the
//! POSTs (a kept connection), one socket for the turns on it (tungstenite, the client's blocking
//! socket, in this process). The gateway's socket sends each turn upstream as an HTTP stream.

use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde_json::{Value, json};
use tungstenite::{Message, WebSocket};

use crate::Args;
use crate::load::{Load, Oha};
use crate::process::{Gateway, Server};
use crate::scenario::{Api, Row, Setup};

/// Turns over one socket: a warm-up, then the measured ones (as oha's sequential counts).
fn turns(quick: bool) -> (usize, usize) {
    if quick { (50, 500) } else { (300, 3000) }
}

/// The most frames one turn may take (the mock's stream is about 30 events).
const MAX_FRAMES: usize = 1000;

pub fn table(args: &Args, oha: &Oha, dir: &Path) -> anyhow::Result<()> {
    let mock = Server::mock(&args.mock)?;
    let config = args.with_plugins_dir(&Setup::Plain.config(&mock.addr));
    drop(Gateway::start(&args.gateway, dir, &config)?);
    let gateway = Gateway::start(&args.gateway, dir, &config)?;
    let direct = Row::direct(Api::Responses);
    let through = Row {
        name: "wasmgate POST /v1/responses".to_owned(),
        model: "openai/gpt-4o-mini",
        ..Row::direct(Api::Responses)
    };
    through.check(&gateway.addr)?;
    println!("\nResponses turns at c=1, streamed to `response.completed` (provider + ledger)");
    println!("| how | p50 | p99 | added p50 | added p99 | gateway CPU/turn (user + kernel) |");
    println!("|---|---|---|---|---|---|");
    let base = oha.run(&direct.req(true), &mock.addr, Load::Sequential)?;
    println!(
        "| mock called directly (POST) | {:.0} µs | {:.0} µs | — | — | — |",
        base.p50_us, base.p99_us
    );
    let before = gateway.sample()?;
    let posted = oha.run(&through.req(true), &gateway.addr, Load::Sequential)?;
    let cpu = cpu_per(&gateway, &before, posted.count)?;
    println!(
        "| wasmgate, streamed POST | {:.0} µs | {:.0} µs | {:.0} µs | {:.0} µs | {cpu} |",
        posted.p50_us,
        posted.p99_us,
        posted.p50_us - base.p50_us,
        posted.p99_us - base.p99_us
    );
    let body: Value = serde_json::from_str(&through.body(true))?;
    let (warm, count) = turns(oha.quick());
    let mut socket = connect(&gateway.addr)?;
    for _ in 0..warm {
        turn(&mut socket, &body)?;
    }
    let before = gateway.sample()?;
    let mut times: Vec<Duration> = (0..count)
        .map(|_| turn(&mut socket, &body))
        .collect::<anyhow::Result<_>>()?;
    let cpu = cpu_per(&gateway, &before, count as u64)?;
    times.sort_unstable();
    let at = |p: f64| times[((times.len() - 1) as f64 * p).round() as usize].as_secs_f64() * 1e6;
    let (p50, p99) = (at(0.50), at(0.99));
    println!(
        "| wasmgate, turns on one socket | {p50:.0} µs | {p99:.0} µs | {:.0} µs | {:.0} µs | {cpu} |",
        p50 - base.p50_us,
        p99 - base.p99_us
    );
    Ok(())
}

fn cpu_per(gateway: &Gateway, before: &crate::process::Sample, n: u64) -> anyhow::Result<String> {
    Ok(gateway
        .sample()?
        .per(before, n)
        .map_or("—".to_owned(), |s| {
            format!("{:.0} + {:.0} µs", s.user_us, s.system_us)
        }))
}

/// A socket on the gateway's `/v1/responses` (auth is off in the bench's config).
fn connect(addr: &str) -> anyhow::Result<WebSocket<TcpStream>> {
    let stream = TcpStream::connect(addr)?;
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let (socket, _) = tungstenite::client(format!("ws://{addr}/v1/responses"), stream)
        .map_err(|e| anyhow::anyhow!("the upgrade: {e}"))?;
    Ok(socket)
}

/// One turn: `response.create` with `body`, read to its `response.completed`; its time.
fn turn(socket: &mut WebSocket<TcpStream>, body: &Value) -> anyhow::Result<Duration> {
    let mut create = body.clone();
    let fields = create.as_object_mut().context("the body is an object")?;
    fields.remove("stream");
    fields.insert("type".to_owned(), json!("response.create"));
    let started = Instant::now();
    socket.send(Message::text(create.to_string()))?;
    for _ in 0..MAX_FRAMES {
        if let Message::Text(text) = socket.read()? {
            let event: Value = serde_json::from_str(&text)?;
            match event["type"].as_str() {
                Some("response.completed") => return Ok(started.elapsed()),
                Some("error" | "response.failed") => anyhow::bail!("the turn failed: {event}"),
                _ => {}
            }
        }
    }
    anyhow::bail!("no response.completed in {MAX_FRAMES} frames")
}
