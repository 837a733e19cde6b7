//! Guards on the routes outside the model-call path, and the test that holds every route to a
//! guard test (issue 35): `redact` on every request, with a card number, an e-mail address and
//! an `sk-proj-` key in the client's text, on pass-through routes (body, query and headers),
//! the count-tokens routes (native and translated), and batch input files; what no guard can
//! read refused unless exempted; and answer guards on a legacy completion's text (whole and
//! streamed) and a transcription's.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::common;
use crate::guards_routes::{self as routes, EMAIL, SECRET, assert_clean, leaked};
use common::gateway::{Gateway, Guard, Provider};
use common::genai::{CLAUDE, GEMINI, GEMINI_EMBEDDING, GPT, Setup, Upstreams};
use common::mock_api::MockApi;
use common::mock_batches::MockBatches;
use common::mock_passthrough::{MockPassthrough, OPENAI_KEY};
use common::mock_providers::KEY;
use common::{TestGateway, http};

/// A pass-through gateway to the mock's `openai` entry, every path allowed, with `guard`.
async fn passthrough_gateway(mock: &MockPassthrough, guard: Guard) -> TestGateway {
    let openai = Provider::at("openai", &mock.openai_url(), OPENAI_KEY).models(["gpt-4o-mini"]);
    Gateway::builder()
        .provider("openai", openai)
        .set_yaml("passthrough.allow", "[\"openai/*\"]")
        .guard(guard)
        .start()
        .await
}

fn error_code(body: &str) -> Value {
    serde_json::from_str::<Value>(body).unwrap()["error"]["code"].clone()
}

#[tokio::test]
async fn a_pass_through_request_keeps_no_secret_in_its_body_query_or_headers() {
    let mock = MockPassthrough::start().await;
    let gateway = passthrough_gateway(&mock, Guard::plugin("redact")).await;
    let job = json!({"model": "gpt-4o-mini", "training_file": "file-abc", "suffix": EMAIL,
                     "metadata": {"note": SECRET}});
    let response = http()
        .post(gateway.url("/passthrough/openai/fine_tuning/jobs"))
        .header("openai-organization", EMAIL)
        .json(&job)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    let sent = mock.jobs().await.pop().unwrap();
    assert_clean("a pass-through body", &sent);
    assert_eq!(
        sent["training_file"], "file-abc",
        "the rest as sent: {sent}"
    );
    let response = http()
        .get(gateway.url(&format!(
            "/passthrough/openai/fine_tuning/jobs?limit=2&after={}",
            urlencoding(SECRET)
        )))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let received = mock.received().await;
    assert_eq!(received.len(), 2, "{received:?}");
    for request in &received {
        let headers: Vec<Value> = (request.headers.iter())
            .map(|(_, v)| Value::from(v.to_str().unwrap_or_default()))
            .collect();
        let seen = json!({"uri": request.uri, "headers": headers});
        assert_clean("a pass-through request's head", &seen);
    }
    assert!(received[1].uri.contains("limit=2"), "{}", received[1].uri);
}

fn urlencoding(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

#[tokio::test]
async fn a_pass_through_body_no_guard_can_read_is_refused_unless_exempted() {
    let mock = MockPassthrough::start().await;
    let send = |gateway: &TestGateway, content_type: &str, encoding: Option<&str>| {
        let mut request = http()
            .post(gateway.url("/passthrough/openai/uploads/blob"))
            .header("content-type", content_type.to_owned())
            .body(vec![0x1f_u8, 0x8b, 8, 0, 1, 2, 3]);
        if let Some(encoding) = encoding {
            request = request.header("content-encoding", encoding.to_owned());
        }
        request.send()
    };
    let refusing = passthrough_gateway(&mock, Guard::plugin("redact")).await;
    for (content_type, encoding) in [
        ("application/octet-stream", None),
        ("application/json", Some("gzip")),
        ("image/png", None),
    ] {
        let response = send(&refusing, content_type, encoding).await.unwrap();
        assert_eq!(response.status(), 400, "{content_type}");
        let body = response.text().await.unwrap();
        assert_eq!(error_code(&body), "guard_cannot_inspect", "{body}");
        assert!(
            body.contains("passthrough"),
            "names the route to exempt: {body}"
        );
    }
    assert!(mock.received().await.is_empty(), "nothing left");
    let exempt = Guard::plugin("redact").yaml("exempt", "[passthrough]");
    let exempting = passthrough_gateway(&mock, exempt).await;
    let response = send(&exempting, "application/octet-stream", None)
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    assert_eq!(mock.received().await.len(), 1);
}

/// `redact` on answers only: what the client sent reaches the upstream as it was, so that
/// what the client gets back clean was cleaned on its way back.
fn answer_redact() -> Guard {
    Guard::plugin("redact").apply("answer")
}

#[tokio::test]
async fn a_pass_through_answer_keeps_no_secret_whole_or_streamed() {
    let mock = MockPassthrough::start().await;
    let gateway = passthrough_gateway(&mock, answer_redact()).await;
    let job = json!({"model": "gpt-4o-mini", "training_file": "file-abc",
                     "metadata": {"note": SECRET, "mail": EMAIL}});
    let response = http()
        .post(gateway.url("/passthrough/openai/fine_tuning/jobs"))
        .json(&job)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let answer: Value = response.json().await.unwrap();
    assert_eq!(
        leaked(&mock.jobs().await[0]),
        Some("4111"),
        "the request was not the guard's"
    );
    assert_clean("a pass-through answer", &answer);
    assert_eq!(
        answer["training_file"], "file-abc",
        "the rest as sent: {answer}"
    );
    assert_eq!(answer["object"], "fine_tuning.job");

    // Streamed: the card number arrives split over chunks of five characters.
    let chat = json!({"model": "gpt-4o-mini", "stream": true,
                      "messages": [{"role": "user", "content": format!("Repeat: {SECRET}")}]});
    let response = http()
        .post(gateway.url("/passthrough/openai/chat/completions"))
        .json(&chat)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        (response.headers()["content-type"].to_str().unwrap()).starts_with("text/event-stream")
    );
    let body = response.text().await.unwrap();
    assert!(body.ends_with("data: [DONE]\n\n"), "{body}");
    let mut text = String::new();
    for line in body.lines().filter_map(|l| l.strip_prefix("data: ")) {
        if line == "[DONE]" {
            continue;
        }
        let chunk: Value = serde_json::from_str(line).unwrap();
        assert_eq!(chunk["object"], "chat.completion.chunk", "{chunk}");
        text.push_str(
            chunk["choices"][0]["delta"]["content"]
                .as_str()
                .unwrap_or_default(),
        );
    }
    assert_clean("a streamed pass-through answer", &Value::from(text.clone()));
    assert!(
        text.starts_with("card ") && text.contains("[CARD]"),
        "{text}"
    );
}

#[tokio::test]
async fn a_pass_through_answer_no_guard_can_read_is_withheld_unless_exempted() {
    let mock = MockPassthrough::start().await;
    let fetch = |gateway: &TestGateway| {
        http()
            .get(gateway.url("/passthrough/openai/files/file-abc/content"))
            .send()
    };
    let refusing = passthrough_gateway(&mock, answer_redact()).await;
    let response = fetch(&refusing).await.unwrap();
    assert_eq!(response.status(), 502);
    let body = response.text().await.unwrap();
    assert_eq!(error_code(&body), "guard_cannot_inspect", "{body}");
    assert!(
        body.contains("passthrough"),
        "names the route to exempt: {body}"
    );
    let exempt = answer_redact().yaml("exempt", "[passthrough]");
    let exempting = passthrough_gateway(&mock, exempt).await;
    let response = fetch(&exempting).await.unwrap();
    assert_eq!(response.status(), 200);
    let bytes = response.bytes().await.unwrap();
    assert_eq!(&bytes[..], common::mock_passthrough::FILE_BYTES);
}

/// The count-tokens routes with `redact`: Messages' to Anthropic (native) and to OpenAI's
/// counter (translated), Google's to Gemini (native), Responses' to OpenAI (native).
#[tokio::test]
async fn the_count_tokens_routes_send_no_secret_to_any_counter() {
    let s = Setup::start("counts", |u, config| {
        config
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
                "anthropic",
                Upstreams::entry("anthropic", &u.anthropic, KEY, [CLAUDE]),
            )
            .guard(Guard::plugin("redact"))
    })
    .await;
    let messages = |model: String| {
        json!({"model": model, "system": EMAIL,
               "messages": [{"role": "user", "content": SECRET}],
               "tools": [{"name": "lookup", "description": EMAIL,
                          "input_schema": {"type": "object", "properties":
                              {"q": {"type": "string", "description": SECRET}}}}]})
    };
    let cases = [
        (
            "/v1/messages/count_tokens".to_owned(),
            messages(format!("anthropic/{CLAUDE}")),
        ),
        (
            "/v1/messages/count_tokens".to_owned(),
            messages(format!("openai/{GPT}")),
        ),
        (
            format!("/v1beta/models/gemini/{GEMINI}:countTokens"),
            json!({"contents": [{"role": "user", "parts": [{"text": SECRET}]}]}),
        ),
        (
            "/v1/responses/input_tokens".to_owned(),
            json!({"model": format!("openai/{GPT}"), "input": SECRET, "instructions": EMAIL}),
        ),
    ];
    for (path, body) in &cases {
        let response = http()
            .post(s.gateway.url(path))
            .bearer_auth(&s.key)
            .header("anthropic-version", "2023-06-01")
            .json(body)
            .send()
            .await
            .unwrap();
        let status = response.status();
        let counter = response.headers().get("x-wasmgate-count").cloned();
        let text = response.text().await.unwrap();
        assert_eq!(status, 200, "{path}: {text}");
        assert_eq!(
            counter.as_ref().and_then(|v| v.to_str().ok()),
            Some("upstream"),
            "{path} is counted by its target"
        );
    }
    let mut sent = s.anthropic.requests().await;
    sent.extend(s.gemini.requests().await);
    let openai: Vec<Value> = (s.openai.requests().await.into_iter())
        .map(|r| r.body)
        .collect();
    let bodies: Vec<Value> = sent.into_iter().map(|r| r.body).chain(openai).collect();
    assert_eq!(bodies.len(), cases.len(), "one count each: {bodies:?}");
    for body in &bodies {
        assert_clean("a count", body);
    }
}

/// Google's `embedContent` and `batchEmbedContents` with `redact`, native to Gemini and
/// translated to OpenAI's embeddings.
#[tokio::test]
async fn google_s_embedding_routes_send_no_secret_natively_or_translated() {
    let s = Setup::start("embed", |u, config| {
        config
            .provider(
                "gemini",
                Upstreams::entry("gemini", &u.gemini, KEY, [GEMINI_EMBEDDING]),
            )
            .provider(
                "openai",
                Upstreams::entry(
                    "openai",
                    &u.openai,
                    u.openai_key,
                    ["text-embedding-3-small"],
                ),
            )
            .guard(Guard::plugin("redact"))
    })
    .await;
    let content = json!({"parts": [{"text": SECRET}, {"text": EMAIL}]});
    for model in [
        format!("gemini/{GEMINI_EMBEDDING}"),
        "openai/text-embedding-3-small".to_owned(),
    ] {
        let one = (
            format!("/v1beta/models/{model}:embedContent"),
            json!({"content": content}),
        );
        let batch = (
            format!("/v1/models/{model}:batchEmbedContents"),
            json!({"requests": [{"model": format!("models/{model}"), "content": content}]}),
        );
        for (path, body) in [one, batch] {
            let response = http()
                .post(s.gateway.url(&path))
                .bearer_auth(&s.key)
                .json(&body)
                .send()
                .await
                .unwrap();
            let status = response.status();
            assert_eq!(status, 200, "{path}: {}", response.text().await.unwrap());
        }
    }
    let gemini = s.gemini.requests().await;
    let openai = s.openai.requests().await;
    assert_eq!(
        (gemini.len(), openai.len()),
        (2, 2),
        "each route to each target"
    );
    for body in gemini
        .iter()
        .map(|r| &r.body)
        .chain(openai.iter().map(|r| &r.body))
    {
        assert_clean("an embedding", body);
    }
}

#[tokio::test]
async fn a_batch_file_s_lines_are_redacted_and_other_files_refused_unless_exempted() {
    let mock = MockBatches::start().await;
    let start = |guard: Guard| {
        let openai = Provider::at("openai", &mock.openai_url(), common::mock_batches::API_KEY)
            .options("{ batches: true }")
            .models(["gpt-4o-mini"]);
        Gateway::builder()
            .provider("openai", openai)
            .guard(guard)
            .start()
    };
    let upload = |gateway: &TestGateway, purpose: &str, text: String| {
        let form = reqwest::multipart::Form::new()
            .text("purpose", purpose.to_owned())
            .part(
                "file",
                reqwest::multipart::Part::bytes(text.into_bytes())
                    .file_name("input.jsonl")
                    .mime_str("application/jsonl")
                    .unwrap(),
            );
        http().post(gateway.url("/v1/files")).multipart(form).send()
    };
    let line = |i: usize| {
        json!({"custom_id": format!("req-{i}"), "method": "POST", "url": "/v1/chat/completions",
               "body": {"model": "openai/gpt-4o-mini", "user": EMAIL,
                        "messages": [{"role": "user", "content": SECRET}]}})
        .to_string()
    };
    let file = format!("{}\n{}\n", line(1), line(2));
    let gateway = start(Guard::plugin("redact")).await;
    let response = upload(&gateway, "batch", file.clone()).await.unwrap();
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    let stored = mock.files().await;
    assert_eq!(stored.len(), 1);
    let text = mock.file_text(&stored[0].id).await;
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{text}");
    for line in &lines {
        assert_clean("a batch line", line);
    }
    assert_eq!(lines[1]["custom_id"], "req-2", "ids as sent: {text}");

    let response = upload(&gateway, "user_data", file.clone()).await.unwrap();
    assert_eq!(response.status(), 400);
    let body = response.text().await.unwrap();
    assert_eq!(error_code(&body), "guard_cannot_inspect", "{body}");
    assert_eq!(mock.files().await.len(), 1, "nothing left");
    let exempting = start(Guard::plugin("redact").yaml("exempt", "[files]")).await;
    let response = upload(&exempting, "user_data", file).await.unwrap();
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
}

/// `redact` on answers only, with a pattern the mocks' answers hold.
fn answer_guard() -> String {
    "  - plugin: redact\n    apply: answer\n    options:\n      patterns:\n        - {name: tale, regex: \"upon|Hello\", action: placeholder}".to_owned()
}

#[tokio::test]
async fn a_legacy_completion_s_text_and_a_transcription_s_are_answer_guarded() {
    let mock = MockApi::start().await;
    let gateway = TestGateway::start(&routes::api_config(&mock, &answer_guard())).await;
    let whole = json!({"model": "openai/gpt-3.5-turbo-instruct", "prompt": "Tell a tale"});
    let (status, answer) = routes::post(&gateway, "/v1/completions", "w", &whole).await;
    assert_eq!(status, 200, "{answer}");
    let answer: Value = serde_json::from_str(&answer).unwrap();
    let text = answer["choices"][0]["text"].as_str().unwrap();
    assert!(!text.contains("upon") && text.contains("Once"), "{answer}");
    let mut streamed = whole.clone();
    streamed["stream"] = json!(true);
    let (status, events) = routes::post(&gateway, "/v1/completions", "s", &streamed).await;
    assert_eq!(status, 200, "{events}");
    let chunks: Vec<Value> = (events.lines())
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let text: String = (chunks.iter())
        .filter_map(|c| c["choices"][0]["text"].as_str())
        .collect();
    assert!(!text.contains("upon") && text.contains("Once"), "{events}");
    assert!(
        chunks.iter().all(|c| c["object"] == "text_completion"),
        "legacy chunks still: {events}"
    );

    let form = reqwest::multipart::Form::new()
        .text("model", "openai/whisper-1")
        .text("response_format", "verbose_json")
        .part(
            "file",
            reqwest::multipart::Part::bytes(vec![0u8; 2048])
                .file_name("speech.mp3")
                .mime_str("audio/mpeg")
                .unwrap(),
        );
    let response = http()
        .post(gateway.url("/v1/audio/transcriptions"))
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let transcript: Value = response.json().await.unwrap();
    let all = transcript.to_string();
    assert!(
        all.contains("[TALE]") || all.contains("TALE"),
        "{transcript}"
    );
    assert!(!all.contains("Hello"), "{transcript}");
}

/// Every route of the router that sends a client's text upstream, and every route the default
/// config's dialects declare, has a guard test: the routes are the server's own list
/// (`wasmgate::server::routes()`) and the dialect registry's, so a route added later without
/// a guard test fails here. The table names each test by the function itself: a test renamed
/// or removed breaks the build.
#[tokio::test]
async fn every_route_that_sends_a_client_s_text_has_a_guard_test() {
    type Test = fn();
    let covered: &[(&str, &str, Test)] = &[
        ("POST", "/v1/chat/completions", routes::chat_completions_fields_never_carry_a_secret_upstream),
        ("POST", "/v1/embeddings", routes::embeddings_and_image_prompts_are_redacted_and_token_ids_refused),
        ("POST", "/v1/images/generations", routes::embeddings_and_image_prompts_are_redacted_and_token_ids_refused),
        ("POST", "/v1/completions", routes::completions_moderations_rerank_and_speech_are_redacted),
        ("POST", "/v1/moderations", routes::completions_moderations_rerank_and_speech_are_redacted),
        ("POST", "/v1/rerank", routes::completions_moderations_rerank_and_speech_are_redacted),
        ("POST", "/v1/audio/speech", routes::completions_moderations_rerank_and_speech_are_redacted),
        ("POST", "/v1/audio/transcriptions", routes::an_upload_is_refused_unless_exempted_and_its_prompt_is_redacted),
        ("POST", "/v1/audio/translations", routes::an_upload_is_refused_unless_exempted_and_its_prompt_is_redacted),
        ("POST", "/v1/files", a_batch_file_s_lines_are_redacted_and_other_files_refused_unless_exempted),
        ("POST", "/v1/batches", a_batch_file_s_lines_are_redacted_and_other_files_refused_unless_exempted),
        ("*", "<passthrough.prefix>/{entry}/{*path}", a_pass_through_request_keeps_no_secret_in_its_body_query_or_headers),
        // The dialects' routes (their `call` and `count-tokens` routes).
        ("POST", "/v1/messages", routes::a_native_messages_request_keeps_no_secret_in_its_schemas_or_metadata),
        ("POST", "/v1/messages/count_tokens", the_count_tokens_routes_send_no_secret_to_any_counter),
        ("POST", "/v1/responses", routes::responses_tool_parameters_are_redacted_natively_and_translated),
        ("GET", "/v1/responses", crate::responses_ws::a_turn_on_the_socket_is_guarded_as_the_post_is),
        ("GET", "/v1/realtime", crate::realtime::the_client_s_text_is_redacted_before_it_goes_upstream),
        ("POST", "/v1/responses/compact", routes::a_compaction_is_redacted_natively_and_translated_and_refused_by_a_refusing_guard),
        ("POST", "/v1/responses/input_tokens", the_count_tokens_routes_send_no_secret_to_any_counter),
        ("POST", "/v1beta/models/{model}:generateContent", routes::a_native_gemini_request_keeps_no_secret_in_declarations_or_text_blobs),
        ("POST", "/v1beta/models/{model}:streamGenerateContent", routes::a_native_gemini_request_keeps_no_secret_in_declarations_or_text_blobs),
        ("POST", "/v1beta/models/{model}:countTokens", the_count_tokens_routes_send_no_secret_to_any_counter),
        ("POST", "/v1beta/models/{model}:embedContent", google_s_embedding_routes_send_no_secret_natively_or_translated),
        ("POST", "/v1beta/models/{model}:batchEmbedContents", google_s_embedding_routes_send_no_secret_natively_or_translated),
        // Google's `v1` paths, the same routes as `v1beta`.
        ("POST", "/v1/models/{model}:generateContent", routes::a_native_gemini_request_keeps_no_secret_in_declarations_or_text_blobs),
        ("POST", "/v1/models/{model}:streamGenerateContent", routes::a_native_gemini_request_keeps_no_secret_in_declarations_or_text_blobs),
        ("POST", "/v1/models/{model}:countTokens", the_count_tokens_routes_send_no_secret_to_any_counter),
        ("POST", "/v1/models/{model}:embedContent", google_s_embedding_routes_send_no_secret_natively_or_translated),
        ("POST", "/v1/models/{model}:batchEmbedContents", google_s_embedding_routes_send_no_secret_natively_or_translated),
        // MCP tool calls, by either transport (one dispatch), under the MCP gateway's guards.
        ("POST", "/mcp", crate::mcp_gateway::guards_redact_a_key_from_a_tool_result_and_refuse_a_forbidden_argument),
        ("POST", "/mcp/messages", crate::mcp_sse::guards_hold_on_the_sse_transport),
    ];
    let mut sending: BTreeSet<(String, String)> = (wasmgate::server::routes().into_iter())
        .filter(|route| route.outbound == wasmgate::server::Outbound::Text)
        .map(|route| (route.method.to_owned(), route.path.to_owned()))
        .collect();
    sending.extend(dialect_routes_sending_text().await);
    let tested: BTreeSet<(String, String)> = (covered.iter())
        .map(|(method, path, _)| ((*method).to_owned(), (*path).to_owned()))
        .collect();
    let untested: Vec<_> = sending.difference(&tested).collect();
    assert!(
        untested.is_empty(),
        "routes that send a client's text with no guard test: {untested:?}"
    );
    let gone: Vec<_> = tested.difference(&sending).collect();
    assert!(
        gone.is_empty(),
        "guard tests of routes that are not served: {gone:?}"
    );
    assert!(
        leaked(&json!(SECRET)).is_some(),
        "the check itself finds the secret"
    );
}

/// The `call` and `count-tokens` routes the built-in dialects and Google's declare, as a
/// gateway mounts them.
async fn dialect_routes_sending_text() -> Vec<(String, String)> {
    let gateway = TestGateway::start("dialects:\n  gemini: { plugin: gemini-genai }\n").await;
    let loaded = gateway.state.gateway.load();
    let mut routes = Vec::new();
    for dialect in loaded.dialects.iter() {
        for route in &dialect.routes {
            use wasmgate::plugins::RouteKind;
            if matches!(route.kind, RouteKind::Call | RouteKind::CountTokens) {
                routes.push((route.method.to_string(), route.path().to_owned()));
            }
        }
    }
    routes
}
