//! Time to first token: how long a client waits, from sending a streamed request, for the first
//! text of the answer, at concurrency 1, with and without the `redact` guard (which holds back
//! its window of text before it lets any go). Measured against an upstream that sends its
//! events at once and against one that paces them, as a model writes.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use anyhow::Context as _;

use crate::process::{Gateway, Server};
use crate::scenario::{Api, Row, Setup};

/// Streams timed per figure (fewer with `--quick`).
const STREAMS: usize = 200;
const STREAMS_QUICK: usize = 40;
/// The paced upstream's time between two events.
pub const PACE_MS: u64 = 5;

/// The time from the request's last byte to the first byte of the answer's first text (the
/// mock's first word), for one streamed request.
fn first_text(addr: &str, row: &Row) -> anyhow::Result<Duration> {
    let body = row.body(true);
    let mut request = format!(
        "POST {} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\ncontent-length: {}\r\n",
        row.path(),
        body.len()
    );
    for (name, value) in row.headers() {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&body);
    let mut socket = TcpStream::connect(addr)?;
    socket.set_nodelay(true)?;
    socket.set_read_timeout(Some(Duration::from_secs(10)))?;
    socket.write_all(request.as_bytes())?;
    let sent = Instant::now();
    let mut seen = Vec::new();
    let mut buf = [0u8; 16 << 10];
    loop {
        let n = socket.read(&mut buf)?;
        anyhow::ensure!(n > 0, "the stream ended without its first word");
        seen.extend_from_slice(&buf[..n]);
        // The mock's text is `word0 word1 ...`: the first word is the first token.
        if seen.windows(5).any(|w| w == b"word0") {
            return Ok(sent.elapsed());
        }
        anyhow::ensure!(seen.len() < 1 << 20, "no text in the first MiB");
    }
}

/// The p50 and p90 of [`first_text`] over `n` streams, in µs.
fn percentiles(addr: &str, row: &Row, n: usize) -> anyhow::Result<(f64, f64)> {
    let mut times: Vec<u128> = (0..n)
        .map(|_| first_text(addr, row).map(|d| d.as_micros()))
        .collect::<anyhow::Result<_>>()?;
    times.sort_unstable();
    let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize] as f64;
    Ok((at(0.5), at(0.9)))
}

/// The table: chat streams direct, through the gateway, and through it with `redact`, against
/// an upstream that answers at once and one that paces its events.
pub fn table(args: &crate::Args, dir: &std::path::Path) -> anyhow::Result<()> {
    let n = if args.quick { STREAMS_QUICK } else { STREAMS };
    let mock = args.mock.as_str();
    println!(
        "\ntime to first token, chat streams at c=1 ({n} each): p50 / p90 from the request to the first word"
    );
    println!("| target | upstream at once | upstream paced {PACE_MS} ms/event |");
    println!("|---|---|---|");
    let now = Server::mock(mock)?;
    let paced = Server::paced_mock(mock, PACE_MS, 0)?;
    let direct = Row::direct(Api::Chat);
    let cell = |(p50, p90): (f64, f64)| format!("{p50:.0} / {p90:.0} µs");
    println!(
        "| {} | {} | {} |",
        direct.name,
        cell(percentiles(&now.addr, &direct, n)?),
        cell(percentiles(&paced.addr, &direct, n)?)
    );
    for setup in [Setup::Plain, Setup::Redact] {
        let row = setup.rows(Api::Chat).into_iter().next().context("a row")?;
        let mut cells = Vec::new();
        for upstream in [&now, &paced] {
            let config = args.with_plugins_dir(&setup.config(&upstream.addr));
            let gateway = Gateway::start_with(&args.gateway, dir, "", "", &config)?;
            row.check(&gateway.addr)?;
            cells.push(cell(percentiles(&gateway.addr, &row, n)?));
        }
        println!("| {} | {} | {} |", row.name, cells[0], cells[1]);
    }
    Ok(())
}
