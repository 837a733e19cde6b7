//! The answer guard against the ways a value can be split over deltas: for each kind, its text
//! cut in two at every place, in three at every pair of places, and into pieces of 1 to 7
//! characters. Whatever the cuts, the client must get exactly what redacting the whole text
//! gives, so no piece of a value goes out unredacted; and text that cannot be part of a value
//! goes out in the push that brought it.

#![allow(clippy::unwrap_used)]

use wasmgate_plugin_sdk::{AnswerEvent, AnswerGuard, Stop, StreamVerdict, TextDelta};

use crate::stream::Answer;

/// A text of each kind (and the options it is redacted under), with prose around the value.
const CASES: &[(&str, &str)] = &[
    ("{}", "Write to bob.smith@example.co.uk today."),
    ("{}", "Call +44 20 7946 0958 or (555) 123-4567 now."),
    ("{}", "Card 4111 1111 1111 1111 and 5500-0000-0000-0004 ok"),
    ("{}", "Pay DE89 3704 0044 0532 0130 00 soon"),
    ("{}", "Hosts 10.0.0.12 and 2001:db8::1 are up"),
    ("{}", "Key sk-proj-abcdefghijklmnopqrstuvwx here"),
    ("{}", "Key sk-ant-api03-abcdefghijklmnopqrstu."),
    ("{}", "Id AKIAIOSFODNN7EXAMPLE done"),
    (
        "{}",
        "Token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abcdefghijklmnop end",
    ),
    (
        "{}",
        "key: -----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY----- done",
    ),
    (
        r#"{"patterns": [{"name": "employee", "regex": "EMP-[0-9]{6}"}]}"#,
        "Ask EMP-123456 today",
    ),
    (
        r#"{"default": "mask"}"#,
        "Card 4111 1111 1111 1111, mail a@b.io",
    ),
];

fn guard(options: &str) -> Answer {
    Answer::new(wasmgate_plugin_sdk::parse_options(options).unwrap(), "{}")
}

fn text_of(verdict: StreamVerdict) -> String {
    let StreamVerdict::Release(release) = verdict else {
        panic!("stopped");
    };
    release
        .events
        .iter()
        .filter_map(|e| match e {
            AnswerEvent::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect()
}

fn delta(text: &str) -> AnswerEvent {
    AnswerEvent::Text(TextDelta {
        choice: 0,
        text: text.to_owned(),
    })
}

/// What the client gets when `pieces` arrive one delta each, then the choice's stop.
fn streamed(options: &str, pieces: &[&str]) -> String {
    let mut guard = guard(options);
    let mut out: String = pieces
        .iter()
        .map(|p| text_of(guard.push(vec![delta(p)])))
        .collect();
    out.push_str(&text_of(guard.push(vec![AnswerEvent::Stop(Stop {
        choice: 0,
        reason: "stop".into(),
    })])));
    out
}

/// What the client gets when the text arrives whole.
fn whole(options: &str, text: &str) -> String {
    streamed(options, &[text])
}

/// The char boundaries of `text` strictly inside it.
fn cuts(text: &str) -> Vec<usize> {
    text.char_indices().map(|(at, _)| at).skip(1).collect()
}

#[test]
fn the_whole_text_is_redacted_as_the_plain_redaction_is() {
    for (options, text) in CASES {
        let policy = crate::tests::policy(options);
        assert_eq!(
            whole(options, text),
            policy.redact(text, &mut Vec::new()).unwrap(),
            "{text:?}"
        );
    }
}

#[test]
fn no_cut_in_two_or_three_leaks_a_value() {
    for (options, text) in CASES {
        let expected = whole(options, text);
        assert_ne!(&expected, text, "the case holds a value");
        let cuts = cuts(text);
        for (i, &a) in cuts.iter().enumerate() {
            let got = streamed(options, &[&text[..a], &text[a..]]);
            assert_eq!(got, expected, "{text:?} cut at {a}");
            // Three pieces: every fifth place after `a` (every one would take minutes in a
            // debug build; the single cuts and the small pieces cover the rest).
            for &b in cuts[i + 1..].iter().step_by(5) {
                let got = streamed(options, &[&text[..a], &text[a..b], &text[b..]]);
                assert_eq!(got, expected, "{text:?} cut at {a} and {b}");
            }
        }
    }
}

#[test]
fn no_run_of_small_pieces_leaks_a_value() {
    for (options, text) in CASES {
        let expected = whole(options, text);
        let chars: Vec<char> = text.chars().collect();
        for size in 1..=7 {
            let pieces: Vec<String> = chars.chunks(size).map(|c| c.iter().collect()).collect();
            let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
            assert_eq!(
                streamed(options, &pieces),
                expected,
                "{text:?} in pieces of {size}"
            );
        }
    }
}

#[test]
fn plain_text_goes_in_the_push_that_brings_it() {
    let mut guard = guard("{}");
    let words = "The quick brown fox jumps over the lazy dog, twice. word0 word1 word2 ";
    for word in words.split_inclusive(' ') {
        let StreamVerdict::Release(release) = guard.push(vec![delta(word)]) else {
            panic!("stopped");
        };
        assert_eq!(release.held_chars, 0, "{word:?} held");
        assert_eq!(text_of(StreamVerdict::Release(release)), word);
    }
}

#[test]
fn only_what_may_still_be_a_value_is_held() {
    let mut guard = guard("{}");
    // A run of digits may become a card number; the words before it go.
    assert_eq!(
        text_of(guard.push(vec![delta("My card is 4111 ")])),
        "My card is "
    );
    assert_eq!(text_of(guard.push(vec![delta("1111 1111 1111")])), "");
    assert_eq!(text_of(guard.push(vec![delta(", thanks")])), "[CARD], ");
    // A word may become the start of an address until a space ends it.
    assert_eq!(text_of(guard.push(vec![delta(" ask bob")])), "thanks ask ");
    assert_eq!(text_of(guard.push(vec![delta(" today")])), "bob ");
    assert_eq!(text_of(guard.push(vec![delta(" sk")])), "today ");
    assert_eq!(
        text_of(guard.push(vec![delta("-is a prefix, ")])),
        "sk-is a prefix, "
    );
}
