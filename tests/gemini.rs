//! Google's GenAI API (the `gemini` dialect, `plugins/gemini-genai`) end to end: the official
//! `google-genai` Python SDK against the strict Gemini mock, then through the gateway natively
//! to a `gemini` entry (the client's body untouched but for the model and key) and translated
//! to OpenAI and Anthropic entries; errors in Google's shape, the key from `x-goog-api-key` or
//! `?key=`, a stream as one JSON array without `alt=sse`, the model list, and the ledger.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use crate::sdk_clients::{assert_passed, run_client};

use common::gateway::{Gateway, Provider};
use common::genai::{CLAUDE, GEMINI, GEMINI_EMBEDDING, GPT, Setup, Upstreams};
use common::http;
use common::mock_openai;
use common::mock_providers::{KEY, MockProvider};
use serde_json::{Value, json};

const ALL: [&str; 6] = [
    "generate",
    "stream",
    "tools",
    "stream_tools",
    "count_tokens",
    "embed",
];

/// A `gemini`, an `openai` and an `anthropic` entry on their mocks, the `gemini` dialect on,
/// and keys required.
async fn setup() -> Setup {
    Setup::start("genai", |u, config| {
        let gemini = [GEMINI, GEMINI_EMBEDDING, "error-429"];
        let openai = [GPT, "text-embedding-3-small"];
        config
            .provider("gemini", Upstreams::entry("gemini", &u.gemini, KEY, gemini))
            .provider(
                "openai",
                Upstreams::entry("openai", &u.openai, u.openai_key, openai),
            )
            .provider(
                "anthropic",
                Upstreams::entry("anthropic", &u.anthropic, KEY, [CLAUDE]),
            )
    })
    .await
}

#[tokio::test]
async fn google_genai_python_sdk_completes_every_scenario_against_the_mock() {
    let mock = MockProvider::gemini().await;
    let output = run_client(
        "google_genai.py",
        &mock.origin(),
        KEY,
        &["--model", GEMINI, "--embedding-model", GEMINI_EMBEDDING],
    )
    .await;
    assert_passed(&output, &ALL);
    let requests = mock.requests().await;
    assert!(
        requests
            .iter()
            .all(|r| r.header("x-goog-api-key") == Some(KEY))
    );
    assert!(
        requests
            .iter()
            .any(|r| r.path.contains(":streamGenerateContent") && r.path.contains("alt=sse")),
        "the SDK streams with alt=sse"
    );
}

const NODE: [&str; 5] = ["generate", "stream", "tools", "count_tokens", "embed"];

#[tokio::test]
async fn google_genai_node_sdk_completes_every_scenario_against_the_mock_and_the_gateway() {
    let mock = MockProvider::gemini().await;
    let output = run_client(
        "google_genai.mjs",
        &mock.origin(),
        KEY,
        &["--model", GEMINI, "--embedding-model", GEMINI_EMBEDDING],
    )
    .await;
    assert_passed(&output, &NODE);
    // Through the gateway, natively and translated.
    let s = setup().await;
    for (model, embedding) in [
        (
            format!("gemini/{GEMINI}"),
            format!("gemini/{GEMINI_EMBEDDING}"),
        ),
        (
            format!("openai/{GPT}"),
            "openai/text-embedding-3-small".to_owned(),
        ),
    ] {
        let output = run_client(
            "google_genai.mjs",
            &s.gateway.url(""),
            &s.key,
            &["--model", &model, "--embedding-model", &embedding],
        )
        .await;
        assert_passed(&output, &NODE);
    }
    assert!(!s.gemini.requests().await.is_empty() && !s.openai.requests().await.is_empty());
}

/// The mock refuses what Google refuses: a role it does not know, and a function response
/// without its call.
#[tokio::test]
async fn the_gemini_mock_refuses_what_google_refuses() {
    let mock = MockProvider::gemini().await;
    let url = format!("{}/models/{GEMINI}:generateContent", mock.base_url());
    for body in [
        json!({"contents": [{"role": "assistant", "parts": [{"text": "hi"}]}]}),
        json!({"contents": [{"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}]}]}),
        json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "model": "x"}),
    ] {
        let response = http()
            .post(&url)
            .header("x-goog-api-key", KEY)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400, "{body}");
        let error: Value = response.json().await.unwrap();
        assert_eq!(error["error"]["status"], "INVALID_ARGUMENT");
    }
}

/// Natively to a `gemini` entry: the client's body goes upstream as it was written (the
/// safety settings the canonical form would drop arrive), under the upstream's model name and
/// key; counting goes to Google's own `countTokens`.
#[tokio::test]
async fn the_sdk_works_natively_through_the_gateway() {
    let s = setup().await;
    let model = format!("gemini/{GEMINI}");
    let embedding = format!("gemini/{GEMINI_EMBEDDING}");
    let output = run_client(
        "google_genai.py",
        &s.gateway.url(""),
        &s.key,
        &["--model", &model, "--embedding-model", &embedding],
    )
    .await;
    assert_passed(&output, &ALL);
    let requests = s.gemini.requests().await;
    assert!(
        requests
            .iter()
            .all(|r| r.header("x-goog-api-key") == Some(KEY))
    );
    let generate = requests
        .iter()
        .find(|r| r.path.ends_with(&format!("{GEMINI}:generateContent")))
        .expect("a generateContent upstream");
    assert!(
        generate.body["safetySettings"].is_array(),
        "{}",
        generate.body
    );
    assert_eq!(
        generate.body["systemInstruction"]["parts"][0]["text"],
        "Be brief."
    );
    assert!(
        requests
            .iter()
            .any(|r| r.path.ends_with(&format!("{GEMINI}:countTokens")))
    );
    assert!(requests.iter().any(|r| {
        r.path
            .contains(&format!("{GEMINI_EMBEDDING}:batchEmbedContents"))
    }));
    assert!(s.openai.requests().await.is_empty() && s.anthropic.requests().await.is_empty());
}

#[tokio::test]
async fn the_sdk_works_translated_to_openai() {
    let s = setup().await;
    let model = format!("openai/{GPT}");
    let output = run_client(
        "google_genai.py",
        &s.gateway.url(""),
        &s.key,
        &[
            "--model",
            &model,
            "--embedding-model",
            "openai/text-embedding-3-small",
        ],
    )
    .await;
    assert_passed(&output, &ALL);
    let requests = s.openai.requests().await;
    let chat = requests
        .iter()
        .find(|r| r.path == "/v1/chat/completions")
        .expect("a chat completion upstream");
    assert_eq!(chat.body["model"], GPT);
    assert!(chat.body.get("safetySettings").is_none());
    assert!(requests.iter().any(|r| r.path == "/v1/embeddings"));
    assert!(s.gemini.requests().await.is_empty());
}

#[tokio::test]
async fn the_sdk_works_translated_to_anthropic() {
    let s = setup().await;
    let model = format!("anthropic/{CLAUDE}");
    // Anthropic has no embeddings.
    let scenarios = [
        "generate",
        "stream",
        "tools",
        "stream_tools",
        "count_tokens",
    ];
    let output = run_client(
        "google_genai.py",
        &s.gateway.url(""),
        &s.key,
        &[
            "--model",
            &model,
            "--embedding-model",
            "none",
            "--only",
            &scenarios.join(","),
        ],
    )
    .await;
    assert_passed(&output, &scenarios);
    let requests = s.anthropic.requests().await;
    assert!(requests.iter().any(|r| r.path == "/v1/messages"));
    assert!(s.gemini.requests().await.is_empty());
}

async fn post(s: &Setup, path: &str, key: Option<&str>, body: &Value) -> reqwest::Response {
    let mut request = http().post(s.gateway.url(path)).json(body);
    if let Some(key) = key {
        request = request.header("x-goog-api-key", key);
    }
    request.send().await.unwrap()
}

fn hello() -> Value {
    json!({"contents": [{"role": "user", "parts": [{"text": "Say hello"}]}]})
}

/// Errors on the dialect's routes are Google's shape, written by its plugin: a missing key, a
/// role Google does not know, a model the gateway does not serve, an upstream's 429.
#[tokio::test]
async fn errors_are_google_s_shape() {
    let s = setup().await;
    let path = format!("/v1beta/models/openai/{GPT}:generateContent");
    let cases = [
        (
            post(&s, &path, None, &hello()).await,
            401,
            "UNAUTHENTICATED",
        ),
        (
            post(
                &s,
                &path,
                Some(&s.key),
                &json!({"contents": [{"role": "system", "parts": [{"text": "x"}]}]}),
            )
            .await,
            400,
            "INVALID_ARGUMENT",
        ),
        (
            post(
                &s,
                "/v1beta/models/nowhere/nothing:generateContent",
                Some(&s.key),
                &hello(),
            )
            .await,
            404,
            "NOT_FOUND",
        ),
        (
            post(
                &s,
                "/v1beta/models/gemini/error-429:generateContent",
                Some(&s.key),
                &hello(),
            )
            .await,
            429,
            "RESOURCE_EXHAUSTED",
        ),
    ];
    for (response, status, name) in cases {
        assert_eq!(response.status(), status);
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], status, "{body}");
        assert_eq!(body["error"]["status"], name, "{body}");
        assert!(body["error"]["message"].is_string(), "{body}");
    }
    // A method the dialect does not serve on one of its paths.
    let response = http()
        .put(s.gateway.url(&path))
        .header("x-goog-api-key", &s.key)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 405);
    // POST, and GET too: the path is also one `models/{model}` takes.
    let allow = response.headers()["allow"].to_str().unwrap().to_owned();
    assert!(allow.split(',').any(|m| m == "POST"), "{allow}");
    assert!(!allow.contains("PUT"), "{allow}");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], 405, "{body}");
}

/// `?key=` works as the header does, and a stream without `alt=sse` is one JSON array whose
/// elements are the events; the request is recorded under the key's project.
#[tokio::test]
async fn a_query_key_and_a_json_array_stream() {
    let s = setup().await;
    let url = s.gateway.url(&format!(
        "/v1beta/models/openai/{GPT}:streamGenerateContent?key={}",
        s.key
    ));
    let response = http().post(&url).json(&hello()).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    let id = response.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let events: Vec<Value> = response.json().await.unwrap();
    assert!(events.len() >= 2, "{events:?}");
    let text: String = events
        .iter()
        .filter_map(|e| e["candidates"][0]["content"]["parts"][0]["text"].as_str())
        .collect();
    assert_eq!(text, mock_openai::REPLY);
    assert_eq!(
        events.last().unwrap()["candidates"][0]["finishReason"],
        "STOP"
    );
    let record = s.gateway.record_of(&id).await;
    assert_eq!(record.project, "genai");
    assert_eq!(record.provider.as_deref(), Some("openai"));
    assert!(
        record.input_tokens > 0 && record.output_tokens > 0,
        "{record:?}"
    );
    // The key never reaches the upstream, in any form.
    let upstream = s.openai.requests().await;
    assert!(
        upstream
            .iter()
            .all(|r| !format!("{:?}", r.body).contains(&s.key))
    );
}

/// `countTokens` is Google's own count for a `gemini` entry, the gateway's estimate for a
/// translated target; the answer says which, and neither is recorded.
#[tokio::test]
async fn count_tokens_is_google_s_own_natively_and_estimated_otherwise() {
    let s = setup().await;
    let body =
        json!({"contents": [{"role": "user", "parts": [{"text": "one two three four five"}]}]});
    for (model, counter) in [
        (format!("gemini/{GEMINI}"), "upstream"),
        (format!("openai/{GPT}"), "estimate"),
    ] {
        let response = post(
            &s,
            &format!("/v1beta/models/{model}:countTokens"),
            Some(&s.key),
            &body,
        )
        .await;
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["x-wasmgate-count"], counter, "{model}");
        let counted: Value = response.json().await.unwrap();
        assert!(counted["totalTokens"].as_u64().unwrap() > 0, "{counted}");
    }
    let upstream = s.gemini.requests().await;
    assert_eq!(upstream.len(), 1, "{upstream:?}");
    assert_eq!(upstream[0].body, body, "the client's body as written");
    assert!(s.openai.requests().await.is_empty());
}

/// `GET /v1beta/models` lists the gateway's models as Google's; one model by its name; an
/// unknown one is a 404 in Google's shape.
#[tokio::test]
async fn the_model_list_in_google_s_shape() {
    let s = setup().await;
    let get = |path: String| {
        http()
            .get(s.gateway.url(&path))
            .header("x-goog-api-key", &s.key)
            .send()
    };
    let list: Value = get("/v1beta/models".into())
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let names: Vec<&str> = list["models"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["name"].as_str())
        .collect();
    assert!(names.contains(&"models/openai/gpt-4o-mini"), "{names:?}");
    let one: Value = get(format!("/v1beta/models/gemini/{GEMINI}"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(one["name"], format!("models/gemini/{GEMINI}"));
    let missing = get("/v1beta/models/nowhere/x".into()).await.unwrap();
    assert_eq!(missing.status(), 404);
    let body: Value = missing.json().await.unwrap();
    assert_eq!(body["error"]["status"], "NOT_FOUND");
}

/// An operator's own dialect: the GenAI plugin's component, dropped into `plugins.dir` under a
/// name the host has never heard of and named by a `dialects:` key of the operator's choosing,
/// is mounted with the paths, key header and error shape it declares; nothing in the host
/// names it.
#[tokio::test]
async fn a_dialect_dropped_into_the_plugin_directory_is_mounted_by_what_it_declares() {
    let gemini = MockProvider::gemini().await;
    let dir = std::env::temp_dir().join(format!("wasmgate-dialect-dir-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // The component the build made of plugins/gemini-genai, beside the test plugins.
    let built = common::test_plugins_dir()
        .parent()
        .unwrap()
        .join("plugins/gemini-genai.wasm");
    std::fs::copy(&built, dir.join("acme-genai.wasm"))
        .unwrap_or_else(|e| panic!("{}: {e}", built.display()));
    let entry = Provider::at("gemini", &gemini.base_url(), KEY)
        .models([GEMINI])
        .timeout_ms(5000);
    let gateway = Gateway::builder()
        .set("plugins.dir", dir.display().to_string())
        .set("dialects.acme.plugin", "acme-genai")
        .auth_required()
        .provider("gemini", entry)
        .start()
        .await;
    let key = gateway.api_key("acme").await;
    let path = format!("/v1beta/models/gemini/{GEMINI}:generateContent");

    let answer = http()
        .post(gateway.url(&path))
        .header("x-goog-api-key", &key)
        .json(&hello())
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let answer: Value = answer.json().await.unwrap();
    assert!(
        answer["candidates"][0]["content"]["parts"][0]["text"].is_string(),
        "{answer}"
    );
    let sent = gemini.requests().await;
    assert_eq!(sent.len(), 1);
    assert!(sent[0].path.ends_with(&format!("{GEMINI}:generateContent")));
    assert_eq!(sent[0].header("x-goog-api-key"), Some(KEY));
    assert_eq!(sent[0].body["contents"], hello()["contents"]);

    // Its errors are its own shape, from its plugin.
    let refused = http()
        .post(gateway.url(&path))
        .json(&hello())
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    let refused: Value = refused.json().await.unwrap();
    assert_eq!(refused["error"]["status"], "UNAUTHENTICATED", "{refused}");
    let _ = std::fs::remove_dir_all(&dir);
}
