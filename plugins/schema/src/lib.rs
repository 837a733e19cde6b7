//! The `schema` guard: an answer the client asked for as JSON with a schema (Chat's
//! `response_format` `json_schema`, which the Responses API's `text.format` and Gemini's
//! `responseSchema`/`responseJsonSchema` become in the canonical request) is validated
//! against that schema; `json_object` asks only for a JSON object.
//!
//! A JSON answer cannot be judged before it is complete, so each choice's text is held until
//! the choice ends, up to `max_chars` (an answer longer than that is stopped, never released
//! unchecked); tool calls, usage and every answer that asked for no schema pass at once. On
//! the request, a schema that is not a valid JSON Schema is refused (400).

use serde::Deserialize;
use serde_json::Value;
use wasmgate_plugin_sdk::{
    AnswerEvent, AnswerGuard, ConfigError, Finding, Guard, GuardInfo, Refusal, RequestVerdict,
    StreamVerdict, TextDelta,
};

/// The entry's `options`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Options {
    /// What an answer that does not match means: `stop` (ends it with an error) or `flag`
    /// (lets it go, recorded as `schema-invalid`).
    #[serde(default)]
    on_mismatch: OnMismatch,
    /// The status a stopped whole answer gets.
    #[serde(default = "default_status")]
    status: u16,
    /// The most text held per answer while it is completed.
    #[serde(default = "default_max_chars")]
    max_chars: u32,
}

#[derive(Debug, Default, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum OnMismatch {
    #[default]
    Stop,
    Flag,
}

fn default_status() -> u16 {
    502
}
fn default_max_chars() -> u32 {
    65_536
}

impl Options {
    fn check(&self) -> Result<(), ConfigError> {
        if !(400..=599).contains(&self.status) {
            return Err(ConfigError::at("status", "must be between 400 and 599"));
        }
        if !(1..=4_000_000).contains(&self.max_chars) {
            return Err(ConfigError::at(
                "max_chars",
                "must be between 1 and 4000000",
            ));
        }
        Ok(())
    }
}

/// What the request asked the answer to be.
enum Wanted {
    /// Nothing: the answer passes.
    Anything,
    /// A JSON object.
    Object,
    /// JSON valid against this schema.
    Schema(Box<jsonschema::Validator>),
}

/// What the request asks for, or why its schema is not one.
fn wanted(request: &str) -> Result<Wanted, String> {
    let Ok(body) = serde_json::from_str::<Value>(request) else {
        return Ok(Wanted::Anything);
    };
    let format = &body["response_format"];
    match format["type"].as_str() {
        Some("json_object") => Ok(Wanted::Object),
        Some("json_schema") => {
            let schema = &format["json_schema"]["schema"];
            if schema.is_null() {
                return Ok(Wanted::Object);
            }
            jsonschema::validator_for(schema)
                .map(|v| Wanted::Schema(Box::new(v)))
                .map_err(|e| clip(&e.to_string(), 200))
        }
        _ => Ok(Wanted::Anything),
    }
}

fn clip(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

struct Schema;

impl Guard for Schema {
    type Options = Options;
    type Answer = Answer;

    fn validate(options: &Options) -> Result<GuardInfo, ConfigError> {
        options.check()?;
        Ok(GuardInfo {
            max_hold_chars: options.max_chars,
        })
    }

    fn check_request(_: &Options, request: &str) -> RequestVerdict {
        match wanted(request) {
            Ok(_) => RequestVerdict::Allow(Vec::new()),
            Err(why) => RequestVerdict::Refuse(Refusal {
                reason: format!(
                    "response_format.json_schema.schema is not a valid JSON Schema: {why}"
                ),
                status: 400,
                findings: finding("schema-unusable"),
            }),
        }
    }
}

fn finding(kind: &str) -> Vec<Finding> {
    vec![Finding {
        kind: kind.to_owned(),
        count: 1,
    }]
}

/// One answer: each choice's text, held until the choice ends.
pub struct Answer {
    options: Options,
    wanted: Wanted,
    held: Vec<(u32, String)>,
}

impl Answer {
    fn held_chars(&self) -> u32 {
        let n: usize = self.held.iter().map(|(_, t)| t.chars().count()).sum();
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    /// Why `text` is not the answer asked for, if it is not: the failing keyword and where.
    fn mismatch(&self, text: &str) -> Option<String> {
        let Ok(value) = serde_json::from_str::<Value>(text) else {
            return Some("it is not JSON".to_owned());
        };
        match &self.wanted {
            Wanted::Anything => None,
            Wanted::Object => (!value.is_object()).then(|| "it is not a JSON object".to_owned()),
            Wanted::Schema(validator) => validator.validate(&value).err().map(|e| {
                format!(
                    "`{}` fails at `{}`",
                    e.kind().keyword(),
                    clip(e.instance_path().as_str(), 64)
                )
            }),
        }
    }

    fn stop(&self, why: &str) -> StreamVerdict {
        StreamVerdict::Stop(Refusal {
            reason: format!(
                "the answer does not match the JSON schema the request asked for: {why}"
            ),
            status: self.options.status,
            findings: finding("schema-invalid"),
        })
    }

    /// Ends `choice`: its text checked and, if it may go, released.
    fn end(
        &mut self,
        choice: u32,
        out: &mut Vec<AnswerEvent>,
        findings: &mut Vec<Finding>,
    ) -> Result<(), StreamVerdict> {
        let Some(at) = self.held.iter().position(|(c, _)| *c == choice) else {
            return Ok(());
        };
        let (choice, text) = self.held.remove(at);
        if let Some(why) = self.mismatch(&text) {
            if self.options.on_mismatch == OnMismatch::Stop {
                return Err(self.stop(&why));
            }
            wasmgate_plugin_sdk::guard::count(findings, "schema-invalid", 1);
        }
        if !text.is_empty() {
            out.push(AnswerEvent::Text(TextDelta { choice, text }));
        }
        Ok(())
    }
}

impl AnswerGuard for Answer {
    type Options = Options;

    fn new(options: Options, request: &str) -> Self {
        Self {
            options,
            // An unusable schema was refused with the request; here it asks for nothing more
            // than an object.
            wanted: wanted(request).unwrap_or(Wanted::Object),
            held: Vec::new(),
        }
    }

    fn push(&mut self, events: Vec<AnswerEvent>) -> StreamVerdict {
        if matches!(self.wanted, Wanted::Anything) {
            return StreamVerdict::release(events, 0, Vec::new());
        }
        let mut out = Vec::new();
        let mut findings = Vec::new();
        for event in events {
            match event {
                AnswerEvent::Text(TextDelta { choice, text }) => {
                    match self.held.iter_mut().find(|(c, _)| *c == choice) {
                        Some((_, held)) => held.push_str(&text),
                        None => self.held.push((choice, text)),
                    }
                    if self.held_chars() > self.options.max_chars {
                        return self.stop("it is longer than the guard holds to check");
                    }
                }
                AnswerEvent::Stop(stop) => {
                    if let Err(stopped) = self.end(stop.choice, &mut out, &mut findings) {
                        return stopped;
                    }
                    out.push(AnswerEvent::Stop(stop));
                }
                other @ (AnswerEvent::ToolCall(_) | AnswerEvent::Usage(_)) => out.push(other),
            }
        }
        StreamVerdict::release(out, self.held_chars(), findings)
    }

    fn finish(&mut self) -> StreamVerdict {
        let mut out = Vec::new();
        let mut findings = Vec::new();
        let choices: Vec<u32> = self.held.iter().map(|(c, _)| *c).collect();
        for choice in choices {
            if let Err(stopped) = self.end(choice, &mut out, &mut findings) {
                return stopped;
            }
        }
        StreamVerdict::release(out, 0, findings)
    }
}

wasmgate_plugin_sdk::export_guard!(Schema);

#[cfg(test)]
mod tests;
