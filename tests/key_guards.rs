//! Keys naming their own guards, end to end with the real binary: a key made with `wasmgate
//! keys create --guards` and one changed through the admin API get the guards they name on
//! their requests besides the config's (an entry with `scope: {only_named: true}` applies to
//! them alone); a key naming a guard the config lacks is refused by the admin API.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use crate::keys::{admin, cli};

use common::binary::{Gateway, temp_dir};
use common::http;
use common::mock_openai::MockOpenAi;
use serde_json::{Value, json};

const CARD: &str = "My card is 4111 1111 1111 1111.";

async fn chat(gateway: &Gateway, key: &str, text: &str) -> (u16, Value) {
    let response = http()
        .post(gateway.url("/v1/chat/completions"))
        .bearer_auth(key)
        .json(&json!({"model": "openai/gpt-4o-mini",
                      "messages": [{"role": "user", "content": text}]}))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_name_their_own_guards_through_the_cli_and_the_admin_api() {
    let dir = temp_dir("key-guards");
    let upstream = MockOpenAi::start().await;
    let config = dir.join("config.yaml");
    std::fs::write(
        &config,
        format!(
            r#"
server: {{ host: 127.0.0.1, port: 0 }}
ledger: {{ url: "sqlite://{ledger}" }}
auth: {{ required: true }}
providers:
  openai:
    plugin: openai
    base_url: {upstream}
    api_key: sk-upstream-secret
    models: [gpt-4o-mini]
guards:
  - plugin: deny
    name: no-falcon
    apply: request
    options: {{phrases: [falcon]}}
  - plugin: redact
    name: no-cards
    apply: request
    scope: {{only_named: true}}
"#,
            ledger = dir.join("ledger.db").display(),
            upstream = upstream.base_url(),
        ),
    )
    .unwrap();
    let admin_key = cli(&config, &["admin-key", "create"]).trim().to_owned();
    let plain = cli(&config, &["keys", "create", "--project", "a"])
        .trim()
        .to_owned();
    let guarded = cli(
        &config,
        &["keys", "create", "--project", "a", "--guards", "no-cards"],
    )
    .trim()
    .to_owned();
    let listed = cli(&config, &["keys", "list"]);
    assert!(listed.contains("guards no-cards"), "{listed}");
    let gateway = Gateway::serve(&dir, &config).await;

    // The config's own guard applies to both; the named one only to the key that names it.
    for key in [&plain, &guarded] {
        let (status, body) = chat(&gateway, key, "About Falcon").await;
        assert_eq!(status, 400, "{body}");
        assert_eq!(body["error"]["code"], "guard_refused");
    }
    let (status, body) = chat(&gateway, &plain, CARD).await;
    assert_eq!(status, 200, "{body}");
    let sent = upstream.last_request().await.body;
    assert_eq!(sent["messages"][0]["content"], CARD, "no guard of its own");
    let (status, body) = chat(&gateway, &guarded, CARD).await;
    assert_eq!(status, 200, "{body}");
    let sent = upstream.last_request().await.body;
    assert_eq!(sent["messages"][0]["content"], "My card is [CARD].");

    // Through the admin API: the plain key now names the guard, an unknown name is refused.
    let admin_as = Some(admin_key.as_str());
    let (status, listed) = admin(
        &gateway,
        admin_as,
        reqwest::Method::GET,
        "/admin/keys",
        None,
    )
    .await;
    assert_eq!(status, 200);
    let id = (listed["data"].as_array().unwrap().iter())
        .find(|k| k["guards"] == json!([]))
        .expect("the plain key")["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = format!("/admin/keys/{id}");
    let (status, body) = admin(
        &gateway,
        admin_as,
        reqwest::Method::PATCH,
        &path,
        Some(json!({"guards": ["no-such-guard"]})),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["param"], "guards", "{body}");
    let (status, body) = admin(
        &gateway,
        admin_as,
        reqwest::Method::PATCH,
        &path,
        Some(json!({"guards": ["no-cards"]})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["guards"], json!(["no-cards"]));
    // Gateways read a key's changes within the auth cache's lifetime.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        let (status, body) = chat(&gateway, &plain, CARD).await;
        assert_eq!(status, 200, "{body}");
        let sent = upstream.last_request().await.body;
        if sent["messages"][0]["content"] == "My card is [CARD]." {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the change never applied"
        );
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    let (status, body) = admin(
        &gateway,
        admin_as,
        reqwest::Method::POST,
        "/admin/keys",
        Some(json!({"project": "a", "guards": ["no-cards", "no-falcon"]})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["guards"], json!(["no-cards", "no-falcon"]));
}
