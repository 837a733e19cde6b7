//! API keys and projects through the real gateway: `/usage/*` always needs a key of the project
//! it asks about; `/v1/*` needs one with `auth.required`, and on an open gateway a valid key still
//! decides where usage goes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use async_openai::types::chat::CreateChatCompletionRequestArgs;
use common::gateway::Gateway;
use common::mock_openai::{MockOpenAi, PROMPT_TOKENS};
use common::{TestGateway, http};
use serde_json::{Value, json};

async fn post(
    gateway: &TestGateway,
    path: &str,
    key: Option<&str>,
    project: Option<&str>,
    body: Value,
) -> (u16, Value) {
    let mut request = http().post(gateway.url(path)).json(&body);
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    if let Some(project) = project {
        request = request.header("x-project-id", project);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

fn chat() -> Value {
    json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]})
}

fn assert_error(status: u16, body: &Value, want_status: u16, code: &str) {
    assert_eq!(status, want_status, "{body}");
    let error = &body["error"];
    assert_eq!(error["code"], code, "{body}");
    assert!(
        error["type"].is_string() && error.get("param").is_some(),
        "{body}"
    );
    assert!(error["message"].as_str().is_some_and(|m| !m.is_empty()));
}

#[tokio::test]
async fn usage_endpoints_need_a_key_of_the_project_asked_about() {
    let mock = MockOpenAi::start().await;
    let gateway = Gateway::standard(&mock.base_url()).start().await;
    let acme = gateway.api_key("acme").await;
    let other = gateway.api_key("other").await;
    for path in ["/usage/total", "/usage/models"] {
        let (status, body) = post(&gateway, path, None, Some("acme"), json!({})).await;
        assert_error(status, &body, 401, "missing_api_key");
        let (status, body) =
            post(&gateway, path, Some("wg-made-up"), Some("acme"), json!({})).await;
        assert_error(status, &body, 401, "invalid_api_key");
        let (status, body) = post(&gateway, path, Some(&other), Some("acme"), json!({})).await;
        assert_error(status, &body, 403, "project_mismatch");
        let (status, body) = post(&gateway, path, Some(&acme), Some("acme"), json!({})).await;
        assert_eq!(status, 200, "{body}");
        // Without x-project-id the key's own project is used.
        let (status, _) = post(&gateway, path, Some(&acme), None, json!({})).await;
        assert_eq!(status, 200);
    }
    // Auth comes before the body: a bad body from a stranger is still a 401.
    let (status, body) = post(&gateway, "/usage/total", None, None, json!({"x": 1})).await;
    assert_error(status, &body, 401, "missing_api_key");

    // A revoked key is refused (this one was never looked up, so no cache hides it).
    let (revoked, stored) = wasmgate::auth::generate("acme", None, 0);
    let store = gateway.state.ledger.store();
    store.insert_key(&stored).unwrap();
    assert!(store.revoke_key(&stored.id, 1).unwrap());
    let (status, body) = post(
        &gateway,
        "/usage/total",
        Some(&revoked),
        Some("acme"),
        json!({}),
    )
    .await;
    assert_error(status, &body, 401, "invalid_api_key");
    gateway.stop().await;
}

#[tokio::test]
async fn projects_see_only_their_own_usage() {
    let mock = MockOpenAi::start().await;
    let gateway = Gateway::standard(&mock.base_url()).start().await;
    let (acme, other) = (
        gateway.api_key("acme").await,
        gateway.api_key("other").await,
    );
    // Open gateway: the key decides the project, whatever x-project-id a stranger claims.
    for (key, n) in [(&acme, 2), (&other, 1)] {
        for _ in 0..n {
            let (status, body) =
                post(&gateway, "/v1/chat/completions", Some(key), None, chat()).await;
            assert_eq!(status, 200, "{body}");
        }
    }
    let total = |key: String, project: &'static str| {
        let gateway = &gateway;
        async move {
            for _ in 0..100 {
                let (_, body) = post(
                    gateway,
                    "/usage/total",
                    Some(&key),
                    Some(project),
                    json!({}),
                )
                .await;
                let tokens = body["total"]["total_input_tokens"].as_u64().unwrap();
                if tokens > 0 {
                    return tokens;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            0
        }
    };
    assert_eq!(total(acme.clone(), "acme").await, 2 * PROMPT_TOKENS);
    assert_eq!(total(other.clone(), "other").await, PROMPT_TOKENS);
    gateway.stop().await;
}

#[tokio::test]
async fn required_auth_guards_v1_and_records_who_called() {
    let mock = MockOpenAi::start().await;
    let dir = std::env::temp_dir().join(format!("wasmgate-auth-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("ledger.db");
    let gateway = Gateway::standard(&mock.base_url())
        .auth_required()
        .ledger(&format!("sqlite://{}", db.display()))
        .start()
        .await;
    let acme_key = gateway.api_key("acme").await;
    let other = gateway.api_key("other").await;

    let (status, body) = post(&gateway, "/v1/chat/completions", None, Some("acme"), chat()).await;
    assert_error(status, &body, 401, "missing_api_key");
    let (status, body) = post(
        &gateway,
        "/v1/chat/completions",
        Some("sk-not-ours"),
        Some("acme"),
        chat(),
    )
    .await;
    assert_error(status, &body, 401, "invalid_api_key");
    assert!(
        !body.to_string().contains("sk-not-ours"),
        "the key is not echoed"
    );
    let (status, body) = post(
        &gateway,
        "/v1/chat/completions",
        Some(&other),
        Some("acme"),
        chat(),
    )
    .await;
    assert_error(status, &body, 403, "project_mismatch");
    assert_eq!(
        mock.requests().await.len(),
        0,
        "nothing reached the upstream"
    );

    // A real OpenAI client with the key works unchanged (no x-project-id: the key's project).
    let config = async_openai::config::OpenAIConfig::new()
        .with_api_base(gateway.url("/v1"))
        .with_api_key(&acme_key);
    let client = async_openai::Client::with_config(config);
    let request = CreateChatCompletionRequestArgs::default()
        .model("gpt-4o-mini")
        .messages(vec![
            async_openai::types::chat::ChatCompletionRequestUserMessageArgs::default()
                .content("hi")
                .build()
                .unwrap()
                .into(),
        ])
        .build()
        .unwrap();
    let reply = client.chat().create(request.clone()).await.unwrap();
    assert_eq!(reply.usage.unwrap().prompt_tokens, PROMPT_TOKENS as u32);
    // And without a key the same client gets OpenAI's 401 error, parsed as such.
    let keyless = async_openai::Client::with_config(
        async_openai::config::OpenAIConfig::new()
            .with_api_base(gateway.url("/v1"))
            .with_api_key("wrong"),
    );
    match keyless.chat().create(request).await {
        Err(async_openai::error::OpenAIError::ApiError(e)) => {
            assert_eq!(e.api_error.code.as_deref(), Some("invalid_api_key"));
        }
        other => panic!("expected an API error, got {other:?}"),
    }

    // Every request is recorded: the refused ones under the project they claimed, the served
    // one under the key's project with the key's id (never the key).
    let store = gateway.state.ledger.store();
    for _ in 0..100 {
        if store.count().unwrap() >= 5 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let key_id = store.keys(Some("acme")).unwrap()[0].id.clone();
    gateway.stop().await;
    let conn = rusqlite::Connection::open(&db).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT project, api_key_id, status, input_tokens FROM usage_records ORDER BY time_us",
        )
        .unwrap();
    let rows: Vec<(String, Option<String>, u16, u64)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let acme = |status| ("acme".to_owned(), None, status, 0);
    assert_eq!(
        rows,
        [
            acme(401),
            acme(401),
            acme(403),
            ("acme".to_owned(), Some(key_id), 200, PROMPT_TOKENS),
            ("default".to_owned(), None, 401, 0),
        ]
    );
    // The database files (WAL and the journal included) hold hashes only.
    for file in common::files_under(&dir) {
        let bytes = std::fs::read(file).unwrap();
        for key in [&acme_key, &other] {
            let needle = key.as_bytes();
            assert!(
                !bytes.windows(needle.len()).any(|w| w == needle),
                "a key on disk"
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
