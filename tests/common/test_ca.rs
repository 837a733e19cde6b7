//! A throwaway certificate authority and a server certificate it signed for `127.0.0.1` and
//! `localhost`, made by the `openssl` command (`scripts/test.sh` installs it): for the
//! PostgreSQL ledger over TLS and the `https://` upstreams of `tls_front`.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::run;

/// The files [`issue`] wrote.
pub struct Issued {
    /// The CA's certificate: the one root a client trusts.
    pub ca: PathBuf,
    /// The server's certificate and key (PEM; the key readable by its owner only).
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// A CA and a server certificate it signed, written into `dir` (which must exist).
pub fn issue(dir: &Path) -> Issued {
    if Command::new("openssl").arg("version").output().is_err() {
        panic!(
            "the openssl command is missing (it makes the test's CA): apt-get install -y \
             openssl (scripts/test.sh does, as root)"
        );
    }
    let openssl = |args: &[&str]| run(Command::new("openssl").args(args).current_dir(dir));
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let ca = [
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=wasmgate test CA",
    ];
    openssl(&[&["req", "-x509"][..], &ec, &ca].concat());
    let request = [
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=localhost",
    ];
    openssl(&[&["req"][..], &ec, &request].concat());
    // A leaf, not a CA: webpki refuses a CA certificate as the server's own.
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName = IP:127.0.0.1, DNS:localhost\nbasicConstraints = CA:FALSE\n\
         keyUsage = digitalSignature, keyEncipherment\nextendedKeyUsage = serverAuth\n",
    )
    .unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.pem",
        "-days",
        "2",
        "-extfile",
        "server.ext",
    ]);
    let key = dir.join("server.key");
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    Issued {
        ca: dir.join("ca.pem"),
        cert: dir.join("server.pem"),
        key,
    }
}
