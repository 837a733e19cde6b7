//! {{name}}: a wasmgate guard. Refuses requests that mention any of `words`, and stops answers
//! that do, holding back only as much text as the longest word could still be completing.

use serde::Deserialize;
use wasmgate_plugin_sdk::guard::{request_origin, request_texts};
use wasmgate_plugin_sdk::{
    AnswerEvent, AnswerGuard, ConfigError, Finding, Guard, GuardInfo, Refusal, RequestVerdict,
    StreamVerdict, TextDelta,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Options {
    words: Vec<String>,
}

fn refusal() -> Refusal {
    Refusal {
        reason: "this topic is not allowed here".to_owned(),
        status: 400,
        findings: vec![Finding { kind: "word".to_owned(), count: 1 }],
    }
}

fn mentions(options: &Options, text: &str) -> bool {
    let text = text.to_lowercase();
    options.words.iter().any(|w| text.contains(&w.to_lowercase()))
}

struct Plugin;

impl Guard for Plugin {
    type Options = Options;
    type Answer = Answer;

    fn validate(options: &Options) -> Result<GuardInfo, ConfigError> {
        if options.words.is_empty() {
            return Err(ConfigError::at("words", "name at least one word"));
        }
        let longest = options.words.iter().map(|w| w.chars().count()).max().unwrap_or(0);
        Ok(GuardInfo { max_hold_chars: u32::try_from(longest).unwrap_or(u32::MAX) })
    }

    fn check_request(options: &Options, request: &str) -> RequestVerdict {
        let Ok(mut body) = wasmgate_plugin_sdk::serde_json::from_str(request) else {
            return RequestVerdict::Allow(Vec::new());
        };
        let (mut n, mut found) = (0, None);
        request_texts(&mut body, |text| {
            if found.is_none() && mentions(options, text) {
                found = Some(n);
            }
            n += 1;
        });
        let Some(found) = found else { return RequestVerdict::Allow(Vec::new()) };
        let mut refused = refusal();
        // A body of another route (embeddings, a pass-through...) says where each text stood.
        if let Some(origin) = request_origin(&body) {
            let at = origin.at.get(found).map_or("?", String::as_str);
            refused.reason = format!("{} ({}, at {at})", refused.reason, origin.route);
        }
        RequestVerdict::Refuse(refused)
    }
}

/// One answer: the text of choice 0 not yet released (at most the longest word).
pub struct Answer {
    options: Options,
    held: String,
}

impl AnswerGuard for Answer {
    type Options = Options;

    fn new(options: Options, _request: &str) -> Self {
        Answer { options, held: String::new() }
    }

    fn push(&mut self, events: Vec<AnswerEvent>) -> StreamVerdict {
        let hold = self.options.words.iter().map(|w| w.chars().count()).max().unwrap_or(0);
        let mut out = Vec::new();
        for event in events {
            match event {
                AnswerEvent::Text(TextDelta { choice, text }) => {
                    self.held.push_str(&text);
                    if mentions(&self.options, &self.held) {
                        return StreamVerdict::Stop(refusal());
                    }
                    let keep = self.held.chars().count().min(hold.saturating_sub(1));
                    let cut = self.held.char_indices().rev().nth(keep.saturating_sub(1))
                        .map_or(self.held.len(), |(i, _)| if keep == 0 { self.held.len() } else { i });
                    let text: String = self.held.drain(..cut).collect();
                    if !text.is_empty() {
                        out.push(AnswerEvent::Text(TextDelta { choice, text }));
                    }
                }
                AnswerEvent::Stop(stop) => {
                    let text = std::mem::take(&mut self.held);
                    if !text.is_empty() {
                        out.push(AnswerEvent::Text(TextDelta { choice: stop.choice, text }));
                    }
                    out.push(AnswerEvent::Stop(stop));
                }
                other => out.push(other),
            }
        }
        let held = u32::try_from(self.held.chars().count()).unwrap_or(u32::MAX);
        StreamVerdict::release(out, held, Vec::new())
    }

    fn finish(&mut self) -> StreamVerdict {
        let text = std::mem::take(&mut self.held);
        let events = if text.is_empty() {
            Vec::new()
        } else {
            vec![AnswerEvent::Text(TextDelta { choice: 0, text })]
        };
        StreamVerdict::release(events, 0, Vec::new())
    }
}

wasmgate_plugin_sdk::export_guard!(Plugin);

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> Options {
        Options { words: vec!["falcon".to_owned()] }
    }

    #[test]
    fn requests_that_mention_a_word_are_refused() {
        let request = r#"{"messages":[{"role":"user","content":"About Falcon?"}]}"#;
        assert!(matches!(Plugin::check_request(&options(), request), RequestVerdict::Refuse(_)));
    }

    #[test]
    fn a_word_split_over_deltas_stops_the_answer() {
        let mut answer = Answer::new(options(), "{}");
        let text = |t: &str| vec![AnswerEvent::Text(TextDelta { choice: 0, text: t.to_owned() })];
        assert!(matches!(answer.push(text("the fal")), StreamVerdict::Release(_)));
        assert!(matches!(answer.push(text("con flies")), StreamVerdict::Stop(_)));
    }
}
