//! What an open WebSocket session costs the gateway in memory, and that a client that stops
//! reading does not grow it without bound: the real binary (`wasmgate serve`) in front of the
//! Realtime mock and the OpenAI mock, its anonymous memory read from `/proc/<pid>/smaps_rollup`
//! (as `idle_rss` does) before and after `SESSIONS` sessions of each kind:
//!
//! - Responses API sockets (`GET /v1/responses`), each after one turn, then idle;
//! - Realtime sessions (`GET /v1/realtime`), open and idle;
//! - the same Realtime sessions, each then asking the mock's flood model for 1,500 audio deltas
//!   of 64 KB and reading nothing: the gateway holds at most its queue and socket buffers of
//!   each, while the mock's sends stall.
//!
//! Each figure is printed per session; the bounds are several times today's, so that only a
//! session that keeps what it should not (a queue without bound, a response kept whole) fails.

use std::time::{Duration, Instant};

use futures_util::SinkExt;
use serde_json::json;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::common;
use crate::common::binary::Gateway;
use crate::common::gateway::UPSTREAM_KEY;
use crate::common::mock_openai::MockOpenAi;
use crate::common::mock_openai::responses::API_KEY;
use crate::common::mock_realtime::{self, MockRealtime};
use crate::common::websocket::{Socket, next_event};
use crate::idle_rss::rollup_kib;

/// Sessions of each kind.
const SESSIONS: usize = 32;
/// Bounds per session, in KiB. Today's (debug build, 2026-11-28) are in the test's output.
const IDLE_KIB_BOUND: u64 = 512;
/// A stalled session holds the 16 messages of its queue (64 KB each, as the flood's deltas
/// are), a read buffer and what tungstenite holds of a frame being written: about 1.2 MB.
const STALLED_KIB_BOUND: u64 = 4 << 10;

#[test]
fn open_sessions_cost_a_bounded_memory_and_clients_that_stop_reading_do_not_grow_it() {
    let _alone = super::one_at_a_time();
    super::mark_uncounted();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .on_thread_start(super::mark_uncounted)
        .build()
        .unwrap()
        .block_on(measure());
}

async fn measure() {
    let realtime = MockRealtime::start().await;
    let openai = MockOpenAi::start().await;
    let dir = common::binary::temp_dir("session-rss");
    let config = format!(
        "server:\n  host: 127.0.0.1\n  port: 0\n  websocket: {{ max_sessions_per_key: 200, \
         send_timeout_ms: 120000 }}\n\
         plugins: {{ cache_dir: {cache} }}\n\
         ledger: {{ url: 'sqlite://{db}' }}\n\
         providers:\n  \
           rt:\n    plugin: openai\n    base_url: {rt}\n    api_key: {UPSTREAM_KEY}\n    \
             models: [gpt-realtime, gpt-realtime-flood]\n  \
           openai:\n    plugin: openai\n    base_url: {oa}\n    api_key: {API_KEY}\n    \
             models: [gpt-4.1-mini]\n    options: {{ responses: native }}\n",
        cache = common::plugin_cache_dir().display(),
        db = dir.join("ledger.db").display(),
        rt = realtime.base_url(),
        oa = openai.base_url(),
    );
    let path = dir.join("config.yaml");
    std::fs::write(&path, config).unwrap();
    let gateway = Gateway::serve(&dir, &path).await;
    let pid = gateway.pid();
    let anonymous = || rollup_kib(pid, "Anonymous");
    // One session of each kind first: what the first of each builds once (plugin instances'
    // pools, the upstream's connection pool) is not a session's.
    drop(responses_socket(&gateway).await);
    drop(realtime_session(&gateway, "rt/gpt-realtime").await);
    tokio::time::sleep(Duration::from_millis(500)).await;

    let before = anonymous();
    let mut sockets = Vec::new();
    for _ in 0..SESSIONS {
        sockets.push(responses_socket(&gateway).await);
    }
    let responses = per_session(before, anonymous());

    let before = anonymous();
    let mut sessions = Vec::new();
    for _ in 0..SESSIONS {
        sessions.push(realtime_session(&gateway, "rt/gpt-realtime-flood").await);
    }
    let idle = per_session(before, anonymous());

    // Every session asks for the flood, then nobody reads.
    let before = anonymous();
    for session in &mut sessions {
        let create = json!({"type": "response.create"}).to_string();
        session.send(Message::text(create)).await.unwrap();
    }
    let stalled_after = stall(&realtime).await;
    let sent = realtime.sent();
    let stalled = per_session(before, anonymous());
    eprintln!(
        "memory per open session ({SESSIONS} of each, anonymous KiB of the gateway): Responses \
         socket after a turn {responses}, Realtime session idle {idle}, Realtime session whose \
         client stopped reading during a {} MB answer {stalled} (the mock's sends stalled after \
         {stalled_after:?}, {sent} deltas of {} sent in all)",
        mock_realtime::FLOOD_DELTAS * mock_realtime::FLOOD_BYTES * 4 / 3 / 1_000_000,
        SESSIONS * mock_realtime::FLOOD_DELTAS,
    );
    assert!(
        sent < SESSIONS * mock_realtime::FLOOD_DELTAS / 4,
        "{sent} deltas reached a gateway whose clients read nothing"
    );
    for (what, kib, bound) in [
        ("a Responses socket", responses, IDLE_KIB_BOUND),
        ("an idle Realtime session", idle, IDLE_KIB_BOUND),
        ("a stalled Realtime session", stalled, STALLED_KIB_BOUND),
    ] {
        assert!(
            kib <= bound,
            "{what} holds {kib} KiB, over its bound of {bound} KiB"
        );
    }
    drop((sockets, sessions));
    drop(gateway);
    let _ = std::fs::remove_dir_all(&dir);
}

/// KiB per session of the growth from `before` to `after`.
fn per_session(before: u64, after: u64) -> u64 {
    after.saturating_sub(before) / SESSIONS as u64
}

/// Waits until the mock's count of sent deltas stops moving (for a second), within 60 s.
async fn stall(mock: &MockRealtime) -> Duration {
    let started = Instant::now();
    let mut last = mock.sent();
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = mock.sent();
        if now == last && now > 0 {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the mock never stalled: {now} deltas sent"
        );
        last = now;
    }
}

async fn open(gateway: &Gateway, path: &str) -> Socket {
    let request = gateway
        .url(path)
        .replacen("http://", "ws://", 1)
        .into_client_request()
        .unwrap();
    tokio_tungstenite::connect_async(request).await.unwrap().0
}

/// A Responses socket that has completed one turn.
async fn responses_socket(gateway: &Gateway) -> Socket {
    let mut socket = open(gateway, "/v1/responses").await;
    let create = json!({"type": "response.create", "model": "openai/gpt-4.1-mini",
        "input": "Say hello."});
    socket
        .send(Message::text(create.to_string()))
        .await
        .unwrap();
    loop {
        let event = next_event(&mut socket).await;
        match event["type"].as_str() {
            Some("response.completed") => return socket,
            Some("error" | "response.failed") => panic!("the turn failed: {event}"),
            _ => {}
        }
    }
}

/// A Realtime session on `model`, its `session.created` read.
async fn realtime_session(gateway: &Gateway, model: &str) -> Socket {
    let mut socket = open(gateway, &format!("/v1/realtime?model={model}")).await;
    let created = next_event(&mut socket).await;
    assert_eq!(created["type"], "session.created", "{created}");
    socket
}
