//! `POST /v1/responses` (OpenAI's Responses API) end to end: passed through to an `openai`
//! entry that speaks it (the strict mock refuses anything the real API would), translated to an
//! Anthropic, Gemini or Chat Completions entry and back, whole and streamed; function tools;
//! responses kept by the gateway (`GET`, `input_items`, `DELETE`, project-scoped),
//! `previous_response_id` across a native and a translated turn, `store: false`; errors in
//! OpenAI's shape; one ledger record per request at its exact catalog price.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::cost::{self, Tokens};
use common::gateway::{Gateway, Upstreams, endless_catalog};
use common::mock_openai::responses::{self as mock, API_KEY};
use common::mock_openai::{self, MockOpenAi};
use common::mock_providers::{MockProvider, anthropic, gemini};
use common::sse::{self, Event};
use common::{TestGateway, http};
use serde_json::{Value, json};

const GPT: &str = "gpt-4.1-mini";
const REASONING_GPT: &str = "o4-mini";
const CHAT_GPT: &str = "gpt-4o-mini";
const CLAUDE: &str = "claude-sonnet-4-5";
const GEMINI: &str = "gemini-3.5-flash";
const ENDLESS_INPUT_PRICE: i64 = 1000;
const ENDLESS_OUTPUT_PRICE: i64 = 2000;

struct Setup {
    openai: MockOpenAi,
    anthropic: MockProvider,
    gateway: TestGateway,
}

/// `openai` speaks Responses natively (`responses: native`, as api.openai.com would); `chat` is
/// the same mock through Chat Completions (translated); `anthropic` and `gemini` are translated.
async fn setup(extra: &str) -> Setup {
    let mocks = Upstreams::start().await;
    let gateway = Gateway::builder()
        .provider(
            "openai",
            mocks
                .openai([GPT, REASONING_GPT])
                .options("{ responses: native }"),
        )
        .provider("chat", mocks.openai([CHAT_GPT, "endless"]))
        .provider("anthropic", mocks.anthropic([CLAUDE]))
        .provider("gemini", mocks.gemini([GEMINI]))
        .yaml(&endless_catalog(ENDLESS_INPUT_PRICE, ENDLESS_OUTPUT_PRICE))
        .yaml(extra)
        .start()
        .await;
    Setup {
        openai: mocks.openai,
        anthropic: mocks.anthropic,
        gateway,
    }
}

struct Answer {
    status: u16,
    headers: reqwest::header::HeaderMap,
    text: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text))
    }

    fn events(&self) -> Vec<Event> {
        let kind = self
            .headers
            .get("content-type")
            .and_then(|v| v.to_str().ok());
        assert!(
            kind.is_some_and(|v| v.starts_with("text/event-stream")),
            "a stream: {kind:?} {}",
            self.text
        );
        sse::events(&self.text)
    }
}

async fn send(request: reqwest::RequestBuilder) -> Answer {
    let response = request.send().await.unwrap();
    Answer {
        status: response.status().as_u16(),
        headers: response.headers().clone(),
        text: response.text().await.unwrap(),
    }
}

/// POSTs `body` to `/v1/responses` as request `id`, with `key` if given.
async fn create(gateway: &TestGateway, id: &str, key: Option<&str>, body: &Value) -> Answer {
    let mut request = http()
        .post(gateway.url("/v1/responses"))
        .header("x-request-id", id)
        .json(body);
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    send(request).await
}

async fn get(gateway: &TestGateway, path: &str, key: Option<&str>) -> Answer {
    let mut request = http().get(gateway.url(path));
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    send(request).await
}

/// The text of a response's `message` items.
fn output_text(response: &Value) -> String {
    response["output"]
        .as_array()
        .unwrap_or_else(|| panic!("no output: {response}"))
        .iter()
        .filter(|item| item["type"] == "message")
        .flat_map(|item| item["content"].as_array().unwrap().iter())
        .filter(|part| part["type"] == "output_text")
        .map(|part| part["text"].as_str().unwrap())
        .collect()
}

fn item<'a>(response: &'a Value, kind: &str) -> &'a Value {
    response["output"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["type"] == kind)
        .unwrap_or_else(|| panic!("no {kind} item: {response}"))
}

fn weather_tool() -> Value {
    json!({"type": "function", "name": "get_weather", "description": "The weather in a city",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                          "required": ["city"]}})
}

/// Asserts an error in OpenAI's shape with `status`, and returns its `error` object.
fn assert_error(answer: &Answer, status: u16) -> Value {
    assert_eq!(answer.status, status, "{}", answer.text);
    let body = answer.json();
    let error = body["error"].clone();
    assert!(
        error["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{body}"
    );
    assert!(error["type"].is_string(), "{body}");
    assert!(body.get("type").is_none(), "not Anthropic's shape: {body}");
    error
}

/// The record of request `id`: one `responses` record, 200, from `provider`/`model`, with
/// `tokens` at their catalog price.
async fn assert_recorded(
    gateway: &TestGateway,
    id: &str,
    provider: &str,
    model: &str,
    tokens: Tokens,
    reasoning: u64,
) {
    let record = gateway.record_of(id).await;
    assert_eq!(record.operation, "responses", "{id}: {record:?}");
    assert_eq!(record.status, 200, "{id}: {record:?}");
    assert_eq!(record.provider.as_deref(), Some(provider), "{id}");
    // An entry the catalog does not know by name is priced as its plugin's provider.
    let provider = if provider == "chat" {
        "openai"
    } else {
        provider
    };
    assert_eq!(record.model.as_deref(), Some(model), "{id}");
    assert_eq!(
        (
            record.input_tokens,
            record.output_tokens,
            record.cached_input_tokens,
            record.reasoning_tokens
        ),
        (tokens.input, tokens.output, tokens.cached, reasoning),
        "{id}: {record:?}"
    );
    assert_eq!(
        record.cost_micros,
        Some(cost::builtin(provider, model, tokens)),
        "{id}: {record:?}"
    );
    assert!(!record.estimated, "{id}: the upstream's usage");
}

/// The tokens of a Responses `usage` object, as the ledger keeps them.
pub(crate) fn tokens_of(usage: &Value) -> Tokens {
    Tokens {
        input: usage["input_tokens"].as_u64().unwrap(),
        output: usage["output_tokens"].as_u64().unwrap(),
        cached: usage["input_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap_or(0),
        written: 0,
    }
}

/// The `response.*` sequence: `response.created` first, `response.completed` last, every event
/// named by its type, `sequence_number` strictly increasing, each output item added before its
/// deltas and done after them. Returns the completed response.
fn assert_response_sequence(events: &[Event]) -> Value {
    sse::assert_named_by_type(events);
    let types = sse::types(events);
    assert_eq!(
        types.first().map(String::as_str),
        Some("response.created"),
        "{types:?}"
    );
    assert_eq!(
        types.last().map(String::as_str),
        Some("response.completed"),
        "{types:?}"
    );
    assert!(
        types.iter().all(|t| t.starts_with("response.")),
        "{types:?}"
    );
    let numbers: Vec<u64> = events
        .iter()
        .map(|e| {
            e.data["sequence_number"]
                .as_u64()
                .unwrap_or_else(|| panic!("no sequence_number: {:?}", e.data))
        })
        .collect();
    assert!(numbers.windows(2).all(|w| w[0] < w[1]), "{numbers:?}");
    let mut open: Vec<u64> = Vec::new();
    let mut done: Vec<u64> = Vec::new();
    for event in events {
        let index = event.data["output_index"].as_u64();
        match event.data["type"].as_str().unwrap() {
            "response.output_item.added" => open.push(index.unwrap()),
            "response.output_item.done" => {
                assert!(
                    open.contains(&index.unwrap()),
                    "done before added: {types:?}"
                );
                done.push(index.unwrap());
            }
            _ if index.is_some() => {
                let index = index.unwrap();
                assert!(
                    open.contains(&index) && !done.contains(&index),
                    "an event outside its item: {:?}",
                    event.data
                );
            }
            _ => {}
        }
    }
    assert_eq!(open, done, "every item added is done");
    assert!(!done.is_empty(), "no output item: {types:?}");
    let completed = events.last().unwrap().data["response"].clone();
    assert_eq!(completed["status"], "completed", "{completed}");
    completed
}

fn deltas(events: &[Event], kind: &str) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.data["type"] == kind)
        .map(|e| e.data["delta"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn native_responses_pass_through_with_the_model_rewritten() {
    let s = setup("").await;
    let answer = create(
        &s.gateway,
        "native",
        None,
        &json!({"model": format!("openai/{GPT}"), "input": "Say hello.",
                "instructions": "Be terse."}),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let response = answer.json();
    assert_eq!(response["object"], "response");
    assert_eq!(output_text(&response), mock::answer_text(1), "{response}");
    let sent = s.openai.last_request().await;
    assert_eq!(sent.path, "/v1/responses");
    assert_eq!(sent.body["model"], GPT, "the model rewritten");
    assert_eq!(sent.body["instructions"], "Be terse.");
    assert_eq!(
        sent.headers.get("authorization").unwrap(),
        &format!("Bearer {API_KEY}")
    );
    let tokens = tokens_of(&response["usage"]);
    assert!(tokens.input > 0 && tokens.output > 0, "{response}");
    assert_recorded(&s.gateway, "native", "openai", GPT, tokens, 0).await;
    let key = s.gateway.api_key("default").await;
    let shown = get(&s.gateway, "/usage/requests/native", Some(&key)).await;
    assert_eq!(
        shown.json()["dialect"],
        "openai.responses",
        "{}",
        shown.text
    );
}

#[tokio::test]
async fn a_native_stream_is_relayed_with_its_sequence_numbers() {
    let s = setup("").await;
    let answer = create(
        &s.gateway,
        "native-stream",
        None,
        &json!({"model": format!("openai/{GPT}"), "input": "Say hello.", "stream": true}),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let events = answer.events();
    let completed = assert_response_sequence(&events);
    // The mock's events, untouched: numbered from 0 without gaps.
    for (i, event) in events.iter().enumerate() {
        assert_eq!(event.data["sequence_number"], i, "{:?}", event.data);
    }
    assert_eq!(
        deltas(&events, "response.output_text.delta").concat(),
        mock::answer_text(1)
    );
    assert_eq!(output_text(&completed), mock::answer_text(1));
    assert_recorded(
        &s.gateway,
        "native-stream",
        "openai",
        GPT,
        tokens_of(&completed["usage"]),
        0,
    )
    .await;
}

#[tokio::test]
async fn a_native_reasoning_model_records_its_reasoning_tokens() {
    let s = setup("").await;
    let answer = create(
        &s.gateway,
        "reasoning",
        None,
        &json!({"model": format!("openai/{REASONING_GPT}"), "input": "Say hello.", "store": false,
                "include": ["reasoning.encrypted_content"], "reasoning": {"effort": "low"}}),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let response = answer.json();
    let reasoning = item(&response, "reasoning");
    assert!(reasoning["encrypted_content"].is_string(), "{response}");
    let usage = &response["usage"];
    assert_eq!(
        usage["output_tokens_details"]["reasoning_tokens"],
        mock::REASONING_TOKENS
    );
    assert_recorded(
        &s.gateway,
        "reasoning",
        "openai",
        REASONING_GPT,
        tokens_of(usage),
        mock::REASONING_TOKENS,
    )
    .await;
}

#[tokio::test]
async fn responses_are_translated_to_anthropic_whole_and_streamed() {
    let s = setup("").await;
    let tokens = Tokens {
        input: anthropic::INPUT_TOKENS
            + anthropic::CACHE_CREATION_TOKENS
            + anthropic::CACHE_READ_TOKENS,
        output: anthropic::OUTPUT_TOKENS,
        cached: anthropic::CACHE_READ_TOKENS,
        written: anthropic::CACHE_CREATION_TOKENS,
    };
    let body = json!({"model": format!("anthropic/{CLAUDE}"), "input": "Say hello.",
                      "instructions": "Be terse.", "max_output_tokens": 300});
    let answer = create(&s.gateway, "to-anthropic", None, &body).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let response = answer.json();
    assert_eq!(response["object"], "response", "{response}");
    assert_eq!(response["status"], "completed");
    assert!(
        response["id"].as_str().unwrap().starts_with("resp_"),
        "{response}"
    );
    assert_eq!(output_text(&response), anthropic::TEXT);
    // Responses counts cached tokens inside input_tokens.
    assert_eq!(
        response["usage"]["input_tokens"], tokens.input,
        "{response}"
    );
    assert_eq!(
        response["usage"]["input_tokens_details"]["cached_tokens"],
        tokens.cached
    );
    assert_eq!(response["usage"]["output_tokens"], tokens.output);
    let sent = s.anthropic.last_request().await.body;
    assert_eq!(sent["model"], CLAUDE);
    assert!(sent["system"].to_string().contains("Be terse."), "{sent}");
    assert_eq!(sent["max_tokens"], 300, "{sent}");
    assert_recorded(&s.gateway, "to-anthropic", "anthropic", CLAUDE, tokens, 0).await;

    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let answer = create(&s.gateway, "to-anthropic-stream", None, &streamed).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let events = answer.events();
    let completed = assert_response_sequence(&events);
    let pieces = deltas(&events, "response.output_text.delta");
    assert!(pieces.len() > 1, "{pieces:?}");
    assert_eq!(pieces.concat(), anthropic::STREAM_DELTAS.concat());
    assert_eq!(output_text(&completed), anthropic::STREAM_DELTAS.concat());
    assert_eq!(
        completed["usage"]["output_tokens"], tokens.output,
        "{completed}"
    );
    assert_recorded(
        &s.gateway,
        "to-anthropic-stream",
        "anthropic",
        CLAUDE,
        tokens,
        0,
    )
    .await;
}

#[tokio::test]
async fn responses_are_translated_to_gemini_and_to_chat_completions() {
    let s = setup("").await;
    let answer = create(
        &s.gateway,
        "to-gemini",
        None,
        &json!({"model": format!("gemini/{GEMINI}"), "input": "Tell me a story."}),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let response = answer.json();
    assert_eq!(output_text(&response), gemini::TEXT, "{response}");
    assert_recorded(
        &s.gateway,
        "to-gemini",
        "gemini",
        GEMINI,
        Tokens {
            input: gemini::PROMPT_TOKENS,
            output: gemini::CANDIDATES_TOKENS + gemini::THOUGHTS_TOKENS,
            cached: gemini::CACHED_TOKENS,
            written: 0,
        },
        gemini::THOUGHTS_TOKENS,
    )
    .await;

    // An openai entry without `responses: native` goes through Chat Completions.
    let answer = create(
        &s.gateway,
        "to-chat",
        None,
        &json!({"model": format!("chat/{CHAT_GPT}"), "input": "Say hello.", "stream": true}),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let completed = assert_response_sequence(&answer.events());
    assert_eq!(output_text(&completed), mock_openai::REPLY);
    let sent = s.openai.last_request().await;
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.body["model"], CHAT_GPT);
    assert_recorded(
        &s.gateway,
        "to-chat",
        "chat",
        CHAT_GPT,
        Tokens {
            input: mock_openai::PROMPT_TOKENS,
            output: mock_openai::COMPLETION_TOKENS,
            cached: mock_openai::CACHED_TOKENS,
            written: 0,
        },
        0,
    )
    .await
}

/// A function call's round trip on `model`: the call, then its output sent back with the whole
/// conversation (`store: false`), answered with text. Returns the call.
async fn function_round_trip(s: &Setup, model: &str, id: &str) -> Value {
    let question = json!({"role": "user", "content": "Weather in Paris?"});
    let first = create(
        &s.gateway,
        &format!("{id}-1"),
        None,
        &json!({"model": model, "input": [question], "tools": [weather_tool()], "store": false}),
    )
    .await;
    assert_eq!(first.status, 200, "{}", first.text);
    let first = first.json();
    let call = item(&first, "function_call").clone();
    assert_eq!(call["name"], "get_weather", "{first}");
    assert!(
        call["call_id"].as_str().is_some_and(|c| !c.is_empty()),
        "{call}"
    );
    let arguments: Value = serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
    assert!(
        arguments.is_object(),
        "arguments as a JSON object string: {call}"
    );
    let mut sent_back = call.clone();
    sent_back.as_object_mut().unwrap().remove("status");
    let second = create(
        &s.gateway,
        &format!("{id}-2"),
        None,
        &json!({"model": model, "tools": [weather_tool()], "store": false, "input": [
            question, sent_back,
            {"type": "function_call_output", "call_id": call["call_id"], "output": "18 degrees"}]}),
    )
    .await;
    assert_eq!(second.status, 200, "{}", second.text);
    assert!(!output_text(&second.json()).is_empty(), "{}", second.text);
    call
}

#[tokio::test]
async fn function_tools_round_trip_natively_and_translated() {
    let s = setup("").await;
    let call = function_round_trip(&s, &format!("openai/{GPT}"), "fn-native").await;
    assert_eq!(call["arguments"], mock::CALL_ARGUMENTS);

    let call = function_round_trip(&s, &format!("anthropic/{CLAUDE}"), "fn-anthropic").await;
    let expected: Value = serde_json::from_str(anthropic::TOOL_INPUT).unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(call["arguments"].as_str().unwrap()).unwrap(),
        expected,
        "the arguments kept whole"
    );
    // The mock Anthropic API took the tool in its shape and the output as a tool_result for its
    // tool_use (it refuses one that answers no call).
    let sent = s.anthropic.last_request().await.body;
    assert_eq!(sent["tools"][0]["name"], "get_weather", "{sent}");
    assert_eq!(
        sent["tools"][0]["input_schema"],
        weather_tool()["parameters"]
    );
    let last = sent["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["content"][0]["type"], "tool_result", "{sent}");
    assert_eq!(last["content"][0]["tool_use_id"], call["call_id"]);

    // Streamed and translated: the arguments arrive as deltas that add up to the done event.
    let answer = create(
        &s.gateway,
        "fn-stream",
        None,
        &json!({"model": format!("anthropic/{CLAUDE}"), "input": "Weather in Paris?",
                "tools": [weather_tool()], "stream": true}),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let events = answer.events();
    let completed = assert_response_sequence(&events);
    let pieces = deltas(&events, "response.function_call_arguments.delta");
    let done = events
        .iter()
        .find(|e| e.data["type"] == "response.function_call_arguments.done")
        .expect("function_call_arguments.done");
    assert_eq!(pieces.concat(), done.data["arguments"].as_str().unwrap());
    let streamed: Value = serde_json::from_str(&anthropic::STREAM_TOOL_INPUT.concat()).unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&pieces.concat()).unwrap(),
        streamed
    );
    assert_eq!(item(&completed, "function_call")["name"], "get_weather");
}

#[tokio::test]
async fn a_kept_response_can_be_read_listed_and_deleted_within_its_project_only() {
    let s = setup("").await;
    let acme = s.gateway.api_key("acme").await;
    let other = s.gateway.api_key("globex").await;
    for (id, model) in [
        ("kept-native", format!("openai/{GPT}")),
        ("kept-translated", format!("anthropic/{CLAUDE}")),
    ] {
        let answer = create(
            &s.gateway,
            id,
            Some(&acme),
            &json!({"model": model, "input": [{"role": "user", "content": "Remember me."}]}),
        )
        .await;
        assert_eq!(answer.status, 200, "{id}: {}", answer.text);
        let response = answer.json();
        let rid = response["id"].as_str().unwrap().to_owned();

        let read = get(&s.gateway, &format!("/v1/responses/{rid}"), Some(&acme)).await;
        assert_eq!(read.status, 200, "{id}: {}", read.text);
        assert_eq!(read.json()["id"], rid.as_str());
        assert_eq!(output_text(&read.json()), output_text(&response), "{id}");

        let items = get(
            &s.gateway,
            &format!("/v1/responses/{rid}/input_items"),
            Some(&acme),
        )
        .await;
        assert_eq!(items.status, 200, "{id}: {}", items.text);
        let items = items.json();
        assert_eq!(items["object"], "list", "{items}");
        let data = items["data"].as_array().unwrap();
        assert_eq!(data.len(), 1, "{items}");
        assert_eq!(data[0]["role"], "user");
        assert!(data[0].to_string().contains("Remember me."), "{items}");

        // Another project cannot see it, nor delete it.
        let foreign = get(&s.gateway, &format!("/v1/responses/{rid}"), Some(&other)).await;
        assert_error(&foreign, 404);
        let response = http()
            .delete(s.gateway.url(&format!("/v1/responses/{rid}")))
            .bearer_auth(&other)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 404, "{id}");

        let response = http()
            .delete(s.gateway.url(&format!("/v1/responses/{rid}")))
            .bearer_auth(&acme)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{id}");
        let deleted: Value = response.json().await.unwrap();
        assert_eq!(deleted["deleted"], true, "{deleted}");
        let gone = get(&s.gateway, &format!("/v1/responses/{rid}"), Some(&acme)).await;
        assert_error(&gone, 404);
    }
}

#[tokio::test]
async fn previous_response_id_chains_a_native_turn_to_a_translated_one_and_back() {
    let s = setup("").await;
    let first = create(
        &s.gateway,
        "chain-1",
        None,
        &json!({"model": format!("openai/{GPT}"), "input": "My name is Ada."}),
    )
    .await;
    assert_eq!(first.status, 200, "{}", first.text);
    let first = first.json();
    let first_text = output_text(&first);

    let second = create(
        &s.gateway,
        "chain-2",
        None,
        &json!({"model": format!("anthropic/{CLAUDE}"), "input": "What is my name?",
                "previous_response_id": first["id"]}),
    )
    .await;
    assert_eq!(second.status, 200, "{}", second.text);
    let second = second.json();
    assert_eq!(output_text(&second), anthropic::TEXT);
    // Anthropic saw the whole conversation: the first turn, its answer, the new question.
    let sent = s.anthropic.last_request().await.body;
    let conversation = sent["messages"].to_string();
    let messages = sent["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "{sent}");
    assert_eq!(
        messages
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["user", "assistant", "user"]
    );
    assert!(conversation.contains("My name is Ada."), "{conversation}");
    assert!(conversation.contains(&first_text), "{conversation}");
    assert!(conversation.contains("What is my name?"), "{conversation}");

    // And back to the native target, chained to the translated turn the upstream never saw.
    let third = create(
        &s.gateway,
        "chain-3",
        None,
        &json!({"model": format!("openai/{GPT}"), "input": "Thanks.",
                "previous_response_id": second["id"]}),
    )
    .await;
    assert_eq!(third.status, 200, "{}", third.text);
    // The mock's text counts the user turns it saw: all three.
    assert_eq!(output_text(&third.json()), mock::answer_text(3));
}

#[tokio::test]
async fn store_false_keeps_nothing_and_an_unknown_previous_id_is_a_400_on_that_param() {
    let s = setup("").await;
    let answer = create(
        &s.gateway,
        "unstored",
        None,
        &json!({"model": format!("anthropic/{CLAUDE}"), "input": "Forget me.", "store": false}),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let id = answer.json()["id"].as_str().unwrap().to_owned();
    let read = get(&s.gateway, &format!("/v1/responses/{id}"), None).await;
    assert_error(&read, 404);
    let before = s.anthropic.requests().await.len();
    for (model, previous) in [
        (format!("anthropic/{CLAUDE}"), id.as_str()),
        (format!("openai/{GPT}"), id.as_str()),
        (format!("anthropic/{CLAUDE}"), "resp_doesnotexist"),
    ] {
        let answer = create(
            &s.gateway,
            "chained-to-nothing",
            None,
            &json!({"model": model, "input": "Hello again.", "previous_response_id": previous}),
        )
        .await;
        let error = assert_error(&answer, 400);
        assert_eq!(error["param"], "previous_response_id", "{model}: {error}");
        assert_eq!(error["type"], "invalid_request_error", "{error}");
    }
    assert_eq!(s.anthropic.requests().await.len(), before, "refused here");
}

#[tokio::test]
async fn errors_come_in_openais_shape() {
    let s = setup("auth: { required: true }").await;
    let body = json!({"model": format!("openai/{GPT}"), "input": "Hi."});
    let missing = create(&s.gateway, "no-key", None, &body).await;
    assert_error(&missing, 401);
    let key = s.gateway.api_key("acme").await;
    let unknown = create(
        &s.gateway,
        "unknown",
        Some(&key),
        &json!({"model": "no-such-model", "input": "Hi."}),
    )
    .await;
    assert_eq!(assert_error(&unknown, 404)["code"], "model_not_found");
    let bad = send(
        http()
            .post(s.gateway.url("/v1/responses"))
            .bearer_auth(&key)
            .header("content-type", "application/json")
            .body("{\"input\": "),
    )
    .await;
    assert_error(&bad, 400);
    assert!(
        s.openai.requests().await.is_empty(),
        "nothing went upstream"
    );
}

#[tokio::test]
async fn a_stream_the_client_leaves_is_still_recorded_at_its_price() {
    let s = setup("").await;
    let mut response = http()
        .post(s.gateway.url("/v1/responses"))
        .header("x-request-id", "left")
        .json(&json!({"model": "chat/endless", "input": "Talk forever.", "stream": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut seen = String::new();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !seen.contains("response.output_text.delta") {
        assert!(Instant::now() < deadline, "no text within 5 s: {seen}");
        let chunk = response.chunk().await.unwrap().expect("the stream went on");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    drop(response);
    let deadline = Instant::now() + Duration::from_secs(5);
    while s.openai.shared.cancelled_streams.load(Ordering::SeqCst) == 0 {
        assert!(
            Instant::now() < deadline,
            "the upstream stream was never cancelled"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let record = s.gateway.record_of("left").await;
    assert_eq!(record.operation, "responses", "{record:?}");
    assert_eq!(record.model.as_deref(), Some("endless"));
    assert!(
        record.input_tokens > 0 && record.output_tokens > 0,
        "{record:?}"
    );
    let expected = record.input_tokens as i64 * ENDLESS_INPUT_PRICE
        + record.output_tokens as i64 * ENDLESS_OUTPUT_PRICE;
    assert_eq!(record.cost_micros, Some(expected), "{record:?}");
}

#[tokio::test]
async fn a_chained_response_names_its_previous_response_natively_and_translated() {
    let s = setup("").await;
    for model in [format!("openai/{GPT}"), format!("anthropic/{CLAUDE}")] {
        let first = create(
            &s.gateway,
            "link-1",
            None,
            &json!({"model": model, "input": "Hi."}),
        )
        .await;
        assert_eq!(first.status, 200, "{model}: {}", first.text);
        let first_id = first.json()["id"].clone();
        let body = json!({"model": model, "input": "Again.", "previous_response_id": first_id});
        let second = create(&s.gateway, "link-2", None, &body).await;
        assert_eq!(second.status, 200, "{model}: {}", second.text);
        // As OpenAI answers it (and its SDK's `response.previous_response_id` reads it).
        assert_eq!(
            second.json()["previous_response_id"],
            first_id,
            "{model}: {}",
            second.text
        );
        let mut streamed = body.clone();
        streamed["stream"] = json!(true);
        let answer = create(&s.gateway, "link-3", None, &streamed).await;
        let completed = assert_response_sequence(&answer.events());
        assert_eq!(
            completed["previous_response_id"], first_id,
            "{model}: {completed}"
        );
    }
}

#[tokio::test]
async fn input_items_are_listed_in_the_long_form_with_ids() {
    let s = setup("").await;
    let answer = create(
        &s.gateway,
        "items",
        None,
        &json!({"model": format!("anthropic/{CLAUDE}"),
                "input": [{"role": "user", "content": "First question."}]}),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let id = answer.json()["id"].as_str().unwrap().to_owned();
    let items = get(&s.gateway, &format!("/v1/responses/{id}/input_items"), None).await;
    assert_eq!(items.status, 200, "{}", items.text);
    let item = &items.json()["data"][0];
    // As OpenAI lists them (and its SDK reads `item.content[0].text`).
    assert_eq!(item["type"], "message", "{item}");
    assert!(item["id"].is_string(), "{item}");
    assert_eq!(
        item["content"],
        json!([{"type": "input_text", "text": "First question."}]),
        "{item}"
    );
}

/// `POST /v1/responses/input_tokens` (issue 21): OpenAI's own count for an entry that speaks
/// Responses (the strict mock counts, and refuses fields the endpoint does not take), the
/// gateway's estimate for one that does not; the answer says which, in OpenAI's
/// `response.input_tokens` shape, and no count is recorded.
#[tokio::test]
async fn input_tokens_are_counted_by_openai_natively_and_estimated_otherwise() {
    let s = setup("").await;
    let body = |model: &str| {
        json!({"model": model, "input": "How many tokens is this sentence?",
               "instructions": "Count carefully."})
    };
    let count = |model: String, id: &'static str| {
        let request = http()
            .post(s.gateway.url("/v1/responses/input_tokens"))
            .header("x-request-id", id)
            .json(&body(&model));
        send(request)
    };
    let native = count(format!("openai/{GPT}"), "count-native").await;
    assert_eq!(native.status, 200, "{}", native.text);
    assert_eq!(native.headers["x-wasmgate-count"], "upstream");
    let counted = native.json();
    assert_eq!(counted["object"], "response.input_tokens", "{counted}");
    // The mock counts a token per four characters of `input` and `instructions`.
    assert_eq!(counted["input_tokens"], 9 + 4, "{counted}");
    let sent = s.openai.last_request().await;
    assert_eq!(sent.path, "/v1/responses/input_tokens");
    assert_eq!(sent.body["model"], GPT, "the model rewritten");

    let estimated = count(format!("chat/{CHAT_GPT}"), "count-estimate").await;
    assert_eq!(estimated.status, 200, "{}", estimated.text);
    assert_eq!(estimated.headers["x-wasmgate-count"], "estimate");
    let counted = estimated.json();
    assert_eq!(counted["object"], "response.input_tokens");
    assert!(counted["input_tokens"].as_u64().unwrap() > 5, "{counted}");

    tokio::time::sleep(Duration::from_millis(400)).await;
    let store = s.gateway.state.ledger.store();
    for id in ["count-native", "count-estimate"] {
        let store = store.clone();
        let found = tokio::task::spawn_blocking(move || store.record(id))
            .await
            .unwrap()
            .unwrap();
        assert!(found.is_none(), "a count was recorded: {found:?}");
    }
}
