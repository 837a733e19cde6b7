//! JWT client auth through the real gateway: tokens signed with real RSA and EC keys by a local
//! identity provider whose JWKS the gateway fetches. A valid token is answered and billed to
//! the project and user its claims name, under a key id both its tokens share; every bad token
//! is a 401 in the route's API shape that never reaches the upstream; a rotated key is fetched,
//! a flood of made-up key ids is not, and a JWKS that is down refuses tokens it cannot check.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::gateway::Gateway;
use common::jwks::{self, JwksServer, SigningKey, claims, now, unsigned};
use common::mock_openai::MockOpenAi;
use common::{TestGateway, http};
use serde_json::{Value, json};

async fn chat(gateway: &TestGateway, token: &str, id: &str) -> (u16, Value) {
    let response = http()
        .post(gateway.url("/v1/chat/completions"))
        .bearer_auth(token)
        .header("x-request-id", id)
        .json(
            &json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}],
            "user": "body-says-someone-else"}),
        )
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

/// A gateway on `mock` trusting the issuer whose JWKS is at `jwks_url`, with a memory store
/// for the tokens' own rates.
async fn gateway(mock: &MockOpenAi, jwks_url: &str) -> TestGateway {
    Gateway::standard(&mock.base_url())
        .yaml(&jwks::issuer_yaml(jwks_url))
        .yaml("limits: { store: memory }")
        .start()
        .await
}

#[tokio::test]
async fn valid_tokens_are_answered_and_billed_to_the_identity_their_claims_name() {
    let (rsa, ec) = (SigningKey::rsa("rsa-1"), SigningKey::ec("ec-1"));
    let idp = JwksServer::start(&[&rsa, &ec]).await;
    let mock = MockOpenAi::start().await;
    let gateway = gateway(&mock, &idp.url).await;

    let mut key_ids = Vec::new();
    for (key, id) in [(&rsa, "jwt-rsa"), (&ec, "jwt-ec")] {
        let token = key.sign(&claims(
            "svc-42",
            json!({"project": "acme", "email": "ana@acme.test"}),
        ));
        let (status, body) = chat(&gateway, &token, id).await;
        assert_eq!(status, 200, "{body}");
        let record = gateway.record_of(id).await;
        assert_eq!(record.project, "acme");
        assert_eq!(record.user_id.as_deref(), Some("ana@acme.test"));
        let key_id = record.api_key_id.unwrap();
        assert!(key_id.starts_with("jwt:") && key_id.len() == 28, "{key_id}");
        assert!(!key_id.contains("svc-42"), "{key_id}");
        key_ids.push(key_id);
    }
    // One identity (issuer and subject), one key id, whichever key signed its tokens.
    assert_eq!(key_ids[0], key_ids[1]);
    // Both keys were fetched in one go.
    assert_eq!(idp.fetches(), 1);

    // A token naming another project than `x-project-id` is a 403, as a key of another is.
    let token = rsa.sign(&claims("svc-42", json!({"project": "acme"})));
    let response = http()
        .post(gateway.url("/v1/chat/completions"))
        .bearer_auth(&token)
        .header("x-project-id", "other")
        .json(&json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);

    // The gateway's own keys keep working beside the tokens.
    let key = gateway.api_key("beta").await;
    let (status, body) = chat(&gateway, &key, "jwt-beside-key").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(gateway.record_of("jwt-beside-key").await.project, "beta");
    gateway.stop().await;
}

#[tokio::test]
async fn a_tokens_limits_hold_across_its_tokens_and_models() {
    let rsa = SigningKey::rsa("rsa-1");
    let idp = JwksServer::start(&[&rsa]).await;
    let mock = MockOpenAi::start().await;
    let gateway = gateway(&mock, &idp.url).await;
    let limited = |sub: &str| {
        rsa.sign(&claims(
            sub,
            json!({"project": "acme", "rpm": 1, "models": ["gpt-4o*"], "jti": uuid()}),
        ))
    };
    assert_eq!(chat(&gateway, &limited("svc-1"), "rpm-1").await.0, 200);
    // A new token of the same subject shares the counter: limits key by the identity.
    let (status, body) = chat(&gateway, &limited("svc-1"), "rpm-2").await;
    assert_eq!(status, 429, "{body}");
    // Another subject has its own.
    assert_eq!(chat(&gateway, &limited("svc-2"), "rpm-3").await.0, 200);
    // The `models` claim: another model is refused.
    let token = rsa.sign(&claims(
        "svc-3",
        json!({"project": "acme", "models": ["echo-*"]}),
    ));
    let (status, body) = chat(&gateway, &token, "models").await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (403, &json!("model_not_allowed"))
    );
    gateway.stop().await;
}

fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

#[tokio::test]
async fn every_bad_token_is_a_401_that_never_reaches_the_upstream() {
    let rsa = SigningKey::rsa("rsa-1");
    let stranger = SigningKey::rsa("stranger");
    let idp = JwksServer::start(&[&rsa]).await;
    let mock = MockOpenAi::start().await;
    let gateway = gateway(&mock, &idp.url).await;
    let project = json!({"project": "acme"});
    let good = claims("svc-1", project.clone());
    let with = |change: Value| {
        let mut c = good.clone();
        c.as_object_mut()
            .unwrap()
            .extend(change.as_object().unwrap().clone());
        c
    };
    let hs256 = jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &good,
        &jsonwebtoken::EncodingKey::from_secret(b"a shared secret"),
    )
    .unwrap();
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "expired",
            rsa.sign(&with(json!({"exp": now() - 600}))),
            "it has expired",
        ),
        (
            "not yet valid",
            rsa.sign(&with(json!({"nbf": now() + 600}))),
            "it is not valid yet",
        ),
        (
            "wrong audience",
            rsa.sign(&with(json!({"aud": "another-app"}))),
            "its audience",
        ),
        (
            "wrong issuer",
            rsa.sign(&with(json!({"iss": "https://evil.test"}))),
            "its issuer",
        ),
        (
            "bad signature",
            stranger.posing_as("rsa-1").sign(&good),
            "its signature",
        ),
        ("alg none", unsigned(&good), "alg: none"),
        ("HS256", hs256, "algorithm"),
        ("unknown kid", stranger.sign(&good), "key id"),
        (
            "no project",
            rsa.sign(&claims("svc-1", json!({}))),
            "lacks the claim `project`",
        ),
        (
            "a project no project could have",
            rsa.sign(&with(json!({"project": "no spaces allowed"}))),
            "claim `project`",
        ),
        (
            "exp of the wrong type",
            rsa.sign(&with(json!({"exp": "never"}))),
            "claim `exp`",
        ),
        (
            "malformed",
            "eyJhbGciOi.eyJzdWIi.c2ln".to_owned(),
            "well-formed",
        ),
    ];
    for (case, token, reason) in &cases {
        let (status, body) = chat(&gateway, token, case).await;
        assert_eq!(status, 401, "{case}: {body}");
        assert_eq!(body["error"]["code"], "invalid_token", "{case}: {body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(reason), "{case}: {message}");
        assert!(message.len() < 200, "{case}: {message}");
        for part in token.split('.').filter(|p| p.len() >= 8) {
            assert!(!body.to_string().contains(&part[..8]), "{case}: {body}");
        }
    }
    // The Messages API refuses in its own shape.
    let response = http()
        .post(gateway.url("/v1/messages"))
        .header("x-api-key", &cases[0].1)
        .header("anthropic-version", "2023-06-01")
        .json(&json!({"model": "gpt-4o-mini", "max_tokens": 5,
            "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        (&body["type"], &body["error"]["type"]),
        (&json!("error"), &json!("authentication_error")),
        "{body}"
    );
    assert!(mock.targets().await.is_empty());
    gateway.stop().await;
}

#[tokio::test]
async fn a_rotated_key_is_fetched_and_made_up_key_ids_are_not() {
    let (old, new) = (SigningKey::rsa("2026-01"), SigningKey::ec("2026-02"));
    let idp = JwksServer::start(&[&old]).await;
    let mock = MockOpenAi::start().await;
    let gateway = gateway(&mock, &idp.url).await;
    let signed = |key: &SigningKey| key.sign(&claims("svc-1", json!({"project": "acme"})));
    assert_eq!(chat(&gateway, &signed(&old), "before").await.0, 200);
    assert_eq!(idp.fetches(), 1);

    idp.rotate(&[&old, &new]).await;
    // Within the cooldown the set is not fetched again: the new key is not known yet.
    let (status, body) = chat(&gateway, &signed(&new), "too-soon").await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(idp.fetches(), 1);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let (status, body) = chat(&gateway, &signed(&new), "after").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(idp.fetches(), 2);

    // Made-up key ids, at once: the issuer is asked at most once more in their second.
    let flood = (0..20).map(|i| {
        let token = new
            .posing_as(&format!("made-up-{i}"))
            .sign(&claims("x", json!({})));
        let gateway = &gateway;
        async move { chat(gateway, &token, &format!("flood-{i}")).await.0 }
    });
    let statuses = futures_util::future::join_all(flood).await;
    assert!(statuses.iter().all(|s| *s == 401), "{statuses:?}");
    assert!(idp.fetches() <= 3, "{} fetches", idp.fetches());
    assert_eq!(mock.targets().await.len(), 2);
    gateway.stop().await;
}

#[tokio::test]
async fn a_jwks_that_is_down_refuses_the_tokens_it_cannot_check() {
    let rsa = SigningKey::rsa("rsa-1");
    let idp = JwksServer::start(&[&rsa]).await;
    idp.take_down();
    let mock = MockOpenAi::start().await;
    let gateway = gateway(&mock, &idp.url).await;
    let token = rsa.sign(&claims("svc-1", json!({"project": "acme"})));
    let (status, body) = chat(&gateway, &token, "down").await;
    assert_eq!(status, 401, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("could not be fetched"), "{message}");
    assert_eq!(idp.fetches(), 1);

    // An issuer whose JWKS nobody answers at all.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let nowhere = Gateway::standard(&mock.base_url())
        .yaml(&jwks::issuer_yaml(&format!("http://{closed}/jwks.json")))
        .start()
        .await;
    let (status, body) = chat(&nowhere, &token, "nowhere").await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (401, &json!("invalid_token"))
    );
    assert!(mock.targets().await.is_empty());
    nowhere.stop().await;
    gateway.stop().await;
}

/// The official OpenAI Python SDK with a JWT as its `api_key`: answered, streamed and billed to
/// the token's identity; an expired token is an `AuthenticationError` it can read.
#[tokio::test]
async fn the_openai_python_sdk_authenticates_with_a_jwt() {
    let ec = SigningKey::ec("ec-1");
    let idp = JwksServer::start(&[&ec]).await;
    let mock = MockOpenAi::start().await;
    let gateway = gateway(&mock, &idp.url).await;
    let token = ec.sign(&claims(
        "svc-sdk",
        json!({"project": "sdk-team", "email": "bot@acme.test"}),
    ));
    let expired = ec.sign(&claims(
        "svc-sdk",
        json!({"project": "sdk-team", "exp": now() - 600}),
    ));
    let output = common::sdk::run_client(
        "openai_jwt.py",
        &gateway.url("/v1"),
        &token,
        &["--bad-key", &expired],
    )
    .await;
    common::sdk::assert_passed(&output, &["create", "stream", "refused"]);
    for id in ["jwt-create", "jwt-stream"] {
        let record = gateway.record_of(id).await;
        assert_eq!(
            (record.project.as_str(), record.user_id.as_deref()),
            ("sdk-team", Some("bot@acme.test"))
        );
        assert!(record.input_tokens > 0);
        assert!(record.api_key_id.unwrap().starts_with("jwt:"));
    }
    // The refused request never reached the upstream: two requests did.
    assert_eq!(mock.targets().await.len(), 2);
    gateway.stop().await;
}
