//! PostgreSQL connections: the URL and its TLS settings, the batch writer's connection and the
//! pool of query connections, opened lazily, migrated on first use, their errors scrubbed of the
//! URL's password.
//!
//! **TLS.** `sslmode=require` (or libpq's `verify-ca` / `verify-full`) in the URL makes every
//! connection TLS, and the server's certificate is always verified, host name included: against
//! the system's roots, and the PEM file `sslrootcert=` names (for a private CA). A server that
//! cannot be verified is refused: there is no "encrypted but unverified" mode. Without `sslmode`
//! (or with `disable`, `allow`, `prefer`) connections are plain TCP.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use postgres::{Client, NoTls};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::error_chain::chain;
use super::schema;

/// Query connections open at most; a query past that waits for one to come back.
const MAX_READERS: usize = 4;
/// How long a query waits for a connection before giving up.
const READER_WAIT: Duration = Duration::from_secs(10);

/// The connections of one store: the batch writer's own, and a small pool for queries, each
/// opened on first use (and again after the server went away).
pub struct Connections {
    config: postgres::Config,
    /// `None`: plain TCP.
    tls: Option<MakeRustlsConnect>,
    /// The URL with `***` for its password, for messages.
    shown: String,
    /// Scrubbed from every error message.
    password: Option<String>,
    writer: Mutex<Option<Client>>,
    readers: Mutex<Readers>,
    returned: Condvar,
    schema_ready: AtomicBool,
}

/// Idle query connections, and how many are open in all (idle or in use).
#[derive(Default)]
struct Readers {
    idle: Vec<Client>,
    open: usize,
}

impl Connections {
    /// Reads `url` (`postgres://` or `postgresql://`); connects on first use, not here.
    pub fn open(url: &str) -> anyhow::Result<Self> {
        let shown = redact_url(url);
        let (url, tls) = tls_options(url);
        let mut config: postgres::Config = url
            .parse()
            .map_err(|e| anyhow::anyhow!("ledger.url `{shown}`: {e}"))?;
        let tls = match tls.mode.as_deref() {
            None | Some("disable" | "allow" | "prefer") => {
                anyhow::ensure!(
                    tls.root_cert.is_none(),
                    "ledger.url `{shown}`: sslrootcert needs sslmode=require, verify-ca or \
                     verify-full"
                );
                config.ssl_mode(postgres::config::SslMode::Disable);
                None
            }
            Some("require" | "verify-ca" | "verify-full") => {
                config.ssl_mode(postgres::config::SslMode::Require);
                Some(
                    tls_connector(tls.root_cert.as_deref())
                        .map_err(|e| anyhow::anyhow!("ledger.url `{shown}`: {e:#}"))?,
                )
            }
            Some(other) => anyhow::bail!(
                "ledger.url `{shown}`: sslmode `{other}` is not one of disable, allow, prefer, \
                 require, verify-ca, verify-full"
            ),
        };
        // Session settings, added to whatever `options=` the URL gives. The ledger's queries are
        // many small index lookups: JIT compiling one costs more than running it (157 ms of JIT
        // on a 1.2 s user-filtered query, at 10M records). A tag's month is tens of thousands of
        // rollup rows to sum: sorted within the default 4 MB of `work_mem`, they spilled to disk
        // and the sort took a third of the query.
        const SETTINGS: &str = "-c jit=off -c work_mem=64MB";
        let options = match config.get_options() {
            Some(given) => format!("{given} {SETTINGS}"),
            None => SETTINGS.to_owned(),
        };
        config
            .options(&options)
            .application_name("wasmgate")
            .connect_timeout(Duration::from_secs(5))
            // A server that vanished without closing its sockets is noticed in seconds, not
            // after the system's TCP timeout (minutes): the writer can then retry elsewhere.
            .tcp_user_timeout(Duration::from_secs(30))
            .keepalives(true)
            .keepalives_idle(Duration::from_secs(30));
        let password = config
            .get_password()
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .filter(|p| !p.is_empty());
        Ok(Self {
            config,
            tls,
            shown,
            password,
            writer: Mutex::new(None),
            readers: Mutex::new(Readers::default()),
            returned: Condvar::new(),
            schema_ready: AtomicBool::new(false),
        })
    }

    /// `error` as a message without the password, naming the database.
    pub fn scrub(&self, error: impl std::fmt::Display) -> anyhow::Error {
        let mut message = error.to_string();
        if let Some(password) = &self.password {
            message = message.replace(password.as_str(), "***");
        }
        anyhow::anyhow!("ledger database {}: {message}", self.shown)
    }

    fn connect(&self) -> anyhow::Result<Client> {
        let connected = match &self.tls {
            None => self.config.connect(NoTls),
            Some(tls) => self.config.connect(tls.clone()),
        };
        let mut client =
            connected.map_err(|e| self.scrub(format_args!("cannot connect: {}", chain(&e))))?;
        if !self.schema_ready.load(Ordering::Acquire) {
            schema::migrate(&mut client).map_err(|e| self.scrub(format_args!("{e:#}")))?;
            self.schema_ready.store(true, Ordering::Release);
        }
        Ok(client)
    }

    fn lock<'a, T>(&self, mutex: &'a Mutex<T>) -> anyhow::Result<MutexGuard<'a, T>> {
        mutex
            .lock()
            .map_err(|_| anyhow::anyhow!("a ledger lock is poisoned"))
    }

    /// Runs `query` on a pooled connection, opening one when none is idle and fewer than
    /// [`MAX_READERS`] are open. A connection that broke is dropped, not pooled again.
    pub fn read<T>(
        &self,
        query: impl FnOnce(&mut Client) -> anyhow::Result<T>,
    ) -> anyhow::Result<T> {
        let pooled = {
            let mut readers = self.lock(&self.readers)?;
            loop {
                if let Some(client) = readers.idle.pop() {
                    if client.is_closed() {
                        readers.open -= 1;
                        continue;
                    }
                    break Some(client);
                }
                if readers.open < MAX_READERS {
                    readers.open += 1;
                    break None;
                }
                let (guard, wait) = self
                    .returned
                    .wait_timeout(readers, READER_WAIT)
                    .map_err(|_| anyhow::anyhow!("a ledger lock is poisoned"))?;
                readers = guard;
                anyhow::ensure!(
                    !wait.timed_out() || !readers.idle.is_empty() || readers.open < MAX_READERS,
                    "every ledger query connection is busy"
                );
            }
        };
        let mut client = match pooled {
            Some(client) => client,
            None => match self.connect() {
                Ok(client) => client,
                Err(e) => {
                    self.lock(&self.readers)?.open -= 1;
                    self.returned.notify_one();
                    return Err(e);
                }
            },
        };
        let result = query(&mut client).map_err(|e| self.scrub(format_args!("{e:#}")));
        let mut readers = self.lock(&self.readers)?;
        // A client only learns that its server went away when it next talks to it: after any
        // error, a fresh connection is cheaper than finding out which errors left it broken.
        if result.is_err() || client.is_closed() {
            readers.open -= 1;
        } else {
            readers.idle.push(client);
        }
        drop(readers);
        self.returned.notify_one();
        result
    }

    /// Runs `write` on the writer's connection, opening one when it has none or its server went
    /// away. After an error the connection is dropped: the next try opens a new one.
    pub fn write<T>(
        &self,
        write: impl FnOnce(&mut Client) -> anyhow::Result<T>,
    ) -> anyhow::Result<T> {
        let mut writer = self.lock(&self.writer)?;
        let client = match writer.take() {
            Some(client) if !client.is_closed() => writer.insert(client),
            _ => writer.insert(self.connect()?),
        };
        let result = write(client).map_err(|e| self.scrub(format_args!("{e:#}")));
        if result.is_err() {
            // The server may have gone away (see `read`).
            *writer = None;
        }
        result
    }
}

impl Drop for Connections {
    fn drop(&mut self) {
        let writer = self.writer.get_mut().ok().and_then(Option::take);
        let idle = self
            .readers
            .get_mut()
            .map(|r| std::mem::take(&mut r.idle))
            .unwrap_or_default();
        if writer.is_none() && idle.is_empty() {
            return;
        }
        // A client says goodbye to the server with a blocking call on its own runtime, which
        // panics when the store is dropped inside an async context (a test, the end of
        // `serve`): close the connections on a thread of their own.
        if let Ok(closer) = std::thread::Builder::new()
            .name("ledger-close".to_owned())
            .spawn(move || drop((writer, idle)))
        {
            let _ = closer.join();
        }
    }
}

/// The TLS settings of a URL, which the client's own parser does not take (it knows neither
/// `sslrootcert` nor libpq's `verify-*` modes).
#[derive(Debug, Default, PartialEq, Eq)]
struct TlsOptions {
    mode: Option<String>,
    root_cert: Option<String>,
}

/// `url` without its `sslmode` and `sslrootcert` parameters, and their values.
fn tls_options(url: &str) -> (String, TlsOptions) {
    let Some((head, query)) = url.split_once('?') else {
        return (url.to_owned(), TlsOptions::default());
    };
    let mut options = TlsOptions::default();
    let mut kept = Vec::new();
    for pair in query.split('&') {
        match pair.split_once('=') {
            Some(("sslmode", mode)) => options.mode = Some(mode.to_owned()),
            Some(("sslrootcert", path)) => options.root_cert = Some(percent_decode(path)),
            _ => kept.push(pair),
        }
    }
    let url = if kept.is_empty() {
        head.to_owned()
    } else {
        format!("{head}?{}", kept.join("&"))
    };
    (url, options)
}

/// `%XX` escapes decoded (a path in a URL may have them); anything malformed is kept as is.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A TLS connector trusting the system's roots and those in the PEM file `root_cert`.
fn tls_connector(root_cert: Option<&str>) -> anyhow::Result<MakeRustlsConnect> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;

    let mut roots = rustls::RootCertStore::empty();
    // Unreadable system certificates are skipped: a private CA may be all that is needed.
    let native = rustls_native_certs::load_native_certs();
    roots.add_parsable_certificates(native.certs);
    if let Some(path) = root_cert {
        let mut added = 0;
        for cert in CertificateDer::pem_file_iter(path)
            .map_err(|e| anyhow::anyhow!("sslrootcert {path}: {e}"))?
        {
            let cert = cert.map_err(|e| anyhow::anyhow!("sslrootcert {path}: {e}"))?;
            roots
                .add(cert)
                .map_err(|e| anyhow::anyhow!("sslrootcert {path}: {e}"))?;
            added += 1;
        }
        anyhow::ensure!(added > 0, "sslrootcert {path}: no certificate in it");
    }
    anyhow::ensure!(
        !roots.is_empty(),
        "no trusted certificates: the system has none, and no sslrootcert= was given"
    );
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

/// `url` with `***` for its password, whether in the user-info or a `password=` parameter.
pub fn redact_url(url: &str) -> String {
    let mut shown = url.to_owned();
    if let Some(scheme_end) = shown.find("://") {
        let rest_start = scheme_end + 3;
        let authority_end = shown[rest_start..]
            .find(['/', '?'])
            .map_or(shown.len(), |i| rest_start + i);
        if let Some(at) = shown[rest_start..authority_end].rfind('@') {
            let userinfo = rest_start..rest_start + at;
            if let Some(colon) = shown[userinfo.clone()].find(':') {
                shown.replace_range(userinfo.start + colon + 1..userinfo.end, "***");
            }
        }
    }
    if let Some(query_start) = shown.find('?') {
        let (head, query) = shown.split_at(query_start + 1);
        let query: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some(("password", _)) => "password=***".to_owned(),
                _ => pair.to_owned(),
            })
            .collect();
        shown = format!("{head}{}", query.join("&"));
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::{TlsOptions, redact_url, tls_options};

    #[test]
    fn tls_settings_are_taken_out_of_the_url() {
        assert_eq!(
            tls_options("postgres://a@db/x?sslmode=verify-full&sslrootcert=/etc/my%20ca.pem"),
            (
                "postgres://a@db/x".to_owned(),
                TlsOptions {
                    mode: Some("verify-full".to_owned()),
                    root_cert: Some("/etc/my ca.pem".to_owned()),
                }
            )
        );
        assert_eq!(
            tls_options("postgres://a@db/x?connect_timeout=3&sslmode=require").0,
            "postgres://a@db/x?connect_timeout=3"
        );
        assert_eq!(
            tls_options("postgres://a@db/x"),
            ("postgres://a@db/x".to_owned(), TlsOptions::default())
        );
    }

    #[test]
    fn urls_are_shown_without_their_password() {
        assert_eq!(
            redact_url("postgres://ada:s3cret@db.example:5432/ledger"),
            "postgres://ada:***@db.example:5432/ledger"
        );
        assert_eq!(
            redact_url("postgres://ada:p@ss@db/ledger?sslmode=disable"),
            "postgres://ada:***@db/ledger?sslmode=disable"
        );
        assert_eq!(
            redact_url("postgresql://db/ledger?user=ada&password=s3cret"),
            "postgresql://db/ledger?user=ada&password=***"
        );
        assert_eq!(redact_url("postgres://ada@db/x"), "postgres://ada@db/x");
    }
}
