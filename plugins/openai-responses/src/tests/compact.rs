//! `/v1/responses/compact` for a target without it: the conversation and the request for a
//! summary going out, the compacted response coming back, and its compaction item read on the
//! next turn.

use serde_json::{Value, json};
use wasmgate_plugin_sdk::{AnswerInfo, Call, Dialect, ErrorKind, Usage, compaction};

use super::encode::{completion, info};
use crate::Responses;
use crate::compact::{INSTRUCTION, ROUTE};

fn decode(body: &Value) -> Result<wasmgate_plugin_sdk::Decoded, wasmgate_plugin_sdk::Failure> {
    Responses::decode(&Call::new(ROUTE, body.to_string()))
}

fn conversation() -> Value {
    json!({
        "model": "claude-sonnet-4-5",
        "instructions": "You are terse.",
        "input": [
            {"role": "user", "content": "My name is Ada."},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hello Ada."}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "I live in Paris."}]},
        ],
        "prompt_cache_key": "session-1",
    })
}

#[test]
fn the_conversation_goes_out_followed_by_the_request_for_a_summary() {
    let decoded = decode(&conversation()).unwrap();
    assert!(!decoded.stream);
    assert_eq!(decoded.dropped, ["prompt_cache_key"]);
    let chat: Value = serde_json::from_str(&decoded.body).unwrap();
    assert_eq!(chat["model"], "claude-sonnet-4-5");
    let roles: Vec<&str> = chat["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "user", "user"]);
    assert_eq!(chat["messages"][4]["content"], INSTRUCTION);
}

#[test]
fn the_answer_is_the_user_messages_then_the_gateways_compaction_item() {
    let decoded = decode(&conversation()).unwrap();
    let info = AnswerInfo {
        route: ROUTE.to_owned(),
        ..info(&decoded.echo)
    };
    let body = completion(
        json!({"role": "assistant", "content": "Ada lives in Paris."}),
        "stop",
        None,
    );
    let usage = Usage::tokens(120, 9);
    let compacted: Value =
        serde_json::from_str(&Responses::encode(&info, &body, Some(usage)).unwrap()).unwrap();
    assert_eq!(
        compacted,
        json!({
            "id": "resp_67ccd2bed1ec", "object": "response.compaction", "created_at": 1_741_476_542,
            "output": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "My name is Ada."}]},
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "I live in Paris."}]},
                compaction::item("cmp_67ccd2bed1ec_2", "Ada lives in Paris."),
            ],
            "usage": {"input_tokens": 120, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 9,
                      "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 129},
        })
    );
    // The next turn reads the compaction item as its summary.
    let mut next = compacted["output"].as_array().unwrap().clone();
    next.push(json!({"role": "user", "content": "Where do I live?"}));
    let turn = Responses::decode(&Call::new(
        "responses",
        json!({"model": "claude-sonnet-4-5", "input": next}).to_string(),
    ))
    .unwrap();
    let chat: Value = serde_json::from_str(&turn.body).unwrap();
    assert_eq!(
        chat["messages"][2],
        json!({"role": "user", "content": compaction::text("Ada lives in Paris.")})
    );
    assert!(turn.dropped.is_empty(), "{:?}", turn.dropped);
}

#[test]
fn openais_sealed_compaction_is_dropped_when_translated() {
    let turn = Responses::decode(&Call::new(
        "responses",
        json!({"model": "m", "input": [
            {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAAAB0123"},
            {"role": "user", "content": "Hi"},
        ]})
        .to_string(),
    ))
    .unwrap();
    assert_eq!(turn.dropped, ["input[0]"]);
}

#[test]
fn a_compaction_without_a_conversation_or_a_model_is_refused() {
    for (body, param) in [
        (json!({"model": "m"}), "input"),
        (
            json!({"model": "m", "instructions": "Be brief.", "input": []}),
            "input",
        ),
        (json!({"input": "Hi"}), "model"),
        (json!({"model": "m", "input": 42}), "input"),
    ] {
        let failure = decode(&body).unwrap_err();
        assert_eq!(failure.kind, ErrorKind::InvalidRequest, "{body}");
        assert_eq!(failure.param.as_deref(), Some(param), "{body}");
    }
}

#[test]
fn an_empty_summary_is_an_upstream_failure() {
    let decoded = decode(&conversation()).unwrap();
    let info = AnswerInfo {
        route: ROUTE.to_owned(),
        ..info(&decoded.echo)
    };
    let body = completion(json!({"role": "assistant", "content": " "}), "stop", None);
    let failure = Responses::encode(&info, &body, None).unwrap_err();
    assert_eq!(failure.kind, ErrorKind::Upstream);
}
