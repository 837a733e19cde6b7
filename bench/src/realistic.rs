//! An upstream as models are: it takes [`DELAY_MS`] to answer and sends a stream's events
//! [`PACE_MS`] apart. Called directly, through the bare proxy and through the gateway (provider
//! and ledger, chat), each in the same run:
//!
//! - whole answers at 256 and at 512 at once: requests/s, and the p50, p99 and p99.9 each adds
//!   over the direct call's at the same load;
//! - the most requests/s held open loop (each request due at its time, latency counted from
//!   then) with the p99 added under 1 ms, by bisection between a low rate and what it held at
//!   256 at once;
//! - streams at 512 at once, and how many stalled (a gap between reads of more than twice the
//!   pace; see `stalls.rs`);
//! - the gateway's memory growth over every request of the table, per million requests
//!   (extrapolated from the count, which is printed).
//!
//! Bounded: every load is a fixed time or count; `--quick` halves the times and bisects less.

use std::path::Path;

use anyhow::Context as _;

use crate::Args;
use crate::load::{Load, Oha, Outcome};
use crate::process::{Gateway, Server};
use crate::scenario::{Api, Row, Setup};
use crate::stalls;

/// The upstream's time to answer.
pub const DELAY_MS: u64 = 20;
/// The time between two events of its streams.
pub const PACE_MS: u64 = 20;
/// The concurrencies of the held loads.
const CONCURRENCY: [u32; 2] = [256, 512];
/// Seconds of each held load (half with `--quick`).
const HELD_SECS: f64 = 6.0;
/// Seconds of each probe of the bisection (half with `--quick`).
const PROBE_SECS: f64 = 3.0;
/// The added p99 a held rate must stay under.
const P99_ADDED_MAX_US: f64 = 1000.0;
/// The rate the direct call's own p99 is taken at, and the bisection's low end.
const LOW_RPS: u32 = 200;

/// One thing measured: where it listens and what model its requests name.
struct Target<'a> {
    name: &'a str,
    addr: &'a str,
    row: Row,
}

pub fn table(args: &Args, oha: &Oha, dir: &Path) -> anyhow::Result<()> {
    let mock = Server::paced_mock(&args.mock, PACE_MS, DELAY_MS)?;
    let proxy = Server::proxy(&args.proxy, &mock.addr)?;
    let config = args.with_plugins_dir(&Setup::Plain.config(&mock.addr));
    // The first start compiles the plugins into the cache (see main.rs).
    drop(Gateway::start(&args.gateway, dir, &config)?);
    let gateway = Gateway::start(&args.gateway, dir, &config)?;
    let routed = Setup::Plain
        .rows(Api::Chat)
        .into_iter()
        .next()
        .context("a chat row")?;
    let targets = [
        Target {
            name: "mock called directly",
            addr: &mock.addr,
            row: Row::direct(Api::Chat),
        },
        Target {
            name: "bare proxy",
            addr: &proxy.addr,
            row: Row::direct(Api::Chat),
        },
        Target {
            name: "wasmgate chat, provider + ledger",
            addr: &gateway.addr,
            row: routed,
        },
    ];
    for target in &targets {
        target.row.check_whole(target.addr)?;
    }
    println!(
        "\nan upstream that takes {DELAY_MS} ms and paces its stream events {PACE_MS} ms apart (whole answers unless said)"
    );
    // The gateway's memory once warm; every later request counts toward its growth.
    oha.run(
        &targets[2].row.req(false),
        targets[2].addr,
        Load::Held {
            concurrency: 64,
            secs: 2.0,
        },
    )?;
    let rss_warm = gateway.rss_kib()?;
    let mut gateway_requests = 0u64;

    println!(
        "| target | concurrency | requests/s | of proxy | p50 | p99 | p99.9 | added p50 | added p99 | added p99.9 |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let mut held_rps = [0.0f64; 3];
    for concurrency in CONCURRENCY {
        let load = Load::Held {
            concurrency,
            secs: HELD_SECS,
        };
        let mut outcomes: Vec<Outcome> = Vec::new();
        for (i, target) in targets.iter().enumerate() {
            let outcome = oha.run(&target.row.req(false), target.addr, load)?;
            if i == 2 {
                gateway_requests += outcome.count;
            }
            if concurrency == CONCURRENCY[0] {
                held_rps[i] = outcome.rps;
            }
            outcomes.push(outcome);
        }
        for (target, outcome) in targets.iter().zip(&outcomes) {
            print_held(
                target.name,
                concurrency,
                outcome,
                &outcomes[0],
                &outcomes[1],
            );
        }
    }

    // The most requests/s held with the p99 added under 1 ms.
    let base = oha.run(
        &targets[0].row.req(false),
        targets[0].addr,
        Load::Rate {
            rps: LOW_RPS,
            concurrency: 512,
            secs: PROBE_SECS,
        },
    )?;
    println!(
        "\nthe most requests/s held open loop with the p99 under {:.1} ms ({:.1} ms, the direct call's p99 at {LOW_RPS}/s, + 1 ms)",
        (base.p99_us + P99_ADDED_MAX_US) / 1000.0,
        base.p99_us / 1000.0,
    );
    println!("| target | requests/s held | of proxy | its p99 there |");
    println!("|---|---|---|---|");
    let mut proxy_most = None;
    for (i, target) in targets.iter().enumerate().skip(1) {
        let (most, p99, count) = most_held(oha, target, held_rps[i], base.p99_us)?;
        if i == 2 {
            gateway_requests += count;
        }
        let of_proxy = proxy_most.map_or("—".to_owned(), |p: u32| {
            format!("{:.2}", f64::from(most) / f64::from(p.max(1)))
        });
        println!(
            "| {} | {} | {of_proxy} | {} |",
            target.name,
            if most == 0 {
                format!("< {LOW_RPS}")
            } else {
                most.to_string()
            },
            p99.map_or("—".to_owned(), |p| format!("{:.1} ms", p / 1000.0)),
        );
        if i == 1 {
            proxy_most = Some(most);
        }
    }

    // Streams that stall.
    let streams = if oha.quick() { 512 } else { 2048 };
    let gap_ms = 2 * PACE_MS;
    println!(
        "\n{streams} chat streams, 512 at once, {} events {PACE_MS} ms apart: a stall is a gap of more than {gap_ms} ms between reads",
        22
    );
    println!("| target | streams read | failed | stalled | p99 gap | longest gap |");
    println!("|---|---|---|---|---|---|");
    for (i, target) in targets.iter().enumerate() {
        let s = stalls::run(target.addr, target.row.model, streams, 512, gap_ms)?;
        if i == 2 {
            gateway_requests += s.streams + s.failed;
        }
        println!(
            "| {} | {} | {} | {} | {:.1} ms | {:.1} ms |",
            target.name, s.streams, s.failed, s.stalled, s.p99_gap_ms, s.max_gap_ms
        );
    }

    let rss_end = gateway.rss_kib()?;
    let growth = rss_end as f64 - rss_warm as f64;
    println!(
        "\ngateway memory: {:.1} MiB once warm, {:.1} MiB after {gateway_requests} more requests \
         of this table: {:+.1} MiB per million requests (extrapolated), peak {:.1} MiB; the bare \
         proxy's peak {:.1} MiB",
        rss_warm as f64 / 1024.0,
        rss_end as f64 / 1024.0,
        growth / 1024.0 / gateway_requests.max(1) as f64 * 1e6,
        gateway.peak_kib()? as f64 / 1024.0,
        proxy.peak_kib()? as f64 / 1024.0,
    );
    Ok(())
}

fn print_held(name: &str, concurrency: u32, o: &Outcome, direct: &Outcome, proxy: &Outcome) {
    let ms = |us: f64| format!("{:.2} ms", us / 1000.0);
    let added = |us: f64| format!("{:.0} µs", us);
    println!(
        "| {name} | {concurrency} | {:.0} | {:.2} | {} | {} | {} | {} | {} | {} |",
        o.rps,
        o.rps / proxy.rps,
        ms(o.p50_us),
        ms(o.p99_us),
        ms(o.p999_us),
        added(o.p50_us - direct.p50_us),
        added(o.p99_us - direct.p99_us),
        added(o.p999_us - direct.p999_us),
    );
}

/// The highest rate (by bisection between [`LOW_RPS`] and `ceiling`) that `target` held with
/// its p99 under `base_p99_us` + 1 ms, its p99 there, and the requests it took; 0 when even the
/// low rate was not held.
fn most_held(
    oha: &Oha,
    target: &Target<'_>,
    ceiling: f64,
    base_p99_us: f64,
) -> anyhow::Result<(u32, Option<f64>, u64)> {
    let probes = if oha.quick() { 4 } else { 6 };
    let req = target.row.req(false);
    let mut count = 0;
    let mut probe = |rps: u32| -> anyhow::Result<Option<f64>> {
        let o = oha.run(
            &req,
            target.addr,
            Load::Rate {
                rps,
                concurrency: 512,
                secs: PROBE_SECS,
            },
        )?;
        count += o.count;
        let held = o.rps >= 0.95 * f64::from(rps) && o.p99_us < base_p99_us + P99_ADDED_MAX_US;
        Ok(held.then_some(o.p99_us))
    };
    let Some(mut best_p99) = probe(LOW_RPS)? else {
        return Ok((0, None, count));
    };
    let (mut low, mut high) = (LOW_RPS, (ceiling as u32).max(LOW_RPS + 1));
    for _ in 0..probes {
        let mid = low + (high - low) / 2;
        if mid == low {
            break;
        }
        match probe(mid)? {
            Some(p99) => {
                low = mid;
                best_p99 = p99;
            }
            None => high = mid,
        }
    }
    Ok((low, Some(best_p99), count))
}
