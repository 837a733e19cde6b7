#![allow(clippy::unwrap_used, clippy::panic)]

use super::*;
use serde_json::json;
use wasmgate_plugin_sdk::Stop;

fn options(json: &str) -> Options {
    let options: Options = wasmgate_plugin_sdk::parse_options(json).unwrap();
    options.check().unwrap();
    options
}

fn request(format: Value) -> String {
    json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "response_format": format})
        .to_string()
}

fn person() -> String {
    request(
        json!({"type": "json_schema", "json_schema": {"name": "person", "strict": true, "schema": {
        "type": "object", "required": ["name", "age"], "additionalProperties": false,
        "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}}}}}),
    )
}

fn text(t: &str) -> AnswerEvent {
    AnswerEvent::Text(TextDelta {
        choice: 0,
        text: t.to_owned(),
    })
}

fn stop() -> AnswerEvent {
    AnswerEvent::Stop(Stop {
        choice: 0,
        reason: "stop".to_owned(),
    })
}

fn released_text(verdict: StreamVerdict) -> String {
    let StreamVerdict::Release(release) = verdict else {
        panic!("released");
    };
    (release.events.iter())
        .filter_map(|e| match e {
            AnswerEvent::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_streamed_answer_is_held_until_complete_and_released_when_it_matches() {
    let mut answer = Answer::new(options("{}"), &person());
    assert_eq!(
        released_text(answer.push(vec![text("{\"name\": \"Ada\",")])),
        ""
    );
    let verdict = answer.push(vec![text(" \"age\": 36}"), stop()]);
    assert_eq!(released_text(verdict), r#"{"name": "Ada", "age": 36}"#);
}

#[test]
fn an_answer_that_does_not_match_is_stopped_or_flagged() {
    let mut answer = Answer::new(options("{}"), &person());
    let StreamVerdict::Stop(refusal) =
        answer.push(vec![text(r#"{"name": "Ada", "age": "old"}"#), stop()])
    else {
        panic!("stopped");
    };
    assert!(
        refusal.reason.contains("`type` fails at `/age`"),
        "{}",
        refusal.reason
    );
    assert!(
        !refusal.reason.contains("old"),
        "the answer's values are not quoted"
    );
    assert_eq!(refusal.status, 502);

    let mut answer = Answer::new(options(r#"{"on_mismatch": "flag"}"#), &person());
    answer.push(vec![text("not json")]);
    let StreamVerdict::Release(release) = answer.finish() else {
        panic!("flagged and released");
    };
    assert_eq!(release.findings[0].kind, "schema-invalid");
    assert_eq!(release.events.len(), 1);

    let mut answer = Answer::new(options("{}"), &request(json!({"type": "json_object"})));
    assert!(matches!(
        answer.push(vec![text("[1]"), stop()]),
        StreamVerdict::Stop(_)
    ));
}

#[test]
fn answers_that_asked_for_no_schema_pass_at_once_and_long_ones_are_stopped() {
    let mut answer = Answer::new(options("{}"), &request(Value::Null));
    assert_eq!(
        released_text(answer.push(vec![text("free text")])),
        "free text"
    );

    let mut answer = Answer::new(options(r#"{"max_chars": 8}"#), &person());
    assert!(matches!(
        answer.push(vec![text("{\"name\": \"Ada\"")]),
        StreamVerdict::Stop(_)
    ));
}

#[test]
fn a_request_whose_schema_is_not_one_is_refused() {
    let bad = request(
        json!({"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "strange"}}}),
    );
    assert!(matches!(
        Schema::check_request(&options("{}"), &bad),
        RequestVerdict::Refuse(r) if r.status == 400
    ));
    assert!(matches!(
        Schema::check_request(&options("{}"), &person()),
        RequestVerdict::Allow(_)
    ));
}
