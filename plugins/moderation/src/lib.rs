//! The `moderation` guard: asks an outside service whether text is allowed, through the host
//! (the entry's `endpoint`: the guard itself has no sockets), and refuses the request or stops
//! the answer when a category is over its threshold.
//!
//! Two shapes of endpoint (`format`):
//! - `openai`: OpenAI's `POST /v1/moderations` (and compatible services): `{"model", "input":
//!   [texts]}` in, `{"results": [{"flagged", "categories", "category_scores"}]}` out.
//! - `webhook`: the operator's own: `{"side": "request"|"answer", "input": [texts]}` in,
//!   `{"flagged": bool, "categories": {"name": score}}` out (both fields optional).
//!
//! A category named in `thresholds` is over when its score is at or above it; any other counts
//! when the service itself flags it (unless `only_thresholds`). On an answer the guard holds
//! back at most `window` characters, asks about them, and releases them once they pass, so a
//! streamed answer reaches the client in windows, never buffered whole.

mod verdict;

use serde::Deserialize;
use serde_json::{Value, json};
use wasmgate_plugin_sdk::{
    AnswerEvent, AnswerGuard, ConfigError, Consult, ConsultReply, Finding, Guard, GuardInfo,
    Refusal, RequestVerdict, StreamVerdict,
};

use verdict::Flagged;

/// The entry's `options`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Options {
    /// The endpoint's shape.
    #[serde(default)]
    format: Format,
    /// The moderation model (`openai` format only).
    #[serde(default = "default_model")]
    model: String,
    /// Per category, the score (0 to 1) at or above which it is over.
    #[serde(default)]
    thresholds: std::collections::BTreeMap<String, f64>,
    /// Only `thresholds` count, not the service's own flags.
    #[serde(default)]
    only_thresholds: bool,
    /// The reason the client is given.
    #[serde(default = "default_reason")]
    reason: String,
    /// The status a refused request gets.
    #[serde(default = "default_status")]
    status: u16,
    /// Characters of an answer held back and asked about at once.
    #[serde(default = "default_window")]
    window: u32,
    /// The most characters of a request sent to the service: its latest ones.
    #[serde(default = "default_max_input")]
    max_input_chars: u32,
}

#[derive(Debug, Default, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Format {
    #[default]
    Openai,
    Webhook,
}

fn default_model() -> String {
    "omni-moderation-latest".to_owned()
}
fn default_reason() -> String {
    "the content was flagged by this gateway's moderation".to_owned()
}
fn default_status() -> u16 {
    400
}
fn default_window() -> u32 {
    400
}
fn default_max_input() -> u32 {
    32_768
}

impl Options {
    fn check(&self) -> Result<(), ConfigError> {
        for (name, threshold) in &self.thresholds {
            if !(0.0..=1.0).contains(threshold) {
                return Err(ConfigError::at(
                    format!("thresholds.{name}"),
                    "must be between 0 and 1",
                ));
            }
        }
        if self.only_thresholds && self.thresholds.is_empty() {
            return Err(ConfigError::at(
                "only_thresholds",
                "needs at least one of `thresholds`",
            ));
        }
        if !(400..=599).contains(&self.status) {
            return Err(ConfigError::at("status", "must be between 400 and 599"));
        }
        if !(1..=100_000).contains(&self.window) {
            return Err(ConfigError::at("window", "must be between 1 and 100000"));
        }
        if !(1..=1_000_000).contains(&self.max_input_chars) {
            return Err(ConfigError::at(
                "max_input_chars",
                "must be between 1 and 1000000",
            ));
        }
        Ok(())
    }

    /// The body the endpoint is asked with.
    fn ask(&self, side: &str, input: Vec<String>) -> Consult {
        let body = match self.format {
            Format::Openai => json!({"model": self.model, "input": input}),
            Format::Webhook => json!({"side": side, "input": input}),
        };
        Consult {
            body: body.to_string(),
            context: String::new(),
        }
    }

    fn refusal(&self, flagged: &Flagged) -> Refusal {
        Refusal {
            reason: self.reason.clone(),
            status: self.status,
            findings: flagged.findings(),
        }
    }
}

struct Moderation;

impl Guard for Moderation {
    type Options = Options;
    type Answer = Answer;

    fn validate(options: &Options) -> Result<GuardInfo, ConfigError> {
        options.check()?;
        Ok(GuardInfo {
            max_hold_chars: options.window,
        })
    }

    fn check_request(options: &Options, request: &str) -> RequestVerdict {
        let input = request_input(request, options.max_input_chars as usize);
        if input.is_empty() {
            return RequestVerdict::Allow(Vec::new());
        }
        RequestVerdict::Consult(options.ask("request", input))
    }

    fn check_request_reply(
        options: &Options,
        _request: &str,
        _context: &str,
        reply: ConsultReply,
    ) -> RequestVerdict {
        match verdict::read(options, &reply) {
            Ok(Some(flagged)) => RequestVerdict::Refuse(options.refusal(&flagged)),
            Ok(None) => RequestVerdict::Allow(Vec::new()),
            Err(why) => RequestVerdict::Refuse(unreadable(&why)),
        }
    }
}

/// An answer the service's reply could not be read from: refused (closed), as a gateway error.
fn unreadable(why: &str) -> Refusal {
    Refusal {
        reason: format!("the moderation service's answer could not be read ({why})"),
        status: 502,
        findings: Vec::new(),
    }
}

/// The texts of a request's messages (their content and tool-call arguments, not the tool
/// definitions), the latest `max` characters of them.
fn request_input(request: &str, max: usize) -> Vec<String> {
    let Ok(body) = serde_json::from_str::<Value>(request) else {
        return Vec::new();
    };
    let mut texts = Vec::new();
    for message in body["messages"].as_array().into_iter().flatten() {
        match &message["content"] {
            Value::String(s) => texts.push(s.clone()),
            Value::Array(parts) => texts.extend(
                (parts.iter())
                    .filter_map(|p| p["text"].as_str())
                    .map(str::to_owned),
            ),
            _ => {}
        }
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            if let Some(args) = call["function"]["arguments"].as_str() {
                texts.push(args.to_owned());
            }
        }
    }
    texts.retain(|t| !t.trim().is_empty());
    // The latest `max` characters: earlier turns were asked about when they were new.
    let mut budget = max;
    let mut kept = Vec::new();
    for text in texts.into_iter().rev() {
        if budget == 0 {
            break;
        }
        let n = text.chars().count();
        if n <= budget {
            budget -= n;
            kept.push(text);
        } else {
            let skip = n - budget;
            kept.push(text.chars().skip(skip).collect());
            budget = 0;
        }
    }
    kept.reverse();
    kept
}

/// Characters of the text already released that go with the next window, so that a word cut
/// at a window's edge is asked about whole (its end is not released before it is judged).
const TAIL: usize = 64;

/// One answer: the events held while their text is asked about.
pub struct Answer {
    options: Option<Options>,
    held: Vec<AnswerEvent>,
    held_chars: usize,
    /// The last [`TAIL`] characters released.
    tail: String,
}

impl Answer {
    fn text_of(event: &AnswerEvent) -> Option<&str> {
        match event {
            AnswerEvent::Text(t) => Some(&t.text),
            AnswerEvent::ToolCall(c) => Some(&c.arguments),
            AnswerEvent::Usage(_) | AnswerEvent::Stop(_) => None,
        }
    }

    /// Asks about what is held (after the tail of what went before it), or lets it go when it
    /// holds no text.
    fn ask_or_release(&mut self, options: &Options) -> StreamVerdict {
        let held: String = self.held.iter().filter_map(Self::text_of).collect();
        if held.trim().is_empty() {
            return self.release_all();
        }
        let input = format!("{}{held}", self.tail);
        StreamVerdict::Consult(options.ask("answer", vec![input]))
    }

    fn release_all(&mut self) -> StreamVerdict {
        self.held_chars = 0;
        let events = std::mem::take(&mut self.held);
        self.tail.extend(events.iter().filter_map(Self::text_of));
        let extra = self.tail.chars().count().saturating_sub(TAIL);
        if let Some((cut, _)) = self.tail.char_indices().nth(extra) {
            self.tail.drain(..cut);
        }
        StreamVerdict::release(events, 0, Vec::new())
    }
}

impl AnswerGuard for Answer {
    type Options = Options;

    fn new(options: Options, _: &str) -> Self {
        Self {
            options: options.check().is_ok().then_some(options),
            held: Vec::new(),
            held_chars: 0,
            tail: String::new(),
        }
    }

    fn push(&mut self, events: Vec<AnswerEvent>) -> StreamVerdict {
        let Some(options) = self.options.take() else {
            return StreamVerdict::Stop(unreadable("the guard's options are invalid"));
        };
        let mut ends_choice = false;
        for event in events {
            self.held_chars += Self::text_of(&event).map_or(0, |t| t.chars().count());
            ends_choice |= matches!(event, AnswerEvent::Stop(_));
            self.held.push(event);
        }
        // A full window, or a choice's end (whose text the host expects released), is asked
        // about now; less waits for more.
        let verdict = if ends_choice || self.held_chars >= options.window as usize {
            self.ask_or_release(&options)
        } else {
            let held = u32::try_from(self.held_chars).unwrap_or(u32::MAX);
            StreamVerdict::release(Vec::new(), held, Vec::new())
        };
        self.options = Some(options);
        verdict
    }

    fn finish(&mut self) -> StreamVerdict {
        let Some(options) = self.options.take() else {
            return StreamVerdict::Stop(unreadable("the guard's options are invalid"));
        };
        let verdict = self.ask_or_release(&options);
        self.options = Some(options);
        verdict
    }

    fn reply(&mut self, reply: ConsultReply) -> StreamVerdict {
        let Some(options) = &self.options else {
            return StreamVerdict::Stop(unreadable("the guard's options are invalid"));
        };
        let verdict = match verdict::read(options, &reply) {
            Ok(Some(flagged)) => StreamVerdict::Stop(options.refusal(&flagged)),
            Ok(None) => return self.release_all(),
            Err(why) => StreamVerdict::Stop(unreadable(&why)),
        };
        // What was asked about never goes.
        self.held.clear();
        self.held_chars = 0;
        verdict
    }
}

/// Adds `n` of `kind` to `findings`.
fn count(findings: &mut Vec<Finding>, kind: &str) {
    wasmgate_plugin_sdk::guard::count(findings, kind, 1);
}

wasmgate_plugin_sdk::export_guard!(Moderation);

#[cfg(test)]
mod tests;
