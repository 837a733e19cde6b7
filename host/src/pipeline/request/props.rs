//! Property tests of request parsing ([`ClientRequest::parse`], every operation): hostile bytes
//! never panic and never make a large error; an accepted request forwards what it was sent, and
//! the gateway's own readings (token estimate, logged prompt) agree with a walk over the tree
//! that the parser no longer builds. Fixed seed and case count: the same cases in every run.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, RngSeed};
use serde_json::{Map, Value, json};

use super::client::ClientRequest;
use super::end_user;
use crate::clip;
use crate::error::ApiError;
use crate::plugins::Operation;
use crate::tokenizer::Tokenizer;

fn config() -> Config {
    Config {
        cases: 400,
        failure_persistence: None,
        rng_algorithm: RngAlgorithm::ChaCha,
        rng_seed: RngSeed::Fixed(20_261_124),
        ..Config::default()
    }
}

fn operation() -> impl Strategy<Value = Operation> {
    prop::sample::select(vec![
        Operation::ChatCompletions,
        Operation::Embeddings,
        Operation::ImageGenerations,
        Operation::ListModels,
    ])
}

/// Strings from short words to long runs, control characters included.
fn text(max: usize) -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z]{0,8}",
        2 => any::<String>(),
        1 => (1..max, any::<char>()).prop_map(|(n, c)| c.to_string().repeat(n)),
    ]
}

fn any_json(max_text: usize) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<u32>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        text(max_text).prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 40, 5, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::from),
            prop::collection::vec((text(12), inner), 0..5)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// A request body close to a valid one: the fields the gateway reads, each either sensible or
/// anything at all, plus arbitrary others.
fn request_object(max_text: usize) -> impl Strategy<Value = Value> {
    let message = (
        prop_oneof![3 => Just(json!("user")), 1 => Just(json!("assistant")), 1 => any_json(max_text)],
        prop_oneof![
            3 => text(max_text).prop_map(Value::from),
            1 => prop::collection::vec(
                (text(max_text), text(8)).prop_map(|(t, k)| json!({"type": k, "text": t})),
                0..3
            )
            .prop_map(Value::from),
            1 => any_json(max_text),
        ],
    )
        .prop_map(|(role, content)| json!({"role": role, "content": content}));
    let field = |strategy: BoxedStrategy<Value>| prop::option::weighted(0.7, strategy);
    (
        field(
            prop_oneof![3 => Just(json!("echo-1")), 1 => text(max_text).prop_map(Value::from)]
                .boxed(),
        ),
        field(
            prop_oneof![
                4 => prop::collection::vec(message, 1..4).prop_map(Value::from),
                1 => any_json(max_text),
            ]
            .boxed(),
        ),
        field(
            prop_oneof![3 => "[a-z ]{1,20}".prop_map(Value::from), 1 => any_json(max_text)].boxed(),
        ),
        field(
            prop_oneof![2 => Just(json!(true)), 2 => Just(json!(false)), 1 => any_json(8)].boxed(),
        ),
        field(
            prop_oneof![
                2 => Just(json!({"user": {"id": "u-1", "tags": ["a"]}, "metadata": {"k": 1}})),
                1 => any_json(max_text),
            ]
            .boxed(),
        ),
        prop::collection::vec((text(12), any_json(max_text)), 0..3),
    )
        .prop_map(|(model, messages, input, stream, extra, others)| {
            let mut body = Map::new();
            for (key, value) in others {
                body.insert(key, value);
            }
            let named = [
                ("model", model),
                ("messages", messages),
                ("input", input.clone()),
                ("prompt", input),
                ("stream", stream),
                ("extra", extra),
            ];
            for (key, value) in named {
                if let Some(value) = value {
                    body.insert(key.to_owned(), value);
                }
            }
            Value::Object(body)
        })
}

/// A valid chat request with one place (a field's value, a key, an end-user field) holding a
/// long run of one character, control characters included.
fn long_in_one_place() -> impl Strategy<Value = Vec<u8>> {
    let places = vec![
        "model", "role", "content", "key", "stream", "user", "id", "name", "tag", "meta",
    ];
    (prop::sample::select(places), 300usize..60_000, any::<char>()).prop_map(|(at, n, c)| {
        let long = c.to_string().repeat(n);
        let mut body = json!({"model": "echo-1", "messages": [{"role": "user", "content": "hi"}],
                              "extra": {"user": {"id": "u", "name": "n", "tags": ["t"]},
                                        "metadata": {"k": "v"}}});
        match at {
            "model" => body["model"] = json!(long),
            "role" => body["messages"][0]["role"] = json!(long),
            "content" => body["messages"][0]["content"] = json!(long),
            "key" => body[long.as_str()] = json!(1),
            "stream" => body["stream"] = json!(long),
            "user" => body["user"] = json!(long),
            "id" => body["extra"]["user"]["id"] = json!(long),
            "name" => body["extra"]["user"]["name"] = json!(long),
            "tag" => body["extra"]["user"]["tags"] = json!(vec![long; 1 + n % 40]),
            _ => body["extra"]["metadata"][long.as_str()] = json!(long),
        }
        serde_json::to_vec(&body).unwrap_or_default()
    })
}

/// What an accepted request hands on to the ledger, logs and metrics is bounded.
fn assert_bounded(request: &ClientRequest) {
    let printable = |s: &str| !s.chars().any(clip::unprintable);
    assert!(request.model.len() <= super::check::MODEL_MAX && printable(&request.model));
    let user = &request.user;
    for text in user.id.iter().chain(&user.name) {
        assert!(
            text.len() <= end_user::TEXT_MAX && printable(text),
            "{}",
            text.len()
        );
    }
    assert!(
        user.tags.len() <= end_user::TAGS_MAX,
        "{} tags",
        user.tags.len()
    );
    assert!(
        user.tags
            .iter()
            .all(|t| t.len() <= end_user::TAG_MAX && printable(t))
    );
    assert!(user.metadata.len() <= end_user::METADATA_MAX);
    for (key, value) in &user.metadata {
        assert!(key.len() <= end_user::METADATA_KEY_MAX && printable(key));
        assert!(value.len() <= end_user::METADATA_VALUE_MAX);
    }
}

/// The old tree walk of the prompt's texts: the oracle for the streamed count.
fn tree_tokens(value: &Value) -> u32 {
    match value {
        Value::String(s) => Tokenizer.count(s),
        Value::Array(items) => items.iter().map(tree_tokens).fold(0, u32::saturating_add),
        Value::Object(part) => part
            .get("text")
            .or_else(|| part.get("content"))
            .map_or(0, tree_tokens),
        Value::Null | Value::Bool(_) | Value::Number(_) => 0,
    }
}

/// Whatever the error, its body is small: the message and param are bounded.
fn assert_small(error: &ApiError) {
    let detail = error.detail();
    let marker = "…[cut: 18446744073709551615 bytes]".len();
    assert!(
        detail.message.len() <= clip::MESSAGE + marker,
        "{}",
        detail.message.len()
    );
    let param = detail.param.as_deref().unwrap_or("");
    assert!(param.len() <= clip::ECHO + marker, "{}", param.len());
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_bytes_parse_bounded_or_fail_small(op in operation(), bytes in prop_oneof![
        prop::collection::vec(any::<u8>(), 0..512),
        request_object(50_000).prop_map(|v| serde_json::to_vec(&v).unwrap_or_default()),
        long_in_one_place(),
    ]) {
        match ClientRequest::parse(op, &bytes) {
            Ok(request) => assert_bounded(&request),
            Err(error) => assert_small(&error),
        }
    }

    #[test]
    fn accepted_requests_forward_what_they_were_sent(op in operation(), body in request_object(200)) {
        let bytes = serde_json::to_vec(&body).unwrap_or_default();
        let Ok(mut request) = ClientRequest::parse(op, &bytes) else {
            return Ok(());
        };
        let sent = body.as_object().cloned().unwrap_or_default();
        prop_assert_eq!(Some(&Value::from(request.model.clone())), sent.get("model"));
        // The gateway's readings agree with the tree it no longer builds.
        let expected: u32 = ["messages", "input", "prompt"]
            .iter()
            .filter_map(|k| sent.get(*k))
            .map(tree_tokens)
            .fold(0, u32::saturating_add);
        prop_assert_eq!(request.estimate_input_tokens(Tokenizer), expected);
        let prompt = ["messages", "input", "prompt"].iter().find_map(|k| sent.get(*k));
        let logged: Option<Value> = serde_json::from_str(&request.prompt_json()).ok();
        prop_assert_eq!(logged.as_ref(), prompt);
        // Forwarded: every field but `extra`, in order, with the upstream's model name.
        let canonical = request.canonical("upstream-name");
        let forwarded: Map<String, Value> = serde_json::from_str(&canonical.body)
            .map_err(|e| TestCaseError::fail(format!("{e}: {}", canonical.body)))?;
        prop_assert_eq!(&forwarded["model"], "upstream-name");
        prop_assert!(!forwarded.contains_key("extra"));
        for (key, value) in &sent {
            match key.as_str() {
                "model" | "extra" => {}
                "stream_options" if request.stream => {}
                _ => prop_assert_eq!(forwarded.get(key), Some(value), "{}", key),
            }
        }
        if request.stream {
            prop_assert_eq!(&forwarded["stream_options"]["include_usage"], &Value::Bool(true));
        }
        let order: Vec<&String> = forwarded.keys().filter(|k| sent.contains_key(*k)).collect();
        let sent_order: Vec<&String> =
            sent.keys().filter(|k| k.as_str() != "extra").collect();
        prop_assert_eq!(order, sent_order);
    }
}
