//! A mock upstream that records each request byte for byte (method, path, headers in order,
//! body) and answers with fixed bytes chosen by the request's `model`, so that two ways of
//! sending the same request can be compared as the upstream saw them.
//!
//! | model | answer |
//! |---|---|
//! | anything, on `/embeddings` | an embeddings list with usage |
//! | anything, `"stream": true` | a chat stream in pieces split inside events, usage, `[DONE]` |
//! | anything | a chat completion with usage |
//! | `error-429` | 429 with OpenAI's error body |
//! | `garbage` | 200 with a body that is not JSON |
//! | `broken-stream` | a stream whose second event is an `error` chunk |

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::Response;
use futures_util::StreamExt;

/// One request as it arrived.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawRequest {
    pub method: String,
    pub path: String,
    /// In the order they came, names lower-cased (as HTTP/1 parsers give them), values as text.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

pub const COMPLETION: &str = r#"{"id":"chatcmpl-raw","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"Hi there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":11,"completion_tokens":3,"total_tokens":14,"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":1}}}"#;
pub const EMBEDDINGS: &str = r#"{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.25,-0.5]}],"model":"text-embedding-3-small","usage":{"prompt_tokens":5,"total_tokens":5}}"#;
const RATE_LIMITED: &str = r#"{"error":{"message":"Rate limit reached for requests.","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#;

/// The stream's pieces: split inside an event and between `\r\n` line endings on purpose.
const STREAM: &[&str] = &[
    ": keep-alive\n\ndata: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hi\"},\"finish_reason\":null}]}\n\ndata: {\"id\":\"c1\",\"object\":\"chat.comp",
    "letion.chunk\",\"created\":1,\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" there\"},\"finish_reason\":null}]}\r\n\r",
    "\ndata: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o-mini\",\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":2,\"total_tokens\":13}}\n\ndata: [DONE]\n\n",
];

const BROKEN_STREAM: &[&str] = &[
    "data: {\"id\":\"c2\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"broken-stream\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\n\n",
    "data: {\"error\":{\"message\":\"The server is overloaded.\",\"code\":\"server_overloaded\"}}\n\ndata: [DONE]\n\n",
];

#[derive(Default)]
struct Shared {
    requests: Mutex<Vec<RawRequest>>,
}

pub struct MockRaw {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl MockRaw {
    pub async fn start() -> Self {
        let shared = Arc::new(Shared::default());
        let app = Router::new()
            .fallback(answer)
            .with_state(Arc::clone(&shared));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(listener, app).await.ok();
        });
        Self { addr, shared }
    }

    /// `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Every request so far, taken (the next call sees only later ones).
    pub fn take(&self) -> Vec<RawRequest> {
        std::mem::take(&mut *self.shared.requests.lock().unwrap())
    }
}

async fn answer(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 1 << 20).await.unwrap();
    let headers = parts
        .headers
        .iter()
        .map(|(name, value)| {
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            (name.as_str().to_owned(), value)
        })
        .collect();
    shared.requests.lock().unwrap().push(RawRequest {
        method: parts.method.to_string(),
        path: parts.uri.to_string(),
        headers,
        body: body.to_vec(),
    });
    let json: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let model = json["model"].as_str().unwrap_or_default();
    let stream = json["stream"].as_bool().unwrap_or(false);
    match (model, stream) {
        ("error-429", _) => whole(StatusCode::TOO_MANY_REQUESTS, RATE_LIMITED),
        ("garbage", _) => whole(StatusCode::OK, "<html>not json</html>"),
        ("broken-stream", true) => pieces(BROKEN_STREAM),
        (_, true) => pieces(STREAM),
        _ if parts.uri.path().ends_with("/embeddings") => whole(StatusCode::OK, EMBEDDINGS),
        _ => whole(StatusCode::OK, COMPLETION),
    }
}

fn whole(status: StatusCode, body: &'static str) -> Response {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(body))
        .unwrap()
}

/// `pieces` as separate body chunks, a few milliseconds apart so that each arrives on its own.
fn pieces(pieces: &'static [&'static str]) -> Response {
    let chunks = futures_util::stream::iter(pieces.iter()).then(|piece| async move {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        Ok::<_, std::convert::Infallible>(Bytes::from_static(piece.as_bytes()))
    });
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(chunks))
        .unwrap()
}
