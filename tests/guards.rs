//! Guards end to end, against the strict mock upstream and with the official SDKs: a card
//! number spread over many stream deltas redacted in order (OpenAI's Python SDK); refusals in
//! the Messages and Responses APIs' own error shapes (Anthropic's SDK, OpenAI's); a stop
//! mid-stream ending with the dialect's error event; monitor mode changing only the record; and
//! a guard that traps, loops or eats memory failing closed for its own request only.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use crate::sdk_clients::{assert_passed, run_client};

use common::gateway::{Gateway, GatewayBuilder, Guard, Provider};
use common::guards::{chat, verdicts};
use common::http;
use common::mock_openai::MockOpenAi;
use serde_json::{Value, json};

const CARD: &str = "My card is 4111 1111 1111 1111, thanks.";

/// A gateway with one `openai` entry on the mock at `base_url`.
fn openai(base_url: &str) -> GatewayBuilder {
    let entry = Provider::openai(base_url).models(["gpt-4o-mini", "spell"]);
    Gateway::builder().provider("openai", entry)
}

#[tokio::test]
async fn a_card_spread_over_stream_deltas_is_redacted_in_order_for_the_openai_sdk() {
    let mock = MockOpenAi::start().await;
    let redact = Guard::plugin("redact")
        .name("answers")
        .apply("answer")
        .options("{window: 24}");
    let gateway = openai(&mock.base_url()).guard(redact).start().await;
    let expect = "My card is [CARD], thanks.";
    let output = run_client(
        "guards.py",
        &gateway.url(""),
        "sk-client",
        &[
            "--scenario",
            "stream",
            "--model",
            "openai/spell",
            "--prompt",
            CARD,
            "--expect",
            expect,
        ],
    )
    .await;
    assert_passed(&output, &["stream"]);

    // The upstream saw the request as the client sent it (the guard checks answers only), and
    // the record names the verdict and what was found, never the number.
    let (status, body) = chat(&gateway, "guard-card", "openai/spell", CARD, true).await;
    assert_eq!(status, 200);
    assert!(!body.contains("4111") && body.contains("[CARD]"), "{body}");
    assert_eq!(
        mock.last_request().await.body["messages"][0]["content"],
        CARD
    );
    let record = gateway.record_of("guard-card").await;
    assert_eq!(
        verdicts(&record),
        json!([{"guard": "answers", "side": "answer", "action": "rewrite", "counts": {"card": 1}}])
    );
    assert_eq!(record.status, 200);

    // A whole answer goes through the same path.
    let (status, body) = chat(&gateway, "guard-card-whole", "openai/spell", CARD, false).await;
    assert_eq!(status, 200, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["choices"][0]["message"]["content"], expect);
    assert_eq!(body["usage"]["prompt_tokens"], 13, "nothing else changed");
    let metrics = gateway.metrics().await;
    assert!(
        metrics.contains(r#"wasmgate_guard_verdicts_total{guard="answers",action="rewrite"} 3"#),
        "{metrics}"
    );
}

#[tokio::test]
async fn requests_are_redacted_before_they_leave() {
    let mock = MockOpenAi::start().await;
    let gateway = openai(&mock.base_url())
        .guard(Guard::plugin("redact"))
        .start()
        .await;
    let (status, body) = chat(&gateway, "guard-req", "openai/gpt-4o-mini", CARD, false).await;
    assert_eq!(status, 200, "{body}");
    let sent = mock.last_request().await.body;
    assert_eq!(sent["messages"][0]["content"], "My card is [CARD], thanks.");
    let record = gateway.record_of("guard-req").await;
    let verdicts = verdicts(&record);
    assert_eq!(verdicts[0]["side"], "request");
    assert_eq!(verdicts[0]["action"], "rewrite");
    assert_eq!(verdicts[1]["side"], "answer");
    assert_eq!(verdicts[1]["action"], "allow");
}

#[tokio::test]
async fn the_anthropic_sdk_and_the_responses_api_are_refused_in_their_own_shapes() {
    let mock = MockOpenAi::start().await;
    let deny = Guard::plugin("deny")
        .apply("request")
        .options("{phrases: [Project Falcon]}");
    let gateway = openai(&mock.base_url()).guard(deny).start().await;
    let prompt = "Tell me about project falcon";
    for scenario in ["messages-refused", "responses-refused"] {
        let output = run_client(
            "guards.py",
            &gateway.url(""),
            "sk-client",
            &["--scenario", scenario, "--prompt", prompt],
        )
        .await;
        assert_passed(&output, &[scenario]);
    }
    assert!(
        mock.requests().await.is_empty(),
        "nothing left for the upstream"
    );
}

#[tokio::test]
async fn a_stop_mid_stream_ends_with_the_dialects_error_event() {
    let mock = MockOpenAi::start().await;
    let deny = Guard::plugin("deny")
        .apply("answer")
        .options("{phrases: [Project Falcon]}");
    let gateway = openai(&mock.base_url()).guard(deny).start().await;
    let prompt = "The first part is fine. Then: Project Falcon launches soon.";
    let response = http()
        .post(gateway.url("/v1/messages"))
        .header("x-request-id", "guard-stop")
        .header("anthropic-version", "2023-06-01")
        .json(
            &json!({"model": "openai/spell", "max_tokens": 64, "stream": true,
                      "messages": [{"role": "user", "content": prompt}]}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body = response.text().await.unwrap();
    let text: String = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter_map(|e| e["delta"]["text"].as_str().map(str::to_owned))
        .collect();
    assert!(
        text.starts_with("The first part is fine."),
        "released before the stop: {body}"
    );
    assert!(!text.to_lowercase().contains("falcon"), "{body}");
    let last = body.trim_end().rsplit("\n\n").next().unwrap();
    assert!(last.starts_with("event: error\ndata: "), "{body}");
    let error: Value = serde_json::from_str(last.split_once("data: ").unwrap().1).unwrap();
    assert_eq!(error["type"], "error");
    assert!(
        error["error"]["message"].as_str().unwrap().contains("deny"),
        "{error}"
    );
    let record = gateway.record_of("guard-stop").await;
    assert_eq!(verdicts(&record)[0]["action"], "stop");
    assert_eq!(record.error_type.as_deref(), Some("stream_incomplete"));
}

#[tokio::test]
async fn monitor_mode_changes_nothing_but_the_record() {
    let mock = MockOpenAi::start().await;
    let gateway = openai(&mock.base_url())
        .guard(Guard::plugin("redact").name("watch").monitor())
        .guard(Guard::plugin("deny").monitor().options("{phrases: [card]}"))
        .start()
        .await;
    let (status, body) = chat(&gateway, "guard-monitor", "openai/spell", CARD, true).await;
    assert_eq!(status, 200);
    let text: String = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter_map(|c| {
            c["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(text, CARD, "the answer is the upstream's");
    assert_eq!(
        mock.last_request().await.body["messages"][0]["content"],
        CARD
    );
    let verdicts = verdicts(&gateway.record_of("guard-monitor").await);
    let actions: Vec<(&str, &str, &str)> = verdicts
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["guard"].as_str().unwrap(),
                v["side"].as_str().unwrap(),
                v["action"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        actions,
        [
            ("watch", "request", "monitor_rewrite"),
            ("deny", "request", "monitor_refuse"),
            ("watch", "answer", "monitor_rewrite"),
            ("deny", "answer", "monitor_stop"),
        ]
    );
}

#[tokio::test]
async fn a_guard_that_traps_loops_or_eats_memory_fails_closed_for_that_request_only() {
    let mock = MockOpenAi::start().await;
    let gateway = openai(&mock.base_url())
        .test_plugins()
        .set("plugins.call_timeout_ms", 100)
        .set("plugins.memory_limit_mib", 32)
        .set("plugins.max_instances", 16)
        .guard(Guard::plugin("faulty-guard").yaml("scope", "{models: [openai/gpt-4o-mini]}"))
        .guard(
            Guard::plugin("faulty-guard")
                .name("lenient")
                .set("fail_open", true)
                .yaml("scope", "{models: [openai/spell]}"),
        )
        .start()
        .await;
    for (i, fault) in ["guard-trap", "guard-loop", "guard-hog"].iter().enumerate() {
        let started = std::time::Instant::now();
        let id = format!("guard-fault-{i}");
        let (status, body) = chat(&gateway, &id, "openai/gpt-4o-mini", fault, false).await;
        assert_eq!(status, 500, "{fault}: {body}");
        let body: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(body["error"]["code"], "guard_failed", "{body}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "{fault} failed fast"
        );
        let (status, body) = chat(&gateway, "ok", "openai/gpt-4o-mini", "hello", false).await;
        assert_eq!(status, 200, "the next request after {fault}: {body}");
        let record = gateway.record_of(&id).await;
        assert_eq!(record.status, 500);
        assert_eq!(verdicts(&record)[0]["action"], "error");
    }
    assert_eq!(
        mock.requests().await.len(),
        3,
        "only the good requests went upstream"
    );

    // `fail_open`: the failure is recorded and the request goes on without the guard, on the
    // request and on the streamed answer (which echoes the trigger).
    let (status, body) = chat(&gateway, "guard-open", "openai/spell", "guard-trap", true).await;
    assert_eq!(status, 200);
    assert!(body.contains("gua") && body.contains("[DONE]"), "{body}");
    let verdicts = verdicts(&gateway.record_of("guard-open").await);
    assert_eq!(verdicts[0]["guard"], "lenient");
    assert_eq!(
        (&verdicts[0]["action"], &verdicts[1]["action"]),
        (&json!("error"), &json!("error"))
    );
}

/// A Messages request to an Anthropic target goes natively with a guard too: the guards check
/// its canonical view, request and answer, and the upstream never sees what they redacted
/// (`guards_native.rs` has the fields that survive).
#[tokio::test]
async fn a_native_target_is_no_way_around_a_guard() {
    use common::mock_providers::{MockProvider, anthropic};
    let mock = MockProvider::anthropic().await;
    let gateway = common::guards::anthropic_guarded(&mock, Guard::plugin("redact"))
        .start()
        .await;
    for stream in [false, true] {
        let id = format!("guard-native-{stream}");
        let response = http()
            .post(gateway.url("/v1/messages"))
            .header("anthropic-version", anthropic::VERSION)
            .header("x-request-id", &id)
            .json(
                &json!({"model": "anthropic/claude-sonnet-4-5", "max_tokens": 64,
                          "stream": stream, "messages": [{"role": "user", "content": CARD}]}),
            )
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let body = response.text().await.unwrap();
        assert_eq!(status, 200, "{body}");
        if stream {
            assert!(body.contains("event: message_stop"), "{body}");
        } else {
            assert_eq!(
                serde_json::from_str::<Value>(&body).unwrap()["type"],
                "message"
            );
        }
        let sent = mock.last_request().await.body;
        let content = sent["messages"][0]["content"].to_string();
        assert!(content.contains("[CARD]"), "{sent}");
        assert!(!sent.to_string().contains("4111"), "{sent}");
        let verdicts = verdicts(&gateway.record_of(&id).await);
        assert_eq!(verdicts[0]["action"], "rewrite");
        assert_eq!(verdicts[1]["side"], "answer", "the answer was guarded too");
    }
}

/// Reversible redaction: the upstream sees only numbered placeholders, and the client gets its
/// own card number back in the streamed answer that repeats the placeholder, split over deltas.
#[tokio::test]
async fn reversible_redaction_round_trips_through_a_stream() {
    let mock = MockOpenAi::start().await;
    let redact = Guard::plugin("redact").options("{reversible: true, window: 24}");
    let gateway = openai(&mock.base_url()).guard(redact).start().await;
    let output = run_client(
        "guards.py",
        &gateway.url(""),
        "sk-client",
        &[
            "--scenario",
            "stream",
            "--model",
            "openai/spell",
            "--prompt",
            CARD,
            "--expect",
            CARD,
        ],
    )
    .await;
    assert_passed(&output, &["stream"]);
    let sent = mock.last_request().await.body;
    assert_eq!(
        sent["messages"][0]["content"],
        "My card is [CARD_1], thanks."
    );
}

/// A stream the echo provider makes at once, stopped by a guard: the client gets what was
/// released before the stop and then its own dialect's error event (Chat's `data:` error, the
/// Messages API's `event: error`), never a whole JSON error in place of the stream.
#[tokio::test]
async fn a_local_stream_a_guard_stops_ends_with_the_dialects_error_event() {
    let echo = Provider::echo()
        .models(["echo-1"])
        .options("{chunk_size: 1}");
    let deny = Guard::plugin("deny")
        .apply("answer")
        .options("{phrases: [Project Falcon]}");
    let gateway = Gateway::builder()
        .provider("echo", echo)
        .guard(deny)
        .start()
        .await;
    let prompt =
        "The first part is fine and long enough to go. Then: Project Falcon launches soon.";
    let (status, body) = chat(&gateway, "guard-local-chat", "echo/echo-1", prompt, true).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body.starts_with("data: {"),
        "a stream, not a JSON error: {body}"
    );
    let events = common::sse::events(&body);
    let text: String = (events.iter())
        .filter_map(|e| e.data["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert!(text.starts_with("The first part is fine"), "{body}");
    assert!(!text.to_lowercase().contains("falcon"), "{body}");
    assert!(
        !body.contains("[DONE]"),
        "a stopped stream has no end: {body}"
    );
    let last = &events.last().unwrap().data;
    assert_eq!(last["error"]["code"], "answer_stopped", "{body}");
    let record = gateway.record_of("guard-local-chat").await;
    assert_eq!(verdicts(&record)[0]["action"], "stop");
    assert_eq!(record.error_type.as_deref(), Some("stream_incomplete"));

    let response = http()
        .post(gateway.url("/v1/messages"))
        .header("anthropic-version", "2023-06-01")
        .json(
            &json!({"model": "echo/echo-1", "max_tokens": 64, "stream": true,
                      "messages": [{"role": "user", "content": prompt}]}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body = response.text().await.unwrap();
    assert!(body.contains("event: content_block_delta"), "{body}");
    let last = body.trim_end().rsplit("\n\n").next().unwrap();
    assert!(last.starts_with("event: error\ndata: "), "{body}");
    let error: Value = serde_json::from_str(last.split_once("data: ").unwrap().1).unwrap();
    assert_eq!(error["type"], "error", "{error}");
    assert!(!body.contains("message_stop"), "{body}");
}
