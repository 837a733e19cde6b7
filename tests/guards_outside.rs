//! Guards with outside verdicts: the built-in `moderation` guard asks a strict mock of OpenAI's
//! `/v1/moderations` through the host (the entry's `endpoint`, its key in `Authorization`,
//! never in the plugin), refuses a request over a category's threshold, stops a streamed answer
//! at the window that is over, and fails closed (or, as the entry says, open) when the endpoint
//! does not answer in time.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::gateway::{Gateway, GatewayBuilder, Guard, Provider};
use common::guards::{chat, verdicts};
use common::http;
use common::mock_api::{API_KEY, MockApi};
use common::mock_openai::MockOpenAi;
use serde_json::{Value, json};

/// An `openai` entry on `upstream` and two `moderation` guards calling `endpoint`: one on
/// requests to `gpt-4o-mini` (failing as `on_failure` says), one on answers of `spell`.
fn config(upstream: &str, endpoint: &str, on_failure: &str) -> GatewayBuilder {
    let openai = Provider::openai(upstream).models(["gpt-4o-mini", "spell"]);
    let on_requests = Guard::plugin("moderation")
        .name("mod-request")
        .apply("request")
        .yaml("scope", "{models: [openai/gpt-4o-mini]}")
        .yaml(
            "endpoint",
            &format!(
                "{{url: \"{endpoint}\", api_key: {API_KEY}, timeout_ms: 500, on_failure: {on_failure}}}"
            ),
        )
        .options("{thresholds: {violence: 0.4}}");
    let on_answers = Guard::plugin("moderation")
        .name("mod-answer")
        .apply("answer")
        .yaml("scope", "{models: [openai/spell]}")
        .yaml(
            "endpoint",
            &format!("{{url: \"{endpoint}\", api_key: {API_KEY}, timeout_ms: 500}}"),
        )
        .options("{window: 24}");
    Gateway::builder()
        .provider("openai", openai)
        .guard(on_requests)
        .guard(on_answers)
}

#[tokio::test]
async fn moderation_refuses_over_a_threshold_and_stops_a_stream_at_its_window() {
    let upstream = MockOpenAi::start().await;
    let moderation = MockApi::start().await;
    let endpoint = format!("{}/moderations", moderation.openai_url());
    let gateway = config(&upstream.base_url(), &endpoint, "refuse")
        .start()
        .await;

    let (status, body) = chat(
        &gateway,
        "mod-ok",
        "openai/gpt-4o-mini",
        "Tell me about cats.",
        false,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let asked = moderation.received().await;
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].path, "/v1/moderations");
    assert_eq!(
        asked[0].headers["authorization"].to_str().unwrap(),
        format!("Bearer {API_KEY}"),
        "the host adds the entry's key"
    );
    assert_eq!(
        asked[0].body,
        json!({"model": "omni-moderation-latest", "input": ["Tell me about cats."]})
    );
    assert_eq!(
        verdicts(&gateway.record_of("mod-ok").await)[0]["action"],
        "allow"
    );

    // 0.45 is under the service's own flag and over the entry's threshold.
    let (status, body) = chat(
        &gateway,
        "mod-fight",
        "openai/gpt-4o-mini",
        "Who would win a fight?",
        false,
    )
    .await;
    assert_eq!(status, 400, "{body}");
    let error: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(error["error"]["code"], "guard_refused", "{body}");
    assert_eq!(
        upstream.requests().await.len(),
        1,
        "the refused request never left"
    );
    assert_eq!(
        verdicts(&gateway.record_of("mod-fight").await),
        json!([{"guard": "mod-request", "side": "request", "action": "refuse", "counts": {"violence": 1}}])
    );

    // The answer (the `spell` model repeats the prompt, 3 characters a chunk) is asked about in
    // windows of 24 characters: the first passes and is sent, the one that says "kill" is not.
    let prompt = "A calm first sentence here. Then kill the process now, please.";
    let (status, body) = chat(&gateway, "mod-stream", "openai/spell", prompt, true).await;
    assert_eq!(status, 200);
    let events = common::sse::events(&body);
    let text: String = (events.iter())
        .filter_map(|e| e.data["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert!(text.starts_with("A calm first sentence"), "{body}");
    assert!(!text.contains("kill"), "{body}");
    assert_eq!(
        events.last().unwrap().data["error"]["code"],
        "answer_stopped",
        "{body}"
    );
    let record = gateway.record_of("mod-stream").await;
    assert_eq!(verdicts(&record)[0]["action"], "stop");
    assert_eq!(verdicts(&record)[0]["counts"], json!({"violence": 1}));
}

#[tokio::test]
async fn an_endpoint_that_does_not_answer_in_time_fails_closed_or_open_as_the_entry_says() {
    let upstream = MockOpenAi::start().await;
    let moderation = MockApi::start().await;
    for (on_failure, expect) in [("refuse", 503), ("allow", 200)] {
        let endpoint = format!("{}/moderations", moderation.openai_url());
        let gateway = config(&upstream.base_url(), &endpoint, on_failure)
            .start()
            .await;
        let id = format!("mod-slow-{on_failure}");
        let started = std::time::Instant::now();
        let (status, body) = chat(
            &gateway,
            &id,
            "openai/gpt-4o-mini",
            "slow-moderation please",
            false,
        )
        .await;
        assert_eq!(status, expect, "{on_failure}: {body}");
        assert!(
            started.elapsed() < std::time::Duration::from_millis(2500),
            "the entry's 500 ms deadline held: {:?}",
            started.elapsed()
        );
        if expect == 503 {
            let error: Value = serde_json::from_str(&body).unwrap();
            assert_eq!(error["error"]["code"], "guard_unavailable", "{body}");
        }
        let record = gateway.record_of(&id).await;
        assert_eq!(verdicts(&record)[0]["action"], "error", "{on_failure}");
    }
    // An error status (here the mock's 404 for a path it does not serve) fails the same way.
    let endpoint = format!("{}/no-such-path", moderation.openai_url());
    let gateway = config(&upstream.base_url(), &endpoint, "refuse")
        .start()
        .await;
    let (status, body) = chat(&gateway, "mod-404", "openai/gpt-4o-mini", "hello", false).await;
    assert_eq!(status, 503, "{body}");
}

/// A guard that asks for an outside call when its entry names no endpoint broke its contract:
/// the request fails closed and never leaves.
#[tokio::test]
async fn a_guard_with_no_endpoint_that_asks_for_one_fails_closed() {
    let upstream = MockOpenAi::start().await;
    let openai = Provider::openai(&upstream.base_url()).models(["gpt-4o-mini"]);
    let gateway = Gateway::builder()
        .provider("openai", openai)
        .guard(Guard::plugin("moderation"))
        .start()
        .await;
    let (status, body) = chat(&gateway, "mod-none", "openai/gpt-4o-mini", "hello", false).await;
    assert_eq!(status, 500, "{body}");
    let error: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(error["error"]["code"], "guard_failed", "{body}");
    assert!(upstream.requests().await.is_empty());
}

/// The built-in `schema` guard: an answer asked for as JSON with a schema (Chat's
/// `response_format`, the Responses API's `text.format`) is held until it is complete and
/// released when it matches; one that does not match is stopped, in the client's own shape,
/// naming the failing keyword and never the answer's values. The `spell` model answers with
/// the prompt, so the prompt is the answer under test.
#[tokio::test]
async fn the_schema_guard_validates_answers_asked_for_as_json_with_a_schema() {
    let upstream = MockOpenAi::start().await;
    let openai = Provider::openai(&upstream.base_url())
        .models(["spell"])
        .options("{responses: translate}");
    let gateway = Gateway::builder()
        .provider("openai", openai)
        .guard(Guard::plugin("schema").apply("both"))
        .start()
        .await;
    let schema = json!({"type": "object", "required": ["name", "age"], "additionalProperties": false,
                        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}});
    let format = json!({"type": "json_schema",
                        "json_schema": {"name": "person", "strict": true, "schema": schema}});
    let good = r#"{"name": "Ada", "age": 36}"#;
    let bad = r#"{"name": "Ada", "age": "secret-value"}"#;
    let ask = |id: &'static str, text: &str, stream: bool, format: &Value| {
        http()
            .post(gateway.url("/v1/chat/completions"))
            .header("x-request-id", id)
            .json(
                &json!({"model": "openai/spell", "stream": stream, "response_format": format,
                          "messages": [{"role": "user", "content": text}]}),
            )
            .send()
    };

    let response = ask("schema-good", good, false, &format).await.unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["choices"][0]["message"]["content"], good);

    let response = ask("schema-bad", bad, false, &format).await.unwrap();
    assert_eq!(response.status(), 502);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "answer_stopped", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("`type` fails at `/age`"), "{message}");
    assert!(!message.contains("secret-value"), "{message}");
    let record = gateway.record_of("schema-bad").await;
    assert_eq!(
        verdicts(&record),
        json!([{"guard": "schema", "side": "request", "action": "allow", "counts": {}},
               {"guard": "schema", "side": "answer", "action": "stop", "counts": {"schema-invalid": 1}}])
    );

    // Streamed (3 characters a chunk): held until complete, then released whole, or stopped.
    let body = ask("schema-stream", good, true, &format)
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(body.ends_with("data: [DONE]\n\n"), "{body}");
    let events = common::sse::events(body.trim_end_matches("data: [DONE]\n\n"));
    let text: String = (events.iter())
        .filter_map(|e| e.data["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, good, "{body}");
    let body = ask("schema-stream-bad", bad, true, &format)
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!body.contains("secret-value"), "nothing of it went: {body}");
    assert_eq!(
        common::sse::events(&body).last().unwrap().data["error"]["code"],
        "answer_stopped"
    );

    // A schema that is not one is refused before anything leaves.
    let broken =
        json!({"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": 12}}});
    let requests = upstream.requests().await.len();
    let response = ask("schema-broken", good, false, &broken).await.unwrap();
    assert_eq!(response.status(), 400);
    assert_eq!(upstream.requests().await.len(), requests);

    // The Responses API's `text.format` reaches the guard as the same schema.
    let response = http()
        .post(gateway.url("/v1/responses"))
        .json(
            &json!({"model": "openai/spell", "input": bad, "store": false,
                      "text": {"format": {"type": "json_schema", "name": "person", "strict": true,
                                          "schema": schema}}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 502);
    let body: Value = response.json().await.unwrap();
    assert!(
        body["error"]["message"].as_str().unwrap().contains("/age"),
        "{body}"
    );
}
