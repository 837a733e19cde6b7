//! The official SDKs as test clients: the programs in `tests/sdk/` (the `anthropic`, `openai` and
//! `google-genai` Python packages and the Node `@anthropic-ai/sdk`, `openai` and `@google/genai`
//! (the last driven by `tests/gemini.rs`), pinned and installed into
//! `target/sdk-clients/` by `scripts/sdk-clients.sh`) run their scenarios against the strict mock
//! upstreams, which proves the mocks speak what the SDKs expect; and the mocks refuse what the
//! real APIs refuse. The same programs run against the gateway by giving `run_client` the
//! gateway's URL, a gateway key and the model names its config routes:
//!
//! ```text
//! run_client("anthropic_messages.py", &gateway.url(""), &key, &["--model", "anthropic/claude-sonnet-4-5"])
//! run_client("openai_responses.py", &gateway.url("/v1"), &key,
//!            &["--model", "openai/gpt-4.1-mini", "--reasoning-model", "openai/o4-mini"])
//! ```
//!
//! On a translated path pass `--only` with the scenarios a translation can keep: thinking
//! signatures, prompt caching (`claude_code`), encrypted reasoning and stored responses hold
//! natively only (or where the gateway stores them). `--mock` (Responses) adds what only the mock
//! promises (its text counts user turns; its cache reads a resent prefix).
//!
//! These tests fail, not skip, when the SDKs are missing: run `scripts/sdk-clients.sh`
//! (`scripts/test.sh` does) first.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::gateway::{Gateway as Config, Provider};
use common::http;
use common::mock_openai::MockOpenAi;
use common::mock_openai::responses::{self, API_KEY};
use common::mock_providers::{KEY, MockProvider, anthropic};
pub use common::sdk::{assert_passed, run_client};
use serde_json::{Value, json};

const CLAUDE: &str = "claude-sonnet-4-5";
const GPT: &str = "gpt-4.1-mini";
const REASONING_GPT: &str = "o4-mini";

#[tokio::test]
async fn anthropic_python_sdk_completes_every_scenario_against_the_mock() {
    let mock = MockProvider::anthropic().await;
    let scenarios = [
        "create",
        "stream",
        "tools",
        "count_tokens",
        "thinking",
        "claude_code",
        "x_api_key",
    ];
    let output = run_client(
        "anthropic_messages.py",
        &mock.origin(),
        KEY,
        &["--model", CLAUDE, "--only", &scenarios.join(",")],
    )
    .await;
    assert_passed(&output, &scenarios);
    let requests = mock.requests().await;
    assert!(
        requests
            .iter()
            .all(|r| r.header("anthropic-version").is_some()),
        "every request names its API version"
    );
    // The Claude Code shape: its beta flags arrive as sent, on the beta endpoint.
    let beta = requests
        .iter()
        .find(|r| r.header("anthropic-beta").is_some())
        .expect("a request with anthropic-beta");
    assert_eq!(
        beta.header("anthropic-beta"),
        Some(
            "claude-code-20250219,interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14"
        )
    );
    assert_eq!(beta.body["tools"].as_array().map(Vec::len), Some(30));
    // Both key forms: the SDK's Bearer and Claude Code's x-api-key.
    assert!(
        requests
            .iter()
            .any(|r| r.header("x-api-key") == Some(KEY) && r.header("authorization").is_none())
    );
    assert!(
        requests
            .iter()
            .any(|r| r.header("authorization") == Some(&format!("Bearer {KEY}")))
    );
}

#[tokio::test]
async fn anthropic_node_sdk_completes_every_scenario_against_the_mock() {
    let mock = MockProvider::anthropic().await;
    let output = run_client(
        "anthropic_messages.mjs",
        &mock.origin(),
        KEY,
        &["--model", CLAUDE],
    )
    .await;
    assert_passed(&output, &["create", "stream", "tools"]);
}

#[tokio::test]
async fn openai_python_sdk_completes_every_responses_scenario_against_the_mock() {
    let mock = MockOpenAi::start().await;
    let scenarios = [
        "create",
        "stream",
        "function_tools",
        "chain",
        "stateless_reasoning",
        "stored",
        "compact",
    ];
    let output = run_client(
        "openai_responses.py",
        &mock.base_url(),
        API_KEY,
        &[
            "--model",
            GPT,
            "--reasoning-model",
            REASONING_GPT,
            "--mock",
            "--only",
            &scenarios.join(","),
        ],
    )
    .await;
    assert_passed(&output, &scenarios);
}

/// A request the mock Anthropic API accepts; each refusal case changes one thing in it.
fn valid_anthropic() -> Value {
    json!({"model": CLAUDE, "max_tokens": 4096,
           "thinking": {"type": "enabled", "budget_tokens": 2048},
           "tools": [{"name": "get_weather", "input_schema": {"type": "object"}}],
           "messages": [
               {"role": "user", "content": "Weather in Paris?"},
               {"role": "assistant", "content": [
                   {"type": "thinking", "thinking": anthropic::THINKING,
                    "signature": anthropic::signature(anthropic::THINKING)},
                   {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]},
               {"role": "user", "content": [
                   {"type": "tool_result", "tool_use_id": "toolu_1", "content": "18 degrees"}]}]})
}

async fn post_anthropic(
    mock: &MockProvider,
    path: &str,
    headers: &[(&str, &str)],
    body: &Value,
) -> (u16, Value) {
    let mut request = http().post(format!("{}{path}", mock.origin())).json(body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

#[tokio::test]
async fn anthropic_mock_refuses_what_the_messages_api_refuses() {
    let mock = MockProvider::anthropic().await;
    let good: &[(&str, &str)] = &[
        ("x-api-key", KEY),
        ("anthropic-version", anthropic::VERSION),
    ];
    // Claude Code's SDK sends `?beta=true`: taken, and recorded with the path.
    let (status, body) =
        post_anthropic(&mock, "/v1/messages?beta=true", good, &valid_anthropic()).await;
    assert_eq!(status, 200, "the valid request: {body}");
    assert_eq!(mock.last_request().await.path, "/v1/messages?beta=true");

    type Change = fn(&mut Value);
    let cases: &[(&str, Change, &str)] = &[
        (
            "a field of another dialect",
            |r| r["stream_options"] = json!({"include_usage": true}),
            "stream_options: Extra inputs are not permitted",
        ),
        (
            "no max_tokens",
            |r| {
                r.as_object_mut().unwrap().remove("max_tokens");
            },
            "max_tokens: Field required",
        ),
        (
            "a tool_result answering no tool_use",
            |r| r["messages"][2]["content"][0]["tool_use_id"] = json!("toolu_other"),
            "unexpected `tool_use_id` found in `tool_result` blocks: toolu_other",
        ),
        (
            "a tool_use left unanswered",
            |r| r["messages"][2]["content"] = json!("Thanks"),
            "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_1",
        ),
        (
            "a forged thinking signature",
            |r| r["messages"][1]["content"][0]["signature"] = json!(anthropic::signature("other")),
            "Invalid `signature` in `thinking` block",
        ),
        (
            "thinking text changed under its signature",
            |r| r["messages"][1]["content"][0]["thinking"] = json!("Something else."),
            "Invalid `signature` in `thinking` block",
        ),
        (
            "thinking dropped before the tool_use it led to",
            |r| {
                r["messages"][1]["content"]
                    .as_array_mut()
                    .unwrap()
                    .remove(0);
            },
            "Expected `thinking` or `redacted_thinking`, but found `tool_use`",
        ),
        (
            "a role that does not exist",
            |r| r["messages"][0]["role"] = json!("system"),
            "messages.0.role: Input should be 'user' or 'assistant'",
        ),
        (
            "a block type the user cannot send",
            |r| {
                r["messages"][0]["content"] =
                    json!([{"type": "tool_use", "id": "x", "name": "get_weather", "input": {}}])
            },
            "messages.0.content.0.type: Input tag 'tool_use'",
        ),
        (
            "an empty text block",
            |r| r["messages"][0]["content"] = json!([{"type": "text", "text": ""}]),
            "text content blocks must be non-empty",
        ),
        (
            "an OpenAI-shaped tool",
            |r| r["tools"][0]["parameters"] = json!({"type": "object"}),
            "tools.0.custom.parameters: Extra inputs are not permitted",
        ),
        (
            "five cache breakpoints",
            |r| {
                r["system"] = json!([1, 2, 3, 4, 5].map(|i| json!({"type": "text", "text": format!("part {i}"), "cache_control": {"type": "ephemeral"}})));
            },
            "A maximum of 4 blocks with cache_control may be provided. Found 5.",
        ),
        (
            "a thinking budget under 1024",
            |r| r["thinking"]["budget_tokens"] = json!(512),
            "budget_tokens: Input should be greater than or equal to 1024",
        ),
        (
            "thinking with a forced tool",
            |r| r["tool_choice"] = json!({"type": "any"}),
            "Thinking may not be enabled when tool_choice forces tool use.",
        ),
    ];
    for (what, change, message) in cases {
        let mut request = valid_anthropic();
        change(&mut request);
        let (status, body) = post_anthropic(&mock, "/v1/messages", good, &request).await;
        assert_eq!(status, 400, "{what}: {body}");
        assert_eq!(body["type"], "error", "{what}: {body}");
        assert_eq!(
            body["error"]["type"], "invalid_request_error",
            "{what}: {body}"
        );
        let said = body["error"]["message"].as_str().unwrap();
        assert!(said.contains(message), "{what}: {said}");
    }

    // count_tokens takes no max_tokens.
    let (status, body) =
        post_anthropic(&mock, "/v1/messages/count_tokens", good, &valid_anthropic()).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        body["error"]["message"],
        "max_tokens: Extra inputs are not permitted"
    );

    // Headers: no version, a mangled beta flag, a wrong key.
    let body = valid_anthropic();
    /// What is wrong, the headers sent, the status and message expected.
    type HeaderCase<'a> = (&'a str, &'a [(&'a str, &'a str)], u16, &'a str);
    let header_cases: &[HeaderCase] = &[
        (
            "no anthropic-version",
            &[("x-api-key", KEY)],
            400,
            "anthropic-version: header is required",
        ),
        (
            "a mangled beta flag",
            &[
                ("x-api-key", KEY),
                ("anthropic-version", anthropic::VERSION),
                ("anthropic-beta", "prompt-caching-2024-07-31,claude code"),
            ],
            400,
            "Unexpected value(s) `claude code` for the `anthropic-beta` header",
        ),
        (
            "a wrong key",
            &[
                ("x-api-key", "sk-ant-wrong"),
                ("anthropic-version", anthropic::VERSION),
            ],
            401,
            "invalid x-api-key",
        ),
        (
            "a wrong bearer key",
            &[
                ("authorization", "Bearer sk-ant-wrong"),
                ("anthropic-version", anthropic::VERSION),
            ],
            401,
            "invalid x-api-key",
        ),
    ];
    for (what, headers, status, message) in header_cases {
        let (got, body) = post_anthropic(&mock, "/v1/messages", headers, &body).await;
        assert_eq!(got, *status, "{what}: {body}");
        let said = body["error"]["message"].as_str().unwrap();
        assert!(said.contains(message), "{what}: {said}");
    }
}

async fn post_responses(mock: &MockOpenAi, key: &str, body: &Value) -> (u16, Value) {
    let response = http()
        .post(format!("{}/responses", mock.base_url()))
        .bearer_auth(key)
        .json(body)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

#[tokio::test]
async fn openai_mock_refuses_what_the_responses_api_refuses() {
    let mock = MockOpenAi::start().await;
    let weather =
        json!([{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]);
    // A stateless turn with sealed reasoning, and a stored one to chain to.
    let (status, first) = post_responses(
        &mock,
        API_KEY,
        &json!({
        "model": REASONING_GPT, "input": "Weather in Paris?", "tools": weather, "store": false,
        "include": ["reasoning.encrypted_content"]}),
    )
    .await;
    assert_eq!(status, 200, "{first}");
    let reasoning = first["output"][0].clone();
    let call = first["output"][1].clone();
    assert_eq!(reasoning["type"], "reasoning", "{first}");
    assert_eq!(call["type"], "function_call", "{first}");
    let resend = json!({"model": REASONING_GPT, "store": false, "tools": weather, "input": [
        {"role": "user", "content": "Weather in Paris?"}, reasoning, call,
        {"type": "function_call_output", "call_id": call["call_id"], "output": "18 degrees"}]});
    let (status, body) = post_responses(&mock, API_KEY, &resend).await;
    assert_eq!(status, 200, "the genuine resend: {body}");
    assert!(
        body["output"][1]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with(responses::TEXT_PREFIX),
        "{body}"
    );

    type Change = fn(&mut Value);
    let cases: &[(&str, Change, u16, &str, Option<&str>)] = &[
        (
            "a chat completions field",
            |r| r["stream_options"] = json!({"include_usage": true}),
            400,
            "Unknown parameter: 'stream_options.include_usage'.",
            Some("unknown_parameter"),
        ),
        (
            "a chat completions field (n)",
            |r| r["n"] = json!(2),
            400,
            "Unknown parameter: 'n'.",
            Some("unknown_parameter"),
        ),
        (
            "an unknown previous_response_id",
            |r| r["previous_response_id"] = json!("resp_doesnotexist"),
            400,
            "Previous response with id 'resp_doesnotexist' not found.",
            Some("previous_response_not_found"),
        ),
        (
            "a function_call_output answering no call",
            |r| {
                r["input"].as_array_mut().unwrap().remove(2);
            },
            400,
            "No tool call found for function call output with call_id",
            None,
        ),
        (
            "forged encrypted reasoning",
            |r| r["input"][1]["encrypted_content"] = json!("gAAAAABforged"),
            400,
            "could not be verified",
            Some("invalid_encrypted_content"),
        ),
        (
            "a compaction item the API did not make (the gateway's own, unexpanded)",
            |r| {
                let item = json!({"type": "compaction", "id": "cmp_1",
                    "encrypted_content": "wasmgate.compaction.v1:Ada lives in Paris."});
                r["input"].as_array_mut().unwrap().insert(0, item);
            },
            400,
            "The encrypted content of the compaction item could not be verified.",
            Some("invalid_encrypted_content"),
        ),
        (
            "reasoning not stored and not sealed",
            |r| {
                r["input"][1]
                    .as_object_mut()
                    .unwrap()
                    .remove("encrypted_content");
            },
            404,
            "Items are not persisted when `store` is set to false",
            None,
        ),
        (
            "a reasoning item sent back with its status",
            |r| r["input"][1]["status"] = json!("completed"),
            400,
            "Unknown parameter: 'input[1].status'.",
            Some("unknown_parameter"),
        ),
        (
            "an item type that does not exist",
            |r| r["input"][0]["type"] = json!("chat_message"),
            400,
            "Invalid value: 'chat_message'",
            Some("invalid_value"),
        ),
        (
            "a chat-completions tool",
            |r| r["tools"] = json!([{"type": "function", "function": {"name": "get_weather"}}]),
            400,
            "Unknown parameter: 'tools[0].function'.",
            Some("unknown_parameter"),
        ),
        (
            "reasoning settings on a model without reasoning",
            |r| {
                r["model"] = json!(GPT);
                r["reasoning"] = json!({"effort": "low"});
            },
            400,
            "Unsupported parameter: 'reasoning.effort'",
            Some("unsupported_parameter"),
        ),
        (
            "a sampling temperature on a reasoning model",
            |r| r["temperature"] = json!(0.2),
            400,
            "Unsupported parameter: 'temperature' is not supported with this model.",
            Some("unsupported_parameter"),
        ),
        (
            "max_output_tokens under 16",
            |r| r["max_output_tokens"] = json!(10),
            400,
            "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got 10 instead.",
            Some("integer_below_min_value"),
        ),
    ];
    for (what, change, status, message, code) in cases {
        let mut request = resend.clone();
        change(&mut request);
        let (got, body) = post_responses(&mock, API_KEY, &request).await;
        assert_eq!(got, *status, "{what}: {body}");
        assert_eq!(
            body["error"]["type"], "invalid_request_error",
            "{what}: {body}"
        );
        let said = body["error"]["message"].as_str().unwrap();
        assert!(said.contains(message), "{what}: {said}");
        assert_eq!(body["error"]["code"].as_str(), *code, "{what}: {body}");
    }

    let (status, body) = post_responses(&mock, "sk-wrong-key", &resend).await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["error"]["code"], "invalid_api_key");
    assert!(
        !body.to_string().contains("sk-wrong-key"),
        "the key is not echoed: {body}"
    );
    // Nothing of the stateless turns was kept.
    let id = first["id"].as_str().unwrap();
    let response = http()
        .get(format!("{}/responses/{id}", mock.base_url()))
        .bearer_auth(API_KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);

    // `/responses/compact` takes the conversation only: a create's fields are unknown to it.
    let conversation = json!([{"role": "user", "content": "Hi"}]);
    for (field, value) in [
        ("stream", json!(true)),
        ("tools", weather),
        ("store", json!(false)),
    ] {
        let mut request = json!({"model": GPT, "input": conversation});
        request[field] = value;
        let response = http()
            .post(format!("{}/responses/compact", mock.base_url()))
            .bearer_auth(API_KEY)
            .json(&request)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400, "{field}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(
            body["error"]["code"], "unknown_parameter",
            "{field}: {body}"
        );
    }
}

/// A gateway in front of the mocks: `anthropic` (Messages natively), `openai` (Responses
/// natively, as api.openai.com would), `chat` (the same OpenAI mock through Chat Completions) and
/// `gemini`, and a key of project `sdk`.
struct Gateway {
    anthropic: MockProvider,
    openai: MockOpenAi,
    gateway: common::TestGateway,
    key: String,
}

async fn gateway() -> Gateway {
    let anthropic = MockProvider::anthropic().await;
    let openai = MockOpenAi::start().await;
    let gemini = MockProvider::gemini().await;
    // With auth required, as a team runs it (and so that a wrong key is refused).
    let entry = |plugin: &str, base_url: &str, key: &str| {
        Provider::at(plugin, base_url, key).timeout_ms(10_000)
    };
    let gateway = Config::builder()
        .auth_required()
        .provider(
            "anthropic",
            entry("anthropic", &anthropic.base_url(), KEY).models([CLAUDE]),
        )
        .provider(
            "openai",
            entry("openai", &openai.base_url(), API_KEY)
                .models([GPT, REASONING_GPT])
                .options("{ responses: native }"),
        )
        .provider(
            "chat",
            entry("openai", &openai.base_url(), API_KEY).models(["gpt-4o-mini"]),
        )
        .provider(
            "gemini",
            entry("gemini", &gemini.base_url(), KEY).models(["gemini-3.5-flash"]),
        )
        .start()
        .await;
    let key = gateway.api_key("sdk").await;
    Gateway {
        anthropic,
        openai,
        gateway,
        key,
    }
}

/// Asserts the ledger holds records of `dialect` for project `sdk`, each a success with a price
/// (the SDK programs' refused requests are made with other keys, so they are not among them).
async fn assert_ledger(g: &Gateway, dialect: &str) {
    // The writer flushes every 200 ms: wait until the count stops growing.
    let mut last = usize::MAX;
    let mut records = Vec::new();
    for _ in 0..50 {
        let page: Value = http()
            .post(g.gateway.url("/usage/requests"))
            .bearer_auth(&g.key)
            .json(&json!({"limit": 500}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        records = page["data"].as_array().cloned().unwrap_or_default();
        if records.len() == last && last > 0 {
            break;
        }
        last = records.len();
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert!(!records.is_empty(), "no records");
    for record in &records {
        assert_eq!(record["dialect"], dialect, "{record}");
        if record["status"] == 200 {
            assert!(record["cost"].as_f64().is_some_and(|c| c > 0.0), "{record}");
            assert!(
                record["input_tokens"].as_u64().is_some_and(|t| t > 0),
                "{record}"
            );
        }
    }
}

#[tokio::test]
async fn anthropic_python_sdk_completes_every_scenario_through_the_gateway_natively() {
    let g = gateway().await;
    let output = run_client(
        "anthropic_messages.py",
        &g.gateway.url(""),
        &g.key,
        &["--model", &format!("anthropic/{CLAUDE}")],
    )
    .await;
    assert_passed(
        &output,
        &[
            "create",
            "stream",
            "tools",
            "count_tokens",
            "thinking",
            "claude_code",
            "x_api_key",
        ],
    );
    // Claude Code's beta flags reached the upstream as sent, with the upstream's key.
    let requests = g.anthropic.requests().await;
    let beta = requests
        .iter()
        .find(|r| r.header("anthropic-beta").is_some())
        .expect("a request with anthropic-beta");
    assert_eq!(
        beta.header("anthropic-beta"),
        Some(
            "claude-code-20250219,interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14"
        )
    );
    assert!(requests.iter().all(|r| r.body["model"] == CLAUDE));
    assert_ledger(&g, "anthropic.messages").await;
}

#[tokio::test]
async fn anthropic_sdks_complete_their_turns_through_the_gateway_translated() {
    let g = gateway().await;
    let scenarios = ["create", "stream", "tools", "count_tokens", "x_api_key"];
    for model in ["chat/gpt-4o-mini", "gemini/gemini-3.5-flash"] {
        let output = run_client(
            "anthropic_messages.py",
            &g.gateway.url(""),
            &g.key,
            &["--model", model, "--only", &scenarios.join(",")],
        )
        .await;
        assert_passed(&output, &scenarios);
    }
    let output = run_client(
        "anthropic_messages.mjs",
        &g.gateway.url(""),
        &g.key,
        &["--model", "chat/gpt-4o-mini"],
    )
    .await;
    assert_passed(&output, &["create", "stream", "tools"]);
    assert!(
        g.anthropic.requests().await.is_empty(),
        "nothing went to Anthropic"
    );
    assert_ledger(&g, "anthropic.messages").await;
}

#[tokio::test]
async fn anthropic_node_sdk_completes_its_turns_through_the_gateway_natively() {
    let g = gateway().await;
    let output = run_client(
        "anthropic_messages.mjs",
        &g.gateway.url(""),
        &g.key,
        &["--model", &format!("anthropic/{CLAUDE}")],
    )
    .await;
    assert_passed(&output, &["create", "stream", "tools"]);
}

#[tokio::test]
async fn openai_python_sdk_completes_every_responses_scenario_through_the_gateway_natively() {
    let g = gateway().await;
    let scenarios = [
        "create",
        "stream",
        "function_tools",
        "chain",
        "stateless_reasoning",
        "stored",
    ];
    let output = run_client(
        "openai_responses.py",
        &g.gateway.url("/v1"),
        &g.key,
        &[
            "--model",
            &format!("openai/{GPT}"),
            "--reasoning-model",
            &format!("openai/{REASONING_GPT}"),
            "--mock",
            "--only",
            &scenarios.join(","),
        ],
    )
    .await;
    assert_passed(&output, &scenarios);
    assert!(
        g.openai
            .requests()
            .await
            .iter()
            .any(|r| r.path == "/v1/responses"),
        "the native endpoint was used"
    );
    assert_ledger(&g, "openai.responses").await;
}

#[tokio::test]
async fn openai_python_sdk_completes_its_responses_turns_through_the_gateway_translated() {
    let g = gateway().await;
    // The gateway keeps the responses, so stored responses hold translated too. (`chain` checks
    // that input usage grows turn by turn, and these mocks report a fixed usage; the translated
    // chain is tests/responses.rs's.)
    let scenarios = ["create", "stream", "function_tools", "stored"];
    for model in [
        format!("anthropic/{CLAUDE}"),
        "chat/gpt-4o-mini".to_owned(),
        "gemini/gemini-3.5-flash".to_owned(),
    ] {
        let output = run_client(
            "openai_responses.py",
            &g.gateway.url("/v1"),
            &g.key,
            &[
                "--model",
                &model,
                "--reasoning-model",
                &model,
                "--only",
                &scenarios.join(","),
            ],
        )
        .await;
        assert_passed(&output, &scenarios);
    }
    assert!(
        g.openai
            .requests()
            .await
            .iter()
            .all(|r| r.path == "/v1/chat/completions"),
        "the Responses endpoint was never used upstream"
    );
    assert_ledger(&g, "openai.responses").await;
}

/// Runs an SDK's `compact` scenario (`program`: the Python or the Node one) through `g`: a
/// compaction on `model`, then a turn that takes its output on `model` and one on `other`.
async fn compact_through(g: &Gateway, program: &str, model: &str, other: &str) {
    let output = run_client(
        program,
        &g.gateway.url("/v1"),
        &g.key,
        &[
            "--model",
            model,
            "--reasoning-model",
            model,
            "--other-model",
            other,
            "--only",
            "compact",
        ],
    )
    .await;
    assert_passed(&output, &["compact"]);
    for id in ["sdk-compact-turn-0", "sdk-compact-turn-1"] {
        let turn = g.gateway.record_of(id).await;
        assert_eq!(turn.status, 200, "{turn:?}");
        assert!(turn.cost_micros.is_some_and(|c| c > 0), "{turn:?}");
    }
}

#[tokio::test]
async fn openai_python_sdk_compacts_through_the_gateway_natively() {
    compacts_natively("openai_responses.py").await;
}

#[tokio::test]
async fn openai_node_sdk_compacts_through_the_gateway_natively() {
    compacts_natively("openai_responses.mjs").await;
}

async fn compacts_natively(program: &str) {
    let g = gateway().await;
    compact_through(
        &g,
        program,
        &format!("openai/{GPT}"),
        &format!("anthropic/{CLAUDE}"),
    )
    .await;
    let requests = g.openai.requests().await;
    let compactions: Vec<_> = requests
        .iter()
        .filter(|r| r.path == "/v1/responses/compact")
        .collect();
    // The refused compactions (nothing to compact, input not a conversation) stopped at the
    // gateway.
    assert_eq!(compactions.len(), 1, "{requests:?}");
    assert_eq!(compactions[0].body["model"], GPT);
    assert_eq!(compactions[0].body["instructions"], "You are terse.");
    // OpenAI's sealed item went back to OpenAI as it was (the strict mock checks the seal)...
    let turn = requests.iter().find(|r| r.path == "/v1/responses").unwrap();
    let items = turn.body["input"].as_array().unwrap();
    assert_eq!(items[2]["type"], "compaction", "{items:?}");
    // ...and, readable by OpenAI only, was left out of the Anthropic target's turn.
    let anthropic = g.anthropic.requests().await;
    assert_eq!(anthropic.len(), 1);
    assert!(!anthropic[0].body.to_string().contains("gAAAAAB"));
    // Recorded and metered as OpenAI counted the compaction.
    let record = g.gateway.record_of("sdk-compact").await;
    assert_eq!(record.status, 200);
    assert_eq!(record.provider.as_deref(), Some("openai"));
    assert_eq!(record.model.as_deref(), Some(GPT));
    assert_eq!(record.output_tokens, responses::compact::SUMMARY_TOKENS);
    assert!(record.input_tokens > 0, "{record:?}");
    assert!(record.cost_micros.is_some_and(|c| c > 0), "{record:?}");
}

#[tokio::test]
async fn openai_python_sdk_compacts_through_the_gateway_translated() {
    compacts_translated("openai_responses.py").await;
}

#[tokio::test]
async fn openai_node_sdk_compacts_through_the_gateway_translated() {
    compacts_translated("openai_responses.mjs").await;
}

async fn compacts_translated(program: &str) {
    let g = gateway().await;
    compact_through(
        &g,
        program,
        &format!("anthropic/{CLAUDE}"),
        &format!("openai/{GPT}"),
    )
    .await;
    // The compaction was one Messages call: the conversation, then the request for a summary.
    let anthropic = g.anthropic.requests().await;
    assert_eq!(
        anthropic.len(),
        2,
        "the compaction and the turn on Anthropic"
    );
    let summarise = &anthropic[0].body;
    assert_eq!(summarise["system"], "You are terse.", "{summarise}");
    let messages = summarise["messages"].as_array().unwrap();
    let last = messages.last().unwrap().to_string();
    assert!(last.contains("summary"), "{last}");
    // The gateway's compaction item came back as the summary (the mock's answer), read as a
    // user message on either target: OpenAI's strict mock would refuse the item itself.
    let summary_said = |text: &str| text.contains("summary") && text.contains(anthropic::TEXT);
    let turn = &anthropic[1].body.to_string();
    assert!(summary_said(turn), "{turn}");
    let openai = g.openai.requests().await;
    assert_eq!(openai.len(), 1, "{openai:?}");
    let items = openai[0].body["input"].as_array().unwrap();
    assert!(items.iter().all(|i| i["type"] != "compaction"), "{items:?}");
    assert_eq!(items[2]["role"], "user");
    assert!(summary_said(&items[2].to_string()), "{items:?}");
    // Recorded and metered at the summary call's usage.
    let record = g.gateway.record_of("sdk-compact").await;
    assert_eq!(record.status, 200);
    assert_eq!(record.provider.as_deref(), Some("anthropic"));
    assert_eq!(record.output_tokens, anthropic::OUTPUT_TOKENS);
    assert_eq!(record.cached_input_tokens, anthropic::CACHE_READ_TOKENS);
    assert_eq!(record.cache_write_tokens, anthropic::CACHE_CREATION_TOKENS);
    assert!(record.cost_micros.is_some_and(|c| c > 0), "{record:?}");
}

/// `context_management` (server-side compaction) on `responses.create`: passed on to a target
/// that serves Responses, whose compaction item the next turn sends back; a translated target
/// has no such thing, and the field goes nowhere.
#[tokio::test]
async fn server_side_compaction_reaches_a_native_target_and_is_dropped_translated() {
    let g = gateway().await;
    let create = |body: Value| {
        http()
            .post(g.gateway.url("/v1/responses"))
            .bearer_auth(&g.key)
            .json(&body)
            .send()
    };
    let management = json!([{"type": "compaction", "compact_threshold": 5}]);
    let input =
        json!([{"role": "user", "content": "My name is Ada; I live in Paris and write programs."}]);
    let response = create(json!({"model": format!("openai/{GPT}"), "input": input,
        "context_management": management}))
    .await
    .unwrap();
    assert_eq!(response.status(), 200);
    let first: Value = response.json().await.unwrap();
    assert_eq!(first["output"][0]["type"], "compaction", "{first}");
    let sent = g.openai.requests().await;
    assert_eq!(sent[0].body["context_management"], management);
    // The next turn sends the compaction back; the strict mock checks its seal.
    let mut next = first["output"].as_array().unwrap().clone();
    next.push(json!({"role": "user", "content": "Where do I live?"}));
    let response = create(json!({"model": format!("openai/{GPT}"), "input": next}))
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    assert_eq!(
        g.openai.requests().await[1].body["input"][0]["type"],
        "compaction"
    );
    // Translated: answered without it.
    let response = create(json!({"model": "chat/gpt-4o-mini", "input": input,
        "context_management": management}))
    .await
    .unwrap();
    assert_eq!(response.status(), 200);
    let answer: Value = response.json().await.unwrap();
    let output = answer["output"].as_array().unwrap();
    assert!(
        output.iter().all(|item| item["type"] != "compaction"),
        "{answer}"
    );
    let chat = g.openai.requests().await.pop().unwrap();
    assert_eq!(chat.path, "/v1/chat/completions");
    assert!(
        chat.body.get("context_management").is_none(),
        "{}",
        chat.body
    );
}
