//! Console sign-in by OpenID Connect through the real gateway, against the local provider of
//! `common::oidc` (PKCE, client secret, redirect URI and code checked there; ID tokens signed
//! RS256 with a real key). A browser is played by an HTTP client that keeps the gateway's
//! cookies and follows each redirect by hand, so that a test can spoil one step: a bad state, a
//! spent code, a wrong audience, an expired token, a wrong nonce, a foreign signature. The
//! session made on one replica is accepted by another that shares its secret, and refused once
//! tampered with or by a gateway with another secret; writes need the session's CSRF token; a
//! viewer and a project admin get 403s outside their roles; the audit log names the subject.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::HashMap;

use common::binary::temp_dir;
use common::gateway::Gateway;
use common::oidc::{Provider, Spoil};
use common::{TestGateway, http};
use reqwest::Method;
use serde_json::{Value, json};

/// The callback as the provider knows it: a name in front of every replica, as a load
/// balancer's would be; the test sends what comes back to it to the replica it chooses.
const REDIRECT: &str = "http://gateway.test/console/callback";

/// A browser: the gateway's cookies, kept across replicas (one site), and no automatic redirect.
#[derive(Default)]
struct Browser {
    cookies: HashMap<String, String>,
    csrf: Option<String>,
}

impl Browser {
    fn client() -> reqwest::Client {
        let _ = http();
        reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap()
    }

    fn cookie_header(&self) -> String {
        (self.cookies.iter())
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// Sends a request to the gateway with the cookies, and keeps the ones it sets.
    async fn send(
        &mut self,
        method: Method,
        url: &str,
        headers: &[(&str, &str)],
        body: Option<Value>,
    ) -> reqwest::Response {
        let mut request = Self::client().request(method, url);
        if !self.cookies.is_empty() {
            request = request.header("cookie", self.cookie_header());
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        for set in response.headers().get_all("set-cookie") {
            let set = set.to_str().unwrap();
            let (pair, _) = set.split_once(';').unwrap_or((set, ""));
            let (name, value) = pair.split_once('=').unwrap();
            if set.contains("Max-Age=0") {
                self.cookies.remove(name);
            } else {
                self.cookies.insert(name.to_owned(), value.to_owned());
            }
        }
        response
    }

    /// `/console/login` on `gateway`, then the provider: the callback's path and query.
    async fn through_provider(&mut self, gateway: &TestGateway) -> String {
        let start = self
            .send(Method::GET, &gateway.url("/console/login"), &[], None)
            .await;
        assert_eq!(start.status(), 303);
        let authorize = location(&start);
        let url = reqwest::Url::parse(&authorize).unwrap();
        let query: HashMap<_, _> = url.query_pairs().into_owned().collect();
        assert_eq!(query["code_challenge_method"], "S256");
        assert_eq!(query["redirect_uri"], REDIRECT);
        assert_eq!(query["scope"], "openid profile email");
        // The provider is another site: no gateway cookie goes there.
        let back = Self::client().get(&authorize).send().await.unwrap();
        assert!(back.status().is_redirection(), "{}", back.status());
        let back = location(&back);
        let callback = back.strip_prefix("http://gateway.test").unwrap();
        assert!(callback.starts_with("/console/callback?"), "{callback}");
        callback.to_owned()
    }

    /// The provider's redirect back, delivered to `gateway`.
    async fn callback(&mut self, gateway: &TestGateway, callback: &str) -> (u16, Value) {
        let response = self
            .send(Method::GET, &gateway.url(callback), &[], None)
            .await;
        let status = response.status().as_u16();
        if status == 303 {
            assert_eq!(location(&response), "/ui/");
            return (status, Value::Null);
        }
        (status, response.json().await.unwrap())
    }

    /// A whole sign-in through `gateway`; then the session's CSRF token is known.
    async fn sign_in(&mut self, gateway: &TestGateway) {
        let callback = self.through_provider(gateway).await;
        let (status, body) = self.callback(gateway, &callback).await;
        assert_eq!(status, 303, "{body}");
        let session = self.session(gateway).await;
        self.csrf = Some(session["csrf"].as_str().unwrap().to_owned());
    }

    async fn session(&mut self, gateway: &TestGateway) -> Value {
        let response = self
            .send(Method::GET, &gateway.url("/console/session"), &[], None)
            .await;
        assert_eq!(response.status(), 200);
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["oidc"], true);
        body["session"].clone()
    }

    /// A call with the session, its CSRF token sent on writes.
    async fn call(
        &mut self,
        gateway: &TestGateway,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let csrf = self.csrf.clone().unwrap_or_default();
        let headers: &[(&str, &str)] = if method == Method::GET {
            &[]
        } else {
            &[("x-csrf-token", &csrf)]
        };
        let response = self.send(method, &gateway.url(path), headers, body).await;
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }
}

fn location(response: &reqwest::Response) -> String {
    response.headers()["location"].to_str().unwrap().to_owned()
}

/// A gateway trusting `idp`, its ledger at `ledger`; `secret` replaces the session secret.
async fn gateway(idp: &Provider, ledger: &str, secret: Option<&str>) -> TestGateway {
    let mut yaml = idp.console_yaml();
    if let Some(secret) = secret {
        yaml = yaml.replace(common::oidc::SESSION_SECRET, secret);
    }
    Gateway::echo().ledger(ledger).yaml(&yaml).start().await
}

/// A shared SQLite ledger for replicas.
fn ledger(name: &str) -> String {
    format!("sqlite://{}", temp_dir(name).join("ledger.db").display())
}

async fn admin_key(gateway: &TestGateway) -> String {
    let (secret, stored) = wasmgate::auth::generate_admin(Some("automation"), 0);
    let store = gateway.state.ledger.store();
    tokio::task::spawn_blocking(move || store.insert_admin_key(&stored))
        .await
        .unwrap()
        .unwrap();
    secret
}

/// A key of `project` made with the admin key; its id.
async fn key_of(gateway: &TestGateway, admin: &str, project: &str) -> String {
    let created: Value = http()
        .post(gateway.url("/admin/keys"))
        .bearer_auth(admin)
        .json(&json!({"project": project}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    created["id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_session_made_on_one_replica_works_on_another_and_names_its_subject_in_the_audit_log() {
    let idp = Provider::start(REDIRECT).await;
    let ledger = ledger("oidc-replicas");
    let (a, b) = (
        gateway(&idp, &ledger, None).await,
        gateway(&idp, &ledger, None).await,
    );
    idp.sign_in_as("ana", &["ops"]);
    let mut browser = Browser::default();

    // The login starts on A, the provider sends the browser back to B: B finishes it.
    let callback = browser.through_provider(&a).await;
    let response = browser
        .send(Method::GET, &b.url(&callback), &[], None)
        .await;
    assert_eq!(response.status(), 303);
    let cookies: Vec<&str> = (response.headers().get_all("set-cookie").iter())
        .map(|v| v.to_str().unwrap())
        .collect();
    let session = cookies
        .iter()
        .find(|c| c.starts_with("wasmgate_session="))
        .unwrap();
    for attribute in ["HttpOnly", "SameSite=Lax", "Path=/", "Max-Age=28800"] {
        assert!(session.contains(attribute), "{session}");
    }
    // Plain HTTP here (the redirect URL is http://): a Secure cookie would never come back.
    assert!(!session.contains("Secure"), "{session}");
    // The login in progress is spent.
    assert!(!browser.cookies.contains_key("wasmgate_oidc_login"));
    assert_eq!(idp.exchanged(), 1);

    let on_a = browser.session(&a).await;
    assert_eq!(on_a["subject"], "ana");
    assert_eq!(on_a["name"], "ana@example.test");
    assert_eq!(on_a["roles"]["admin"], true);
    browser.csrf = Some(on_a["csrf"].as_str().unwrap().to_owned());

    // A change on A, another on B, with the session; the audit log names the subject.
    let (status, created) = browser
        .call(
            &a,
            Method::POST,
            "/admin/keys",
            Some(json!({"project": "acme"})),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap();
    let (status, body) = browser
        .call(&b, Method::DELETE, &format!("/admin/keys/{id}"), None)
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, audit) = browser
        .call(&b, Method::GET, &format!("/admin/audit?target={id}"), None)
        .await;
    assert_eq!(status, 200, "{audit}");
    let entries = audit["data"].as_array().unwrap();
    assert_eq!(entries.len(), 2, "{audit}");
    for entry in entries {
        assert_eq!(entry["actor"], "oidc:ana", "{entry}");
        assert_eq!(entry["origin"], "console", "{entry}");
    }
    let (status, filtered) = browser
        .call(&a, Method::GET, "/admin/audit?actor=oidc:ana", None)
        .await;
    assert_eq!(status, 200);
    assert_eq!(filtered["data"].as_array().unwrap().len(), 2);

    // Signing out deletes the cookie; the browser is then signed out on both replicas.
    let (status, _) = browser
        .call(&a, Method::POST, "/console/logout", None)
        .await;
    assert_eq!(status, 200);
    assert!(!browser.cookies.contains_key("wasmgate_session"));
    assert_eq!(browser.session(&b).await, Value::Null);
    let (status, body) = browser.call(&b, Method::GET, "/admin/keys", None).await;
    assert_eq!(status, 401, "{body}");
}

#[tokio::test]
async fn every_spoiled_sign_in_is_refused_without_a_session() {
    let idp = Provider::start(REDIRECT).await;
    let gateway = gateway(&idp, "sqlite::memory:", None).await;
    idp.sign_in_as("ana", &["ops"]);

    let refused = |status: u16, body: &Value, expected: u16, words: &str| {
        assert_eq!(status, expected, "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(words), "{message}");
    };

    // Another state than the login's.
    let mut browser = Browser::default();
    let callback = browser.through_provider(&gateway).await;
    let tampered = callback.replace("state=", "state=x");
    let (status, body) = browser.callback(&gateway, &tampered).await;
    refused(status, &body, 401, "state does not match");
    assert_eq!(body["error"]["code"], "sign_in_refused");
    // The login cookie is spent by the try: the right state now finds no login either.
    let (status, body) = browser.callback(&gateway, &callback).await;
    refused(status, &body, 401, "not started here");
    assert!(browser.cookies.is_empty(), "{:?}", browser.cookies);

    // A code is good once: replaying the callback with the login's cookie again.
    let mut browser = Browser::default();
    let callback = browser.through_provider(&gateway).await;
    let login = browser.cookies.clone();
    let (status, _) = browser.callback(&gateway, &callback).await;
    assert_eq!(status, 303);
    let mut replay = Browser {
        cookies: login,
        csrf: None,
    };
    let (status, body) = replay.callback(&gateway, &callback).await;
    refused(status, &body, 401, "provider refused");

    for (spoil, words) in [
        (Spoil::Audience, "not for this gateway"),
        (Spoil::Expired, "has expired"),
        (Spoil::Nonce, "nonce does not match"),
        (Spoil::ForeignKey, "not signed by the identity provider"),
    ] {
        let mut browser = Browser::default();
        let callback = browser.through_provider(&gateway).await;
        idp.spoil_next(spoil);
        let (status, body) = browser.callback(&gateway, &callback).await;
        refused(status, &body, 401, words);
        assert!(
            browser.cookies.is_empty(),
            "{spoil:?}: {:?}",
            browser.cookies
        );
    }

    // A person the mapping grants nothing.
    idp.sign_in_as("mallory", &["contractors"]);
    let mut browser = Browser::default();
    let callback = browser.through_provider(&gateway).await;
    let (status, body) = browser.callback(&gateway, &callback).await;
    refused(status, &body, 403, "no role");
    assert!(browser.cookies.is_empty());

    // The provider's own refusal (`error=access_denied`).
    let mut browser = Browser::default();
    browser.through_provider(&gateway).await;
    let (status, body) = browser
        .callback(&gateway, "/console/callback?error=access_denied&state=x")
        .await;
    refused(status, &body, 401, "provider refused");
}

#[tokio::test]
async fn a_tampered_cookie_or_one_of_another_secret_is_no_session() {
    let idp = Provider::start(REDIRECT).await;
    let gateway_a = gateway(&idp, "sqlite::memory:", None).await;
    let other = gateway(
        &idp,
        "sqlite::memory:",
        Some("another-secret-also-of-32-bytes-at-least"),
    )
    .await;
    idp.sign_in_as("ana", &["ops"]);
    let mut browser = Browser::default();
    browser.sign_in(&gateway_a).await;
    let (status, _) = browser
        .call(&gateway_a, Method::GET, "/admin/keys", None)
        .await;
    assert_eq!(status, 200);

    // Another gateway's secret: no session there.
    let (status, body) = browser.call(&other, Method::GET, "/admin/keys", None).await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(browser.session(&other).await, Value::Null);

    // One character of the payload changed (roles widened, say): refused.
    let sealed = browser.cookies["wasmgate_session"].clone();
    let (payload, tag) = sealed.split_once('.').unwrap();
    let mut bytes = payload.as_bytes().to_vec();
    bytes[10] = if bytes[10] == b'A' { b'B' } else { b'A' };
    let tampered = format!("{}.{tag}", String::from_utf8(bytes).unwrap());
    browser
        .cookies
        .insert("wasmgate_session".to_owned(), tampered);
    let (status, body) = browser
        .call(&gateway_a, Method::GET, "/admin/keys", None)
        .await;
    assert_eq!(status, 401, "{body}");
    // And the signature alone, without its payload.
    browser
        .cookies
        .insert("wasmgate_session".to_owned(), tag.to_owned());
    let (status, _) = browser
        .call(&gateway_a, Method::GET, "/admin/keys", None)
        .await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn writes_need_the_csrf_token_and_roles_bound_each_person() {
    let idp = Provider::start(REDIRECT).await;
    let gateway = gateway(&idp, "sqlite::memory:", None).await;
    let admin = admin_key(&gateway).await;
    let beta_key = key_of(&gateway, &admin, "beta").await;

    // CSRF: an admin's session without the token, with another, or from another site.
    idp.sign_in_as("ana", &["ops"]);
    let mut ana = Browser::default();
    ana.sign_in(&gateway).await;
    let csrf = ana.csrf.clone().unwrap();
    let body = Some(json!({"project": "acme"}));
    for headers in [
        vec![],
        vec![("x-csrf-token", "0123")],
        vec![
            ("x-csrf-token", csrf.as_str()),
            ("sec-fetch-site", "cross-site"),
        ],
    ] {
        let response = ana
            .send(
                Method::POST,
                &gateway.url("/admin/keys"),
                &headers,
                body.clone(),
            )
            .await;
        assert_eq!(response.status(), 403, "{headers:?}");
        let refusal: Value = response.json().await.unwrap();
        assert_eq!(refusal["error"]["code"], "csrf_refused", "{refusal}");
    }
    let response = ana
        .send(
            Method::POST,
            &gateway.url("/admin/keys"),
            &[("x-csrf-token", &csrf), ("sec-fetch-site", "same-origin")],
            body.clone(),
        )
        .await;
    assert_eq!(response.status(), 201);
    // The admin key, for automation, needs no token.
    assert!(!key_of(&gateway, &admin, "acme").await.is_empty());

    // A viewer of acme: reads acme's usage, nothing else.
    idp.sign_in_as("vic", &["acme-devs"]);
    let mut vic = Browser::default();
    vic.sign_in(&gateway).await;
    let (status, body) = vic
        .call(
            &gateway,
            Method::POST,
            "/admin/keys",
            Some(json!({"project": "acme"})),
        )
        .await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["code"], "role_forbidden");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("project_admin"),
        "{body}"
    );
    let (status, _) = vic.call(&gateway, Method::GET, "/admin/keys", None).await;
    assert_eq!(status, 403);
    let (status, _) = vic.call(&gateway, Method::GET, "/admin/audit", None).await;
    assert_eq!(status, 403);
    let (status, usage) = vic
        .call(&gateway, Method::POST, "/usage/total", Some(json!({})))
        .await;
    assert_eq!(status, 200, "{usage}");
    let response = vic
        .send(
            Method::POST,
            &gateway.url("/usage/total"),
            &[("x-project-id", "beta")],
            Some(json!({})),
        )
        .await;
    assert_eq!(response.status(), 403);

    // A project admin of acme: acme's keys only.
    idp.sign_in_as("pat", &["acme-leads", "beta-devs"]);
    let mut pat = Browser::default();
    pat.sign_in(&gateway).await;
    let (status, mine) = pat
        .call(
            &gateway,
            Method::POST,
            "/admin/keys",
            Some(json!({"project": "acme", "rpm": 5})),
        )
        .await;
    assert_eq!(status, 201, "{mine}");
    let (status, body) = pat
        .call(
            &gateway,
            Method::POST,
            "/admin/keys",
            Some(json!({"project": "beta"})),
        )
        .await;
    assert_eq!(status, 403, "{body}");
    let beta = format!("/admin/keys/{beta_key}");
    for method in [Method::GET, Method::PATCH, Method::DELETE] {
        let body = (method == Method::PATCH).then(|| json!({"rpm": 1}));
        let (status, answer) = pat.call(&gateway, method.clone(), &beta, body).await;
        assert_eq!(status, 403, "{method} {answer}");
    }
    let (status, listed) = pat.call(&gateway, Method::GET, "/admin/keys", None).await;
    assert_eq!(status, 200);
    let projects: Vec<&str> = (listed["data"].as_array().unwrap().iter())
        .map(|k| k["project"].as_str().unwrap())
        .collect();
    assert_eq!(projects.len(), 3, "{listed}");
    assert!(projects.iter().all(|p| *p == "acme"), "{projects:?}");
    let (status, _) = pat
        .call(&gateway, Method::GET, "/admin/keys?project=beta", None)
        .await;
    assert_eq!(status, 403);
    let mine = format!("/admin/keys/{}", mine["id"].as_str().unwrap());
    let (status, _) = pat
        .call(&gateway, Method::PATCH, &mine, Some(json!({"rpm": 9})))
        .await;
    assert_eq!(status, 200);
    let (status, _) = pat.call(&gateway, Method::GET, "/admin/audit", None).await;
    assert_eq!(status, 403);
    // The beta key is untouched.
    let untouched: Value = http()
        .get(gateway.url(&beta))
        .bearer_auth(&admin)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(untouched["state"], "active");
    assert_eq!(untouched["rpm"], Value::Null);
}

#[tokio::test]
async fn without_console_oidc_there_is_no_sign_in() {
    let gateway = Gateway::echo().start().await;
    let response = http()
        .get(gateway.url("/console/login"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    let session: Value = http()
        .get(gateway.url("/console/session"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(session, json!({"oidc": false, "session": null}));
}
