//! A throwaway PostgreSQL cluster on a free 127.0.0.1 port, stopped when dropped.
//!
//! Debian's `postgresql` package (`.ci/run` installs it) puts `initdb` and `pg_ctl` under
//! `/usr/lib/postgresql/<version>/bin`. The cluster lives in a temp dir (its socket too), trusts
//! local connections and never touches the system's cluster. PostgreSQL refuses to run as root:
//! as root, the server runs as the `postgres` user. Without the binaries the tests fail: a test
//! that cannot run must not show as passed (`scripts/test.sh` installs them).
//!
//! Shared by the ledger's unit tests (through `#[path]`) and the end-to-end tests.

// By path, so that this file keeps its own tree where it is included alone (the ledger's unit
// tests and benchmark).
#[path = "test_ca.rs"]
pub mod test_ca;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// A running cluster; `database()` gives each test a database of its own.
pub struct PgCluster {
    pub port: u16,
    dir: PathBuf,
    bin: PathBuf,
    as_postgres: bool,
    databases: AtomicU32,
}

static CLUSTERS: AtomicU32 = AtomicU32::new(0);
static SHARED: Mutex<Weak<PgCluster>> = Mutex::new(Weak::new());

/// The cluster that the tests running now share (started by the first, stopped after the last).
pub fn shared() -> Arc<PgCluster> {
    let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(cluster) = shared.upgrade() {
        return cluster;
    }
    // Test data need not survive a crash of the machine.
    let cluster = Arc::new(PgCluster::start(&["fsync=off"]));
    *shared = Arc::downgrade(&cluster);
    cluster
}

/// A database of its own on the shared cluster: its URL, and the cluster to keep alive.
pub fn database() -> (String, Arc<PgCluster>) {
    let cluster = shared();
    (cluster.database(), cluster)
}

fn bin_dir() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

impl PgCluster {
    /// Starts a new cluster of its own, with extra server settings (`-c name=value`).
    pub fn start(settings: &[&str]) -> Self {
        let Some(bin) = bin_dir() else {
            panic!(
                "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): \
                 apt-get install -y postgresql (scripts/test.sh does, as root)"
            );
        };
        let as_postgres = running_as_root();
        let n = CLUSTERS.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("wasmgate-pg-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let cluster = Self {
            port: free_port(),
            dir,
            bin,
            as_postgres,
            databases: AtomicU32::new(0),
        };
        if as_postgres {
            run(Command::new("chown")
                .arg("postgres:postgres")
                .arg(&cluster.dir));
        }
        let data = cluster.data();
        cluster.pg("initdb", |c| {
            c.args([
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ])
            .arg("-D")
            .arg(&data);
        });
        let mut options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c max_connections=200",
            cluster.port,
            cluster.dir.display()
        );
        for setting in settings {
            options.push_str(" -c ");
            options.push_str(setting);
        }
        std::fs::write(data.join("wasmgate-test-options"), &options).unwrap();
        cluster.ctl_start();
        cluster
    }

    /// Starts a cluster that also takes TLS connections, with a server certificate for
    /// `127.0.0.1` and `localhost` signed by a throwaway CA; returns the CA's PEM file too.
    pub fn start_tls() -> (Self, PathBuf) {
        let n = CLUSTERS.fetch_add(1, Ordering::SeqCst);
        let certs =
            std::env::temp_dir().join(format!("wasmgate-pg-tls-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&certs);
        std::fs::create_dir_all(&certs).unwrap();
        let issued = test_ca::issue(&certs);
        let key = issued.key;
        if running_as_root() {
            run(Command::new("chown").arg("postgres:postgres").arg(&key));
        }
        let cert_file = format!("ssl_cert_file={}", issued.cert.display());
        let key_file = format!("ssl_key_file={}", key.display());
        let cluster = Self::start(&["ssl=on", &cert_file, &key_file]);
        (cluster, issued.ca)
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// Runs one of PostgreSQL's programs, as the `postgres` user when we are root.
    fn pg(&self, program: &str, args: impl FnOnce(&mut Command)) {
        let path = self.bin.join(program);
        let mut command = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(path);
            c
        } else {
            Command::new(path)
        };
        args(&mut command);
        run(&mut command);
    }

    fn ctl_start(&self) {
        let options = std::fs::read_to_string(self.data().join("wasmgate-test-options")).unwrap();
        let (data, log) = (self.data(), self.dir.join("server.log"));
        self.pg("pg_ctl", |c| {
            c.arg("-D")
                .arg(&data)
                .arg("-l")
                .arg(&log)
                .args(["-o", &options, "-w", "-t", "60", "start"]);
        });
    }

    /// Stops the server (fast: connections are closed), keeping its data.
    pub fn stop(&self) {
        let data = self.data();
        self.pg("pg_ctl", |c| {
            c.arg("-D").arg(&data).args(["-m", "fast", "-w", "stop"]);
        });
    }

    /// Starts the server again after [`stop`](Self::stop), on the same port.
    pub fn restart(&self) {
        self.ctl_start();
    }

    /// A URL as a client would write it (the password is ignored: the cluster trusts local
    /// connections).
    pub fn url(&self, db: &str) -> String {
        format!(
            "postgres://postgres:pg-test-secret@127.0.0.1:{}/{db}",
            self.port
        )
    }

    /// Creates a new, empty database and returns its URL.
    pub fn database(&self) -> String {
        let name = format!("wasmgate_{}", self.databases.fetch_add(1, Ordering::SeqCst));
        let url = self.url(&name);
        // The sync client runs a runtime of its own: keep it off any async test's thread.
        let admin = self.url("postgres");
        std::thread::spawn(move || {
            let mut client = postgres::Client::connect(&admin, postgres::NoTls).unwrap();
            client
                .batch_execute(&format!("CREATE DATABASE {name}"))
                .unwrap();
        })
        .join()
        .unwrap();
        url
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        let data = self.data();
        let path = self.bin.join("pg_ctl");
        let mut command = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(path);
            c
        } else {
            Command::new(path)
        };
        let _ = command
            .arg("-D")
            .arg(&data)
            .args(["-m", "immediate", "-w", "stop"])
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap()
}

/// PostgreSQL refuses to run as root: when we are, its programs run as `postgres`, which must
/// then own its files.
fn running_as_root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|m| m.uid() == 0)
        .unwrap_or(false)
}

fn run(command: &mut Command) {
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{command:?} failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
