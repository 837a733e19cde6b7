//! Keys with their own limits, end to end with the real binary: a key with a $5 daily budget and
//! two models (the third model refused, the sixth dollar refused with 429 `insufficient_quota`),
//! expiry, a key's own rpm, the admin API (who may call it, and create, list, read with spend,
//! update, revoke), and a key's budget held across two replicas on one Redis.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::Json;
use axum::routing::post;
use common::binary::{Gateway, temp_dir};
use common::gateway::{Gateway as Config, Provider};
use common::http;
use common::redis::RedisServer;
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_wasmgate");

/// An OpenAI upstream whose every chat completion reports 100,000 completion tokens and no
/// prompt tokens: $1.00 exactly at gpt-4o's catalog price ($10 per million output tokens).
/// Counts the requests it got.
async fn dollar_upstream() -> (String, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        post(move |Json(body): Json<Value>| {
            let counted = Arc::clone(&counted);
            async move {
                counted.fetch_add(1, Ordering::SeqCst);
                Json(dollar_answer(&body["model"]))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/v1"), calls)
}

/// A chat completion of `model` reporting 100,000 completion tokens and no prompt tokens: $1.00
/// exactly at gpt-4o's catalog price.
pub(crate) fn dollar_answer(model: &Value) -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "ok"}}],
        "usage": {"prompt_tokens": 0, "completion_tokens": 100_000, "total_tokens": 100_000}
    })
}

/// A config on `dir`'s own ledger, keys required, the upstream as `openai` and the `echo`
/// provider, limits counted in `store`.
fn write_config(dir: &Path, upstream: &str, store: &str) -> PathBuf {
    let config = dir.join("config.yaml");
    let openai =
        Provider::at("openai", upstream, "sk-upstream").models(["gpt-4o", "gpt-4o-mini", "o1"]);
    let yaml = Config::builder()
        .any_port()
        .ledger(&format!("sqlite://{}", dir.join("ledger.db").display()))
        .auth_required()
        .set("plugins.call_timeout_ms", 5000)
        .provider("openai", openai)
        .provider("echo", Provider::echo().models(["echo-1"]))
        .set("limits.store", store)
        .to_yaml();
    std::fs::write(&config, yaml).unwrap();
    config
}

/// Runs `wasmgate <args> --config <config>`; its stdout, or a panic with its stderr.
pub(crate) fn cli(config: &Path, args: &[&str]) -> String {
    let output = Command::new(BIN)
        .args(args)
        .arg("--config")
        .arg(config)
        .env_remove("WASMGATE_CONFIG")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{args:?}: {stderr}");
    String::from_utf8(output.stdout).unwrap()
}

async fn chat(gateway: &Gateway, key: &str, model: &str) -> (u16, Value) {
    let response = http()
        .post(gateway.url("/v1/chat/completions"))
        .bearer_auth(key)
        .json(&json!({"model": model, "max_tokens": 10,
                      "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

/// An admin API call with `auth` as the bearer (none when `None`).
pub(crate) async fn admin(
    gateway: &Gateway,
    auth: Option<&str>,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = http().request(method, gateway.url(path));
    if let Some(auth) = auth {
        request = request.bearer_auth(auth);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Waits (up to 10 s) for the key's spend, as the admin API reads it from the ledger, to be
/// `usd`, and returns the key as shown.
async fn spend_reaches(gateway: &Gateway, admin_key: &str, id: &str, usd: f64) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let path = format!("/admin/keys/{id}");
        let (status, key) =
            admin(gateway, Some(admin_key), reqwest::Method::GET, &path, None).await;
        assert_eq!(status, 200, "{key}");
        if key["spend"]["usd"].as_f64() == Some(usd) || Instant::now() > deadline {
            return key;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The settlement of a request runs just after its response; give it a moment.
async fn settled() {
    tokio::time::sleep(Duration::from_millis(150)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_with_a_5_dollar_daily_budget_and_two_models_refuses_the_third_model_and_the_sixth_dollar()
 {
    let dir = temp_dir("keys-budget");
    let (upstream, calls) = dollar_upstream().await;
    let config = write_config(&dir, &upstream, "memory");
    let admin_key = cli(&config, &["admin-key", "create", "--name", "ops"]);
    let admin_key = admin_key.trim();
    assert!(admin_key.starts_with("wgadm_"), "{admin_key}");
    let gateway = Gateway::serve(&dir, &config).await;

    let (status, created) = admin(
        &gateway,
        Some(admin_key),
        reqwest::Method::POST,
        "/admin/keys",
        Some(json!({"project": "team-a", "name": "team a",
                    "models": ["openai/gpt-4o", "openai/gpt-4o-mini"],
                    "budget_usd": 5, "budget_period": "day"})),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let (key, id) = (
        created["key"].as_str().unwrap().to_owned(),
        created["id"].as_str().unwrap().to_owned(),
    );
    assert_eq!(created["budget"], json!({"usd": 5.0, "period": "day"}));

    let (status, body) = chat(&gateway, &key, "openai/o1").await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["code"], "model_not_allowed");
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "a refused model never reaches the upstream"
    );

    for i in 0..5 {
        let (status, body) = chat(&gateway, &key, "openai/gpt-4o").await;
        assert_eq!(status, 200, "dollar {}: {body}", i + 1);
        settled().await;
    }
    for model in ["openai/gpt-4o", "openai/gpt-4o-mini"] {
        let (status, body) = chat(&gateway, &key, model).await;
        assert_eq!(status, 429, "{model}: {body}");
        assert_eq!(body["error"]["code"], "insufficient_quota");
        assert_eq!(body["error"]["type"], "insufficient_quota");
    }
    assert_eq!(calls.load(Ordering::SeqCst), 5);

    let shown = spend_reaches(&gateway, admin_key, &id, 5.0).await;
    assert_eq!(
        shown["spend"],
        json!({"usd": 5.0, "period": "day"}),
        "{shown}"
    );
    let listed = cli(&config, &["keys", "list", "--project", "team-a"]);
    assert!(listed.contains("5.00 today"), "{listed}");
    assert!(
        listed.contains("models openai/gpt-4o, openai/gpt-4o-mini; $5.00 per day"),
        "{listed}"
    );
    drop(gateway);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_keys_are_refused_and_a_keys_own_rpm_holds() {
    let dir = temp_dir("keys-expiry");
    let (upstream, _) = dollar_upstream().await;
    let config = write_config(&dir, &upstream, "memory");
    let limited = cli(&config, &["keys", "create", "--project", "p", "--rpm", "2"]);
    let expired = cli(
        &config,
        &[
            "keys",
            "create",
            "--project",
            "p",
            "--expires",
            "2020-01-01",
        ],
    );
    let other = cli(&config, &["keys", "create", "--project", "p"]);
    let gateway = Gateway::serve(&dir, &config).await;

    let (status, body) = chat(&gateway, expired.trim(), "echo-1").await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["error"]["code"], "expired_api_key");

    let mut statuses = Vec::new();
    for _ in 0..3 {
        statuses.push(chat(&gateway, limited.trim(), "echo-1").await.0);
    }
    assert_eq!(statuses, [200, 200, 429]);
    let (status, body) = chat(&gateway, limited.trim(), "echo-1").await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (429, &json!("rate_limit_exceeded"))
    );
    // The limit is the key's own: another key of the same project is not held back.
    assert_eq!(chat(&gateway, other.trim(), "echo-1").await.0, 200);
    drop(gateway);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_api_takes_admin_keys_only_and_manages_keys() {
    let dir = temp_dir("keys-admin");
    let (upstream, _) = dollar_upstream().await;
    let config = write_config(&dir, &upstream, "memory");
    let admin_key = cli(&config, &["admin-key", "create"]).trim().to_owned();
    let revoked_admin = cli(&config, &["admin-key", "create"]).trim().to_owned();
    let project_key = cli(&config, &["keys", "create", "--project", "p"])
        .trim()
        .to_owned();
    let listed = cli(&config, &["admin-key", "list"]);
    let revoked_id = listed
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|id| id.starts_with("adm_"))
        .nth(1)
        .unwrap()
        .to_owned();
    cli(&config, &["admin-key", "revoke", &revoked_id]);
    let gateway = Gateway::serve(&dir, &config).await;

    use reqwest::Method;
    for (auth, status, code) in [
        (None, 401, "admin_key_required"),
        (Some("wgadm_made-up"), 401, "invalid_api_key"),
        (Some(revoked_admin.as_str()), 401, "invalid_api_key"),
        (Some(project_key.as_str()), 403, "not_an_admin_key"),
    ] {
        for (method, path) in [
            (Method::GET, "/admin/keys"),
            (Method::POST, "/admin/keys"),
            (Method::GET, "/admin/keys/key_x"),
            (Method::PATCH, "/admin/keys/key_x"),
            (Method::DELETE, "/admin/keys/key_x"),
        ] {
            let body = (method == Method::POST || method == Method::PATCH)
                .then(|| json!({"project": "p"}));
            let (got, answer) = admin(&gateway, auth, method.clone(), path, body).await;
            assert_eq!(
                (got, answer["error"]["code"].as_str()),
                (status, Some(code)),
                "{method} {path} with {auth:?}"
            );
        }
    }

    // Create, read, update (a field replaced, one cleared), list, revoke.
    let auth = Some(admin_key.as_str());
    let (status, created) = admin(
        &gateway,
        auth,
        Method::POST,
        "/admin/keys",
        Some(json!({"project": "p", "rpm": 10, "tpm": 5000, "models": ["echo-*"]})),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    let secret = created["key"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("wg-"));
    let path = format!("/admin/keys/{id}");
    let (status, shown) = admin(&gateway, auth, Method::GET, &path, None).await;
    assert_eq!(status, 200);
    assert!(
        shown.get("key").is_none(),
        "the secret is shown once: {shown}"
    );
    assert_eq!(
        (shown["rpm"].clone(), shown["tpm"].clone()),
        (json!(10), json!(5000))
    );
    assert_eq!(shown["spend"], json!({"usd": 0.0, "period": "total"}));

    let (status, updated) = admin(
        &gateway,
        auth,
        Method::PATCH,
        &path,
        Some(json!({"rpm": 20, "tpm": null, "name": "renamed"})),
    )
    .await;
    assert_eq!(status, 200, "{updated}");
    assert_eq!(
        (
            updated["rpm"].clone(),
            updated["tpm"].clone(),
            updated["name"].clone()
        ),
        (json!(20), Value::Null, json!("renamed"))
    );
    assert_eq!(
        updated["models"],
        json!(["echo-*"]),
        "untouched fields are kept"
    );
    let (status, bad) = admin(
        &gateway,
        auth,
        Method::PATCH,
        &path,
        Some(json!({"rpm": 0})),
    )
    .await;
    assert_eq!(
        (status, bad["error"]["param"].as_str()),
        (400, Some("rpm")),
        "{bad}"
    );

    let (status, list) = admin(&gateway, auth, Method::GET, "/admin/keys?project=p", None).await;
    assert_eq!(status, 200);
    let ids: Vec<&str> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2, "{list}");
    assert!(ids.contains(&id.as_str()));

    assert_eq!(chat(&gateway, &secret, "echo-1").await.0, 200);
    let (status, _) = admin(&gateway, auth, Method::DELETE, &path, None).await;
    assert_eq!(status, 200);
    let (status, again) = admin(&gateway, auth, Method::DELETE, &path, None).await;
    assert_eq!(
        (status, again["error"]["code"].as_str()),
        (404, Some("key_not_found"))
    );
    let (_, shown) = admin(&gateway, auth, Method::GET, &path, None).await;
    assert_eq!(shown["state"], "revoked");
    let (status, _) = admin(&gateway, auth, Method::GET, "/admin/keys/key_nope", None).await;
    assert_eq!(status, 404);
    drop(gateway);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keys_budget_holds_across_two_replicas_on_one_redis() {
    let dir = temp_dir("keys-redis");
    let redis = RedisServer::start();
    let (upstream, calls) = dollar_upstream().await;
    let config = write_config(&dir, &upstream, &redis.url());
    let key = cli(
        &config,
        &[
            "keys",
            "create",
            "--project",
            "p",
            "--budget",
            "3",
            "--budget-period",
            "total",
        ],
    );
    let key = key.trim();
    let replicas = [
        Gateway::serve(&dir, &config).await,
        Gateway::serve(&dir, &config).await,
    ];
    let mut statuses = Vec::new();
    for i in 0..6 {
        statuses.push(chat(&replicas[i % 2], key, "openai/gpt-4o").await.0);
        settled().await;
    }
    // Each replica alone would have let three dollars through: six in all.
    assert_eq!(statuses, [200, 200, 200, 429, 429, 429]);
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    drop(replicas);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `GET` on `path` with `key` as the bearer: the status and the body.
async fn get(gateway: &Gateway, key: &str, path: &str) -> (u16, Value) {
    let response = http()
        .get(gateway.url(path))
        .bearer_auth(key)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_lists_only_what_a_key_may_call_and_hides_the_rest() {
    let dir = temp_dir("keys-models");
    let (upstream, _) = dollar_upstream().await;
    let config = write_config(&dir, &upstream, "memory");
    // An id and a pattern, as the request path matches them.
    let limited = cli(
        &config,
        &[
            "keys",
            "create",
            "--project",
            "p",
            "--models",
            "openai/gpt-4o-*,echo/echo-1",
        ],
    );
    let open = cli(&config, &["keys", "create", "--project", "p"]);
    let gateway = Gateway::serve(&dir, &config).await;
    let ids = |list: &Value| -> Vec<String> {
        let mut ids: Vec<String> = list["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_owned())
            .collect();
        ids.sort();
        ids
    };

    let (status, list) = get(&gateway, limited.trim(), "/v1/models").await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(ids(&list), ["echo/echo-1", "openai/gpt-4o-mini"], "{list}");
    let (status, list) = get(&gateway, open.trim(), "/v1/models").await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(
        ids(&list),
        [
            "echo/echo-1",
            "openai/gpt-4o",
            "openai/gpt-4o-mini",
            "openai/o1"
        ],
        "{list}"
    );

    let (status, model) = get(&gateway, limited.trim(), "/v1/models/openai/gpt-4o-mini").await;
    assert_eq!((status, &model["id"]), (200, &json!("openai/gpt-4o-mini")));
    // Outside the key's list: exactly what an unknown model gets.
    let (hidden_status, hidden) = get(&gateway, limited.trim(), "/v1/models/openai/o1").await;
    let (unknown_status, unknown) =
        get(&gateway, limited.trim(), "/v1/models/openai/gpt-4o-nope").await;
    assert_eq!(hidden_status, 404, "{hidden}");
    assert_eq!(unknown_status, 404, "{unknown}");
    assert_eq!(hidden["error"]["code"], unknown["error"]["code"]);
    assert_eq!(hidden["error"]["type"], unknown["error"]["type"]);
    let (status, model) = get(&gateway, open.trim(), "/v1/models/openai/o1").await;
    assert_eq!((status, &model["id"]), (200, &json!("openai/o1")));
    drop(gateway);
    let _ = std::fs::remove_dir_all(&dir);
}
