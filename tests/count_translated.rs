//! Counts by the model's own tokenizer through translation (issue 21, part 3): a dialect's
//! count whose target speaks another dialect reaches the target's own counting endpoint, as
//! the provider plugin's `prepare-count` writes it, and the strict mocks refuse what the real
//! endpoints refuse. Messages' `count_tokens` (the Anthropic SDK) to OpenAI's
//! `/responses/input_tokens` and Gemini's `:countTokens`; Google's `countTokens` (the
//! `google-genai` SDK) and Responses' `input_tokens` to Anthropic's `/messages/count_tokens`.
//! A target with no counter is estimated; the answer says which; counts are never recorded.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use crate::sdk_clients::{assert_passed, run_client};

use common::gateway::Route;
use common::genai::{CLAUDE, GEMINI, GEMINI_EMBEDDING, GPT, Setup, Upstreams};
use common::http;
use common::mock_providers::KEY;
use serde_json::{Value, json};

/// `openai` serves the Responses API (so it has OpenAI's counter); `compat` is the same mock
/// as a compatible host without it (no counter: estimated). `routing` adds virtual models.
async fn setup_with(routes: &[(&str, Route)]) -> Setup {
    Setup::start("counts", |u, config| {
        let mut config = config
            .provider(
                "gemini",
                Upstreams::entry("gemini", &u.gemini, KEY, [GEMINI]),
            )
            .provider(
                "openai",
                Upstreams::entry("openai", &u.openai, u.openai_key, [GPT])
                    .options("{ responses: native }"),
            )
            .provider(
                "compat",
                Upstreams::entry("openai", &u.openai, u.openai_key, [GPT]),
            )
            .provider(
                "anthropic",
                Upstreams::entry("anthropic", &u.anthropic, KEY, [CLAUDE]),
            );
        for (name, route) in routes {
            config = config.route(name, route.clone());
        }
        config
    })
    .await
}

async fn setup() -> Setup {
    setup_with(&[]).await
}

/// POSTs `body` to the gateway's `path` with the key; the status, who counted, and the body.
async fn count(s: &Setup, path: &str, id: &str, body: &Value) -> (u16, String, Value) {
    let response = http()
        .post(s.gateway.url(path))
        .bearer_auth(&s.key)
        .header("x-request-id", id)
        .json(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let counter = response
        .headers()
        .get("x-wasmgate-count")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (status, counter, response.json().await.unwrap())
}

#[tokio::test]
async fn the_anthropic_sdk_s_count_tokens_reaches_openai_s_and_gemini_s_own_counters() {
    let s = setup().await;
    for model in [format!("openai/{GPT}"), format!("gemini/{GEMINI}")] {
        let output = run_client(
            "anthropic_messages.py",
            &s.gateway.url(""),
            &s.key,
            &["--model", &model, "--only", "count_tokens"],
        )
        .await;
        assert_passed(&output, &["count_tokens"]);
    }
    // OpenAI's counter got the conversation as Responses input items, the system prompt and
    // the tool included, under its own model name and key.
    let openai = s.openai.requests().await;
    assert_eq!(openai.len(), 2, "{openai:?}");
    assert!(
        openai
            .iter()
            .all(|r| r.path == "/v1/responses/input_tokens")
    );
    let with_tools = &openai[1].body;
    assert_eq!(with_tools["model"], GPT);
    assert_eq!(with_tools["input"][0]["role"], "system", "{with_tools}");
    assert_eq!(with_tools["tools"][0]["type"], "function", "{with_tools}");
    assert_eq!(
        with_tools["tools"][0]["name"], "get_weather",
        "{with_tools}"
    );
    assert!(with_tools.get("max_tokens").is_none());
    // Gemini's got a whole generateContentRequest, so the system instruction and tools count.
    let gemini = s.gemini.requests().await;
    assert_eq!(gemini.len(), 2, "{gemini:?}");
    assert!(
        gemini
            .iter()
            .all(|r| r.path.ends_with(&format!("/models/{GEMINI}:countTokens")))
    );
    let request = &gemini[1].body["generateContentRequest"];
    assert_eq!(request["model"], format!("models/{GEMINI}"), "{request}");
    assert!(request["systemInstruction"].is_object(), "{request}");
    assert!(
        gemini
            .iter()
            .all(|r| r.header("x-goog-api-key") == Some(KEY))
    );
    assert!(s.anthropic.requests().await.is_empty());
}

#[tokio::test]
async fn the_google_genai_sdk_s_count_tokens_reaches_anthropic_s_own_counter() {
    let s = setup().await;
    let output = run_client(
        "google_genai.py",
        &s.gateway.url(""),
        &s.key,
        &[
            "--model",
            &format!("anthropic/{CLAUDE}"),
            "--embedding-model",
            GEMINI_EMBEDDING,
            "--only",
            "count_tokens",
        ],
    )
    .await;
    assert_passed(&output, &["count_tokens"]);
    let counted = s.anthropic.requests().await;
    assert_eq!(counted.len(), 1, "{counted:?}");
    assert_eq!(counted[0].path, "/v1/messages/count_tokens");
    assert_eq!(counted[0].body["model"], CLAUDE);
    assert_eq!(counted[0].header("x-api-key"), Some(KEY));
    assert!(
        counted[0].body.get("max_tokens").is_none(),
        "count_tokens refuses it"
    );
    assert!(s.gemini.requests().await.is_empty());
}

/// The answer is the upstream's number in the client's dialect, and says who counted; a
/// target without a counter is estimated; no count is recorded.
#[tokio::test]
async fn the_answer_carries_the_upstream_s_number_and_says_who_counted() {
    let s = setup().await;
    // Gemini's mock counts a token per word of the prompt (system instruction included).
    let messages = |model: &str| {
        json!({"model": model, "system": "Be brief.",
               "messages": [{"role": "user", "content": "one two three four five"}]})
    };
    let (status, counter, body) = count(
        &s,
        "/v1/messages/count_tokens",
        "count-gemini",
        &messages(&format!("gemini/{GEMINI}")),
    )
    .await;
    assert_eq!((status, counter.as_str()), (200, "upstream"), "{body}");
    let sent = &s.gemini.last_request().await.body["generateContentRequest"];
    let prompt = format!("{} {}", sent["systemInstruction"], sent["contents"]);
    let expected = prompt.split_whitespace().count();
    assert!(
        prompt.contains("Be brief."),
        "the system prompt counted: {prompt}"
    );
    assert_eq!(body, json!({"input_tokens": expected}));

    // Responses' input_tokens to Anthropic's counter, in OpenAI's answer shape.
    let responses = json!({"model": format!("anthropic/{CLAUDE}"), "instructions": "Be brief.",
                           "input": "How many tokens is this?"});
    let (status, counter, body) =
        count(&s, "/v1/responses/input_tokens", "count-claude", &responses).await;
    assert_eq!((status, counter.as_str()), (200, "upstream"), "{body}");
    assert_eq!(body["object"], "response.input_tokens", "{body}");
    assert!(body["input_tokens"].as_u64().unwrap() > 0, "{body}");
    let sent = s.anthropic.last_request().await;
    assert_eq!(sent.path, "/v1/messages/count_tokens");
    assert_eq!(sent.body["system"], "Be brief.", "{}", sent.body);

    // A compatible host without the Responses API has no counter: estimated, nothing sent.
    let before = s.openai.requests().await.len();
    let (status, counter, body) = count(
        &s,
        "/v1/messages/count_tokens",
        "count-compat",
        &messages(&format!("compat/{GPT}")),
    )
    .await;
    assert_eq!((status, counter.as_str()), (200, "estimate"), "{body}");
    assert!(body["input_tokens"].as_u64().unwrap() > 0);
    assert_eq!(s.openai.requests().await.len(), before);

    // An upstream that refuses the count is the client's error, in its dialect's shape.
    let (status, _, body) = count(
        &s,
        "/v1/messages/count_tokens",
        "count-refused",
        &json!({"model": format!("gemini/{GEMINI}"), "messages": []}),
    )
    .await;
    assert!((400..500).contains(&status), "{status} {body}");
    assert_eq!(body["type"], "error", "Anthropic's error shape: {body}");

    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let store = s.gateway.state.ledger.store();
    for id in ["count-gemini", "count-claude", "count-compat"] {
        let (store, id) = (store.clone(), id.to_owned());
        let found = tokio::task::spawn_blocking(move || store.record(&id))
            .await
            .unwrap()
            .unwrap();
        assert!(found.is_none(), "a count was recorded: {found:?}");
    }
}

/// A virtual model is counted by the target its router would try first: natively, translated,
/// or estimated when that target has no counter (never by a later target).
#[tokio::test]
async fn a_virtual_model_is_counted_by_the_target_its_router_chooses_first() {
    let claude = format!("anthropic/{CLAUDE}");
    let gemini = format!("gemini/{GEMINI}");
    let (compat, openai) = (format!("compat/{GPT}"), format!("openai/{GPT}"));
    let s = setup_with(&[
        ("pool-claude", Route::new("fallback", [&*claude, &*gemini])),
        ("pool-gemini", Route::new("fallback", [&*gemini, &*claude])),
        ("pool-compat", Route::new("fallback", [&*compat, &*openai])),
    ])
    .await;
    let messages = |model: &str| {
        json!({"model": model, "system": "Be brief.",
               "messages": [{"role": "user", "content": "one two three four five"}]})
    };

    // Natively: Anthropic's own counter gets the client's body under its own model name.
    let (status, counter, body) = count(
        &s,
        "/v1/messages/count_tokens",
        "pool-claude",
        &messages("pool-claude"),
    )
    .await;
    assert_eq!((status, counter.as_str()), (200, "upstream"), "{body}");
    assert!(body["input_tokens"].as_u64().unwrap() > 0, "{body}");
    let sent = s.anthropic.last_request().await;
    assert_eq!(sent.path, "/v1/messages/count_tokens");
    assert_eq!(sent.body["model"], CLAUDE);
    // Responses' input_tokens through the same route: translated to Anthropic's counter.
    let responses = json!({"model": "pool-claude", "input": "How many tokens is this?"});
    let (status, counter, body) = count(
        &s,
        "/v1/responses/input_tokens",
        "pool-responses",
        &responses,
    )
    .await;
    assert_eq!((status, counter.as_str()), (200, "upstream"), "{body}");
    assert_eq!(body["object"], "response.input_tokens", "{body}");
    assert_eq!(s.anthropic.requests().await.len(), 2);

    // Translated: Messages to Gemini's counter, the number being the mock's word count.
    let (status, counter, body) = count(
        &s,
        "/v1/messages/count_tokens",
        "pool-gemini",
        &messages("pool-gemini"),
    )
    .await;
    assert_eq!((status, counter.as_str()), (200, "upstream"), "{body}");
    let sent = &s.gemini.last_request().await.body["generateContentRequest"];
    assert_eq!(sent["model"], format!("models/{GEMINI}"), "{sent}");
    let prompt = format!("{} {}", sent["systemInstruction"], sent["contents"]);
    assert_eq!(
        body,
        json!({"input_tokens": prompt.split_whitespace().count()})
    );
    assert_eq!(s.gemini.requests().await.len(), 1);

    // The first target has no counter: estimated, and the second target is not asked.
    let (status, counter, body) = count(
        &s,
        "/v1/messages/count_tokens",
        "pool-compat",
        &messages("pool-compat"),
    )
    .await;
    assert_eq!((status, counter.as_str()), (200, "estimate"), "{body}");
    assert!(body["input_tokens"].as_u64().unwrap() > 0, "{body}");
    assert!(s.openai.requests().await.is_empty());
    assert_eq!(s.anthropic.requests().await.len(), 2);
}
