//! A TLS terminator in front of a plain mock: a certificate for 127.0.0.1 signed by a throwaway
//! CA (`test_ca`) and each TLS connection piped to the mock's port, so that a test can give the
//! gateway an `https://` upstream and trust that CA alone (`SSL_CERT_FILE`, which the gateway's
//! TLS roots are read from).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

pub struct TlsFront {
    pub addr: SocketAddr,
    /// The CA's PEM file: the one root a client of the front trusts.
    pub ca: PathBuf,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TlsFront {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TlsFront {
    /// A front on 127.0.0.1 for the plain server at `upstream`, its certificate in `dir`.
    pub async fn start(upstream: SocketAddr, dir: &Path) -> Self {
        let issued = super::postgres::test_ca::issue(dir);
        let chain = CertificateDer::pem_file_iter(&issued.cert)
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = PrivateKeyDer::from_pem_file(&issued.key).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap();
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(client).await else {
                        return;
                    };
                    let Ok(mut plain) = TcpStream::connect(upstream).await else {
                        return;
                    };
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                });
            }
        });
        Self {
            addr,
            ca: issued.ca,
            task,
        }
    }
}
