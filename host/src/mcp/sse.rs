//! The older HTTP+SSE client transport (MCP 2024-11-05), which rmcp no longer ships: a `GET` on
//! the server's URL opens an event stream whose first `endpoint` event names where to `POST`
//! messages; the server's messages arrive as `message` events on the stream. The stream ending
//! ends the connection (the supervisor then connects again).

use std::borrow::Cow;
use std::time::Duration;

use futures_util::StreamExt;
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::mpsc;

/// How long the server has to name its endpoint.
const ENDPOINT_WAIT: Duration = Duration::from_secs(10);
/// Bytes of one message taken, at most (larger ones are dropped with the rest of the event).
const EVENT_MAX: usize = 16 * 1024 * 1024;

/// Why the SSE transport failed.
#[derive(Debug, thiserror::Error)]
pub enum SseError {
    #[error("{0}")]
    Http(String),
    #[error("the server answered {0}")]
    Status(u16),
    #[error("the server named no message endpoint")]
    NoEndpoint,
    #[error("the message endpoint `{0}` is not on the server's origin")]
    ForeignEndpoint(String),
}

/// One connection: the open stream (read by a task) and where messages are posted.
pub struct SseTransport {
    http: reqwest::Client,
    endpoint: reqwest::Url,
    token: Option<String>,
    incoming: mpsc::Receiver<RxJsonRpcMessage<RoleClient>>,
    reader: tokio::task::JoinHandle<()>,
}

impl SseTransport {
    /// Opens the stream at `url` and waits for its `endpoint` event.
    pub async fn connect(
        http: reqwest::Client,
        url: &str,
        token: Option<String>,
    ) -> Result<Self, SseError> {
        let base = reqwest::Url::parse(url).map_err(|e| SseError::Http(e.to_string()))?;
        let mut request = http.get(base.clone()).header("accept", "text/event-stream");
        if let Some(token) = &token {
            request = request.bearer_auth(token);
        }
        let response = request
            .send()
            .await
            .map_err(|e| SseError::Http(e.to_string()))?;
        if !response.status().is_success() {
            return Err(SseError::Status(response.status().as_u16()));
        }
        let mut events = sse_stream::SseStream::from_bytes_stream(response.bytes_stream());
        let first = tokio::time::timeout(ENDPOINT_WAIT, async {
            while let Some(event) = events.next().await {
                let event = event.map_err(|e| SseError::Http(e.to_string()))?;
                if event.event.as_deref() == Some("endpoint") {
                    return Ok(event.data.unwrap_or_default());
                }
            }
            Err(SseError::NoEndpoint)
        })
        .await
        .map_err(|_| SseError::NoEndpoint)??;
        let endpoint = base
            .join(first.trim())
            .map_err(|e| SseError::Http(e.to_string()))?;
        // The token goes to the server's own origin only.
        if endpoint.origin() != base.origin() {
            return Err(SseError::ForeignEndpoint(endpoint.to_string()));
        }
        let (tx, incoming) = mpsc::channel(64);
        let reader = tokio::spawn(async move {
            while let Some(Ok(event)) = events.next().await {
                let is_message = event.event.as_deref().is_none_or(|e| e == "message");
                let Some(data) = event.data.filter(|d| is_message && d.len() <= EVENT_MAX) else {
                    continue;
                };
                match serde_json::from_str::<RxJsonRpcMessage<RoleClient>>(&data) {
                    Ok(message) => {
                        if tx.send(message).await.is_err() {
                            return;
                        }
                    }
                    Err(e) => tracing::warn!("an MCP server sent an unreadable message: {e}"),
                }
            }
        });
        Ok(Self {
            http,
            endpoint,
            token,
            incoming,
            reader,
        })
    }
}

impl Transport<RoleClient> for SseTransport {
    type Error = SseError;

    fn name() -> Cow<'static, str> {
        "sse".into()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let mut request = self.http.post(self.endpoint.clone()).json(&item);
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        async move {
            let response = request
                .send()
                .await
                .map_err(|e| SseError::Http(e.to_string()))?;
            if response.status().is_success() {
                Ok(())
            } else {
                Err(SseError::Status(response.status().as_u16()))
            }
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.incoming.recv()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.reader.abort();
        std::future::ready(Ok(()))
    }
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}
