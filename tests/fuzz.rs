//! Property tests of the whole router with hostile requests: arbitrary and mutated bodies,
//! methods and headers on every route (`/v1/*`, `/usage/*`, the open ones, unknown paths),
//! driven through `tower::ServiceExt::oneshot` on the real app. Whatever comes in, the answer
//! is never a 5xx, every 4xx is an OpenAI-shaped JSON error (405s with `Allow`), and no error
//! body grows with the request. The seed is fixed and the cases counted, so it runs the same in
//! CI every time, in seconds.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeMap;
use std::sync::Mutex;

use axum::body::Body;
use axum::http::{Method, Request};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use serde_json::{Value, json};
use tower::ServiceExt;

/// Bytes of an error body at most, whatever the request held.
const ERROR_BODY_MAX: usize = 8 * 1024;
/// Larger bodies must get a JSON 413 (kept small so that fuzzed bodies cross it).
const MAX_BODY: usize = 64 * 1024;

/// Every route with the method it takes (and paths no route has).
const ROUTES: [(&str, Method); 15] = [
    ("/v1/chat/completions", Method::POST),
    ("/v1/embeddings", Method::POST),
    ("/v1/images/generations", Method::POST),
    ("/v1/completions", Method::POST),
    ("/v1/moderations", Method::POST),
    ("/v1/rerank", Method::POST),
    ("/v1/models", Method::GET),
    ("/v1/models/echo-1", Method::GET),
    ("/v1/batches", Method::POST),
    ("/v1/files", Method::GET),
    ("/usage/total", Method::POST),
    ("/usage/models", Method::POST),
    ("/health", Method::GET),
    ("/metrics", Method::GET),
    ("/v1/unknown", Method::POST),
];

/// One fuzzed request.
#[derive(Debug, Clone)]
struct Case {
    method: Method,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// A body that a route accepts, the start of every mutation.
fn valid_body(path: &str) -> Value {
    match path {
        "/v1/chat/completions" => json!({"model": "echo-1", "stream": false, "max_tokens": 5,
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
            "extra": {"user": {"id": "u1", "tags": ["a"]}, "metadata": {"k": "v"}}}),
        "/v1/embeddings" => json!({"model": "echo-1", "input": ["a", "b"]}),
        "/v1/images/generations" => json!({"model": "echo-1", "prompt": "a cat", "n": 1}),
        "/v1/completions" => json!({"model": "echo-1", "prompt": ["a", "b"], "max_tokens": 5}),
        "/v1/moderations" => json!({"model": "echo-1", "input": ["a", "b"]}),
        "/v1/rerank" => {
            json!({"model": "echo-1", "query": "a", "documents": ["a", "b"], "top_n": 1})
        }
        "/usage/models" => json!({"start_time_us": 0, "min_unit": "day", "user_tags": ["a"]}),
        "/v1/batches" => json!({"input_file_id": "file-abc", "endpoint": "/v1/chat/completions",
            "completion_window": "24h"}),
        _ => json!({"start_time_us": 0}),
    }
}

/// Any JSON value, nested a few levels, with strings from short to very long.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        text().prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            prop::collection::vec((text(), inner), 0..6)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
        ]
    })
}

/// Strings a hostile client sends: short words, control characters, and up to ~100 KB.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z_]{0,12}",
        2 => any::<String>(),
        1 => "[\\x00-\\x1f\u{202e}\u{200b}a]{1,20}",
        1 => (1usize..100_000, any::<char>()).prop_map(|(n, c)| c.to_string().repeat(n)),
    ]
}

/// The route's valid body with one field replaced, added or renamed by something hostile.
fn mutated_json(path: &'static str) -> impl Strategy<Value = Vec<u8>> {
    let known = prop::sample::select(vec![
        "model",
        "messages",
        "stream",
        "stream_options",
        "max_tokens",
        "extra",
        "input",
        "prompt",
        "query",
        "documents",
        "top_n",
        "n",
        "tools",
        "user",
        "start_time_us",
        "end_time_us",
        "min_unit",
        "user_id",
        "user_name",
        "user_tags",
        "role",
        "content",
    ]);
    let key = prop_oneof![known.prop_map(str::to_owned), text()];
    (key, any_json(), any::<bool>()).prop_map(move |(key, value, into_message)| {
        let mut body = valid_body(path);
        match body.pointer_mut("/messages/0") {
            Some(Value::Object(message)) if into_message => {
                message.insert(key, value);
            }
            _ => {
                if let Value::Object(fields) = &mut body {
                    fields.insert(key, value);
                }
            }
        }
        serde_json::to_vec(&body).unwrap()
    })
}

/// The route's valid body with bytes flipped, dropped or inserted.
fn mutated_bytes(path: &'static str) -> impl Strategy<Value = Vec<u8>> {
    let edits = prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..8);
    edits.prop_map(move |edits| {
        let mut bytes = serde_json::to_vec(&valid_body(path)).unwrap();
        for (at, byte, kind) in edits {
            let i = at.index(bytes.len().max(1));
            match kind {
                0 if i < bytes.len() => bytes[i] = byte,
                1 if i < bytes.len() => {
                    bytes.remove(i);
                }
                _ => bytes.insert(i.min(bytes.len()), byte),
            }
        }
        bytes
    })
}

fn body(path: &'static str) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => mutated_json(path),
        3 => mutated_bytes(path),
        2 => any_json().prop_map(|v| serde_json::to_vec(&v).unwrap()),
        1 => prop::collection::vec(any::<u8>(), 0..256),
        // Past server.max_body_bytes: a JSON 413 on every route that reads a body.
        1 => (MAX_BODY..MAX_BODY * 2).prop_map(|n| {
            let mut body = br#"{"model":"echo-1","pad":""#.to_vec();
            body.resize(n, b'x');
            body.extend_from_slice(b"\"}");
            body
        }),
        // Deep nesting.
        1 => (1usize..5_000).prop_map(|n| {
            format!(r#"{{"model":"echo-1","messages":{}{}}}"#, "[".repeat(n), "]".repeat(n))
                .into_bytes()
        }),
    ]
}

/// Header values a client can send (visible ASCII and spaces), sometimes very long.
fn header_value() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[ -~]{0,40}",
        1 => (1usize..20_000).prop_map(|n| "p".repeat(n)),
    ]
}

fn headers() -> impl Strategy<Value = Vec<(String, String)>> {
    let name = prop::sample::select(vec![
        "authorization",
        "x-project-id",
        "x-api-key",
        "content-type",
        "x-request-id",
        "traceparent",
        "content-encoding",
        "x-other",
    ]);
    let valid = prop_oneof![
        Just(("authorization".to_owned(), "Bearer {key}".to_owned())),
        Just(("x-project-id".to_owned(), "acme".to_owned())),
        Just(("x-project-id".to_owned(), "other".to_owned())),
        Just(("content-type".to_owned(), "application/json".to_owned())),
    ];
    let any = (name, header_value()).prop_map(|(n, v)| (n.to_owned(), v));
    prop::collection::vec(prop_oneof![2 => valid, 1 => any], 0..5)
}

fn case() -> impl Strategy<Value = Case> {
    (prop::sample::select(ROUTES.to_vec()), headers())
        .prop_flat_map(|((path, method), headers)| {
            let path_text = prop_oneof![
                4 => Just(path.to_owned()),
                1 => "[a-zA-Z0-9%/._~-]{0,64}".prop_map(|p| format!("/v1/models/{p}")),
            ];
            let method = prop_oneof![
                8 => Just(method),
                1 => prop::sample::select(vec![
                    Method::GET, Method::POST, Method::PUT, Method::DELETE, Method::PATCH,
                    Method::OPTIONS,
                ]),
            ];
            (path_text, method, Just(headers), body(path))
        })
        .prop_map(|(path, method, headers, body)| Case {
            method,
            path,
            headers,
            body,
        })
}

async fn check(
    app: axum::Router,
    key: &str,
    case: Case,
    seen: &Mutex<BTreeMap<u16, usize>>,
) -> Result<(), TestCaseError> {
    let mut request = Request::builder()
        .method(case.method.clone())
        .uri(&case.path);
    for (name, value) in &case.headers {
        request = request.header(name, value.replace("{key}", key));
    }
    // A path the generator made that is not a URI cannot be sent at all.
    let Ok(request) = request.body(Body::from(case.body.clone())) else {
        return Ok(());
    };
    let response = app.oneshot(request).await.unwrap();
    let status = response.status();
    *seen.lock().unwrap().entry(status.as_u16()).or_default() += 1;
    let allow = response.headers().get("allow").cloned();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    let what = format!(
        "{} {} with {} body bytes -> {status}",
        case.method,
        case.path,
        case.body.len()
    );
    prop_assert!(
        !status.is_server_error(),
        "{what}: {}",
        String::from_utf8_lossy(&bytes)
    );
    if status.is_client_error() {
        prop_assert!(
            bytes.len() <= ERROR_BODY_MAX,
            "{what}: an error body of {} bytes",
            bytes.len()
        );
        let body: Value = serde_json::from_slice(&bytes)
            .map_err(|_| TestCaseError::fail(format!("{what}: not JSON: {bytes:?}")))?;
        let error = &body["error"];
        prop_assert!(error["message"].is_string(), "{what}: {body}");
        prop_assert!(error["type"].is_string(), "{what}: {body}");
        prop_assert!(
            error.get("param").is_some() && error.get("code").is_some(),
            "{what}: {body}"
        );
        if status == 405 {
            prop_assert!(allow.is_some(), "{what}: no Allow header");
        }
    }
    Ok(())
}

#[test]
fn the_router_answers_any_request_without_5xx_and_with_small_openai_errors() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let config = common::gateway::Gateway::echo().set("server.max_body_bytes", 65536);
    let gateway = runtime.block_on(config.start());
    let key = runtime.block_on(gateway.api_key("acme"));
    let app = wasmgate::server::app(gateway.state.clone());
    let config = Config {
        cases: 1000,
        failure_persistence: None,
        max_shrink_iters: 200,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let seen = Mutex::new(BTreeMap::new());
    let result = runner.run(&case(), |case| {
        runtime.block_on(check(app.clone(), &key, case, &seen))
    });
    if let Err(failure) = result {
        panic!("{failure}");
    }
    // The cases reached every kind of answer, not only the first refusal on the way.
    let seen = seen.into_inner().unwrap();
    for status in [200, 400, 401, 403, 404, 405, 413] {
        assert!(
            seen.get(&status).is_some_and(|n| *n > 0),
            "no {status} in {seen:?}"
        );
    }
    eprintln!("statuses: {seen:?}");
}
