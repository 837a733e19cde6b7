//! The upstream's realtime socket: its URL from the provider entry's base URL (OpenAI's
//! `{base}/realtime?model=`, Azure OpenAI's v1 `{base}/openai/v1/realtime?model=`), its
//! credentials from the entry's plugin as for a pass-through request (the host never writes a
//! provider's auth), the URL through the entry's scope, then the connection (TLS by rustls with
//! the system's roots) and the handshake, all within the entry's timeout.

use std::sync::{Arc, OnceLock};

use axum::http::HeaderMap;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::time::timeout;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use crate::error::ApiError;
use crate::gateway::Provider;
use crate::pipeline::forward::{credentials, header_map};
use crate::plugins::{HttpRequest, PassthroughCall};
use crate::redact::Redactor;

/// A byte stream the socket runs over: plain TCP or TLS.
pub trait Io: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Io for T {}

/// The upstream's socket.
pub type Socket = WebSocketStream<Box<dyn Io>>;

/// What the upstream socket reads at a time (as the client's: see `responses_ws`).
const READ_BUFFER_BYTES: usize = 8 * 1024;

/// Client headers passed on: a beta client's protocol choice.
const FORWARDED: [&str; 1] = ["openai-beta"];

/// Opens the realtime socket of `provider`'s `model`, taking messages of at most `max_message`
/// bytes. Errors name no credential: the plugin's are redacted, the others are the host's.
pub async fn open(
    provider: &Provider,
    model: &str,
    client_headers: &HeaderMap,
    redactor: &Redactor,
    max_message: usize,
) -> Result<Socket, ApiError> {
    let failed = |detail: String| ApiError::BadUpstreamRequest {
        provider: provider.name.to_string(),
        detail,
    };
    let base = (provider.config.base_url.as_deref())
        .ok_or_else(|| failed("the entry has no base_url".to_owned()))?;
    let path = match provider.catalog.as_deref() {
        Some("azure-openai") => "/openai/v1/realtime",
        _ => "/realtime",
    };
    let forwarded: Vec<(String, String)> = (FORWARDED.iter())
        .filter_map(|name| {
            let value = client_headers.get(*name)?.to_str().ok()?;
            Some(((*name).to_owned(), value.to_owned()))
        })
        .collect();
    let call = PassthroughCall {
        method: "GET".to_owned(),
        path: path.to_owned(),
        headers: forwarded.clone(),
    };
    let auth = credentials(provider, &call, redactor).await?;
    let query = form_urlencoded::Serializer::new(String::new())
        .append_pair("model", model)
        .extend_pairs(&auth.query)
        .finish();
    let url = format!("{}{path}?{query}", base.trim_end_matches('/'));
    let admitted = (provider.scope)
        .admit(HttpRequest {
            method: "GET".to_owned(),
            url,
            headers: Vec::new(),
            body: Vec::new(),
        })
        .map_err(|refusal| failed(format!("its realtime URL {refusal}")))?;
    let headers = header_map(&forwarded, auth.headers, &provider.name)?;
    let url = admitted.url().clone();
    let connected = timeout(provider.timeout, connect(&url, headers, max_message)).await;
    match connected {
        Ok(Ok(socket)) => Ok(socket),
        Ok(Err(failure)) => Err(ApiError::UpstreamUnreachable {
            provider: provider.name.to_string(),
            detail: redactor.string(failure),
        }),
        Err(_) => Err(ApiError::UpstreamTimeout {
            provider: provider.name.to_string(),
        }),
    }
}

/// The connection and the handshake to `url` (`http(s)://`, spoken as `ws(s)://`).
async fn connect(
    url: &reqwest::Url,
    headers: HeaderMap,
    max_message: usize,
) -> Result<Socket, String> {
    let host = url.host_str().ok_or("the URL has no host")?.to_owned();
    let port = url.port_or_known_default().ok_or("the URL has no port")?;
    let tcp = TcpStream::connect((host.as_str(), port))
        .await
        .map_err(|e| format!("cannot reach {host}:{port}: {e}"))?;
    let _ = tcp.set_nodelay(true);
    let io: Box<dyn Io> = if url.scheme() == "https" {
        let name = rustls::pki_types::ServerName::try_from(host.clone())
            .map_err(|_| format!("{host} is not a TLS server name"))?;
        let tls = tls()?
            .connect(name, tcp)
            .await
            .map_err(|e| format!("TLS with {host}: {e}"))?;
        Box::new(tls)
    } else {
        Box::new(tcp)
    };
    let mut ws_url = url.clone();
    let scheme = if url.scheme() == "https" { "wss" } else { "ws" };
    ws_url
        .set_scheme(scheme)
        .map_err(|()| "the URL takes no ws scheme".to_owned())?;
    let mut request = ws_url
        .as_str()
        .into_client_request()
        .map_err(|e| format!("the handshake request: {e}"))?;
    request.headers_mut().extend(headers);
    let config = WebSocketConfig::default()
        .read_buffer_size(READ_BUFFER_BYTES)
        .max_message_size(Some(max_message))
        .max_frame_size(Some(max_message));
    let (socket, _) = tokio_tungstenite::client_async_with_config(request, io, Some(config))
        .await
        .map_err(|e| match e {
            // The upstream's status only: its body may repeat what it was sent.
            tokio_tungstenite::tungstenite::Error::Http(response) => {
                format!("the upstream refused the socket with {}", response.status())
            }
            other => format!("the handshake failed: {other}"),
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
