//! `gatebench`: what the real `wasmgate` binary adds over calling an upstream directly, as a user
//! would measure it.
//!
//! The gateway runs as a process pinned to CPU 0; the mock upstream (`mock-upstream`) and the
//! load generator (oha) share CPU 1. The floor is measured in the same run: `bare-proxy`, a
//! reverse proxy with no logic (the same two loopback hops, on CPU 0 as the gateway is). For each
//! row it prints the added p50 at concurrency 1 over the direct call and over the bare proxy,
//! the p50 at concurrency 1 with idle gaps between requests (`load::SPACED_MS`) over the proxy's,
//! requests/s and streams/s (20 deltas and usage) at concurrency 64 as ratios to the direct call
//! and to the bare proxy,
//! the gateway's own CPU time per request and per stream, user and kernel apart (from `/proc`,
//! steadier than rates on a busy machine), the plugin instantiations and calls each took (from
//! `/metrics`: counts, which do not move with the machine), and the gateway's idle and peak RSS. Every row is checked first: one request must get a 200
//! and, when streamed, end as its API says, and every load request must get a 200, so that a
//! gateway answering errors fast cannot look fast.
//!
//! After the chat rows, a table of the time to first token of chat streams at c=1 through the
//! gateway with and without the `redact` guard, against an upstream that answers at once and one
//! that paces its events (`--only ttft` prints that table alone); then an upstream as models are
//! (20 ms to answer, paced events) at 256 and 512 at once (`realistic.rs`, `--only realistic`),
//! MCP tool calls through `/mcp` (`mcp.rs`, `--only mcp`), and Responses turns on the gateway's
//! WebSocket against the streamed POST (`websocket.rs`, `--only websocket`). `--only ledger --ledger NAME=URL
//! ...` instead compares the chat path on the ledgers given (an empty one, one that
//! `scripts/seed-ledger.sh` filled; `ledger_size.rs`).
//!
//! `gatebench --gateway PATH --mock PATH --oha PATH [--proxy PATH] [--plugins-dir DIR]
//! [--quick] [--only API]` (`--proxy` defaults to `bare-proxy` beside the mock; `--plugins-dir`
//! loads plugins from there before the built-in ones, to measure a plugin's build); `--streams
//! 1000,9000` instead measures RSS with that many streams open at once, `--soak 600` RSS over
//! ten minutes at saturation. `scripts/bench.sh` builds and runs it. Bounded: each load is a fixed count or a fixed duration; 127.0.0.1 only.

#![allow(clippy::print_stdout)]

mod ledger_size;
mod load;
mod mcp;
mod process;
mod realistic;
mod scale;
mod scenario;
mod stalls;
mod ttft;
mod websocket;

use anyhow::Context as _;

use load::{Load, Oha, SPACED_MS};
use process::{Gateway, Sample, Server};
use scenario::{Api, Row, Setup};

pub struct Args {
    pub gateway: String,
    pub mock: String,
    pub oha: String,
    pub proxy: String,
    /// `plugins.dir` of every gateway started (its `<name>.wasm` files come before the
    /// built-in plugins).
    pub plugins_dir: Option<String>,
    pub quick: bool,
    pub only: Option<String>,
    /// Open this many streams at once instead (memory at scale), for each number given.
    pub streams: Vec<usize>,
    /// Saturate for this many seconds instead, printing the RSS as it goes.
    pub soak: Option<u64>,
    /// The ledgers `--only ledger` compares (`--ledger NAME=URL`, in order).
    pub ledgers: Vec<ledger_size::Ledger>,
}

fn args() -> anyhow::Result<Args> {
    let mut gateway = None;
    let mut mock = None;
    let mut oha = None;
    let mut proxy = None;
    let mut plugins_dir = None;
    let mut quick = false;
    let mut only = None;
    let mut streams = Vec::new();
    let mut soak = None;
    let mut ledgers = Vec::new();
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--gateway" => gateway = it.next(),
            "--mock" => mock = it.next(),
            "--oha" => oha = it.next(),
            "--proxy" => proxy = it.next(),
            "--plugins-dir" => plugins_dir = it.next(),
            "--quick" => quick = true,
            "--only" => only = it.next(),
            "--streams" => {
                for n in it.next().context("--streams N[,N...]")?.split(',') {
                    streams.push(n.parse()?);
                }
            }
            "--soak" => soak = Some(it.next().context("--soak SECONDS")?.parse()?),
            "--ledger" => ledgers.push(ledger_size::Ledger::parse(
                &it.next().context("--ledger NAME=URL")?,
            )?),
            other => anyhow::bail!("unknown argument {other}"),
        }
    }
    let mock: String = mock.context("--mock PATH")?;
    let proxy = match proxy {
        Some(proxy) => proxy,
        None => std::path::Path::new(&mock)
            .with_file_name("bare-proxy")
            .to_string_lossy()
            .into_owned(),
    };
    Ok(Args {
        gateway: gateway.context("--gateway PATH")?,
        mock,
        oha: oha.context("--oha PATH")?,
        proxy,
        plugins_dir,
        quick,
        only,
        streams,
        soak,
        ledgers,
    })
}

/// One measured row.
struct Figures {
    p50_us: f64,
    /// The p50 at concurrency 1 with idle gaps between requests.
    spaced_p50_us: f64,
    rps: f64,
    sps: f64,
    per_request: Option<Sample>,
    per_stream: Option<Sample>,
}

fn measure(oha: &Oha, row: &Row, addr: &str, gateway: Option<&Gateway>) -> anyhow::Result<Figures> {
    row.check(addr)?;
    let latency = oha.run(&row.req(false), addr, Load::Sequential)?;
    let spaced = oha.run(&row.req(false), addr, Load::Spaced)?;
    let sample = || gateway.map(Gateway::sample).transpose();
    let before = sample()?;
    let whole = oha.run(&row.req(false), addr, Load::Concurrent)?;
    let middle = sample()?;
    let streams = oha.run(&row.req(true), addr, Load::Concurrent)?;
    let after = sample()?;
    let per = |a: Option<Sample>, b: Option<Sample>, n: u64| b?.per(&a?, n);
    Ok(Figures {
        p50_us: latency.p50_us,
        spaced_p50_us: spaced.p50_us,
        rps: whole.rps,
        sps: streams.rps,
        per_request: per(before, middle, whole.count),
        per_stream: per(middle, after, streams.count),
    })
}

fn main() -> anyhow::Result<()> {
    if std::env::args().nth(1).as_deref() == Some(stalls::CLIENT) {
        return stalls::client(std::env::args().skip(2));
    }
    let args = args()?;
    let oha = Oha::new(&args.oha, args.quick);
    let dir = std::env::temp_dir().join(format!("gatebench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    if !args.streams.is_empty() {
        println!(
            "| streams asked | open at once | RSS idle | RSS with them open | peak RSS | per stream | statuses |"
        );
        println!("|---|---|---|---|---|---|---|");
        for &n in &args.streams {
            scale::streams(&args.gateway, &args.mock, &oha, &dir, n)?;
        }
        return Ok(());
    }
    if let Some(secs) = args.soak {
        return scale::soak(&args.gateway, &args.mock, &oha, &dir, secs);
    }
    if args.only.as_deref() == Some("ledger") {
        ledger_size::table(&args, &oha, &dir)?;
        std::fs::remove_dir_all(&dir).ok();
        return Ok(());
    }
    let mock = process::Server::mock(&args.mock)?;
    println!(
        "mock upstream at {} (CPU 1, with oha); gateway on CPU 0\n",
        mock.addr
    );

    let tables_only = matches!(
        args.only.as_deref(),
        Some("ttft" | "realistic" | "mcp" | "websocket")
    );
    let mut printed_header = false;
    for api in Api::ALL.into_iter().filter(|_| !tables_only) {
        let direct = Row::direct(api);
        if args
            .only
            .as_deref()
            .is_some_and(|o| !direct.name.contains(o) && o != api.name())
        {
            continue;
        }
        let base = measure(&oha, &direct, &mock.addr, None)?;
        if !printed_header {
            print_header();
            printed_header = true;
        }
        print_row(&direct.name, &base, None, None, None);
        let proxy = Server::proxy(&args.proxy, &mock.addr)?;
        let proxy_idle = proxy.rss_kib()?;
        let through = Row {
            name: format!("bare proxy ({})", api.name()),
            ..Row::direct(api)
        };
        let floor = measure(&oha, &through, &proxy.addr, None)?;
        print_row(
            &through.name,
            &floor,
            Some(&base),
            None,
            Some((proxy_idle, proxy.peak_kib()?)),
        );
        drop(proxy);
        for setup in Setup::for_api(api) {
            let start = || {
                Gateway::start_with(
                    &args.gateway,
                    &dir,
                    "",
                    setup.ledger(),
                    &args.with_plugins_dir(&setup.config(&mock.addr)),
                )
            };
            // A start whose plugins are not yet in the component cache compiles them, and the
            // compiler's freed memory stays resident: the first row after a build read 150 MiB
            // idle against 69 warm. The measured start is the second.
            drop(start()?);
            let gateway = start()?;
            let idle = gateway.rss_kib()?;
            if matches!(setup, scenario::Setup::Semantic) {
                scenario::warm_semantic(&gateway.addr)?;
            }
            for row in setup.rows(api) {
                let figures = measure(&oha, &row, &gateway.addr, Some(&gateway))?;
                print_row(
                    &row.name,
                    &figures,
                    Some(&base),
                    Some(&floor),
                    Some((idle, gateway.peak_kib()?)),
                );
            }
            if matches!(setup, scenario::Setup::Cache) {
                cache_full(&gateway)?;
            }
        }
        println!();
    }
    let table = |name: &str| args.only.as_deref().is_none_or(|o| o == name);
    if table("ttft") || args.only.as_deref() == Some("chat") {
        ttft::table(&args, &dir)?;
    }
    if table("realistic") {
        realistic::table(&args, &oha, &dir)?;
    }
    if table("mcp") {
        mcp::table(&args, &oha, &dir)?;
    }
    if table("websocket") {
        websocket::table(&args, &oha, &dir)?;
    }
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}

/// The gateway's memory with its cache filled past its bound: RSS before and after, and the
/// bytes the store counts (its `wasmgate_cache_memory_bytes`).
fn cache_full(gateway: &Gateway) -> anyhow::Result<()> {
    let before = gateway.rss_kib()?;
    // About three times what fits (an entry is ~1 KiB with its key and bookkeeping).
    let n = usize::try_from(scenario::CACHE_BYTES / 1024 * 3)?;
    let started = std::time::Instant::now();
    scenario::fill_cache(&gateway.addr, n)?;
    let metrics = scenario::get_body(&gateway.addr, "/metrics").unwrap_or_default();
    let gauge = |name: &str| {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    println!(
        "\ncache filled with {n} distinct answers in {:.1} s: {} entries, {:.1} MiB by the store's \
         count (bound {} MiB); RSS {:.0} MiB before, {:.0} MiB after",
        started.elapsed().as_secs_f64(),
        gauge("wasmgate_cache_entries "),
        gauge("wasmgate_cache_memory_bytes ") / 1048576.0,
        scenario::CACHE_BYTES >> 20,
        before as f64 / 1024.0,
        gateway.rss_kib()? as f64 / 1024.0,
    );
    Ok(())
}

impl Args {
    /// A gateway's config with `plugins.dir` set when `--plugins-dir` was given.
    pub fn with_plugins_dir(&self, config: &str) -> String {
        match &self.plugins_dir {
            Some(dir) => format!("plugins: {{ dir: '{dir}' }}\n{config}"),
            None => config.to_owned(),
        }
    }
}

fn print_header() {
    println!(
        "| target | p50 c=1 | added p50 | over the proxy | p50 c=1, {SPACED_MS} ms apart | over the proxy | requests/s c=64 | of direct | of proxy | streams/s c=64 | of direct | of proxy | gateway CPU/request (user + kernel) | /stream | plugin instances + calls /request | /stream | RSS idle | RSS peak |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
}

fn print_row(
    name: &str,
    f: &Figures,
    base: Option<&Figures>,
    floor: Option<&Figures>,
    rss: Option<(u64, u64)>,
) {
    let us = |v: Option<f64>| v.map_or("—".to_owned(), |v| format!("{v:.0} µs"));
    let cpu = |s: Option<Sample>| {
        s.map_or("—".to_owned(), |s| {
            format!("{:.0} + {:.0} µs", s.user_us, s.system_us)
        })
    };
    let work = |s: Option<Sample>| {
        s.map_or("—".to_owned(), |s| {
            format!("{:.2} + {:.2}", s.instantiations, s.plugin_calls)
        })
    };
    let added = base.map(|b| f.p50_us - b.p50_us);
    let over_floor = floor.map(|b| f.p50_us - b.p50_us);
    let spaced_over_floor = floor.map(|b| f.spaced_p50_us - b.spaced_p50_us);
    let ratio = |v: f64, b: Option<f64>| b.map_or("—".to_owned(), |b| format!("{:.2}", v / b));
    let mib = |kib: u64| format!("{:.0} MiB", kib as f64 / 1024.0);
    println!(
        "| {name} | {:.0} µs | {} | {} | {:.0} µs | {} | {:.0} | {} | {} | {:.0} | {} | {} | {} | {} | {} | {} | {} | {} |",
        f.p50_us,
        us(added),
        us(over_floor),
        f.spaced_p50_us,
        us(spaced_over_floor),
        f.rps,
        ratio(f.rps, base.map(|b| b.rps)),
        ratio(f.rps, floor.map(|b| b.rps)),
        f.sps,
        ratio(f.sps, base.map(|b| b.sps)),
        ratio(f.sps, floor.map(|b| b.sps)),
        cpu(f.per_request),
        cpu(f.per_stream),
        work(f.per_request),
        work(f.per_stream),
        rss.map_or("—".to_owned(), |r| mib(r.0)),
        rss.map_or("—".to_owned(), |r| mib(r.1)),
    );
}
