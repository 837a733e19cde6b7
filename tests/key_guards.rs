//! Keys naming their own guards, end to end with the real binary: a key made with `wasmgate
//! keys create --guards` and one changed through the admin API get the guards they name on
//! their requests besides the config's (an entry with `scope: {only_named: true}` applies to
//! them alone); a key naming a guard the config lacks is refused by the admin API.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use crate::keys::{admin, cli};

use common::binary::{Gateway, temp_dir};
use common::gateway::{Gateway as Config, Guard, Provider};
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
    let no_falcon = Guard::plugin("deny")
        .name("no-falcon")
        .apply("request")
        .options("{phrases: [falcon]}");
    let no_cards = Guard::plugin("redact")
        .name("no-cards")
        .apply("request")
        .yaml("scope", "{only_named: true}");
    let yaml = Config::builder()
        .any_port()
        .ledger(&format!("sqlite://{}", dir.join("ledger.db").display()))
        .auth_required()
        .provider(
            "openai",
            Provider::openai(&upstream.base_url()).models(["gpt-4o-mini"]),
        )
        .guard(no_falcon)
        .guard(no_cards)
        .to_yaml();
    std::fs::write(&config, yaml).unwrap();
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
