//! The load generator: oha, pinned to CPU 1 beside the mock, its JSON summary read back.

use std::process::Command;

use anyhow::Context as _;
use serde_json::Value;

/// One request as oha sends it, over and over.
pub struct Req {
    pub name: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

#[derive(Clone, Copy)]
pub enum Load {
    /// Concurrency 1, a fixed count after a warm-up: the latency figures.
    Sequential,
    /// Concurrency 1 with [`SPACED_MS`] between one request's answer and the next one's
    /// start: the latency a client that is not busy sees, after the gateway fell idle.
    Spaced,
    /// Concurrency 64 for a fixed time: the throughput figures.
    Concurrent,
    /// This many at once, as fast as they are answered, for a fixed time (about half that with
    /// `--quick`).
    Held { concurrency: u32, secs: f64 },
    /// This many requests a second, open loop (latency counted from when each was due), with
    /// up to `concurrency` at once, for a fixed time.
    Rate {
        rps: u32,
        concurrency: u32,
        secs: f64,
    },
}

/// The idle gap of [`Load::Spaced`]: long enough for the runtime's workers to park and for
/// another process to take the core, as between a real client's calls.
pub const SPACED_MS: u32 = 20;

pub struct Oha {
    binary: String,
    quick: bool,
}

/// What one run gave: its latency percentiles, its rate and how many requests were answered.
pub struct Outcome {
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub rps: f64,
    pub count: u64,
}

impl Oha {
    pub fn new(binary: &str, quick: bool) -> Self {
        Self {
            binary: binary.to_owned(),
            quick,
        }
    }

    pub fn quick(&self) -> bool {
        self.quick
    }

    /// oha on CPU 1, posting `req`'s body to the target at `addr`; the load's shape is added
    /// by the caller.
    pub fn command(&self, req: &Req, addr: &str) -> Command {
        let mut command = Command::new("taskset");
        command.args([
            "-c",
            "1",
            &self.binary,
            "--no-tui",
            "--output-format",
            "json",
        ]);
        command.args(["-m", "POST", "-d", &req.body]);
        for (name, value) in &req.headers {
            command.args(["-H", &format!("{name}: {value}")]);
        }
        command.arg(format!("http://{addr}{}", req.path));
        command
    }

    pub fn run(&self, req: &Req, addr: &str, load: Load) -> anyhow::Result<Outcome> {
        let secs = |secs: f64| {
            let secs = if self.quick { secs / 2.0 } else { secs };
            format!("{secs:.1}s")
        };
        match load {
            Load::Sequential => {
                let (warm, count) = if self.quick { (50, 500) } else { (300, 3000) };
                self.once(req, addr, &["-c", "1", "-n", &warm.to_string()])?;
                self.once(req, addr, &["-c", "1", "-n", &count.to_string()])
            }
            Load::Spaced => {
                // oha's `-q` at concurrency 1 starts one request every 1/q s: at 1000/SPACED_MS
                // a second, each waits about SPACED_MS minus the previous one's time.
                let count = if self.quick { 100 } else { 400 };
                self.once(req, addr, &["-c", "1", "-n", "10"])?;
                self.once(
                    req,
                    addr,
                    &[
                        "-c",
                        "1",
                        "-q",
                        &(1000 / SPACED_MS).to_string(),
                        "-n",
                        &count.to_string(),
                    ],
                )
            }
            Load::Concurrent => {
                let secs = if self.quick { "3s" } else { "8s" };
                self.once(req, addr, &["-c", "64", "-z", secs, "-w"])
            }
            Load::Held {
                concurrency,
                secs: s,
            } => self.once(
                req,
                addr,
                &["-c", &concurrency.to_string(), "-z", &secs(s), "-w"],
            ),
            Load::Rate {
                rps,
                concurrency,
                secs: s,
            } => self.once(
                req,
                addr,
                &[
                    "-c",
                    &concurrency.to_string(),
                    "-q",
                    &rps.to_string(),
                    "--latency-correction",
                    "-z",
                    &secs(s),
                    "-w",
                ],
            ),
        }
    }

    fn once(&self, req: &Req, addr: &str, how: &[&str]) -> anyhow::Result<Outcome> {
        let output = self
            .command(req, addr)
            .args(how)
            .output()
            .context("running oha")?;
        anyhow::ensure!(
            output.status.success(),
            "oha failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let report: Value = serde_json::from_slice(&output.stdout)
            .with_context(|| format!("oha's JSON: {}", String::from_utf8_lossy(&output.stdout)))?;
        outcome(&report).with_context(|| req.name.clone())
    }
}

/// Reads oha's summary, refusing a run in which any request failed.
fn outcome(report: &Value) -> anyhow::Result<Outcome> {
    let codes = report["statusCodeDistribution"]
        .as_object()
        .context("statusCodeDistribution")?;
    let ok = codes.get("200").and_then(Value::as_u64).unwrap_or(0);
    let other: u64 = codes
        .iter()
        .filter(|(code, _)| *code != "200")
        .filter_map(|(_, n)| n.as_u64())
        .sum();
    let errors = report["errorDistribution"].as_object();
    anyhow::ensure!(
        other == 0 && errors.is_none_or(|e| e.is_empty()),
        "requests failed: statuses {codes:?}, errors {:?}",
        report["errorDistribution"]
    );
    anyhow::ensure!(ok > 0, "no request answered");
    let percentile = |p: &str| -> anyhow::Result<f64> {
        Ok(report["latencyPercentiles"][p]
            .as_f64()
            .with_context(|| format!("latencyPercentiles.{p}"))?
            * 1e6)
    };
    Ok(Outcome {
        p50_us: percentile("p50")?,
        p99_us: percentile("p99")?,
        p999_us: percentile("p99.9")?,
        rps: report["summary"]["requestsPerSec"]
            .as_f64()
            .context("summary.requestsPerSec")?,
        count: ok,
    })
}
