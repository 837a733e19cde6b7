#![allow(clippy::unwrap_used, clippy::panic)]

use super::*;
use wasmgate_plugin_sdk::{Stop, TextDelta};

fn options(json: &str) -> Options {
    let options: Options = wasmgate_plugin_sdk::parse_options(json).unwrap();
    options.check().unwrap();
    options
}

fn text(t: &str) -> AnswerEvent {
    AnswerEvent::Text(TextDelta {
        choice: 0,
        text: t.to_owned(),
    })
}

fn openai_reply(flagged: bool, violence: f64) -> ConsultReply {
    let body = json!({"id": "modr-1", "model": "omni-moderation-latest", "results": [{
        "flagged": flagged,
        "categories": {"violence": flagged, "harassment/threatening": false},
        "category_scores": {"violence": violence, "harassment/threatening": 0.01}
    }]});
    ConsultReply::Answered((200, body.to_string()))
}

const REQUEST: &str = r#"{"model":"m","messages":[{"role":"system","content":"Be kind."},{"role":"user","content":[{"type":"text","text":"hello"}]}],"tools":[{"type":"function","function":{"name":"f","description":"not sent"}}]}"#;

#[test]
fn a_request_is_asked_about_in_the_endpoints_shape_and_judged_by_thresholds() {
    let openai = options(r#"{"thresholds": {"violence": 0.4}}"#);
    let RequestVerdict::Consult(consult) = Moderation::check_request(&openai, REQUEST) else {
        panic!("asks the endpoint");
    };
    let body: Value = serde_json::from_str(&consult.body).unwrap();
    assert_eq!(
        body,
        json!({"model": "omni-moderation-latest", "input": ["Be kind.", "hello"]})
    );
    let verdict = |reply| Moderation::check_request_reply(&openai, REQUEST, "", reply);
    assert!(matches!(
        verdict(openai_reply(false, 0.1)),
        RequestVerdict::Allow(_)
    ));
    // Under the service's flag, over the threshold.
    let RequestVerdict::Refuse(refusal) = verdict(openai_reply(false, 0.5)) else {
        panic!("refused over the threshold");
    };
    assert_eq!(refusal.status, 400);
    assert_eq!(refusal.findings[0].kind, "violence");
    // A failure the entry lets through allows; an unreadable answer refuses.
    assert!(matches!(
        verdict(ConsultReply::Failed("timeout".into())),
        RequestVerdict::Allow(_)
    ));
    assert!(matches!(
        verdict(ConsultReply::Answered((200, "<html>".into()))),
        RequestVerdict::Refuse(r) if r.status == 502
    ));

    let webhook = options(
        r#"{"format": "webhook", "only_thresholds": true, "thresholds": {"self-harm": 0.8}}"#,
    );
    let RequestVerdict::Consult(consult) = Moderation::check_request(&webhook, REQUEST) else {
        panic!("asks the webhook");
    };
    assert_eq!(
        serde_json::from_str::<Value>(&consult.body).unwrap(),
        json!({"side": "request", "input": ["Be kind.", "hello"]})
    );
    let reply = |scores: Value| {
        let body = json!({"flagged": true, "categories": scores}).to_string();
        Moderation::check_request_reply(&webhook, REQUEST, "", ConsultReply::Answered((200, body)))
    };
    assert!(matches!(
        reply(json!({"self-harm": 0.5, "spam": 0.99})),
        RequestVerdict::Allow(_)
    ));
    assert!(matches!(
        reply(json!({"self-harm": 0.9})),
        RequestVerdict::Refuse(_)
    ));
}

#[test]
fn only_the_latest_characters_of_a_long_request_are_sent() {
    let request = json!({"messages": [{"role": "user", "content": "old turn"},
                                      {"role": "user", "content": "abcdef"}]})
    .to_string();
    assert_eq!(request_input(&request, 4), ["cdef"]);
    assert_eq!(request_input(&request, 8), ["rn", "abcdef"][..]);
}

#[test]
fn an_answer_is_held_in_windows_and_released_once_it_passes() {
    let mut answer = Answer::new(options(r#"{"window": 10}"#), "{}");
    let StreamVerdict::Release(release) = answer.push(vec![text("Hello ")]) else {
        panic!("less than a window is held");
    };
    assert!(release.events.is_empty());
    assert_eq!(release.held_chars, 6);
    let StreamVerdict::Consult(consult) = answer.push(vec![text("world!")]) else {
        panic!("a full window is asked about");
    };
    assert_eq!(
        serde_json::from_str::<Value>(&consult.body).unwrap()["input"],
        json!(["Hello world!"])
    );
    let StreamVerdict::Release(release) = answer.reply(openai_reply(false, 0.0)) else {
        panic!("released once it passed");
    };
    assert_eq!(release.events.len(), 2);
    assert_eq!(release.held_chars, 0);

    // The next window is asked about after the tail of the text before it: a word cut at the
    // edge ("ki" | "ll") is judged whole before its end goes.
    let StreamVerdict::Consult(consult) = answer.push(vec![text(" I will ki"), text("ll it")])
    else {
        panic!("a full window");
    };
    assert_eq!(
        serde_json::from_str::<Value>(&consult.body).unwrap()["input"],
        json!(["Hello world! I will kill it"])
    );
    assert!(matches!(
        answer.reply(openai_reply(false, 0.0)),
        StreamVerdict::Release(_)
    ));

    // A choice's end is asked about at once; a flagged window stops the answer.
    let stop = AnswerEvent::Stop(Stop {
        choice: 0,
        reason: "stop".into(),
    });
    assert!(matches!(
        answer.push(vec![text("Bad"), stop]),
        StreamVerdict::Consult(_)
    ));
    let StreamVerdict::Stop(refusal) = answer.reply(openai_reply(true, 0.9)) else {
        panic!("stopped");
    };
    assert_eq!(refusal.findings[0].kind, "violence");
    // Nothing held: the end releases at once.
    assert!(matches!(answer.finish(), StreamVerdict::Release(r) if r.events.is_empty()));
}

#[test]
fn bad_options_are_refused_with_their_key() {
    let invalid = |json: &str| {
        let options: Options = wasmgate_plugin_sdk::parse_options(json).unwrap();
        options.check().unwrap_err().key
    };
    assert_eq!(
        invalid(r#"{"thresholds": {"violence": 2}}"#).as_deref(),
        Some("thresholds.violence")
    );
    assert_eq!(
        invalid(r#"{"only_thresholds": true}"#).as_deref(),
        Some("only_thresholds")
    );
    assert_eq!(invalid(r#"{"window": 0}"#).as_deref(), Some("window"));
}
