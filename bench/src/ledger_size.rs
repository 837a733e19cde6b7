//! Whether a ledger's size slows the request path (issue 38 item 6): chat through the gateway
//! (provider + ledger, whole answers at 64 at once) on each ledger given with `--ledger
//! NAME=URL` (an empty SQLite file, one `scripts/seed-ledger.sh` filled, PostgreSQL's), one
//! after another in the same run, each for [`REPEATS`] loads of [`LOAD_SECS`] on one gateway
//! process, so that a ledger that slows as it grows shows as falling repeats.
//!
//! Between loads the gateway is left to finish writing what it took (its CPU falls idle), so that
//! a ledger writer behind from one load does not bill the next, and each ledger's gateway has a
//! journal directory of its own (a journal left behind is replayed into the next ledger else).
//! Bounded: fixed-time loads, at most [`SETTLE_MAX`] of waiting after each.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::Context as _;

use crate::Args;
use crate::load::{Load, Oha};
use crate::process::{Gateway, free_port};
use crate::scenario::{Api, Setup};

/// Loads on each ledger.
const REPEATS: usize = 3;
/// Seconds of each load (half with `--quick`), the 10.
const LOAD_SECS: f64 = 10.0;
/// The longest wait for the gateway to fall idle after a load.
const SETTLE_MAX: Duration = Duration::from_secs(60);
/// CPU use under which the gateway counts as idle (a share of one core).
const IDLE_SHARE: f64 = 0.05;

/// `--ledger NAME=URL`.
pub struct Ledger {
    pub name: String,
    pub url: String,
}

impl Ledger {
    pub fn parse(arg: &str) -> anyhow::Result<Self> {
        let (name, url) = arg.split_once('=').context("--ledger NAME=URL")?;
        Ok(Self {
            name: name.to_owned(),
            url: url.to_owned(),
        })
    }

    /// What the ledger occupies: the SQLite file and its WAL, or the PostgreSQL database.
    fn bytes(&self) -> anyhow::Result<u64> {
        if let Some(path) = self.url.strip_prefix("sqlite://") {
            let size = |p: String| std::fs::metadata(p).map_or(0, |m| m.len());
            return Ok(size(path.to_owned()) + size(format!("{path}-wal")));
        }
        let out = Command::new("psql")
            .args(["-qAt", &self.url, "-c"])
            .arg("SELECT pg_database_size(current_database())")
            .output()
            .context("psql (for the database's size)")?;
        Ok(String::from_utf8(out.stdout)?.trim().parse()?)
    }
}

pub fn table(args: &Args, oha: &Oha, dir: &Path) -> anyhow::Result<()> {
    anyhow::ensure!(
        !args.ledgers.is_empty(),
        "--only ledger needs --ledger NAME=URL"
    );
    let mock = crate::process::Server::mock(&args.mock)?;
    let config = args.with_plugins_dir(&Setup::Plain.config(&mock.addr));
    // The first start compiles the plugins into the cache (see main.rs).
    drop(Gateway::start(&args.gateway, dir, &config)?);
    let row = Setup::Plain
        .rows(Api::Chat)
        .into_iter()
        .next()
        .context("a chat row")?;
    let secs = if oha.quick() {
        LOAD_SECS / 2.0
    } else {
        LOAD_SECS
    };
    println!(
        "chat, provider + ledger, whole answers at 64 at once, {REPEATS} loads of {secs:.0} s on one gateway per ledger\n"
    );
    let repeats = (1..=REPEATS)
        .map(|i| format!("requests/s {i}"))
        .collect::<Vec<_>>()
        .join(" | ");
    println!(
        "| ledger | size before | {repeats} | mean | of the first ledger's | last / first load | gateway CPU/request (user + kernel) | size after |"
    );
    println!("|---|---|{}---|---|---|---|---|", "---|".repeat(REPEATS));
    let mut first_mean = None;
    for (n, ledger) in args.ledgers.iter().enumerate() {
        let before = ledger.bytes()?;
        let journal = dir.join(format!("journal-{n}"));
        let gateway = Gateway::start_on(
            &args.gateway,
            dir,
            free_port()?,
            &ledger.url,
            "",
            &format!(", journal: {{ dir: '{}' }}", journal.display()),
            &config,
        )?;
        row.check(&gateway.addr)?;
        settle(&gateway)?;
        let mut rates = Vec::with_capacity(REPEATS);
        let mut cpu = (0.0, 0.0);
        let mut count = 0;
        for _ in 0..REPEATS {
            let start = gateway.sample()?;
            let load = Load::Held {
                concurrency: 64,
                secs: LOAD_SECS,
            };
            let outcome = oha.run(&row.req(false), &gateway.addr, load)?;
            // The writer's work for this load counts to it: the CPU is read once it is done.
            settle(&gateway)?;
            let end = gateway.sample()?;
            cpu.0 += end.user_us - start.user_us;
            cpu.1 += end.system_us - start.system_us;
            count += outcome.count;
            rates.push(outcome.rps);
        }
        let mean = rates.iter().sum::<f64>() / rates.len() as f64;
        let first = *first_mean.get_or_insert(mean);
        let per = |us: f64| us / count.max(1) as f64;
        let cells = rates
            .iter()
            .map(|r| format!("{r:.0}"))
            .collect::<Vec<_>>()
            .join(" | ");
        println!(
            "| {} | {} | {cells} | {mean:.0} | {:.2} | {:.2} | {:.0} + {:.0} µs | {} |",
            ledger.name,
            mib(before),
            mean / first,
            rates.last().unwrap_or(&0.0) / rates.first().unwrap_or(&1.0),
            per(cpu.0),
            per(cpu.1),
            mib(ledger.bytes()?),
        );
    }
    Ok(())
}

fn mib(bytes: u64) -> String {
    format!("{:.0} MiB", bytes as f64 / 1048576.0)
}

/// Waits until the gateway's CPU use over half a second falls under [`IDLE_SHARE`].
fn settle(gateway: &Gateway) -> anyhow::Result<()> {
    let started = Instant::now();
    let window = Duration::from_millis(500);
    loop {
        let a = gateway.sample()?;
        std::thread::sleep(window);
        let b = gateway.sample()?;
        let busy_us = (b.user_us - a.user_us) + (b.system_us - a.system_us);
        if busy_us < IDLE_SHARE * window.as_micros() as f64 || started.elapsed() > SETTLE_MAX {
            return Ok(());
        }
    }
}
