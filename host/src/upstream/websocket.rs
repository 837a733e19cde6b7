//! A client WebSocket to an upstream: the connection (TLS by rustls with the system's roots)
//! and the handshake. What it is opened with (the URL, the credentials, the scope check) is the
//! caller's: `pipeline::forward::upstream_socket` for an entry's sockets (the Realtime API's,
//! the Responses API's WebSocket mode).

use std::sync::{Arc, OnceLock};

use axum::http::HeaderMap;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

/// A byte stream the socket runs over: plain TCP or TLS.
pub trait Io: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Io for T {}

/// An upstream's socket.
pub type Socket = WebSocketStream<Box<dyn Io>>;

/// What an upstream socket reads at a time (as the client's: see `server::responses_ws`).
const READ_BUFFER_BYTES: usize = 8 * 1024;

/// Why a socket could not be opened. Neither names a credential.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The upstream answered the upgrade with this status (its body may repeat what it was
    /// sent, so it is not kept).
    #[error("the upstream refused the socket with {0}")]
    Refused(axum::http::StatusCode),
    #[error("{0}")]
    Failed(String),
}

/// The connection and the handshake to `url` (`http(s)://`, spoken as `ws(s)://`), with
/// `headers`, taking messages of at most `max_message` bytes.
pub async fn connect(
    url: &reqwest::Url,
    headers: HeaderMap,
    max_message: usize,
) -> Result<Socket, ConnectError> {
    let failed = ConnectError::Failed;
    let host = (url.host_str())
        .ok_or_else(|| failed("the URL has no host".to_owned()))?
        .to_owned();
    let port = (url.port_or_known_default()).ok_or_else(|| failed("the URL has no port".into()))?;
    let tcp = TcpStream::connect((host.as_str(), port))
        .await
        .map_err(|e| failed(format!("cannot reach {host}:{port}: {e}")))?;
    let _ = tcp.set_nodelay(true);
    let io: Box<dyn Io> = if url.scheme() == "https" {
        let name = rustls::pki_types::ServerName::try_from(host.clone())
            .map_err(|_| failed(format!("{host} is not a TLS server name")))?;
        let tls = tls()
            .map_err(failed)?
            .connect(name, tcp)
            .await
            .map_err(|e| failed(format!("TLS with {host}: {e}")))?;
        Box::new(tls)
    } else {
        Box::new(tcp)
    };
    let mut ws_url = url.clone();
    let scheme = if url.scheme() == "https" { "wss" } else { "ws" };
    ws_url
        .set_scheme(scheme)
        .map_err(|()| failed("the URL takes no ws scheme".to_owned()))?;
    let mut request = ws_url
        .as_str()
        .into_client_request()
        .map_err(|e| failed(format!("the handshake request: {e}")))?;
    request.headers_mut().extend(headers);
    let config = WebSocketConfig::default()
        .read_buffer_size(READ_BUFFER_BYTES)
        .max_message_size(Some(max_message))
        .max_frame_size(Some(max_message));
    let (socket, _) = tokio_tungstenite::client_async_with_config(request, io, Some(config))
        .await
        .map_err(|e| match e {
            tokio_tungstenite::tungstenite::Error::Http(response) => {
                ConnectError::Refused(response.status())
            }
            other => failed(format!("the handshake failed: {other}")),
        })?;
    Ok(socket)
}

/// One TLS client for every upstream socket, trusting the system's roots.
fn tls() -> Result<tokio_rustls::TlsConnector, String> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
    let config = CONFIG.get_or_init(|| {
        let mut roots = rustls::RootCertStore::empty();
        roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS: {e}"))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Arc::new(config))
    });
    config.clone().map(tokio_rustls::TlsConnector::from)
}
