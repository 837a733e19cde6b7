//! `redact` on every request, tried as a hostile client would (issue 35): a Luhn-valid card
//! number, an e-mail address and an `sk-proj-` key hidden in every field that carries text, on
//! every route with a body, never reach the strict mock upstreams, which record what they got;
//! whole and streamed where the route streams, native and translated. What no guard can read
//! (an uploaded file, token ids) is refused unless the guard's entry exempts the route; and
//! what the gateway keeps (the ledger's end user) is what the upstream was sent.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use crate::common;
use common::mock_api::{self, MockApi};
use common::mock_openai::{self, MockOpenAi};
use common::mock_providers::{KEY, MockProvider};
use common::{TestGateway, http};

pub(crate) const CARD: &str = "4111 1111 1111 1111";
pub(crate) const EMAIL: &str = "bob@example.com";
pub(crate) const API_KEY: &str = "sk-proj-abcdefghijklmnopqrstuvwx";
pub(crate) const SECRET: &str =
    "card 4111 1111 1111 1111, mail bob@example.com, key sk-proj-abcdefghijklmnopqrstuvwx";

/// The value that leaked into `sent` (its text, with every base64 string and `data:` URL
/// decoded), if any.
pub(crate) fn leaked(sent: &Value) -> Option<&'static str> {
    let mut texts = Vec::new();
    collect(sent, &mut texts);
    let all = texts.join("\n");
    ["4111", EMAIL, "sk-proj-"]
        .into_iter()
        .find(|value| all.contains(value))
}

fn collect(value: &Value, texts: &mut Vec<String>) {
    match value {
        Value::String(text) => {
            texts.push(text.clone());
            let data = text.rsplit_once(',').map_or(text.as_str(), |(_, d)| d);
            if let Ok(bytes) = STANDARD.decode(data) {
                texts.push(String::from_utf8_lossy(&bytes).into_owned());
            }
            texts.push(
                percent_encoding::percent_decode_str(text)
                    .decode_utf8_lossy()
                    .into_owned(),
            );
        }
        Value::Array(items) => items.iter().for_each(|v| collect(v, texts)),
        Value::Object(fields) => fields.values().for_each(|v| collect(v, texts)),
        _ => {}
    }
}

pub(crate) fn assert_clean(what: &str, sent: &Value) {
    assert_eq!(leaked(sent), None, "{what} leaked: {sent}");
}

pub(crate) async fn post(
    gateway: &TestGateway,
    path: &str,
    id: &str,
    body: &Value,
) -> (u16, String) {
    let response = http()
        .post(gateway.url(path))
        .header("x-request-id", id)
        .header("anthropic-version", "2023-06-01")
        .json(body)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

/// A JSON schema with the secret in every place a schema carries text.
fn schema() -> Value {
    json!({"type": "object", "description": SECRET, "required": ["city"],
        "properties": {"city": {"type": "string", "description": SECRET, "enum": [EMAIL],
            "examples": [CARD], "default": API_KEY,
            "properties": {"inner": {"type": "string", "title": SECRET}}}}})
}

#[tokio::test]
pub(crate) async fn chat_completions_fields_never_carry_a_secret_upstream() {
    let mock = MockOpenAi::start().await;
    let config = format!(
        "providers:\n  openai: {{ plugin: openai, base_url: \"{}\", api_key: sk-upstream, models: [gpt-4o-mini] }}\nguards:\n  - plugin: redact\n",
        mock.base_url()
    );
    let gateway = TestGateway::start(&config).await;
    let text_url = format!("data:text/plain;base64,{}", STANDARD.encode(SECRET));
    for stream in [false, true] {
        let id = format!("chat-fields-{stream}");
        let body = json!({
            "model": "openai/gpt-4o-mini", "stream": stream,
            "user": EMAIL, "metadata": {"note": SECRET},
            "messages": [
                {"role": "user", "name": "bob-sk-proj-abcdefghijklmnopqrstuvwx", "content": [
                    {"type": "text", "text": "hello"},
                    {"type": "image_url", "image_url": {"url": text_url}},
                    {"type": "image_url", "image_url": {"url": format!("data:,{}",
                        SECRET.replace(' ', "%20"))}}]}],
            "tools": [{"type": "function", "function": {"name": "lookup",
                "description": "Looks up", "parameters": schema()}}],
            "response_format": {"type": "json_schema", "json_schema": {"name": "out",
                "schema": schema()}}
        });
        let (status, answer) = post(&gateway, "/v1/chat/completions", &id, &body).await;
        assert_eq!(status, 200, "{answer}");
        let sent = mock.last_request().await.body;
        assert_clean("chat", &sent);
        assert_eq!(
            sent["tools"][0]["function"]["parameters"]["properties"]["city"]["type"], "string",
            "the schema's structure is untouched"
        );
        let record = gateway.record_of(&id).await;
        assert_eq!(
            record.user_id.as_deref(),
            Some("[EMAIL]"),
            "the ledger keeps the user as sent"
        );
    }
}

/// A request whose keys hold a value a guard would rewrite is refused: a key cannot be rewritten
/// in place. Keys that are plain names are not shown; others that hold nothing pass.
#[tokio::test]
pub(crate) async fn a_secret_in_a_key_is_refused_and_other_keys_pass() {
    let mock = MockOpenAi::start().await;
    let config = format!(
        "providers:\n  openai: {{ plugin: openai, base_url: \"{}\", api_key: sk-upstream, models: [gpt-4o-mini] }}\nguards:\n  - plugin: redact\n",
        mock.base_url()
    );
    let gateway = TestGateway::start(&config).await;
    let chat = |metadata: Value, properties: Value| {
        json!({"model": "openai/gpt-4o-mini", "metadata": metadata,
               "messages": [{"role": "user", "content": "hello"}],
               "tools": [{"type": "function", "function": {"name": "lookup",
                   "parameters": {"type": "object", "properties": properties}}}]})
    };
    let refused = [
        (
            "key-meta",
            chat(json!({CARD: "x"}), json!({"city": {"type": "string"}})),
        ),
        (
            "key-schema",
            chat(json!({}), json!({EMAIL: {"type": "string"}})),
        ),
    ];
    for (id, body) in refused {
        let (status, answer) = post(&gateway, "/v1/chat/completions", id, &body).await;
        assert_eq!(status, 400, "{id}: {answer}");
        let error: Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(error["error"]["code"], "guard_refused", "{answer}");
        assert!(
            !answer.contains("4111") && !answer.contains(EMAIL),
            "{answer}"
        );
    }
    assert!(mock.requests().await.is_empty(), "nothing left");
    let body = chat(
        json!({"line-1": "x"}),
        json!({"address2": {"type": "string"}}),
    );
    let (status, answer) = post(&gateway, "/v1/chat/completions", "key-plain", &body).await;
    assert_eq!(status, 200, "{answer}");
    let sent = mock.last_request().await.body;
    assert_eq!(sent["metadata"], json!({"line-1": "x"}));
}

#[tokio::test]
pub(crate) async fn embeddings_and_image_prompts_are_redacted_and_token_ids_refused() {
    let mock = MockOpenAi::start().await;
    let config = format!(
        "providers:\n  openai: {{ plugin: openai, base_url: \"{}\", api_key: sk-upstream, models: [text-embedding-3-small, dall-e-3] }}\nguards:\n  - plugin: redact\n",
        mock.base_url()
    );
    let gateway = TestGateway::start(&config).await;
    for (id, input) in [
        ("emb-one", json!(SECRET)),
        ("emb-many", json!(["a", SECRET])),
    ] {
        let body = json!({"model": "openai/text-embedding-3-small", "input": input, "user": EMAIL});
        let (status, answer) = post(&gateway, "/v1/embeddings", id, &body).await;
        assert_eq!(status, 200, "{answer}");
        assert_clean(id, &mock.last_request().await.body);
    }
    let body = json!({"model": "openai/dall-e-3", "prompt": SECRET});
    let (status, answer) = post(&gateway, "/v1/images/generations", "img", &body).await;
    assert_eq!(status, 200, "{answer}");
    assert_clean("image prompt", &mock.last_request().await.body);

    let before = mock.requests().await.len();
    let body = json!({"model": "openai/text-embedding-3-small", "input": [[9906, 1917]]});
    let (status, answer) = post(&gateway, "/v1/embeddings", "emb-tokens", &body).await;
    assert_eq!(status, 400, "{answer}");
    let error: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(error["error"]["type"], "invalid_request_error");
    assert_eq!(error["error"]["code"], "guard_cannot_inspect");
    assert_eq!(mock.requests().await.len(), before, "nothing left");
}

pub(crate) fn api_config(mock: &MockApi, guard: &str) -> String {
    format!(
        r#"
providers:
  openai:
    plugin: openai
    base_url: {openai}
    api_key: {key}
    models: [omni-moderation-latest, gpt-3.5-turbo-instruct, whisper-1, tts-1]
  cohere:
    plugin: cohere
    base_url: {cohere}
    api_key: {key}
    models: [rerank-v3.5]
guards:
{guard}
"#,
        openai = mock.openai_url(),
        cohere = mock.cohere_url(),
        key = mock_api::API_KEY,
    )
}

#[tokio::test]
pub(crate) async fn completions_moderations_rerank_and_speech_are_redacted() {
    let mock = MockApi::start().await;
    let gateway = TestGateway::start(&api_config(&mock, "  - plugin: redact")).await;
    let cases = [
        (
            "/v1/completions",
            json!({"model": "openai/gpt-3.5-turbo-instruct", "prompt": SECRET, "suffix": EMAIL}),
        ),
        (
            "/v1/completions",
            json!({"model": "openai/gpt-3.5-turbo-instruct", "prompt": [SECRET], "stream": true}),
        ),
        (
            "/v1/moderations",
            json!({"model": "openai/omni-moderation-latest", "input": [SECRET]}),
        ),
        (
            "/v1/moderations",
            json!({"model": "openai/omni-moderation-latest", "input": SECRET}),
        ),
        (
            "/v1/rerank",
            json!({"model": "cohere/rerank-v3.5", "query": SECRET, "documents": ["a", SECRET]}),
        ),
        (
            "/v1/audio/speech",
            json!({"model": "openai/tts-1", "voice": "alloy", "input": SECRET}),
        ),
    ];
    for (i, (path, body)) in cases.iter().enumerate() {
        let id = format!("api-{i}");
        let (status, answer) = post(&gateway, path, &id, body).await;
        assert_eq!(status, 200, "{path}: {answer}");
        let received = mock.received().await;
        let sent = &received.last().unwrap().body;
        assert_clean(path, sent);
    }
}

#[tokio::test]
pub(crate) async fn an_upload_is_refused_unless_exempted_and_its_prompt_is_redacted() {
    let mock = MockApi::start().await;
    let form = || {
        reqwest::multipart::Form::new()
            .text("model", "openai/whisper-1")
            .text("prompt", SECRET)
            .part(
                "file",
                reqwest::multipart::Part::bytes(vec![0u8; 2048])
                    .file_name("speech.mp3")
                    .mime_str("audio/mpeg")
                    .unwrap(),
            )
    };
    let send = |gateway: &TestGateway| {
        http()
            .post(gateway.url("/v1/audio/transcriptions"))
            .multipart(form())
            .send()
    };
    let refusing = TestGateway::start(&api_config(&mock, "  - plugin: redact")).await;
    let response = send(&refusing).await.unwrap();
    assert_eq!(response.status().as_u16(), 400);
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["error"]["code"], "guard_cannot_inspect", "{error}");
    let translation = http()
        .post(refusing.url("/v1/audio/translations"))
        .multipart(form())
        .send()
        .await
        .unwrap();
    assert_eq!(translation.status().as_u16(), 400);
    let error: Value = translation.json().await.unwrap();
    assert_eq!(error["error"]["code"], "guard_cannot_inspect", "{error}");
    assert!(error.to_string().contains("audio.translations"), "{error}");
    assert!(mock.received().await.is_empty(), "nothing left");

    let exempting = TestGateway::start(&api_config(
        &mock,
        "  - plugin: redact\n    exempt: [audio.transcriptions]",
    ))
    .await;
    let response = send(&exempting).await.unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let received = mock.received().await;
    let form = &received.last().unwrap();
    let prompt = form.fields.iter().find(|(n, _)| n == "prompt").unwrap();
    assert_eq!(leaked(&Value::from(prompt.1.clone())), None, "{prompt:?}");
    assert!(prompt.1.contains("[CARD]"), "{prompt:?}");
}

#[tokio::test]
pub(crate) async fn a_native_messages_request_keeps_no_secret_in_its_schemas_or_metadata() {
    let mock = MockProvider::anthropic().await;
    let gateway =
        common::guards::anthropic_guarded(&mock, common::gateway::Guard::plugin("redact"))
            .start()
            .await;
    // Longer than the canonical form carries as `user`: only the native body has it.
    let user_id = format!("user_{EMAIL}_account_{}", "9".repeat(60));
    for stream in [false, true] {
        let body = json!({
            "model": "anthropic/claude-sonnet-4-5", "max_tokens": 64, "stream": stream,
            "metadata": {"user_id": user_id},
            "tools": [{"name": "lookup", "description": "Looks up", "input_schema": schema()}],
            "messages": [{"role": "user", "content": "hello"}]
        });
        let id = format!("native-messages-{stream}");
        let (status, answer) = post(&gateway, "/v1/messages", &id, &body).await;
        assert_eq!(status, 200, "{answer}");
        let sent = mock.last_request().await.body;
        assert_clean("messages", &sent);
        assert!(sent.get("metadata").is_some(), "sent natively: {sent}");
    }
    // A key cannot be rewritten: one that holds a secret refuses the request.
    let sent_before = mock.requests().await.len();
    let body = json!({
        "model": "anthropic/claude-sonnet-4-5", "max_tokens": 64,
        "tools": [{"name": "lookup", "input_schema": {"type": "object",
            "properties": {API_KEY: {"type": "string"}}}}],
        "messages": [{"role": "user", "content": "hello"}]
    });
    let (status, answer) = post(&gateway, "/v1/messages", "native-key", &body).await;
    assert_eq!(status, 400, "{answer}");
    let error: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(error["type"], "error", "in Anthropic's shape: {answer}");
    assert_eq!(mock.requests().await.len(), sent_before, "nothing left");
}

#[tokio::test]
pub(crate) async fn a_native_gemini_request_keeps_no_secret_in_declarations_or_text_blobs() {
    let mock = MockProvider::gemini().await;
    let model = "gemini-3.5-flash";
    let config = format!(
        "providers:\n  gemini: {{ plugin: gemini, base_url: \"{}\", api_key: {KEY}, models: [{model}] }}\ndialects:\n  gemini: {{ plugin: gemini-genai }}\nguards:\n  - plugin: redact\n",
        mock.base_url()
    );
    let gateway = TestGateway::start(&config).await;
    let body = json!({
        "contents": [{"role": "user", "parts": [{"text": "hello"},
            {"inlineData": {"mimeType": "text/plain", "data": STANDARD.encode(SECRET)}}]}],
        "tools": [{"functionDeclarations": [{"name": "lookup", "description": "Looks up",
            "parameters": {"type": "OBJECT", "properties": {
                "city": {"type": "STRING", "description": SECRET}}}}]}]
    });
    for route in ["generateContent", "streamGenerateContent?alt=sse"] {
        let path = format!("/v1beta/models/gemini/{model}:{route}");
        let (status, answer) = post(&gateway, &path, route, &body).await;
        assert_eq!(status, 200, "{answer}");
        assert_clean(route, &mock.last_request().await.body);
    }
}

#[tokio::test]
pub(crate) async fn responses_tool_parameters_are_redacted_natively_and_translated() {
    let mock = MockOpenAi::start().await;
    let config = format!(
        r#"
providers:
  openai: {{ plugin: openai, base_url: "{url}", api_key: {key}, models: [gpt-4o-mini], options: {{ responses: native }} }}
  chat: {{ plugin: openai, base_url: "{url}", api_key: {key}, models: [gpt-4o-mini] }}
guards:
  - plugin: redact
    apply: request
"#,
        url = mock.base_url(),
        key = mock_openai::responses::API_KEY,
    );
    let gateway = TestGateway::start(&config).await;
    for model in ["openai/gpt-4o-mini", "chat/gpt-4o-mini"] {
        let body = json!({"model": model, "input": SECRET, "user": EMAIL,
            "tools": [{"type": "function", "name": "lookup", "description": "Looks up",
                       "parameters": schema()}]});
        let (status, answer) = post(&gateway, "/v1/responses", model, &body).await;
        assert_eq!(status, 200, "{model}: {answer}");
        assert_clean(model, &mock.last_request().await.body);
        // The store keeps the input as the upstream was sent it.
        let id = serde_json::from_str::<Value>(&answer).unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let items: Value = http()
            .get(gateway.url(&format!("/v1/responses/{id}/input_items")))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert!(items.to_string().contains("[CARD]"), "{items}");
        assert_clean("stored input items", &items);
    }
}

#[tokio::test]
pub(crate) async fn a_compaction_is_redacted_natively_and_translated_and_refused_by_a_refusing_guard()
 {
    let mock = MockOpenAi::start().await;
    let config = |guard: &str| {
        format!(
            r#"
providers:
  openai: {{ plugin: openai, base_url: "{url}", api_key: {key}, models: [gpt-4o-mini], options: {{ responses: native }} }}
  chat: {{ plugin: openai, base_url: "{url}", api_key: {key}, models: [gpt-4o-mini] }}
guards:
  - {guard}
"#,
            url = mock.base_url(),
            key = mock_openai::responses::API_KEY,
        )
    };
    let body = |model: &str| {
        json!({"model": model, "instructions": SECRET, "input": [
            {"role": "user", "content": SECRET},
            {"role": "assistant", "content": "Noted."},
            {"role": "user", "content": [{"type": "input_text", "text": SECRET}]},
        ]})
    };
    let gateway = TestGateway::start(&config("{ plugin: redact, apply: request }")).await;
    for (model, path) in [
        ("openai/gpt-4o-mini", "/v1/responses/compact"),
        ("chat/gpt-4o-mini", "/v1/chat/completions"),
    ] {
        let (status, answer) = post(&gateway, "/v1/responses/compact", model, &body(model)).await;
        assert_eq!(status, 200, "{model}: {answer}");
        let sent = mock.last_request().await;
        assert_eq!(sent.path, path);
        assert_clean(model, &sent.body);
    }
    let deny = "{ plugin: deny, apply: request, options: { phrases: [Project Falcon] } }";
    let gateway = TestGateway::start(&config(deny)).await;
    let before = mock.requests().await.len();
    for model in ["openai/gpt-4o-mini", "chat/gpt-4o-mini"] {
        let body = json!({"model": model, "input": "Tell me about Project Falcon."});
        let (status, answer) = post(&gateway, "/v1/responses/compact", model, &body).await;
        assert_eq!(status, 400, "{model}: {answer}");
        let error: Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(error["error"]["code"], "guard_refused", "{error}");
        assert_eq!(error["error"]["type"], "invalid_request_error", "{error}");
        let record = gateway.record_of(model).await;
        assert_eq!(record.status, 400);
    }
    assert_eq!(
        mock.requests().await.len(),
        before,
        "nothing reached the upstream"
    );
}
