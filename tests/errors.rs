//! Every error a client can get, each in OpenAI's shape with the right status, and never a
//! secret in it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::gateway::Gateway;
use common::mock_openai::MockOpenAi;
use common::{TestGateway, http};
use serde_json::{Value, json};

/// Sends `body` to `path` and returns the status and the `error` object, checking its shape.
async fn error_of(gateway: &TestGateway, path: &str, body: reqwest::Body) -> (u16, Value) {
    let response = http()
        .post(gateway.url(path))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    assert!(response.headers().contains_key("x-request-id"));
    let text = response.text().await.unwrap();
    assert!(
        !text.contains("sk-upstream-secret"),
        "a secret leaked: {text}"
    );
    let body: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"));
    let error = body["error"].clone();
    for key in ["message", "type", "param", "code"] {
        assert!(error.get(key).is_some(), "`{key}` missing in {body}");
    }
    assert!(error["message"].as_str().is_some_and(|m| !m.is_empty()));
    (status, error)
}

fn chat(model: &str) -> reqwest::Body {
    json!({"model": model, "messages": [{"role": "user", "content": "hi"}]})
        .to_string()
        .into()
}

async fn setup() -> (MockOpenAi, TestGateway) {
    let mock = MockOpenAi::start().await;
    let gateway = Gateway::standard(&mock.base_url()).start().await;
    (mock, gateway)
}

#[tokio::test]
async fn malformed_or_mistyped_requests_get_400_naming_the_field() {
    let (mock, gateway) = setup().await;
    let path = "/v1/chat/completions";
    let (status, error) = error_of(&gateway, path, "{\"model\": ".into()).await;
    assert_eq!(
        (status, error["code"].as_str()),
        (400, Some("invalid_json"))
    );
    assert_eq!(error["type"], "invalid_request_error");

    let (status, error) = error_of(
        &gateway,
        path,
        json!({"model": "gpt-4o-mini"}).to_string().into(),
    )
    .await;
    assert_eq!((status, error["param"].as_str()), (400, Some("messages")));

    let body = json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "x"}], "max_tokens": "ten"});
    let (status, error) = error_of(&gateway, path, body.to_string().into()).await;
    assert_eq!((status, error["param"].as_str()), (400, Some("max_tokens")));
    assert!(error["message"].as_str().unwrap().contains("max_tokens"));

    let (status, error) = error_of(
        &gateway,
        "/v1/embeddings",
        json!({"model": "text-embedding-3-small"})
            .to_string()
            .into(),
    )
    .await;
    assert_eq!((status, error["param"].as_str()), (400, Some("input")));

    let (status, error) =
        error_of(&gateway, path, json!({"messages": []}).to_string().into()).await;
    assert_eq!((status, error["param"].as_str()), (400, Some("model")));
    assert!(
        mock.requests().await.is_empty(),
        "nothing bad reaches the upstream"
    );
}

#[tokio::test]
async fn unknown_and_ambiguous_models() {
    let (_mock, gateway) = setup().await;
    let path = "/v1/chat/completions";
    let (status, error) = error_of(&gateway, path, chat("no-such-model")).await;
    assert_eq!(
        (status, error["code"].as_str()),
        (404, Some("model_not_found"))
    );
    let (status, error) = error_of(&gateway, path, chat("openai/not-listed")).await;
    assert_eq!(
        (status, error["code"].as_str()),
        (404, Some("model_not_found"))
    );

    let (status, error) = error_of(&gateway, path, chat("shared-model")).await;
    assert_eq!(
        (status, error["code"].as_str()),
        (400, Some("ambiguous_model"))
    );
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("openai/shared-model") && message.contains("echo/shared-model"),
        "{message}"
    );
}

#[tokio::test]
async fn an_oversized_body_gets_413() {
    let mock = MockOpenAi::start().await;
    let gateway = Gateway::standard(&mock.base_url())
        .set("server.max_body_bytes", 2048)
        .start()
        .await;
    let big = "x".repeat(4096);
    let body = json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": big}]});
    let (status, error) = error_of(&gateway, "/v1/chat/completions", body.to_string().into()).await;
    assert_eq!(
        (status, error["code"].as_str()),
        (413, Some("request_too_large"))
    );
}

#[tokio::test]
async fn upstream_client_errors_are_passed_on_with_the_upstream_message() {
    let (_mock, gateway) = setup().await;
    let path = "/v1/chat/completions";
    let (status, error) = error_of(&gateway, path, chat("openai/error-400")).await;
    assert_eq!(status, 400);
    assert_eq!(
        error["message"],
        "Invalid value for 'temperature': must be at most 2."
    );
    assert_eq!(error["param"], "temperature");
    assert_eq!(error["code"], "invalid_value");

    let (status, error) = error_of(&gateway, path, chat("openai/error-401")).await;
    assert_eq!(
        (status, error["type"].as_str()),
        (401, Some("authentication_error"))
    );
    let (status, error) = error_of(&gateway, path, chat("openai/error-429")).await;
    assert_eq!(
        (status, error["code"].as_str()),
        (429, Some("rate_limit_exceeded"))
    );
    let (status, _) = error_of(&gateway, path, chat("openai/error-404")).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn upstream_failures_are_502_and_timeouts_504() {
    let (_mock, gateway) = setup().await;
    let path = "/v1/chat/completions";
    for model in ["openai/error-500", "openai/error-503", "openai/garbage"] {
        let (status, error) = error_of(&gateway, path, chat(model)).await;
        assert_eq!(status, 502, "{model}: {error}");
    }
    let started = std::time::Instant::now();
    let (status, error) = error_of(&gateway, path, chat("openai/slow")).await;
    assert_eq!(
        (status, error["code"].as_str()),
        (504, Some("upstream_timeout"))
    );
    assert!(
        started.elapsed() < std::time::Duration::from_millis(2900),
        "timed out at the configured 1.5 s"
    );

    let (status, _) = error_of(
        &gateway,
        "/v1/embeddings",
        json!({"model": "openai/error-500", "input": "x"})
            .to_string()
            .into(),
    )
    .await;
    assert_eq!(status, 502);
}

#[tokio::test]
async fn an_unreachable_upstream_is_502() {
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let gateway = Gateway::standard(&format!("http://127.0.0.1:{port}/v1"))
        .start()
        .await;
    let (status, error) =
        error_of(&gateway, "/v1/chat/completions", chat("openai/gpt-4o-mini")).await;
    assert_eq!(
        (status, error["code"].as_str()),
        (502, Some("upstream_error"))
    );
    assert!(error["message"].as_str().unwrap().contains("openai"));
}

#[tokio::test]
async fn unknown_routes_and_streamed_embeddings_are_rejected() {
    let (_mock, gateway) = setup().await;
    let (status, error) = error_of(&gateway, "/v1/nothing-here", "{}".into()).await;
    assert_eq!((status, error["code"].as_str()), (404, Some("unknown_url")));
    let body = json!({"model": "text-embedding-3-small", "input": "x", "stream": true});
    let (status, error) = error_of(&gateway, "/v1/embeddings", body.to_string().into()).await;
    assert_eq!((status, error["param"].as_str()), (400, Some("stream")));
}

#[tokio::test]
async fn the_sdk_surfaces_gateway_errors_as_api_errors() {
    let (_mock, gateway) = setup().await;
    let err = gateway
        .openai()
        .chat()
        .create_byot::<_, Value>(
            json!({"model": "nope", "messages": [{"role": "user", "content": "x"}]}),
        )
        .await
        .unwrap_err();
    match err {
        async_openai::error::OpenAIError::ApiError(api) => {
            assert_eq!(api.api_error.code.as_deref(), Some("model_not_found"));
            assert!(api.api_error.message.contains("nope"));
        }
        other => panic!("expected an API error, got {other:?}"),
    }
}
