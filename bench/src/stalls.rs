//! Streams that stall: many paced streams at once, each read as it comes, and the gaps between
//! its reads. A stream stalls when one gap is more than twice the upstream's pace: a gap the
//! upstream did not have. oha reports whole requests only, so this client is the benchmark's
//! own; it runs as a process of its own on CPU 1 (beside the mock and oha, off the gateway's
//! CPU), as `gatebench --stalls-client ADDR MODEL STREAMS CONCURRENCY GAP_MS`, and prints its
//! summary as one JSON line. Bounded: `STREAMS` streams, and a minute at most.

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::time::Instant;

use crate::scenario::{Api, Row};

/// The argument that runs this process as the client.
pub const CLIENT: &str = "--stalls-client";
/// The longest the client runs.
const LIMIT: Duration = Duration::from_secs(60);

/// What the client saw.
#[derive(Serialize, Deserialize)]
pub struct Stalls {
    /// Streams read to their end.
    pub streams: u64,
    /// Streams that failed (not a 200, cut short, or unfinished at the limit).
    pub failed: u64,
    /// Streams with a gap of more than the threshold.
    pub stalled: u64,
    pub p99_gap_ms: f64,
    pub max_gap_ms: f64,
}

/// Runs the client against `addr` (chat streams of `model`): `streams` in all, `concurrency`
/// at once; a gap over `gap_ms` is a stall.
pub fn run(
    addr: &str,
    model: &str,
    streams: usize,
    concurrency: usize,
    gap_ms: u64,
) -> anyhow::Result<Stalls> {
    let output = Command::new("taskset")
        .args(["-c", "1"])
        .arg(std::env::current_exe()?)
        .args([
            CLIENT,
            addr,
            model,
            &streams.to_string(),
            &concurrency.to_string(),
            &gap_ms.to_string(),
        ])
        .output()
        .context("running the stall client")?;
    anyhow::ensure!(
        output.status.success(),
        "the stall client: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(serde_json::from_slice(&output.stdout)?)
}

/// The client itself (the process `run` starts).
pub fn client(mut args: impl Iterator<Item = String>) -> anyhow::Result<()> {
    let usage = "ADDR MODEL STREAMS CONCURRENCY GAP_MS";
    let addr = args.next().context(usage)?;
    let model: &'static str = args.next().context(usage)?.leak();
    let streams: usize = args.next().context(usage)?.parse()?;
    let concurrency: usize = args.next().context(usage)?.parse()?;
    let gap_us = args.next().context(usage)?.parse::<u64>()? * 1000;
    let row = Row {
        model,
        ..Row::direct(Api::Chat)
    };
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
    let request = Arc::new(request.into_bytes());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let outcomes = runtime.block_on(async move {
        let deadline = Instant::now() + LIMIT;
        let next = Arc::new(AtomicUsize::new(0));
        let mut workers = tokio::task::JoinSet::new();
        for _ in 0..concurrency {
            let (addr, request, next) = (addr.clone(), Arc::clone(&request), Arc::clone(&next));
            workers.spawn(async move {
                let mut outcomes = Vec::new();
                while next.fetch_add(1, Ordering::Relaxed) < streams {
                    outcomes.push(one(&addr, &request, deadline).await.ok());
                }
                outcomes
            });
        }
        let mut all = Vec::new();
        while let Some(outcomes) = workers.join_next().await {
            all.extend(outcomes.unwrap_or_default());
        }
        all
    });
    let mut gaps: Vec<u64> = outcomes.iter().flatten().flatten().copied().collect();
    gaps.sort_unstable();
    let at = |q: f64| {
        gaps.get(((gaps.len().saturating_sub(1)) as f64 * q) as usize)
            .map_or(0.0, |&us| us as f64 / 1000.0)
    };
    let summary = Stalls {
        streams: outcomes.iter().flatten().count() as u64,
        failed: outcomes.iter().filter(|o| o.is_none()).count() as u64,
        stalled: outcomes
            .iter()
            .flatten()
            .filter(|g| g.iter().any(|&gap| gap > gap_us))
            .count() as u64,
        p99_gap_ms: at(0.99),
        max_gap_ms: at(1.0),
    };
    println!("{}", serde_json::to_string(&summary)?);
    Ok(())
}

/// One stream read to its end: the gaps between its reads, in µs.
async fn one(addr: &str, request: &[u8], deadline: Instant) -> anyhow::Result<Vec<u64>> {
    let mut socket = tokio::net::TcpStream::connect(addr).await?;
    socket.set_nodelay(true)?;
    socket.write_all(request).await?;
    let mut buf = vec![0u8; 16 << 10];
    let mut head = Vec::new();
    let mut tail = Vec::new();
    let mut gaps = Vec::new();
    let mut last: Option<Instant> = None;
    loop {
        let n = tokio::time::timeout_at(deadline, socket.read(&mut buf)).await??;
        if n == 0 {
            break;
        }
        let now = Instant::now();
        if let Some(last) = last {
            gaps.push(u64::try_from((now - last).as_micros()).unwrap_or(u64::MAX));
        }
        last = Some(now);
        if head.len() < 16 {
            head.extend_from_slice(&buf[..n.min(16)]);
        }
        tail.extend_from_slice(&buf[..n]);
        let keep = tail.len().saturating_sub(64);
        tail.drain(..keep);
    }
    anyhow::ensure!(head.starts_with(b"HTTP/1.1 200"), "not a 200");
    anyhow::ensure!(
        tail.windows(6).any(|w| w == b"[DONE]"),
        "the stream was cut short"
    );
    Ok(gaps)
}
