//! Memory at scale: the gateway's RSS while `n` streams are open at once (the mock paces its
//! events so that they stay open), and over a soak at saturation.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context as _;

use crate::load::Oha;
use crate::process::{Gateway, Server};
use crate::scenario::{Api, Row, get_status};

/// The time between two events of a paced stream: 22 events, about 22 s per stream.
const PACE_MS: u64 = 1000;

fn config(mock: &str, streams: usize) -> String {
    format!(
        "observability: {{ log_level: warn }}
plugins: {{ max_instances: {instances}, stream_share_percent: 99 }}
providers:
  openai:
    plugin: openai
    base_url: http://{mock}/v1
    api_key: sk-bench
    models: [gpt-4o-mini]
",
        instances = streams + 256,
    )
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// Opens `n` streams at once through the gateway and reports its RSS while they are open.
pub fn streams(
    gateway_bin: &str,
    mock_bin: &str,
    oha: &Oha,
    dir: &Path,
    n: usize,
) -> anyhow::Result<()> {
    let mock = Server::paced_mock(mock_bin, PACE_MS, 0)?;
    let server = format!(", max_connections: {}", n + 256);
    let gateway = Gateway::start_with(gateway_bin, dir, &server, "", &config(&mock.addr, n))?;
    let row = Row {
        no_cache: false,
        no_store: false,
        prefix: "",
        name: format!("{n} open streams"),
        api: Api::Chat,
        model: "openai/gpt-4o-mini",
    };
    row.check_whole(&gateway.addr)?;
    let idle = gateway.rss_kib()?;
    let mut load = oha.command(&row.req(true), &gateway.addr);
    let n_text = n.to_string();
    load.args(["-c", &n_text, "-n", &n_text, "-t", "120s"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = load.spawn().context("oha")?;
    let started = Instant::now();
    let mut most_open = 0;
    let mut rss_at_most = idle;
    // Bounded: the streams last about 22 s; oha gives up on a request after 120 s.
    while started.elapsed() < Duration::from_secs(180) {
        std::thread::sleep(Duration::from_millis(500));
        let open = open_streams(&gateway.addr).unwrap_or(0);
        let rss = gateway.rss_kib()?;
        if open >= most_open {
            most_open = open;
            rss_at_most = rss_at_most.max(rss);
        }
        if open == 0 && started.elapsed() > Duration::from_secs(5) {
            break;
        }
    }
    let output = child.wait_with_output()?;
    let report: serde_json::Value = serde_json::from_slice(&output.stdout)
        .with_context(|| String::from_utf8_lossy(&output.stderr).into_owned())?;
    let peak = gateway.peak_kib()?;
    println!(
        "| {n} | {most_open} | {:.0} MiB | {:.0} MiB | {:.0} MiB | {:.0} KiB | {} |",
        mib(idle),
        mib(rss_at_most),
        mib(peak),
        (peak.saturating_sub(idle)) as f64 / most_open.max(1) as f64,
        report["statusCodeDistribution"]
    );
    Ok(())
}

/// The streams the gateway holds open now, from `/health`.
fn open_streams(addr: &str) -> Option<usize> {
    let body = crate::scenario::get_body(addr, "/health")?;
    let json: serde_json::Value = serde_json::from_str(body.split("\r\n\r\n").nth(1)?).ok()?;
    json["plugin_instances"]["streams"]
        .as_u64()
        .map(|v| v as usize)
}

/// Saturates the gateway with streams and whole answers, alternating, for `secs`, and prints
/// its RSS every `secs / 20`.
pub fn soak(
    gateway_bin: &str,
    mock_bin: &str,
    oha: &Oha,
    dir: &Path,
    secs: u64,
) -> anyhow::Result<()> {
    let mock = Server::mock(mock_bin)?;
    let gateway = Gateway::start(gateway_bin, dir, &config(&mock.addr, 64))?;
    let row = Row {
        no_cache: false,
        no_store: false,
        prefix: "",
        name: "soak".to_owned(),
        api: Api::Chat,
        model: "openai/gpt-4o-mini",
    };
    row.check(&gateway.addr)?;
    println!("| after | requests | RSS | peak RSS |\n|---|---|---|---|");
    let started = Instant::now();
    let step = (secs / 20).max(5);
    let mut requests = 0u64;
    let mut stream = false;
    while started.elapsed() < Duration::from_secs(secs) {
        let output = oha
            .command(&row.req(stream), &gateway.addr)
            .args(["-c", "64", "-z", &format!("{step}s"), "-w"])
            .output()?;
        let report: serde_json::Value = serde_json::from_slice(&output.stdout)?;
        requests += report["statusCodeDistribution"]["200"]
            .as_u64()
            .unwrap_or(0);
        anyhow::ensure!(
            get_status(&gateway.addr, "/health") == Some(200),
            "the gateway stopped answering"
        );
        println!(
            "| {} s | {requests} | {:.0} MiB | {:.0} MiB |",
            started.elapsed().as_secs(),
            mib(gateway.rss_kib()?),
            mib(gateway.peak_kib()?)
        );
        stream = !stream;
    }
    Ok(())
}
