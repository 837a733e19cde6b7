//! The answer guard: each piece of an answer's text (a choice's content, a tool call's
//! arguments) is held back only from where a value may still be beginning (`hold.rs`), and
//! never more than `window` characters behind the newest unless a value that may still be
//! growing reaches into it; what a value became is decided once it is whole. A choice's text is
//! released whole at its stop, and a private-key block is swallowed from its first line to its
//! last without being held.

use wasmgate_plugin_sdk::guard::count;
use wasmgate_plugin_sdk::{
    AnswerEvent, AnswerGuard, Finding, Stop, StreamVerdict, TextDelta, ToolCallDelta,
};

use crate::{Action, Options, Policy, Replaced, SEGMENTS_HELD, refusal, replaced_in};

const PEM_BEGIN: &str = "-----BEGIN ";
const PEM_KEY: &str = "PRIVATE KEY-----";
const PEM_END: &str = "-----END ";
/// A key block's header as [`take`] knows it (`PEM_BEGIN`, then `PEM_KEY` on the same line),
/// for the text held while one may be arriving.
pub const PEM_HEADER: &str = r"-----BEGIN [^\n]*PRIVATE KEY-----";
/// Characters kept while inside a key block, for an end line split over deltas.
const PEM_TAIL: usize = 64;

/// One piece of text being guarded.
struct Segment {
    choice: u32,
    /// The tool call it belongs to; none for the choice's content.
    call: Option<u32>,
    pending: String,
    /// Inside a private-key block: its text is dropped until its end line.
    in_key: bool,
}

pub struct Answer {
    policy: Option<Policy>,
    segments: Vec<Segment>,
    /// A reversible request's values, given back where the answer names their placeholders.
    replaced: Replaced,
}

impl AnswerGuard for Answer {
    type Options = Options;

    fn new(options: Options, request: &str) -> Self {
        let policy = Policy::new(&options).ok();
        let replaced = match &policy {
            Some(policy) if options.reversible => replaced_in(policy, request),
            _ => Replaced::default(),
        };
        Self {
            policy,
            segments: Vec::new(),
            replaced,
        }
    }

    fn push(&mut self, events: Vec<AnswerEvent>) -> StreamVerdict {
        let Some(policy) = &self.policy else {
            // Options that `validate` refused: nothing can be checked, so nothing goes.
            return StreamVerdict::Stop(refusal("misconfigured guard", Vec::new()));
        };
        let mut out = Vec::new();
        let mut findings = Vec::new();
        for event in events {
            let step = match event {
                AnswerEvent::Text(TextDelta { choice, text }) => flush_others(
                    policy,
                    &mut self.segments,
                    choice,
                    None,
                    &mut out,
                    &mut findings,
                )
                .and_then(|()| {
                    let segment = segment(&mut self.segments, choice, None);
                    segment.pending.push_str(&text);
                    let text = take(policy, segment, false, &mut findings)?;
                    if !text.is_empty() {
                        out.push(AnswerEvent::Text(TextDelta { choice, text }));
                    }
                    Ok(())
                }),
                AnswerEvent::ToolCall(call) => flush_others(
                    policy,
                    &mut self.segments,
                    call.choice,
                    Some(call.index),
                    &mut out,
                    &mut findings,
                )
                .and_then(|()| {
                    let segment = segment(&mut self.segments, call.choice, Some(call.index));
                    segment.pending.push_str(&call.arguments);
                    let arguments = take(policy, segment, false, &mut findings)?;
                    if !arguments.is_empty() || call.id.is_some() || call.name.is_some() {
                        out.push(AnswerEvent::ToolCall(ToolCallDelta { arguments, ..call }));
                    }
                    Ok(())
                }),
                AnswerEvent::Stop(Stop { choice, reason }) => {
                    flush_choice(policy, &mut self.segments, choice, &mut out, &mut findings)
                        .map(|()| out.push(AnswerEvent::Stop(Stop { choice, reason })))
                }
                usage @ AnswerEvent::Usage(_) => {
                    out.push(usage);
                    Ok(())
                }
            };
            if let Err(kind) = step {
                return StreamVerdict::Stop(refusal(&kind, findings));
            }
        }
        // More pieces held than declared: the oldest go whole.
        let limit = policy.window() * SEGMENTS_HELD as usize;
        while held(&self.segments) > limit && self.segments.len() > 1 {
            let oldest = self.segments.remove(0);
            if let Err(kind) = release(policy, oldest, &mut out, &mut findings) {
                return StreamVerdict::Stop(refusal(&kind, findings));
            }
        }
        restore(policy, &self.replaced, &mut out);
        let held = u32::try_from(held(&self.segments)).unwrap_or(u32::MAX);
        StreamVerdict::release(out, held, findings)
    }

    fn finish(&mut self) -> StreamVerdict {
        let Some(policy) = &self.policy else {
            return StreamVerdict::Stop(refusal("misconfigured guard", Vec::new()));
        };
        let mut out = Vec::new();
        let mut findings = Vec::new();
        for segment in std::mem::take(&mut self.segments) {
            if let Err(kind) = release(policy, segment, &mut out, &mut findings) {
                return StreamVerdict::Stop(refusal(&kind, findings));
            }
        }
        restore(policy, &self.replaced, &mut out);
        StreamVerdict::release(out, 0, findings)
    }
}

/// Gives the client its own values back where the answer names their placeholders.
fn restore(policy: &Policy, replaced: &Replaced, events: &mut [AnswerEvent]) {
    if replaced.is_empty() {
        return;
    }
    let swap = |text: &mut String| {
        if !text.contains('[') {
            return;
        }
        let restored = policy
            .token
            .replace_all(text, |token: &regex::Captures<'_>| {
                let token = &token[0];
                replaced.value(token).unwrap_or(token).to_owned()
            });
        *text = restored.into_owned();
    };
    for event in events {
        match event {
            AnswerEvent::Text(delta) => swap(&mut delta.text),
            AnswerEvent::ToolCall(call) => swap(&mut call.arguments),
            AnswerEvent::Usage(_) | AnswerEvent::Stop(_) => {}
        }
    }
}

fn held(segments: &[Segment]) -> usize {
    segments.iter().map(|s| s.pending.chars().count()).sum()
}

fn segment(segments: &mut Vec<Segment>, choice: u32, call: Option<u32>) -> &mut Segment {
    let at = match segments
        .iter()
        .position(|s| s.choice == choice && s.call == call)
    {
        Some(at) => at,
        None => {
            segments.push(Segment {
                choice,
                call,
                pending: String::new(),
                in_key: false,
            });
            segments.len() - 1
        }
    };
    &mut segments[at]
}

/// Another piece of the same choice starts: the choice's other pieces are whole.
fn flush_others(
    policy: &Policy,
    segments: &mut Vec<Segment>,
    choice: u32,
    call: Option<u32>,
    out: &mut Vec<AnswerEvent>,
    findings: &mut Vec<Finding>,
) -> Result<(), String> {
    let (done, kept): (Vec<Segment>, Vec<Segment>) = std::mem::take(segments)
        .into_iter()
        .partition(|s| s.choice == choice && s.call != call);
    *segments = kept;
    for segment in done {
        release(policy, segment, out, findings)?;
    }
    Ok(())
}

fn flush_choice(
    policy: &Policy,
    segments: &mut Vec<Segment>,
    choice: u32,
    out: &mut Vec<AnswerEvent>,
    findings: &mut Vec<Finding>,
) -> Result<(), String> {
    let (done, kept): (Vec<Segment>, Vec<Segment>) = std::mem::take(segments)
        .into_iter()
        .partition(|s| s.choice == choice);
    *segments = kept;
    for segment in done {
        release(policy, segment, out, findings)?;
    }
    Ok(())
}

/// Releases all a finished piece holds.
fn release(
    policy: &Policy,
    mut segment: Segment,
    out: &mut Vec<AnswerEvent>,
    findings: &mut Vec<Finding>,
) -> Result<(), String> {
    let text = take(policy, &mut segment, true, findings)?;
    if text.is_empty() {
        return Ok(());
    }
    out.push(match segment.call {
        None => AnswerEvent::Text(TextDelta {
            choice: segment.choice,
            text,
        }),
        Some(index) => AnswerEvent::ToolCall(ToolCallDelta {
            choice: segment.choice,
            index,
            id: None,
            name: None,
            arguments: text,
        }),
    });
    Ok(())
}

/// The text of `segment` that may go now (all of it when `whole`), redacted; `Err` with the kind
/// of a value to refuse.
fn take(
    policy: &Policy,
    segment: &mut Segment,
    whole: bool,
    findings: &mut Vec<Finding>,
) -> Result<String, String> {
    let mut out = String::new();
    loop {
        if segment.in_key {
            match segment.pending.find(PEM_END).and_then(|at| {
                let rest = &segment.pending[at..];
                rest.find(PEM_KEY).map(|end| at + end + PEM_KEY.len())
            }) {
                Some(end) => {
                    segment.pending.drain(..end);
                    segment.in_key = false;
                }
                None => {
                    let keep = floor(
                        &segment.pending,
                        segment.pending.len().saturating_sub(PEM_TAIL),
                    );
                    segment.pending.drain(..keep);
                    if whole {
                        segment.pending.clear();
                    }
                    return Ok(out);
                }
            }
        }
        let begin = segment.pending.find(PEM_BEGIN).and_then(|at| {
            let line = &segment.pending[at..];
            let header = line.find(PEM_KEY)?;
            // Only a key header on one line, not any later `PRIVATE KEY-----`.
            (!line[..header].contains('\n')).then_some((at, at + header + PEM_KEY.len()))
        });
        let Some((at, header_end)) = begin else {
            break;
        };
        out.push_str(&policy.redact(&segment.pending[..at], findings)?);
        count(findings, "private-key", 1);
        match policy.action("private-key") {
            Action::Refuse => return Err("private-key".to_owned()),
            Action::Mask | Action::Placeholder | Action::Off => out.push_str("[PRIVATE-KEY]"),
        }
        segment.pending.drain(..header_end);
        segment.in_key = true;
    }
    let text = &segment.pending;
    let mut cut = if whole {
        text.len()
    } else {
        // Held: from where a value (a key header, a placeholder to give back) may be
        // beginning, but no more than the window.
        let oldest = floor(text, text.len().saturating_sub(policy.window()));
        policy.open_from(text, oldest).unwrap_or(text.len())
    };
    if !whole {
        if policy.reversible {
            for token in policy.token.find_iter(text) {
                if token.start() < cut && cut < token.end() {
                    cut = token.start();
                }
            }
        }
        for found in policy.find(text) {
            // A value to refuse stops the answer as soon as it is delimited, not a window later.
            if found.end < text.len() && policy.action(&found.kind) == Action::Refuse {
                count(findings, &found.kind, 1);
                return Err(found.kind);
            }
            if found.start < cut && cut < found.end {
                cut = found.start;
            }
        }
        // Never inside a run of letters and digits, where a cut could make a value of part of
        // one.
        while cut > 0
            && text[..cut]
                .chars()
                .next_back()
                .is_some_and(char::is_alphanumeric)
            && text[cut..]
                .chars()
                .next()
                .is_some_and(char::is_alphanumeric)
        {
            cut = floor(text, cut - 1);
        }
    }
    out.push_str(&policy.redact(&text[..cut], findings)?);
    segment.pending.drain(..cut);
    Ok(out)
}

/// The char boundary at or before `at`.
fn floor(text: &str, mut at: usize) -> usize {
    while at > 0 && !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use wasmgate_plugin_sdk::Refusal;

    fn answer(options: &str) -> Answer {
        Answer::new(wasmgate_plugin_sdk::parse_options(options).unwrap(), "{}")
    }

    fn text(t: &str) -> AnswerEvent {
        AnswerEvent::Text(TextDelta {
            choice: 0,
            text: t.to_owned(),
        })
    }

    fn released(verdict: StreamVerdict) -> (String, u32) {
        let StreamVerdict::Release(release) = verdict else {
            panic!("stopped");
        };
        let text = release
            .events
            .iter()
            .map(|e| match e {
                AnswerEvent::Text(t) => t.text.clone(),
                AnswerEvent::Stop(_) => "|".to_owned(),
                AnswerEvent::ToolCall(c) => format!("<{}>", c.arguments),
                AnswerEvent::Usage(_) => String::new(),
            })
            .collect();
        (text, release.held_chars)
    }

    #[test]
    fn a_card_split_over_many_deltas_is_redacted_and_the_rest_goes_in_order() {
        let mut guard = answer(r#"{"window": 32}"#);
        let mut out = String::new();
        let deltas = [
            "Your card is 41",
            "11 11",
            "11 1111 ",
            "1111 and that is all. ",
            "Thanks for ",
            "asking about it, have a nice day and see you soon",
        ];
        for delta in deltas {
            let (t, held) = released(guard.push(vec![text(delta)]));
            assert!(held <= 32 * SEGMENTS_HELD);
            out.push_str(&t);
        }
        out.push_str(
            &released(guard.push(vec![AnswerEvent::Stop(Stop {
                choice: 0,
                reason: "stop".into(),
            })]))
            .0,
        );
        assert_eq!(
            out,
            "Your card is [CARD] and that is all. Thanks for asking about it, have a nice day and see you soon|"
        );
    }

    #[test]
    fn a_reversible_answer_gives_the_clients_values_back_across_deltas() {
        let options = wasmgate_plugin_sdk::parse_options(r#"{"reversible": true, "window": 16}"#);
        let request = r#"{"messages":[{"role":"user","content":"card 4111 1111 1111 1111"}]}"#;
        let mut guard = Answer::new(options.unwrap(), request);
        let mut out = String::new();
        for delta in [
            "Your card [CA",
            "RD_",
            "1] is noted, and [CARD_2] is not yours.",
        ] {
            out.push_str(&released(guard.push(vec![text(delta)])).0);
        }
        out.push_str(&released(guard.finish()).0);
        assert_eq!(
            out,
            "Your card 4111 1111 1111 1111 is noted, and [CARD_2] is not yours."
        );
    }

    #[test]
    fn text_far_behind_goes_before_the_end() {
        let mut guard = answer(r#"{"window": 16}"#);
        let (t, held) = released(guard.push(vec![text(&"word ".repeat(20))]));
        assert!(!t.is_empty() && held <= 16, "{t:?} {held}");
    }

    #[test]
    fn a_key_block_is_swallowed_and_a_refused_kind_stops() {
        let mut guard = answer("{}");
        let mut out = String::new();
        for delta in [
            "key: -----BEGIN RSA PRIV",
            "ATE KEY-----\nMIIE",
            "abc\n-----END RSA PRIVATE KEY----- done",
        ] {
            out.push_str(&released(guard.push(vec![text(delta)])).0);
        }
        out.push_str(&released(guard.finish()).0);
        assert_eq!(out, "key: [PRIVATE-KEY] done");

        let mut guard = answer(r#"{"kinds": {"email": "refuse"}}"#);
        let _ = guard.push(vec![text("write to bob@exa")]);
        let StreamVerdict::Stop(Refusal { findings, .. }) =
            guard.push(vec![text("mple.com please")])
        else {
            panic!("not stopped");
        };
        assert_eq!(findings[0].kind, "email");
    }

    #[test]
    fn tool_call_arguments_are_guarded_apart_from_text() {
        let mut guard = answer("{}");
        let call = |id: Option<&str>, args: &str| {
            AnswerEvent::ToolCall(ToolCallDelta {
                choice: 0,
                index: 0,
                id: id.map(str::to_owned),
                name: id.map(|_| "send".to_owned()),
                arguments: args.to_owned(),
            })
        };
        let mut out =
            released(guard.push(vec![text("Sending."), call(Some("c1"), "{\"to\":\"bob@ex")])).0;
        out.push_str(&released(guard.push(vec![call(None, "ample.com\"}")])).0);
        out.push_str(&released(guard.finish()).0);
        // What cannot be part of the address goes at once.
        assert_eq!(out, "Sending.<{\"to\":\"><[EMAIL]\"}>");
    }
}
