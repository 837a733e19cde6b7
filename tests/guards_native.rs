//! Guards on requests to a target that speaks the client's dialect: the client's native body
//! stays the truth, the guards check its canonical view, and what they change is changed in the
//! native text. Against the strict Anthropic mock, which checks every field and refuses a
//! thinking block whose signature does not match its text:
//! - a Claude Code-shaped request (`thinking`, `metadata`, `context_management`, system and
//!   message blocks with `cache_control`, a signed thinking block, `tool_use`/`tool_result`)
//!   arrives whole, with the card number redacted in its text; reversible redaction gives the
//!   client its own value back inside the native answer, whole and streamed, whose thinking
//!   block and signature reach the client untouched;
//! - the Anthropic Python SDK with thinking on, whole and streamed, and a second turn sending
//!   the signed thinking block back;
//! - an answer guard's stop is an Anthropic error, whole and mid-stream.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use crate::sdk_clients::{assert_passed, run_client};

use common::gateway::{Gateway, Guard, Provider};
use common::guards::{anthropic_guarded, verdicts};
use common::mock_providers::anthropic::{self, Script, THINKING, signature};
use common::mock_providers::{KEY, MockProvider};
use common::{TestGateway, http};
use serde_json::{Value, json};

const CARD: &str = "4111 1111 1111 1111";

/// What Claude Code sends on the turn after a tool call: its fields, blocks with
/// `cache_control`, the signed thinking block of the turn before, and the tool's result, which
/// holds a card number.
fn claude_code_turn(stream: bool) -> Value {
    json!({
        "model": "anthropic/claude-sonnet-4-5",
        "max_tokens": 4096,
        "stream": stream,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "metadata": {"user_id": "user_4f1c_account_9d2e_session_77aa"},
        "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
        "system": [
            {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."},
            {"type": "text", "text": "Answer briefly.", "cache_control": {"type": "ephemeral"}}
        ],
        "tools": [{"name": "Read", "description": "Reads a file",
                   "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}},
                                    "required": ["file_path"]}}],
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "Read secrets.txt and tell me what it says.",
                 "cache_control": {"type": "ephemeral"}}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": THINKING, "signature": signature(THINKING)},
                {"type": "tool_use", "id": anthropic::TOOL_USE_ID, "name": "Read",
                 "input": {"file_path": "secrets.txt"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": anthropic::TOOL_USE_ID,
                 "content": [{"type": "text", "text": format!("Card: {CARD}\n"),
                              "cache_control": {"type": "ephemeral"}}]}]}
        ]
    })
}

async fn send(gateway: &TestGateway, id: &str, body: &Value) -> (u16, String) {
    let response = http()
        .post(gateway.url("/v1/messages"))
        .header("anthropic-version", anthropic::VERSION)
        .header("anthropic-beta", "interleaved-thinking-2025-05-14")
        .header("x-request-id", id)
        .json(body)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

/// The data of each `event:` of an SSE body, with its name.
fn events(body: &str) -> Vec<(String, Value)> {
    body.split("\n\n")
        .filter_map(|block| {
            let name = block.lines().find_map(|l| l.strip_prefix("event: "))?;
            let data = block.lines().find_map(|l| l.strip_prefix("data: "))?;
            Some((name.to_owned(), serde_json::from_str(data).ok()?))
        })
        .collect()
}

#[tokio::test]
async fn a_claude_code_turn_keeps_its_fields_and_its_signed_thinking_through_redact() {
    let mock = MockProvider::anthropic().await;
    *mock.shared.script.lock().await = Some(Script {
        tool: "Read".to_owned(),
        input: json!({"file_path": "secrets.txt"}),
    });
    let redact = Guard::plugin("redact").options("{reversible: true, window: 48}");
    let gateway = anthropic_guarded(&mock, redact).start().await;
    let expected = format!("The tool said: Card: {CARD}\n");
    for stream in [false, true] {
        let id = format!("native-turn-{stream}");
        let turn = claude_code_turn(stream);
        let (status, body) = send(&gateway, &id, &turn).await;
        assert_eq!(status, 200, "{body}");

        // Upstream: the client's body, but for the model and the redacted card.
        let mut sent = mock.last_request().await.body;
        assert!(!sent.to_string().contains("4111"), "{sent}");
        let result = &sent["messages"][2]["content"][0]["content"][0];
        assert_eq!(result["text"], "Card: [CARD_1]\n", "{sent}");
        assert_eq!(result["cache_control"]["type"], "ephemeral");
        let mut expected_sent = turn.clone();
        expected_sent["model"] = json!("claude-sonnet-4-5");
        expected_sent["messages"][2]["content"][0]["content"][0]["text"] =
            json!("Card: [CARD_1]\n");
        sent.as_object_mut().unwrap().remove("stream");
        expected_sent.as_object_mut().unwrap().remove("stream");
        assert_eq!(sent, expected_sent, "every other field arrived as sent");

        // The answer: native, its signed thinking block first, the value given back in its text.
        if stream {
            let events = events(&body);
            let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
            assert_eq!(names.first(), Some(&"message_start"), "{body}");
            assert_eq!(names.last(), Some(&"message_stop"), "{body}");
            let deltas = || events.iter().map(|(_, e)| &e["delta"]);
            let thinking: String = deltas().filter_map(|d| d["thinking"].as_str()).collect();
            assert_eq!(thinking, THINKING);
            let signed = deltas().find_map(|d| d["signature"].as_str());
            assert_eq!(signed, Some(signature(THINKING).as_str()), "{body}");
            let text: String = deltas().filter_map(|d| d["text"].as_str()).collect();
            assert_eq!(text, expected, "{body}");
            assert!(
                deltas().filter(|d| d["type"] == "text_delta").count() > 1,
                "the text came in pieces: {body}"
            );
        } else {
            let answer: Value = serde_json::from_str(&body).unwrap();
            assert_eq!(answer["type"], "message", "{answer}");
            assert_eq!(answer["content"][0]["type"], "thinking", "{answer}");
            assert_eq!(answer["content"][0]["signature"], signature(THINKING));
            assert_eq!(answer["content"][1]["text"], expected, "{answer}");
            assert_eq!(
                answer["id"],
                anthropic::MESSAGE_ID,
                "Anthropic's own answer"
            );
        }
        let verdicts = verdicts(&gateway.record_of(&id).await);
        assert_eq!(verdicts[0]["action"], "rewrite", "{verdicts}");
        assert_eq!(verdicts[1]["side"], "answer", "{verdicts}");
    }
}

#[tokio::test]
async fn the_anthropic_sdk_keeps_thinking_and_its_signature_through_a_guard() {
    let mock = MockProvider::anthropic().await;
    let gateway = anthropic_guarded(&mock, Guard::plugin("redact"))
        .start()
        .await;
    let prompt = format!("My card is {CARD}, thanks.");
    let output = run_client(
        "guards.py",
        &gateway.url(""),
        "sk-client",
        &[
            "--scenario",
            "messages-native",
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--prompt",
            &prompt,
            "--expect",
            THINKING,
        ],
    )
    .await;
    assert_passed(&output, &["messages-native"]);
    let requests = mock.requests().await;
    // A whole turn, a streamed one, and the second turn that sent the signed block back.
    assert_eq!(requests.len(), 3, "{requests:?}");
    for request in &requests {
        let sent = &request.body;
        assert!(!sent.to_string().contains("4111"), "{sent}");
        assert_eq!(sent["messages"][0]["content"], "My card is [CARD], thanks.");
        assert_eq!(sent["thinking"]["type"], "enabled", "{sent}");
        assert_eq!(sent["metadata"]["user_id"], "sdk-user", "{sent}");
        assert_eq!(sent["system"][0]["cache_control"]["type"], "ephemeral");
    }
    assert_eq!(
        requests[2].body["messages"][1]["content"][0]["signature"],
        signature(THINKING)
    );
}

#[tokio::test]
async fn an_answer_guard_stop_is_an_anthropic_error_whole_and_mid_stream() {
    let mock = MockProvider::anthropic().await;
    let deny = Guard::plugin("deny")
        .apply("answer")
        .options("{phrases: [Nice to meet you, My name is Claude]}");
    let gateway = anthropic_guarded(&mock, deny).start().await;
    let request = |stream: bool| {
        json!({"model": "anthropic/claude-sonnet-4-5", "max_tokens": 64, "stream": stream,
               "metadata": {"user_id": "u1"},
               "messages": [{"role": "user", "content": "Hello"}]})
    };
    let (status, body) = send(&gateway, "native-stop-whole", &request(false)).await;
    let error: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(status, 400, "{body}");
    assert_eq!(error["type"], "error", "Anthropic's error envelope: {body}");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("guard")
    );
    assert_eq!(mock.last_request().await.body["metadata"]["user_id"], "u1");
    // The upstream was paid for the answer the client never got: the record says what it cost.
    let paid = |record: &wasmgate::ledger::UsageRecord| {
        assert_eq!(record.status, 400, "{record:?}");
        assert!(
            record.input_tokens > 0 && record.output_tokens > 0,
            "{record:?}"
        );
        assert!(record.cost_micros.unwrap_or(0) > 0, "{record:?}");
    };
    paid(&gateway.record_of("native-stop-whole").await);
    // The same on the translated path: Chat Completions to the Anthropic entry.
    let response = http()
        .post(gateway.url("/v1/chat/completions"))
        .header("x-request-id", "translated-stop-whole")
        .json(
            &json!({"model": "anthropic/claude-sonnet-4-5", "max_tokens": 64,
                      "messages": [{"role": "user", "content": "Hello"}]}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    paid(&gateway.record_of("translated-stop-whole").await);

    let (status, body) = send(&gateway, "native-stop-stream", &request(true)).await;
    assert_eq!(status, 200, "{body}");
    let events = events(&body);
    let (last, error) = events.last().unwrap();
    assert_eq!(last, "error", "{body}");
    assert_eq!(error["type"], "error", "{body}");
    assert!(!body.contains("Nice to meet you"), "{body}");
    let text: String = (events.iter())
        .filter_map(|(_, e)| e["delta"]["text"].as_str())
        .collect();
    assert!(
        anthropic::STREAM_DELTAS.concat().starts_with(&text),
        "what went before the stop is the answer's own beginning: {text:?}"
    );
    let verdicts = verdicts(&gateway.record_of("native-stop-stream").await);
    assert_eq!(verdicts[0]["action"], "stop", "{verdicts}");
}

/// Google's dialect to a `gemini` entry with `redact` on: the body Google's SDKs write goes
/// upstream with its own fields (the `safetySettings` and thinking budget the canonical form
/// drops), the card redacted in its text; the answer comes back in Google's shape, whole and
/// streamed (as events, and as one JSON array without `alt=sse`).
#[tokio::test]
async fn a_gemini_request_keeps_its_fields_through_redact() {
    use common::mock_providers::gemini;
    let mock = MockProvider::gemini().await;
    let model = "gemini-3.5-flash";
    let entry = Provider::at("gemini", &mock.base_url(), KEY).models([model]);
    let gateway = Gateway::builder()
        .provider("gemini", entry)
        .set("dialects.gemini.plugin", "gemini-genai")
        .guard(Guard::plugin("redact"))
        .start()
        .await;
    let body = json!({
        "contents": [{"role": "user", "parts": [{"text": format!("My card is {CARD}, thanks.")}]}],
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_ONLY_HIGH"}],
        "generationConfig": {"temperature": 0.2, "thinkingConfig": {"thinkingBudget": 128}}
    });
    for (route, expected) in [
        ("generateContent", gemini::TEXT.to_owned()),
        (
            "streamGenerateContent?alt=sse",
            gemini::STREAM_DELTAS.concat(),
        ),
        // Without `alt=sse`, Google's stream is one JSON array of the same responses.
        ("streamGenerateContent", gemini::STREAM_DELTAS.concat()),
    ] {
        let response = http()
            .post(gateway.url(&format!("/v1beta/models/gemini/{model}:{route}")))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        assert_eq!(status, 200, "{text}");
        let array = route == "streamGenerateContent";
        assert_eq!(text.starts_with('['), array, "{route}: {text}");
        let answers: Vec<Value> = if array {
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
        } else {
            (text.lines())
                .filter_map(|l| l.strip_prefix("data: "))
                .chain(std::iter::once(text.as_str()).filter(|t| t.starts_with('{')))
                .filter_map(|data| serde_json::from_str::<Value>(data).ok())
                .collect()
        };
        let answered: String = (answers.into_iter())
            .flat_map(|e| {
                (e["candidates"][0]["content"]["parts"].as_array().cloned()).unwrap_or_default()
            })
            .filter(|p| p["thought"] != true)
            .filter_map(|p| p["text"].as_str().map(str::to_owned))
            .collect();
        assert_eq!(answered, expected, "{text}");
        let mut sent = mock.last_request().await.body;
        assert_eq!(
            sent["contents"][0]["parts"][0]["text"],
            "My card is [CARD], thanks."
        );
        sent["contents"] = body["contents"].clone();
        assert_eq!(sent, body, "every other field arrived as sent");
    }
}
