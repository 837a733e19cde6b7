//! Hostile input through the real gateway: client input is echoed only cut short (error bodies
//! and log lines stay small whatever the request's size), strings that reach the ledger, logs
//! and metrics are bounded and printable, every error (a wrong method, an oversized body on
//! `/usage`) is in OpenAI's shape, and request bodies share a budget of bytes held at once.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::binary::{self, Gateway};
use common::gateway::{Gateway as Config, Provider};
use common::http;
use common::mock_openai::MockOpenAi;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

/// Bytes of an error body at most, whatever the request held.
const ERROR_BODY_MAX: usize = 8 * 1024;
/// Bytes of a log line at most.
const LOG_LINE_MAX: usize = 16 * 1024;

const TEN_MB: usize = 10 * 1024 * 1024;

/// Sends `body` as JSON and returns the status and the error object, checking the error's
/// shape and that its body is small.
async fn error_of(request: reqwest::RequestBuilder) -> (u16, Value) {
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    assert!(
        text.len() <= ERROR_BODY_MAX,
        "an error body of {} bytes: {}…",
        text.len(),
        &text[..text.len().min(300)]
    );
    let body: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"));
    let error = body["error"].clone();
    for key in ["message", "type", "param", "code"] {
        assert!(error.get(key).is_some(), "`{key}` missing in {body}");
    }
    (status, error)
}

fn chat(model: &str) -> Value {
    json!({"model": model, "messages": [{"role": "user", "content": "hi"}]})
}

#[tokio::test]
async fn ten_megabytes_of_field_name_or_model_name_make_a_small_error_and_log_line() {
    let dir = binary::temp_dir("hostile-echo");
    let ledger = format!("sqlite://{}", dir.join("ledger.db").display());
    let created = Command::new(env!("CARGO_BIN_EXE_wasmgate"))
        .args(["keys", "create", "--project", "acme", "--ledger", &ledger])
        .output()
        .unwrap();
    assert!(created.status.success(), "{created:?}");
    let key = String::from_utf8(created.stdout).unwrap().trim().to_owned();
    let config = dir.join("config.yaml");
    let yaml = Config::echo().any_port().ledger(&ledger).to_yaml();
    std::fs::write(&config, yaml).unwrap();
    let mut gateway = Gateway::serve(&dir, &config).await;

    let field = "f".repeat(TEN_MB);
    let (status, error) = error_of(
        http()
            .post(gateway.url("/usage/total"))
            .bearer_auth(&key)
            .header("content-type", "application/json")
            .body(format!("{{\"{field}\": 1}}")),
    )
    .await;
    assert_eq!(status, 400, "{error}");
    let param = error["param"].as_str().unwrap_or("");
    assert!(param.contains("[cut: "), "{error}");

    let model = "m".repeat(TEN_MB);
    let (status, error) = error_of(
        http()
            .post(gateway.url("/v1/chat/completions"))
            .json(&chat(&model)),
    )
    .await;
    assert_eq!((status, error["param"].as_str()), (400, Some("model")));
    assert!(
        error["message"].as_str().unwrap().contains("[cut: "),
        "{error}"
    );

    let role = "r".repeat(TEN_MB);
    let body = json!({"model": "echo-1", "messages": [{"role": role, "content": "x"}]});
    let (status, error) =
        error_of(http().post(gateway.url("/v1/chat/completions")).json(&body)).await;
    assert_eq!(
        (status, error["param"].as_str()),
        (400, Some("messages[0].role"))
    );

    // All three were logged, each on a short line.
    gateway
        .wait_for_line(
            |l| l.contains("request failed") && l.contains("messages[0].role"),
            Duration::from_secs(10),
        )
        .await;
    let lines = gateway.lines();
    let failed = lines
        .iter()
        .filter(|l| l.contains("request failed"))
        .count();
    assert!(failed >= 3, "{lines:#?}");
    let longest = lines.iter().map(String::len).max().unwrap_or(0);
    assert!(longest <= LOG_LINE_MAX, "a log line of {longest} bytes");
}

#[tokio::test]
async fn project_ids_are_a_small_charset_and_refused_ones_are_not_stored() {
    let gateway = Config::echo().start().await;
    let send = |project: String, id: &'static str| {
        http()
            .post(gateway.url("/v1/chat/completions"))
            .header("x-project-id", project)
            .header("x-request-id", id)
            .json(&chat("echo-1"))
    };
    for (project, id) in [
        ("p".repeat(60 * 1024), "long-project"),
        ("acme/../other".to_owned(), "slash-project"),
        ("acme corp".to_owned(), "space-project"),
        ("p".repeat(65), "just-too-long"),
    ] {
        let (status, error) = error_of(send(project, id)).await;
        assert_eq!(status, 400, "{id}: {error}");
        assert_eq!(error["code"], "invalid_header", "{id}");
        assert_eq!(error["param"], "x-project-id", "{id}");
        // Recorded, but not under a project of the client's choosing.
        assert_eq!(gateway.record_of(id).await.project, "default", "{id}");
    }
    let ok = send("team-1.prod_2".to_owned(), "good-project")
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    assert_eq!(
        gateway.record_of("good-project").await.project,
        "team-1.prod_2"
    );
    let ok = send("p".repeat(64), "longest-project")
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    gateway.stop().await;
}

#[tokio::test]
async fn model_names_are_bounded_and_printable_and_so_are_metric_labels() {
    let mock = MockOpenAi::start().await;
    // No `models:`: any model name passes through to the upstream, and becomes a label.
    let openai = Provider::at("openai", &mock.base_url(), "sk-x");
    let gateway = Config::builder().provider("openai", openai).start().await;
    let url = gateway.url("/v1/chat/completions");
    for model in [
        format!("openai/{}", "m".repeat(300)),
        "openai/gpt\n4o".to_owned(),
        "openai/gpt-4o\u{1b}[31m".to_owned(),
        "openai/gpt\u{202e}4o".to_owned(),
    ] {
        let (status, error) = error_of(http().post(&url).json(&chat(&model))).await;
        assert_eq!(
            (status, error["param"].as_str()),
            (400, Some("model")),
            "{model:?}"
        );
        assert_eq!(error["code"], "invalid_value");
    }
    assert!(
        mock.requests().await.is_empty(),
        "a refused model reached the upstream"
    );

    // A long but valid name is served; its metric label is cut and marked.
    let long = format!("openai/{}", "m".repeat(200));
    let response = http().post(&url).json(&chat(&long)).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let metrics = gateway.metrics().await;
    let requests: Vec<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("wasmgate_requests_total{"))
        .collect();
    assert!(
        requests.iter().any(|l| l.contains("mmm…[cut: 200 bytes]")),
        "{requests:#?}"
    );
    let longest = metrics.lines().map(str::len).max().unwrap_or(0);
    assert!(longest < 400, "a metrics line of {longest} bytes");
    gateway.stop().await;
}

#[tokio::test]
async fn end_user_fields_are_bounded_in_count_and_length() {
    let gateway = Config::echo().start().await;
    let with = |extra: Value, user: Option<String>| {
        let mut body = chat("echo-1");
        body["extra"] = extra;
        if let Some(user) = user {
            body["user"] = user.into();
        }
        http().post(gateway.url("/v1/chat/completions")).json(&body)
    };
    let tags =
        |n: usize, len: usize| -> Vec<String> { (0..n).map(|i| format!("{i:0>len$}")).collect() };
    let metadata = |n: usize| -> Value {
        (0..n)
            .map(|i| (format!("k{i}"), Value::from("v")))
            .collect::<serde_json::Map<_, _>>()
            .into()
    };
    for (extra, user, param) in [
        (
            json!({"user": {"id": "u".repeat(257)}}),
            None,
            "extra.user.id",
        ),
        (json!({"user": {"user_id": "a\nb"}}), None, "extra.user.id"),
        (
            json!({"user": {"name": "n".repeat(257)}}),
            None,
            "extra.user.name",
        ),
        (
            json!({"user": {"tags": tags(17, 3)}}),
            None,
            "extra.user.tags",
        ),
        (
            json!({"user": {"tags": tags(2, 65)}}),
            None,
            "extra.user.tags",
        ),
        (json!({"metadata": metadata(17)}), None, "extra.metadata"),
        (
            json!({"metadata": {("k".repeat(65)): "v"}}),
            None,
            "extra.metadata",
        ),
        (
            json!({"metadata": {"k": "v".repeat(513)}}),
            None,
            "extra.metadata",
        ),
        (
            json!({"metadata": {"k": vec!["v"; 200]}}),
            None,
            "extra.metadata",
        ),
        (Value::Null, Some("u".repeat(257)), "user"),
    ] {
        let (status, error) = error_of(with(extra.clone(), user)).await;
        assert_eq!(
            (status, error["param"].as_str()),
            (400, Some(param)),
            "{extra}"
        );
    }
    // At the bounds, accepted and stored whole.
    let body = json!({"user": {"id": "u".repeat(256), "name": "n".repeat(256), "tags": tags(16, 64)},
                      "metadata": metadata(16)});
    let response = with(body, None)
        .header("x-request-id", "at-the-bounds")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let record = gateway.record_of("at-the-bounds").await;
    assert_eq!(record.user_id.map(|u| u.len()), Some(256));
    assert_eq!(record.user_tags, tags(16, 64));
    gateway.stop().await;
}

#[tokio::test]
async fn a_wrong_method_gets_405_in_openais_shape_with_allow() {
    let gateway = Config::echo().start().await;
    for (method, path, allowed) in [
        (reqwest::Method::POST, "/v1/models", "GET"),
        (reqwest::Method::DELETE, "/v1/models/echo-1", "GET"),
        (reqwest::Method::GET, "/v1/chat/completions", "POST"),
        (reqwest::Method::PUT, "/usage/total", "POST"),
        (reqwest::Method::POST, "/health", "GET"),
    ] {
        let response = http()
            .request(method.clone(), gateway.url(path))
            .send()
            .await
            .unwrap();
        let allow = response
            .headers()
            .get("allow")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        assert!(allow.contains(allowed), "{method} {path}: Allow: {allow:?}");
        let (status, error) = error_of_response(response).await;
        assert_eq!(status, 405, "{method} {path}");
        assert_eq!(error["code"], "method_not_allowed");
        assert_eq!(error["type"], "invalid_request_error");
    }
    // A model id that is not UTF-8 once decoded: a JSON 400, not axum's plain text.
    let (status, error) = error_of(http().get(gateway.url("/v1/models/%FF%FE"))).await;
    assert_eq!((status, error["param"].as_str()), (400, Some("model")));
    gateway.stop().await;
}

async fn error_of_response(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    let body: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text:?}"));
    (status, body["error"].clone())
}

#[tokio::test]
async fn an_oversized_body_on_usage_gets_the_same_json_413_as_v1() {
    let gateway = Config::echo()
        .set("server.max_body_bytes", 2048)
        .start()
        .await;
    let key = gateway.api_key("acme").await;
    let big = json!({"start_time_us": 0, "padding": "x".repeat(4096)});
    for path in ["/usage/total", "/usage/models", "/v1/chat/completions"] {
        let (status, error) =
            error_of(http().post(gateway.url(path)).bearer_auth(&key).json(&big)).await;
        assert_eq!(status, 413, "{path}");
        assert_eq!(error["code"], "request_too_large", "{path}");
    }
    gateway.stop().await;
}

#[tokio::test]
async fn json_nested_too_deep_is_refused_before_it_is_parsed() {
    let gateway = Config::echo().start().await;
    let deep = format!("{}{}", "[".repeat(65), "]".repeat(65));
    let body = format!(
        r#"{{"model": "echo-1", "messages": [{{"role": "user", "content": "x"}}], "x": {deep}}}"#
    );
    let (status, error) = error_of(
        http()
            .post(gateway.url("/v1/chat/completions"))
            .header("content-type", "application/json")
            .body(body),
    )
    .await;
    assert_eq!(
        (status, error["code"].as_str()),
        (400, Some("invalid_json"))
    );
    assert!(
        error["message"].as_str().unwrap().contains("nested"),
        "{error}"
    );
    gateway.stop().await;
}

#[tokio::test]
async fn bodies_share_a_budget_and_a_body_that_does_not_fit_gets_503() {
    let gateway = Config::echo()
        .set("server.max_body_bytes", 65536)
        .set("server.max_body_bytes_in_flight", 65536)
        .start()
        .await;
    let budget = || gateway.state.body_budget.available_kib();
    assert_eq!(budget(), 64);
    // A client that declares 64 KiB and sends a little: its body holds the whole budget.
    let mut slow = tokio::net::TcpStream::connect(gateway.addr).await.unwrap();
    slow.write_all(
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n\
          content-length: 65536\r\n\r\n{\"model\": \"echo-1\", ",
    )
    .await
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while budget() > 0 {
        assert!(Instant::now() < deadline, "the slow body reserved nothing");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // A body of unknown length (chunked) that does not fit is refused at once.
    let chunked = || {
        let body = chat("echo-1").to_string();
        let chunks = futures_util::stream::iter(
            body.into_bytes()
                .chunks(64)
                .map(|c| Ok::<_, std::io::Error>(c.to_vec()))
                .collect::<Vec<_>>(),
        );
        http()
            .post(gateway.url("/v1/chat/completions"))
            .header("content-type", "application/json")
            .body(reqwest::Body::wrap_stream(chunks))
    };
    let started = Instant::now();
    let response = chunked().send().await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(4), "it waited");
    assert_eq!(
        response
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap()),
        Some("1")
    );
    let (status, error) = error_of_response(response).await;
    assert_eq!((status, error["code"].as_str()), (503, Some("server_busy")));

    // The slow client leaves: its share comes back, and the same request is served.
    drop(slow);
    let deadline = Instant::now() + Duration::from_secs(10);
    while budget() < 64 {
        assert!(Instant::now() < deadline, "the budget was not given back");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let response = chunked().send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(budget(), 64);
    gateway.stop().await;
}

/// A body the provider plugin cannot hold in its memory is the client's 413, not a 502: the
/// plugin ran out of memory because of the body's size, and a smaller request still passes.
#[tokio::test]
async fn a_body_too_large_for_the_plugins_memory_is_a_413_not_a_502() {
    let gateway = Config::echo()
        .test_plugins()
        .set("plugins.memory_limit_mib", 16)
        .set("plugins.max_instances", 8)
        .start()
        .await;
    let url = gateway.url("/v1/chat/completions");
    let big = json!({
        "model": "echo-1",
        "messages": [{"role": "user", "content": "x".repeat(7 << 20)}],
    });
    let (status, error) = error_of(http().post(&url).json(&big)).await;
    assert_eq!(status, 413, "{error}");
    assert_eq!(error["code"], "request_too_large");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("16 MiB"), "{message}");
    let small = http()
        .post(&url)
        .json(&chat("echo-1"))
        .send()
        .await
        .unwrap();
    assert_eq!(small.status(), 200);
    gateway.stop().await;
}
