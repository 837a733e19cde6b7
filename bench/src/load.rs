//! The load generator: oha, pinned to CPU 1 beside the mock, its JSON summary read back.

use std::process::Command;

use anyhow::Context as _;
use serde_json::Value;

use crate::scenario::Row;

#[derive(Clone, Copy)]
pub enum Load {
    /// Concurrency 1, a fixed count after a warm-up: the latency figures.
    Sequential,
    /// Concurrency 64 for a fixed time: the throughput figures.
    Concurrent,
}

pub struct Oha {
    binary: String,
    quick: bool,
}

/// What one run gave: its p50, its rate and how many requests were answered.
pub struct Outcome {
    pub p50_us: f64,
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

    /// oha on CPU 1, posting `row`'s body to the gateway at `addr`; the load's shape is added
    /// by the caller.
    pub fn command(&self, row: &Row, addr: &str, stream: bool) -> Command {
        let mut command = Command::new("taskset");
        command.args([
            "-c",
            "1",
            &self.binary,
            "--no-tui",
            "--output-format",
            "json",
        ]);
        command.args(["-m", "POST", "-d", &row.body(stream)]);
        for (name, value) in row.headers() {
            command.args(["-H", &format!("{name}: {value}")]);
        }
        command.arg(format!("http://{addr}{}", row.path()));
        command
    }

    pub fn run(&self, row: &Row, addr: &str, stream: bool, load: Load) -> anyhow::Result<Outcome> {
        match load {
            Load::Sequential => {
                let (warm, count) = if self.quick { (50, 500) } else { (300, 3000) };
                self.once(row, addr, stream, &["-c", "1", "-n", &warm.to_string()])?;
                self.once(row, addr, stream, &["-c", "1", "-n", &count.to_string()])
            }
            Load::Concurrent => {
                let secs = if self.quick { "3s" } else { "8s" };
                self.once(row, addr, stream, &["-c", "64", "-z", secs, "-w"])
            }
        }
    }

    fn once(&self, row: &Row, addr: &str, stream: bool, how: &[&str]) -> anyhow::Result<Outcome> {
        let output = self
            .command(row, addr, stream)
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
        outcome(&report).with_context(|| format!("{} (stream: {stream})", row.name))
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
    Ok(Outcome {
        p50_us: report["latencyPercentiles"]["p50"]
            .as_f64()
            .context("latencyPercentiles.p50")?
            * 1e6,
        rps: report["summary"]["requestsPerSec"]
            .as_f64()
            .context("summary.requestsPerSec")?,
        count: ok,
    })
}
