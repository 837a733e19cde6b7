//! A client socket on the gateway's WebSocket routes (the Responses API's WebSocket mode, the
//! Realtime API), and the HTTP refusal of an upgrade, shared by their tests.

use std::time::Duration;

use futures_util::StreamExt;
use serde_json::Value;
use tokio_tungstenite::tungstenite;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use super::TestGateway;

pub type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Opens a socket on `path` (with its query) of `gateway`, with `key` as the bearer key (none if
/// `None`).
pub async fn connect(
    gateway: &TestGateway,
    path: &str,
    key: Option<&str>,
) -> Result<Socket, tungstenite::Error> {
    let mut request = format!("ws://{}{path}", gateway.addr)
        .into_client_request()
        .unwrap();
    if let Some(key) = key {
        request
            .headers_mut()
            .insert("authorization", format!("Bearer {key}").parse().unwrap());
    }
    tokio_tungstenite::connect_async(request)
        .await
        .map(|(socket, _)| socket)
}

/// The status and JSON body of an upgrade on `path` the gateway refused.
pub async fn refused(gateway: &TestGateway, path: &str, key: Option<&str>) -> (u16, Value) {
    match connect(gateway, path, key).await {
        Err(tungstenite::Error::Http(response)) => {
            let body = response.body().clone().unwrap_or_default();
            (
                response.status().as_u16(),
                serde_json::from_slice(&body).unwrap_or(Value::Null),
            )
        }
        Err(other) => panic!("not an HTTP refusal: {other}"),
        Ok(_) => panic!("the upgrade was accepted"),
    }
}

/// The next text event on `socket` as JSON, within 10 s (other frames skipped); a close fails
/// the test, naming its frame.
pub async fn next_event(socket: &mut Socket) -> Value {
    loop {
        let message = tokio::time::timeout(Duration::from_secs(10), socket.next())
            .await
            .expect("a message within 10 s")
            .expect("the socket is open")
            .unwrap();
        match message {
            Message::Text(text) => return serde_json::from_str(&text).unwrap(),
            Message::Close(frame) => panic!("closed: {frame:?}"),
            _ => {}
        }
    }
}
