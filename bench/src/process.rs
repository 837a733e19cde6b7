//! The processes under test: the mock upstream and the gateway, each pinned with `taskset`, and
//! what `/proc` says about the gateway's CPU time (user and kernel apart) and memory, and its
//! `/metrics` about the plugin work it did.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context as _;

use crate::scenario::{get_body, get_status};

/// Clock ticks per second of `/proc/<pid>/stat`'s times (`USER_HZ`, 100 on Linux).
const TICKS_PER_SECOND: f64 = 100.0;
const START_LIMIT: Duration = Duration::from_secs(120);

/// A server of the benchmark's own that says where it listens: the mock upstream (on CPU 1,
/// beside the load) or the bare proxy (on CPU 0, where the gateway runs).
pub struct Server {
    child: Child,
    pub addr: String,
}

impl Server {
    /// The mock upstream, answering at once.
    pub fn mock(binary: &str) -> anyhow::Result<Self> {
        Self::paced_mock(binary, 0, 0)
    }

    /// A mock that holds each completion `delay_ms` before answering and sends one streamed
    /// event every `pace_ms` (0: all at once).
    pub fn paced_mock(binary: &str, pace_ms: u64, delay_ms: u64) -> anyhow::Result<Self> {
        Self::spawn(
            "1",
            binary,
            &["0", &pace_ms.to_string(), &delay_ms.to_string()],
        )
        .context("starting the mock upstream (is taskset installed?)")
    }

    /// The bare proxy in front of `upstream`.
    pub fn proxy(binary: &str, upstream: &str) -> anyhow::Result<Self> {
        Self::spawn("0", binary, &[upstream]).context("starting the bare proxy")
    }

    fn spawn(cpu: &str, binary: &str, args: &[&str]) -> anyhow::Result<Self> {
        let mut child = Command::new("taskset")
            .args(["-c", cpu, binary])
            .args(args)
            .stdout(Stdio::piped())
            .spawn()?;
        let stdout = child.stdout.take().context("stdout")?;
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line)?;
        let addr = line
            .strip_prefix("listening ")
            .context("it did not say where it listens")?
            .trim()
            .to_owned();
        Ok(Self { child, addr })
    }

    pub fn rss_kib(&self) -> anyhow::Result<u64> {
        status_kib(self.child.id(), "VmRSS:")
    }

    pub fn peak_kib(&self) -> anyhow::Result<u64> {
        status_kib(self.child.id(), "VmHWM:")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `kB` figure of `/proc/<pid>/status`.
fn status_kib(pid: u32, key: &str) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with(key))
        .with_context(|| format!("{key} in /proc/pid/status"))?;
    Ok(line.split_whitespace().nth(1).context("value")?.parse()?)
}

/// `wasmgate serve` on CPU 0, with a config of its own and a SQLite ledger file.
pub struct Gateway {
    child: Child,
    pub addr: String,
    ledger: String,
}

/// A port free now on 127.0.0.1.
pub fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

impl Gateway {
    pub fn start(binary: &str, dir: &Path, config: &str) -> anyhow::Result<Self> {
        Self::start_with(binary, dir, "", "", config)
    }

    /// With more `server:` and `ledger:` settings (both keys are written here: the port is
    /// chosen here, and the ledger file named after it).
    pub fn start_with(
        binary: &str,
        dir: &Path,
        server: &str,
        ledger: &str,
        config: &str,
    ) -> anyhow::Result<Self> {
        let port = free_port()?;
        let url = format!(
            "sqlite://{}",
            dir.join(format!("ledger-{port}.db")).display()
        );
        Self::start_on(binary, dir, port, &url, server, ledger, config)
    }

    /// On the ledger at `url` (a seeded one, or PostgreSQL's), on `port`.
    pub fn start_on(
        binary: &str,
        dir: &Path,
        port: u16,
        url: &str,
        server: &str,
        ledger: &str,
        config: &str,
    ) -> anyhow::Result<Self> {
        let config = format!(
            "server: {{ host: 127.0.0.1, port: {port}{server} }}\nledger: {{ url: '{url}'{ledger} }}\n{config}"
        );
        let path = dir.join(format!("config-{port}.yaml"));
        std::fs::write(&path, config)?;
        let log = std::fs::File::create(dir.join(format!("gateway-{port}.log")))?;
        let child = Command::new("taskset")
            .args(["-c", "0", binary, "serve", "--config"])
            .arg(&path)
            .current_dir(dir)
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("starting the gateway")?;
        let gateway = Self {
            child,
            addr: format!("127.0.0.1:{port}"),
            ledger: url.to_owned(),
        };
        let started = Instant::now();
        while get_status(&gateway.addr, "/health") != Some(200) {
            anyhow::ensure!(
                started.elapsed() < START_LIMIT,
                "the gateway did not start; see {}",
                dir.display()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(gateway)
    }

    fn proc_file(&self, name: &str) -> anyhow::Result<String> {
        Ok(std::fs::read_to_string(format!(
            "/proc/{}/{name}",
            self.child.id()
        ))?)
    }

    /// What the gateway has done so far: user and kernel CPU time of all its threads, and the
    /// plugin instantiations and calls its `/metrics` counts.
    pub fn sample(&self) -> anyhow::Result<Sample> {
        let stat = self.proc_file("stat")?;
        // Fields after the command name (which may hold spaces) start at `state`, field 3;
        // utime and stime are fields 14 and 15.
        let rest = stat.rsplit_once(')').context("stat")?.1;
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let us = |i: usize| -> anyhow::Result<f64> {
            let ticks: f64 = fields.get(i).context("stat field")?.parse()?;
            Ok(ticks / TICKS_PER_SECOND * 1e6)
        };
        let metrics = get_body(&self.addr, "/metrics").context("GET /metrics")?;
        let counter = |name: &str| -> anyhow::Result<f64> {
            let line = metrics
                .lines()
                .find(|l| l.strip_prefix(name).is_some_and(|r| r.starts_with(' ')))
                .with_context(|| format!("{name} in /metrics"))?;
            Ok(line.rsplit(' ').next().context("value")?.parse()?)
        };
        Ok(Sample {
            user_us: us(11)?,
            system_us: us(12)?,
            instantiations: counter("wasmgate_plugin_instantiations_total")?,
            plugin_calls: counter("wasmgate_plugin_calls_total")?,
        })
    }

    pub fn rss_kib(&self) -> anyhow::Result<u64> {
        status_kib(self.child.id(), "VmRSS:")
    }

    pub fn peak_kib(&self) -> anyhow::Result<u64> {
        status_kib(self.child.id(), "VmHWM:")
    }

    /// A new API key of project `bench`, made with the binary's `keys create` in the running
    /// gateway's ledger (for `/mcp`, which always asks for one).
    pub fn create_key(&self, binary: &str) -> anyhow::Result<String> {
        let output = Command::new(binary)
            .args(["keys", "create", "--project", "bench", "--ledger"])
            .arg(&self.ledger)
            .output()
            .context("wasmgate keys create")?;
        anyhow::ensure!(
            output.status.success(),
            "keys create: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        Ok(String::from_utf8(output.stdout)?.trim().to_owned())
    }
}

/// The gateway's CPU time and plugin work, so far or per request.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// CPU time in user mode: the gateway's own code, plugins included.
    pub user_us: f64,
    /// CPU time in the kernel on its behalf: socket reads and writes, page faults, scheduling.
    pub system_us: f64,
    pub instantiations: f64,
    pub plugin_calls: f64,
}

impl Sample {
    /// What happened between `earlier` and this sample, per each of `n` requests.
    pub fn per(&self, earlier: &Sample, n: u64) -> Option<Sample> {
        let n = (n > 0).then_some(n as f64)?;
        Some(Sample {
            user_us: (self.user_us - earlier.user_us) / n,
            system_us: (self.system_us - earlier.system_us) / n,
            instantiations: (self.instantiations - earlier.instantiations) / n,
            plugin_calls: (self.plugin_calls - earlier.plugin_calls) / n,
        })
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
