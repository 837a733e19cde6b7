//! Every route behind the same auth stage: each route of the gateway × each kind of caller ×
//! `auth.required` on and off, checked for its status and error code; and a refused
//! `/v1/models` never reaches an upstream (listing a pass-through provider asks it, with the
//! provider's key).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::gateway::{Gateway, Provider};
use common::mock_openai::MockOpenAi;
use common::{TestGateway, http};
use reqwest::Method;
use serde_json::{Value, json};

/// Every route that answers for a project (all but `/health`, `/metrics` and the console's static
/// files under `/ui/`, which hold no data), with a body that succeeds for a valid caller.
fn routes() -> Vec<(Method, &'static str, Option<Value>)> {
    let chat = json!({"model": "echo-1", "messages": [{"role": "user", "content": "hi"}]});
    vec![
        (Method::POST, "/v1/chat/completions", Some(chat)),
        (
            Method::POST,
            "/v1/embeddings",
            Some(json!({"model": "echo-1", "input": "hi"})),
        ),
        (
            Method::POST,
            "/v1/images/generations",
            Some(json!({"model": "echo-1", "prompt": "a cat"})),
        ),
        (
            Method::POST,
            "/v1/completions",
            Some(json!({"model": "echo-1", "prompt": "hi"})),
        ),
        (
            Method::POST,
            "/v1/moderations",
            Some(json!({"model": "echo-1", "input": "hi"})),
        ),
        (
            Method::POST,
            "/v1/rerank",
            Some(json!({"model": "echo-1", "query": "hi", "documents": ["hi", "ho"]})),
        ),
        (Method::GET, "/v1/models", None),
        (Method::GET, "/v1/models/echo-1", None),
        (Method::GET, "/v1/files", None),
        (Method::GET, "/v1/batches", None),
        (Method::POST, "/usage/total", Some(json!({}))),
        (Method::POST, "/usage/models", Some(json!({}))),
        (Method::POST, "/usage/requests", Some(json!({}))),
        (Method::POST, "/usage/stats", Some(json!({}))),
    ]
}

#[derive(Clone, Copy, Debug)]
enum Caller {
    NoKey,
    UnknownKey,
    RevokedKey,
    /// A valid key of `acme` claiming the project `other`.
    SpoofedProject,
    DuplicateAuthorization,
    DuplicateProject,
    DuplicateApiKey,
    ValidKey,
}

const CALLERS: [Caller; 8] = [
    Caller::NoKey,
    Caller::UnknownKey,
    Caller::RevokedKey,
    Caller::SpoofedProject,
    Caller::DuplicateAuthorization,
    Caller::DuplicateProject,
    Caller::DuplicateApiKey,
    Caller::ValidKey,
];

/// The status and error code (`None`: success) a caller gets on a route.
fn expected(caller: Caller, key_required: bool) -> (u16, Option<&'static str>) {
    match caller {
        Caller::NoKey if key_required => (401, Some("missing_api_key")),
        Caller::UnknownKey | Caller::RevokedKey if key_required => (401, Some("invalid_api_key")),
        Caller::NoKey | Caller::UnknownKey | Caller::RevokedKey | Caller::ValidKey => (200, None),
        Caller::SpoofedProject => (403, Some("project_mismatch")),
        Caller::DuplicateAuthorization | Caller::DuplicateProject | Caller::DuplicateApiKey => {
            (400, Some("duplicate_header"))
        }
    }
}

struct Keys {
    valid: String,
    revoked: String,
}

fn request(
    gateway: &TestGateway,
    (method, path, body): &(Method, &'static str, Option<Value>),
    caller: Caller,
    keys: &Keys,
) -> reqwest::RequestBuilder {
    let mut request = http().request(method.clone(), gateway.url(path));
    if let Some(body) = body {
        request = request.json(body);
    }
    let bearer = |key: &str| format!("Bearer {key}");
    match caller {
        Caller::NoKey => request,
        Caller::UnknownKey => {
            request.header("authorization", bearer(&format!("wg-{}", "0".repeat(64))))
        }
        Caller::RevokedKey => request.header("authorization", bearer(&keys.revoked)),
        Caller::SpoofedProject => request
            .header("authorization", bearer(&keys.valid))
            .header("x-project-id", "other"),
        // A second copy that would let the request through if it were the one read.
        Caller::DuplicateAuthorization => request
            .header("authorization", bearer("wg-not-a-key"))
            .header("authorization", bearer(&keys.valid)),
        Caller::DuplicateProject => request
            .header("authorization", bearer(&keys.valid))
            .header("x-project-id", "acme")
            .header("x-project-id", "other"),
        Caller::DuplicateApiKey => request
            .header("authorization", bearer(&keys.valid))
            .header("x-api-key", &keys.valid)
            .header("x-api-key", "wg-not-a-key"),
        Caller::ValidKey => request
            .header("authorization", bearer(&keys.valid))
            .header("x-project-id", "acme"),
    }
}

async fn matrix(required: bool) {
    let mock = MockOpenAi::start().await;
    // `openai` lists no models: /v1/models asks the mock upstream for them.
    let gateway = Gateway::echo()
        .provider("openai", Provider::openai(&mock.base_url()))
        .set("auth.required", required)
        .start()
        .await;
    let valid = gateway.api_key("acme").await;
    let (revoked, stored) = wasmgate::auth::generate("acme", None, 0);
    let store = gateway.state.ledger.store();
    store.insert_key(&stored).unwrap();
    assert!(store.revoke_key(&stored.id, 1).unwrap());
    let keys = Keys { valid, revoked };

    for route in routes() {
        let (method, path, _) = &route;
        let key_required = required || path.starts_with("/usage/");
        for caller in CALLERS {
            let upstream_before = mock.requests().await.len();
            let response = request(&gateway, &route, caller, &keys)
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            let body: Value = response.json().await.unwrap();
            let at = format!("{method} {path} as {caller:?} (auth.required: {required})");
            let (want_status, want_code) = expected(caller, key_required);
            assert_eq!(status, want_status, "{at}: {body}");
            match want_code {
                Some(code) => {
                    assert_eq!(body["error"]["code"], code, "{at}: {body}");
                    assert!(body["error"]["message"].is_string(), "{at}: {body}");
                    // A refused caller costs no upstream request (no key sent anywhere).
                    let upstream_after = mock.requests().await.len();
                    assert_eq!(upstream_after, upstream_before, "{at} reached the upstream");
                }
                None => assert!(body.get("error").is_none(), "{at}: {body}"),
            }
            if *path == "/v1/models" && want_code.is_none() {
                let listed = mock.requests().await;
                assert_eq!(listed.len(), upstream_before + 1, "{at}");
                assert_eq!(listed[upstream_before].path, "/v1/models", "{at}");
            }
        }
    }
    gateway.stop().await;
}

#[tokio::test]
async fn every_route_checks_callers_with_auth_required() {
    matrix(true).await;
}

#[tokio::test]
async fn every_route_checks_callers_on_an_open_gateway() {
    matrix(false).await;
}

#[tokio::test]
async fn health_and_metrics_stay_open() {
    let gateway = Gateway::echo().auth_required().start().await;
    for path in ["/health", "/metrics"] {
        let response = http().get(gateway.url(path)).send().await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
    }
    gateway.stop().await;
}
