//! Exhausted resources, against the real server: slow and idle connections are closed on their
//! deadlines while others are served, a slow body gets 408, the connection cap holds, open
//! streams cannot starve short requests (a further stream gets 503 and `/health` says so), and
//! a stream that outlasts every deadline is delivered whole.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use common::gateway::{Gateway, GatewayBuilder, Provider};
use common::{TestGateway, http};
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

/// Short deadlines, so that the tests take a second, not minutes.
const HEADER_MS: u64 = 400;
const IDLE_MS: u64 = 1_000;
const BODY_MS: u64 = 400;

fn short_deadlines() -> GatewayBuilder {
    Gateway::echo()
        .set("server.header_read_timeout_ms", HEADER_MS)
        .set("server.idle_timeout_ms", IDLE_MS)
        .set("server.body_read_timeout_ms", BODY_MS)
}

/// Reads from `tcp` until the peer closes it (or `limit` passes); how long that took.
async fn closed_within(tcp: &mut TcpStream, limit: Duration) -> Option<Duration> {
    let started = Instant::now();
    let mut buf = [0u8; 4096];
    loop {
        let left = limit.checked_sub(started.elapsed())?;
        match tokio::time::timeout(left, tcp.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => return Some(started.elapsed()),
            Ok(Ok(_)) => {}
            Err(_) => return None,
        }
    }
}

/// One HTTP/1.1 response read off `tcp`: status, head and body (by Content-Length).
async fn read_response(
    tcp: &mut (impl AsyncRead + Unpin),
    limit: Duration,
) -> Option<(u16, String, String)> {
    let read = async {
        let mut data = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&data[..end]).to_lowercase();
                let length = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                if data.len() >= end + 4 + length {
                    let status = head.get(9..12)?.parse().ok()?;
                    let body = String::from_utf8_lossy(&data[end + 4..end + 4 + length]);
                    return Some((status, head, body.into_owned()));
                }
            }
            let n = tcp.read(&mut buf).await.ok()?;
            if n == 0 {
                return None;
            }
            data.extend_from_slice(&buf[..n]);
        }
    };
    tokio::time::timeout(limit, read).await.ok().flatten()
}

const GET_HEALTH: &[u8] = b"GET /health HTTP/1.1\r\nhost: gateway\r\n\r\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slowloris_connections_are_closed_after_the_header_timeout_while_others_are_served() {
    let gateway = short_deadlines().start().await;
    const SLOW: usize = 60;
    let mut trickles = Vec::new();
    for _ in 0..SLOW {
        let mut tcp = TcpStream::connect(gateway.addr).await.unwrap();
        trickles.push(tokio::spawn(async move {
            tcp.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nhost: g\r\n")
                .await
                .unwrap();
            let started = Instant::now();
            let mut buf = [0u8; 256];
            // A header byte every 50 ms, for at most 5 s, until the gateway closes.
            for _ in 0..100 {
                tokio::select! {
                    read = tcp.read(&mut buf) => match read {
                        Ok(0) | Err(_) => return Some(started.elapsed()),
                        Ok(_) => {}
                    },
                    () = tokio::time::sleep(Duration::from_millis(50)) => {
                        if tcp.write_all(b"x").await.is_err() {
                            return Some(started.elapsed());
                        }
                    }
                }
            }
            None
        }));
    }
    // Meanwhile an ordinary request is answered at once.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    let response = http()
        .post(gateway.url("/v1/chat/completions"))
        .json(&json!({"model": "echo-1", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );

    for trickle in trickles {
        let closed = trickle
            .await
            .unwrap()
            .expect("a slowloris connection stayed open 5 s");
        // Closed on the header deadline, counted from the connection's opening.
        assert!(
            closed < Duration::from_millis(HEADER_MS + 1_000),
            "{closed:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_keep_alive_connection_is_closed_after_the_idle_timeout() {
    let gateway = short_deadlines().start().await;
    let mut tcp = TcpStream::connect(gateway.addr).await.unwrap();
    tcp.write_all(GET_HEALTH).await.unwrap();
    let (status, _, _) = read_response(&mut tcp, Duration::from_secs(2))
        .await
        .unwrap();
    assert_eq!(status, 200);
    // Kept alive: a second request on it is served.
    tcp.write_all(GET_HEALTH).await.unwrap();
    let (status, _, _) = read_response(&mut tcp, Duration::from_secs(2))
        .await
        .unwrap();
    assert_eq!(status, 200);
    let closed = closed_within(&mut tcp, Duration::from_secs(5))
        .await
        .expect("an idle connection stayed open 5 s");
    // The idle time, not the (shorter) header time, applies between requests.
    assert!(closed >= Duration::from_millis(IDLE_MS - 100), "{closed:?}");
    assert!(
        closed < Duration::from_millis(IDLE_MS + 1_000),
        "{closed:?}"
    );
}

/// An HTTP/2 frame: length, type, flags, stream id, payload.
fn h2_frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut frame = len.to_be_bytes()[1..].to_vec();
    frame.extend([kind, flags]);
    frame.extend(stream.to_be_bytes());
    frame.extend(payload);
    frame
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_http2_connection_gets_goaway_after_the_idle_timeout_despite_pings() {
    let gateway = short_deadlines().start().await;
    let mut tcp = TcpStream::connect(gateway.addr).await.unwrap();
    let mut hello = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    hello.extend(h2_frame(0x4, 0, 0, &[])); // SETTINGS
    // GET /health: :method GET, :scheme http (static table), :path and :authority literals.
    let mut block = vec![0x82, 0x86, 0x04, 7];
    block.extend(b"/health");
    block.extend([0x01, 1, b'g']);
    hello.extend(h2_frame(0x1, 0x5, 1, &block)); // HEADERS, END_STREAM | END_HEADERS
    tcp.write_all(&hello).await.unwrap();
    let started = Instant::now();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    let mut goaway = None;
    let mut answered = false;
    // Reads frames, sending a PING every 200 ms, for at most 5 s.
    for i in 0..25u64 {
        tokio::select! {
            read = tcp.read(&mut buf) => match read {
                Ok(0) | Err(_) => break,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            },
            () = tokio::time::sleep(Duration::from_millis(200)) => {
                if tcp.write_all(&h2_frame(0x6, 0, 0, &i.to_be_bytes())).await.is_err() {
                    break;
                }
            }
        }
        // Frames: walk what arrived so far, looking for the answer and a GOAWAY.
        let mut at = 0;
        while seen.len() >= at + 9 {
            let len = u32::from_be_bytes([0, seen[at], seen[at + 1], seen[at + 2]]) as usize;
            let stream =
                u32::from_be_bytes([seen[at + 5], seen[at + 6], seen[at + 7], seen[at + 8]]);
            match seen[at + 3] {
                // HEADERS on stream 1 starting with `:status: 200` from the static table.
                0x1 if stream == 1 => answered |= seen.get(at + 9) == Some(&0x88),
                0x7 if goaway.is_none() => goaway = Some(started.elapsed()),
                _ => {}
            }
            at += 9 + len;
        }
        if goaway.is_some() {
            break;
        }
    }
    assert!(answered, "no 200 answer to the HTTP/2 request");
    let goaway = goaway.expect("no GOAWAY within 5 s: the idle HTTP/2 connection stayed open");
    // Pings every 200 ms did not keep it open, nor did they close it on the header time.
    assert!(goaway >= Duration::from_millis(IDLE_MS - 100), "{goaway:?}");
    assert!(
        goaway < Duration::from_millis(IDLE_MS + 1_000),
        "{goaway:?}"
    );
}

/// Sends `head` and the start of a 200-byte body to `path`, then a byte every 50 ms; the
/// status and JSON body of the answer, and how long it took.
async fn slow_body(gateway: &TestGateway, path: &str, head: &str) -> (u16, Value, Duration) {
    let (mut reader, mut tcp) = TcpStream::connect(gateway.addr).await.unwrap().into_split();
    let request = format!(
        "POST {path} HTTP/1.1\r\nhost: g\r\n{head}content-type: application/json\r\n\
         content-length: 200\r\n\r\n{{\"model\": \"echo-1\", "
    );
    tcp.write_all(request.as_bytes()).await.unwrap();
    let started = Instant::now();
    let trickle = async {
        for _ in 0..40 {
            tokio::time::sleep(Duration::from_millis(50)).await;
            if tcp.write_all(b" ").await.is_err() {
                break;
            }
        }
    };
    let (response, ()) = tokio::join!(read_response(&mut reader, Duration::from_secs(5)), trickle);
    let (status, _, body) = response.expect("no answer to a slow body within 5 s");
    let body = serde_json::from_str(&body).unwrap_or_else(|_| Value::String(body));
    (status, body, started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_does_not_arrive_in_time_gets_408_in_openais_shape() {
    let gateway = short_deadlines().start().await;
    let key = gateway.api_key("p").await;
    let auth = format!("authorization: Bearer {key}\r\n");
    for (path, head) in [
        ("/v1/chat/completions", ""),
        ("/usage/total", auth.as_str()),
    ] {
        let (status, body, took) = slow_body(&gateway, path, head).await;
        assert_eq!(status, 408, "{path}: {body}");
        assert!(
            took < Duration::from_millis(BODY_MS + 1_000),
            "{path}: {took:?}"
        );
        assert_eq!(body["error"]["code"], "request_timeout", "{path}: {body}");
        assert_eq!(body["error"]["type"], "invalid_request_error", "{body}");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(&format!("{BODY_MS} ms")), "{body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_connection_cap_holds_the_next_connection_until_one_closes() {
    const CAP: usize = 3;
    // Long deadlines: the open connections must stay open by themselves.
    let gateway = Gateway::echo()
        .set("server.max_connections", CAP)
        .set("server.header_read_timeout_ms", 10_000)
        .set("server.idle_timeout_ms", 10_000)
        .start()
        .await;
    let mut open = Vec::new();
    for _ in 0..CAP {
        let mut tcp = TcpStream::connect(gateway.addr).await.unwrap();
        tcp.write_all(GET_HEALTH).await.unwrap();
        let (status, _, _) = read_response(&mut tcp, Duration::from_secs(2))
            .await
            .unwrap();
        assert_eq!(status, 200);
        open.push(tcp);
    }
    // The kernel completes the handshake (the listen backlog), but nobody serves it.
    let mut next = TcpStream::connect(gateway.addr).await.unwrap();
    next.write_all(GET_HEALTH).await.unwrap();
    let early = read_response(&mut next, Duration::from_millis(700)).await;
    assert!(early.is_none(), "served past the cap: {early:?}");
    // One closes: the waiting connection is accepted and answered.
    drop(open.pop());
    let (status, _, _) = read_response(&mut next, Duration::from_secs(3))
        .await
        .expect("not served after a connection closed");
    assert_eq!(status, 200);
}

/// A mock OpenAI upstream whose streams send their first chunk, then wait for the gate to open
/// (at most 10 s), then finish.
struct GatedUpstream {
    addr: SocketAddr,
    gate: watch::Sender<bool>,
    streams: Arc<AtomicUsize>,
}

fn chunk(content: &str, finish: Option<&str>) -> String {
    let chunk = json!({"id": "chatcmpl-gated", "object": "chat.completion.chunk",
        "created": 1_700_000_000, "model": "held",
        "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": finish}]});
    format!("data: {chunk}\n\n")
}

async fn gated_chat(
    State((gate, streams)): State<(watch::Receiver<bool>, Arc<AtomicUsize>)>,
    body: Bytes,
) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or_default();
    if request["stream"] != true {
        return axum::Json(json!({
            "id": "chatcmpl-quick", "object": "chat.completion", "created": 1_700_000_000,
            "model": request["model"],
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "quick"}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}
        }))
        .into_response();
    }
    streams.fetch_add(1, Ordering::SeqCst);
    let events = futures_util::stream::iter(0..3).then(move |i| {
        let mut gate = gate.clone();
        async move {
            let text = match i {
                0 => chunk("first ", None),
                1 => {
                    let _ =
                        tokio::time::timeout(Duration::from_secs(10), gate.wait_for(|o| *o)).await;
                    chunk("second", None)
                }
                _ => format!(
                    "{}data: {}\n\ndata: [DONE]\n\n",
                    chunk("", Some("stop")),
                    json!({"id": "chatcmpl-gated", "object": "chat.completion.chunk",
                           "created": 1_700_000_000, "model": "held", "choices": [],
                           "usage": {"prompt_tokens": 3, "completion_tokens": 2,
                                     "total_tokens": 5}})
                ),
            };
            Ok::<_, std::convert::Infallible>(Bytes::from(text))
        }
    });
    (
        [("content-type", "text/event-stream")],
        Body::from_stream(events),
    )
        .into_response()
}

impl GatedUpstream {
    async fn start() -> Self {
        let (gate, rx) = watch::channel(false);
        let streams = Arc::new(AtomicUsize::new(0));
        let app = Router::new()
            .route("/v1/chat/completions", post(gated_chat))
            .with_state((rx, Arc::clone(&streams)));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.ok() });
        Self {
            addr,
            gate,
            streams,
        }
    }

    /// A gateway with one `mock` entry of the `openai` plugin on this upstream, serving `held`
    /// and `quick`, with `max_instances` plugin instances.
    fn config(&self, max_instances: u64) -> GatewayBuilder {
        // The pool these tests load is the provider plugin's, and a plain request (issue 38)
        // takes no instance: the entry calls its plugin for every request.
        let entry = Provider::at("openai", &format!("http://{}/v1", self.addr), "sk-upstream")
            .models(["held", "quick"])
            .timeout_ms(15_000)
            .set("plain_path", false);
        Gateway::builder()
            .test_plugins()
            .set("plugins.max_instances", max_instances)
            .provider("mock", entry)
    }

    fn open(&self) {
        self.gate.send_replace(true);
    }
}

fn chat(stream: bool, model: &str) -> Value {
    json!({"model": model, "stream": stream, "messages": [{"role": "user", "content": "hi"}]})
}

/// Starts a stream and returns its body once the first chunk arrived.
async fn open_stream(
    gateway: &TestGateway,
) -> futures_util::stream::BoxStream<'static, reqwest::Result<Bytes>> {
    let response = http()
        .post(gateway.url("/v1/chat/completions"))
        .json(&chat(true, "held"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut body = response.bytes_stream().boxed();
    let first = tokio::time::timeout(Duration::from_secs(5), body.next())
        .await
        .expect("no first chunk within 5 s")
        .unwrap()
        .unwrap();
    assert!(String::from_utf8_lossy(&first).contains("first"));
    body
}

/// Reads a stream to its end (at most 10 s); its text.
async fn rest(
    mut body: futures_util::stream::BoxStream<'static, reqwest::Result<Bytes>>,
) -> String {
    let mut text = String::new();
    let read = async {
        while let Some(chunk) = body.next().await {
            text.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        }
    };
    tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .expect("the stream did not end within 10 s");
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_streams_cannot_starve_short_requests_and_a_further_stream_gets_503() {
    const WAIT_MS: u64 = 300;
    let upstream = GatedUpstream::start().await;
    // 4 instances, half of them for streams.
    let gateway = upstream
        .config(4)
        .set("plugins.stream_share_percent", 50)
        .set("plugins.instance_wait_ms", WAIT_MS)
        .start()
        .await;
    let held = [open_stream(&gateway).await, open_stream(&gateway).await];
    assert_eq!(upstream.streams.load(Ordering::SeqCst), 2);

    // A whole answer still finds an instance, at once.
    let started = Instant::now();
    let response = http()
        .post(gateway.url("/v1/chat/completions"))
        .json(&chat(false, "quick"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        started.elapsed() < Duration::from_millis(WAIT_MS),
        "{:?}",
        started.elapsed()
    );

    // A third stream waits for the deadline, then gets 503 in OpenAI's shape.
    let started = Instant::now();
    let response = http()
        .post(gateway.url("/v1/chat/completions"))
        .json(&chat(true, "held"))
        .timeout(Duration::from_secs(5))
        .send()
        .await
        .expect("no answer within 5 s: the wait for an instance has no deadline");
    let took = started.elapsed();
    assert_eq!(response.status(), 503);
    assert_eq!(response.headers()["retry-after"], "1");
    assert!(took >= Duration::from_millis(WAIT_MS - 50), "{took:?}");
    assert!(took < Duration::from_millis(WAIT_MS + 1_000), "{took:?}");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "gateway_saturated", "{body}");
    assert_eq!(body["error"]["type"], "api_error", "{body}");
    assert_eq!(
        upstream.streams.load(Ordering::SeqCst),
        2,
        "the upstream saw it"
    );

    // Health says so, for a load balancer.
    let health = http().get(gateway.url("/health")).send().await.unwrap();
    assert_eq!(health.status(), 503);
    let health: Value = health.json().await.unwrap();
    assert_eq!(health["status"], "saturated", "{health}");
    assert_eq!(health["plugin_instances"]["streams"], 2, "{health}");
    assert_eq!(health["plugin_instances"]["max_streams"], 2, "{health}");
    let metrics = gateway.metrics().await;
    assert!(
        metrics.contains("wasmgate_plugin_instance_wait_timeouts_total{use=\"stream\"} 1"),
        "{metrics}"
    );

    // The streams end whole; then health is ok and streams flow again.
    upstream.open();
    for body in held {
        let text = rest(body).await;
        assert!(
            text.contains("second") && text.ends_with("data: [DONE]\n\n"),
            "{text}"
        );
    }
    let mut ok = false;
    for _ in 0..50 {
        let health = http().get(gateway.url("/health")).send().await.unwrap();
        if health.status() == 200 {
            let health: Value = health.json().await.unwrap();
            assert_eq!(health["status"], "ok");
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(ok, "health did not come back after the streams ended");
    // The gate is open: the whole stream may come in one piece.
    let response = http()
        .post(gateway.url("/v1/chat/completions"))
        .json(&chat(true, "held"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    assert!(
        text.contains("first") && text.ends_with("data: [DONE]\n\n"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_outlasts_every_deadline_is_delivered_whole() {
    let upstream = GatedUpstream::start().await;
    let gateway = upstream
        .config(8)
        .set("server.header_read_timeout_ms", 200)
        .set("server.idle_timeout_ms", 200)
        .set("server.body_read_timeout_ms", 200)
        .start()
        .await;
    let body = open_stream(&gateway).await;
    // Silent for five times every deadline, between two chunks of the same response.
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    upstream.open();
    let text = rest(body).await;
    assert!(text.contains("second"), "{text}");
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
}
