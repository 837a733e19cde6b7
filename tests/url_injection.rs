//! Hostile model names against every provider plugin that goes upstream, each entry passing any
//! model name through (no `models:` list): a name with `../`, `%2e%2e`, `?`, `#`, `@`, a
//! backslash or CR/LF must never take a request outside the entry's `base_url`, nor put the
//! injected part into the path or query the upstream sees. Either the client gets a 4xx in
//! OpenAI's shape and the upstream sees nothing, or the upstream sees the name escaped as one
//! harmless path segment (or, where the plugin keeps the model out of the URL, only in the body).
//!
//! The mocks note the raw target of every request that reaches them, routed or not. A careless
//! third-party plugin (the test plugin `faulty` with `join_model: true`, which joins the name into
//! the URL unescaped) shows that the host's own guard keeps every plugin under its base URL.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::gateway::{Gateway, Provider};
use common::mock_bedrock::{ACCESS_KEY_ID, REGION, SECRET_ACCESS_KEY};
use common::mock_openai::MockOpenAi;
use common::mock_providers::{KEY, MockProvider};
use common::{TestGateway, http};
use serde_json::{Value, json};

/// Model names a hostile client may send after `<entry>/`.
const HOSTILE: &[&str] = &[
    "../../v1/other",
    "..",
    ".",
    "x/../../../admin",
    "%2e%2e/%2E%2e/admin",
    "%2e%2e",
    ".%2E",
    "x?key=abc&alt=json",
    "x#fragment",
    "x@evil.example",
    "user:pw@127.0.0.1/x",
    "x\r\nInjected: 1",
    "x\ny",
    "x\\..\\..\\admin",
];

/// Whether `segment` is one path segment that cannot change a URL's meaning: not empty, no
/// separator, query, fragment or control character, and not a dot segment in any encoding.
fn one_segment(segment: &str) -> bool {
    let dots = segment.to_ascii_lowercase().replace("%2e", ".");
    !segment.is_empty()
        && !segment.contains(['/', '?', '#', '\\'])
        && !segment.chars().any(char::is_control)
        && dots != "."
        && dots != ".."
}

/// Sends `model` to `gateway` and checks the outcome against what `mock_targets` saw: a 4xx in
/// OpenAI's shape with nothing sent upstream, or only requests whose target `harmless` accepts.
async fn send_hostile<F, Fut>(
    gateway: &TestGateway,
    model: &str,
    stream: bool,
    mock_targets: F,
    harmless: &dyn Fn(&str) -> bool,
) where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Vec<String>>,
{
    let before = mock_targets().await.len();
    let response = http()
        .post(gateway.url("/v1/chat/completions"))
        .json(&json!({
            "model": model,
            "stream": stream,
            "messages": [{"role": "user", "content": "hi"}],
        }))
        .send()
        .await
        .unwrap();
    let status = response.status();
    let body = response.text().await.unwrap();
    let targets = mock_targets().await;
    let sent = &targets[before..];
    if sent.is_empty() {
        assert!(
            status.is_client_error(),
            "{model:?}: nothing went upstream, yet the status is {status}: {body}"
        );
        let error: Value = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("{model:?}: not JSON ({e}): {body}"));
        assert!(
            error["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty())
                && error["error"]["type"].is_string(),
            "{model:?}: not OpenAI's error shape: {body}"
        );
    }
    for target in sent {
        assert!(
            harmless(target),
            "{model:?} reached the upstream as {target:?} (client got {status})"
        );
    }
}

/// A gateway with one entry `name` of `plugin`, serving any model (no `models:` list).
async fn gateway(
    name: &str,
    plugin: &str,
    base_url: &str,
    key: &str,
    options: &str,
) -> TestGateway {
    let entry = Provider::at(plugin, base_url, key)
        .timeout_ms(5000)
        .options(options);
    Gateway::builder().provider(name, entry).start().await
}

/// Every hostile name, through entry `name` (whose plugin is `plugin`), against a mock of the
/// native API; `harmless` says which upstream targets are acceptable.
async fn injection(
    name: &str,
    plugin: &str,
    mock: &MockProvider,
    key: &str,
    options: &str,
    harmless: &dyn Fn(&str) -> bool,
) {
    let gateway = gateway(name, plugin, &mock.base_url(), key, options).await;
    for hostile in HOSTILE {
        let model = format!("{name}/{hostile}");
        send_hostile(&gateway, &model, false, || mock.targets(), harmless).await;
    }
}

#[tokio::test]
async fn gemini_model_names_stay_one_escaped_segment() {
    let mock = MockProvider::gemini().await;
    let harmless = |target: &str| {
        target
            .strip_prefix("/v1beta/models/")
            .and_then(|rest| {
                rest.strip_suffix(":generateContent")
                    .or_else(|| rest.strip_suffix(":streamGenerateContent?alt=sse"))
            })
            .is_some_and(one_segment)
    };
    injection("gem", "gemini", &mock, KEY, "{}", &harmless).await;

    // A stream's own `?alt=sse` stays the only query.
    let gateway = gateway("gem", "gemini", &mock.base_url(), KEY, "{}").await;
    send_hostile(
        &gateway,
        "gem/x?key=abc&alt=json",
        true,
        || mock.targets(),
        &harmless,
    )
    .await;
    // A name that escaping made harmless did reach the upstream, escaped.
    let targets = mock.targets().await;
    assert!(
        targets
            .iter()
            .any(|t| t == "/v1beta/models/x%3Fkey%3Dabc%26alt%3Djson:streamGenerateContent?alt=sse"),
        "{targets:#?}"
    );
    // Resource paths the Gemini API names stay usable.
    send_hostile(
        &gateway,
        "gem/models/gemini-2.0-flash",
        false,
        || mock.targets(),
        &harmless,
    )
    .await;
    let last = mock.targets().await.pop().unwrap_or_default();
    assert_eq!(last, "/v1beta/models/gemini-2.0-flash:generateContent");
}

#[tokio::test]
async fn bedrock_model_ids_stay_one_escaped_segment() {
    let mock = MockProvider::bedrock().await;
    let harmless = |target: &str| {
        target
            .strip_prefix("/model/")
            .and_then(|rest| rest.strip_suffix("/converse"))
            .is_some_and(one_segment)
    };
    let key = format!("{ACCESS_KEY_ID}:{SECRET_ACCESS_KEY}");
    let options = format!("{{ region: {REGION} }}");
    injection("br", "bedrock", &mock, &key, &options, &harmless).await;
}

#[tokio::test]
async fn azure_deployment_names_stay_one_segment() {
    let mock = MockProvider::azure().await;
    let harmless = |target: &str| {
        target
            .strip_prefix("/openai/deployments/")
            .and_then(|rest| rest.split_once("/chat/completions?api-version="))
            .is_some_and(|(deployment, version)| {
                one_segment(deployment) && !version.contains(['&', '#'])
            })
    };
    injection("az", "azure-openai", &mock, KEY, "{}", &harmless).await;
}

#[tokio::test]
async fn anthropic_model_names_stay_in_the_body() {
    let mock = MockProvider::anthropic().await;
    injection("an", "anthropic", &mock, KEY, "{}", &|t| {
        t == "/v1/messages"
    })
    .await;
}

#[tokio::test]
async fn cohere_model_names_stay_in_the_body() {
    let mock = MockProvider::cohere().await;
    injection("co", "cohere", &mock, KEY, "{}", &|t| t == "/v2/chat").await;
}

#[tokio::test]
async fn openai_model_names_stay_in_the_body() {
    let mock = MockOpenAi::start().await;
    let gateway = gateway("oa", "openai", &mock.base_url(), "sk-upstream-secret", "{}").await;
    for hostile in HOSTILE {
        let model = format!("oa/{hostile}");
        let harmless = |t: &str| t == "/v1/chat/completions";
        send_hostile(&gateway, &model, false, || mock.targets(), &harmless).await;
    }
    // The name went upstream whole, in the body.
    let bodies: Vec<Value> = mock.requests().await.into_iter().map(|r| r.body).collect();
    assert!(bodies.iter().any(|b| b["model"] == "x?key=abc&alt=json"));
}

/// A plugin that joins the name into its URL unescaped is still kept under its base URL by the
/// host: dot segments (raw, percent-encoded or with backslashes), fragments and control
/// characters are refused before anything is sent. A query it builds is its own affair.
#[tokio::test]
async fn the_host_keeps_a_careless_plugin_under_its_base_url() {
    let mock = MockOpenAi::start().await;
    let options = "{ join_model: true }";
    let gateway = gateway(
        "naive",
        "faulty",
        &mock.base_url(),
        "sk-upstream-secret",
        options,
    )
    .await;
    let harmless = |target: &str| {
        let path = target.split('?').next().unwrap_or_default();
        path.strip_prefix("/v1/models/").is_some_and(|rest| {
            !rest.is_empty()
                && !rest.contains('#')
                && rest.split('/').all(|s| {
                    let dots = s.to_ascii_lowercase().replace("%2e", ".");
                    dots != "." && dots != ".."
                })
        })
    };
    let mut refused = 0;
    for hostile in HOSTILE {
        let before = mock.targets().await.len();
        let model = format!("naive/{hostile}");
        send_hostile(&gateway, &model, false, || mock.targets(), &harmless).await;
        refused += usize::from(mock.targets().await.len() == before);
    }
    // The dot segments, the fragment, the backslashes and the line breaks at least.
    assert!(refused >= 9, "only {refused} names were refused");
    // A refused request is a 400 that names the model, and says why.
    let response = http()
        .post(gateway.url("/v1/chat/completions"))
        .json(&json!({"model": "naive/../../admin",
                      "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["param"], "model", "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("../../admin"), "{message}");
}
