//! The `redact` guard: secrets and personal data (e-mail addresses, phone numbers, payment
//! cards, IBANs, IP addresses, provider and cloud keys, JWTs, private-key blocks, and the
//! operator's own patterns) replaced by a typed placeholder, masked, or refused, in requests
//! before they leave and in answers as they stream back. A value split over many stream deltas
//! is still caught: the answer guard holds back only text that could still become part of a
//! value (`hold.rs`), and never more than `window` characters per piece of text (`stream.rs`).

mod detect;
mod hold;
mod stream;
#[cfg(test)]
mod stream_splits;

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;
use wasmgate_plugin_sdk::guard::{count, request_texts};
use wasmgate_plugin_sdk::{
    ConfigError, Finding, Guard, GuardInfo, Refusal, RequestVerdict, Rewrite,
};

use detect::{BUILT_IN, Recogniser};

/// What is done with one kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Replaced by `[KIND]` (e.g. `[CARD]`).
    Placeholder,
    /// Every letter and digit but the last four replaced by `*`.
    Mask,
    /// The request refused, or the answer stopped.
    Refuse,
    /// Not looked for.
    Off,
}

/// The entry's `options`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Options {
    /// What is done with each built-in kind; unnamed kinds get `default`.
    #[serde(default)]
    kinds: BTreeMap<String, Action>,
    /// What is done with kinds `kinds` does not name.
    #[serde(default = "default_action")]
    default: Action,
    /// The operator's own patterns (national identifiers, internal ids, ...).
    #[serde(default)]
    patterns: Vec<Pattern>,
    /// The most characters of an answer's text held back to catch a value split over deltas
    /// (only text that could still become part of a value is held at all).
    #[serde(default = "default_window")]
    window: u32,
    /// Reversible: the upstream sees numbered placeholders (`[CARD_1]`), and the client gets its
    /// own values back where the answer repeats them.
    #[serde(default)]
    reversible: bool,
}

/// An operator's pattern.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Pattern {
    /// The kind it reports (and the placeholder it becomes).
    name: String,
    /// A regular expression (Rust `regex` syntax).
    regex: String,
    #[serde(default = "default_action")]
    action: Action,
}

fn default_action() -> Action {
    Action::Placeholder
}

fn default_window() -> u32 {
    96
}

/// The most a window may be: the text held back is what a client waits for.
const WINDOW_MAX: u32 = 4096;
/// A numbered placeholder, as a reversible request has them.
const TOKEN: &str = r"\[[A-Z][A-Z0-9_-]*_[0-9]+\]";
/// Pieces of text (choices, tool calls) an answer guard holds at once, at most.
const SEGMENTS_HELD: u32 = 4;

/// The options compiled: recognisers with the action of each kind.
pub struct Policy {
    recognisers: Vec<(Recogniser, Action)>,
    window: usize,
    reversible: bool,
    /// A numbered placeholder, as a reversible request has them.
    token: regex::Regex,
    /// The beginnings of values (and of placeholders to give back) an answer holds back.
    tails: hold::Tails,
}

/// The values a reversible request had replaced, in order: (kind, value); `[KIND_n]` is the
/// n-th value of its kind.
#[derive(Default)]
pub struct Replaced(Vec<(String, String)>);

impl Replaced {
    /// The placeholder of `value`, numbered on its first sight.
    fn placeholder(&mut self, kind: &str, value: &str) -> String {
        let same_kind = self.0.iter().filter(|(k, _)| k == kind);
        let n = match same_kind.clone().position(|(_, v)| v == value) {
            Some(at) => at + 1,
            None => {
                let n = same_kind.count() + 1;
                self.0.push((kind.to_owned(), value.to_owned()));
                n
            }
        };
        format!("[{}_{n}]", kind.to_ascii_uppercase())
    }

    /// The value a placeholder stands for.
    pub fn value(&self, token: &str) -> Option<&str> {
        let inner = token.strip_prefix('[')?.strip_suffix(']')?;
        let (kind, n) = inner.rsplit_once('_')?;
        let n: usize = n.parse().ok()?;
        self.0
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case(kind))
            .nth(n.checked_sub(1)?)
            .map(|(_, v)| v.as_str())
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Policy {
    fn new(options: &Options) -> Result<Self, ConfigError> {
        let mut recognisers = Vec::new();
        let mut tails = hold::Tails::default();
        for name in options.kinds.keys() {
            if !BUILT_IN.iter().any(|(kind, _, _)| kind == name) {
                return Err(ConfigError::at(
                    format!("kinds.{name}"),
                    "no such kind (email, phone, card, iban, ip, openai-key, anthropic-key, aws-key, jwt, private-key)",
                ));
            }
        }
        for (i, pattern) in options.patterns.iter().enumerate() {
            if pattern.action == Action::Off {
                continue;
            }
            let valid_name = !pattern.name.is_empty()
                && pattern.name.len() <= 32
                && pattern
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            if !valid_name {
                return Err(ConfigError::at(
                    format!("patterns[{i}].name"),
                    "must be 1 to 32 letters, digits, `-` or `_`",
                ));
            }
            let recogniser = Recogniser::custom(&pattern.name, &pattern.regex)
                .map_err(|e| ConfigError::at(format!("patterns[{i}].regex"), e.to_string()))?;
            tails.add(&pattern.regex, false);
            recognisers.push((recogniser, pattern.action));
        }
        for (kind, pattern, check) in BUILT_IN {
            let action = options.kinds.get(*kind).copied().unwrap_or(options.default);
            if action == Action::Off {
                continue;
            }
            // A key block's body is any text (Unicode mode keeps the pattern to valid UTF-8).
            let build = if *kind == "private-key" {
                Recogniser::new
            } else {
                Recogniser::ascii
            };
            let recogniser = build(kind, pattern, *check)
                .map_err(|e| ConfigError::new(format!("built-in pattern {kind}: {e}")))?;
            if *kind == "private-key" {
                // A block is swallowed from its header on (`stream.rs`): the header is what
                // must not be cut.
                tails.add(stream::PEM_HEADER, true);
            } else {
                tails.add(pattern, true);
            }
            recognisers.push((recogniser, action));
        }
        if !(16..=WINDOW_MAX).contains(&options.window) {
            return Err(ConfigError::at("window", "must be between 16 and 4096"));
        }
        if options.reversible {
            tails.add(TOKEN, true);
        }
        Ok(Self {
            recognisers,
            window: options.window as usize,
            reversible: options.reversible,
            token: regex::Regex::new(TOKEN).map_err(|e| ConfigError::new(e.to_string()))?,
            tails,
        })
    }

    fn action(&self, kind: &str) -> Action {
        self.recognisers
            .iter()
            .find(|(r, _)| r.kind == kind)
            .map_or(Action::Placeholder, |(_, a)| *a)
    }

    /// `text` with what it holds replaced, and what was found; `Err` with the kind when a kind
    /// to refuse was found.
    pub fn redact(&self, text: &str, findings: &mut Vec<Finding>) -> Result<String, String> {
        self.redact_into(text, findings, None)
    }

    /// `redact`, numbering placeholders in `replaced` when given (a reversible request).
    fn redact_into(
        &self,
        text: &str,
        findings: &mut Vec<Finding>,
        mut replaced: Option<&mut Replaced>,
    ) -> Result<String, String> {
        let recognisers: Vec<&Recogniser> = self.recognisers.iter().map(|(r, _)| r).collect();
        let found = detect::find_refs(&recognisers, text);
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for f in &found {
            count(findings, &f.kind, 1);
            let action = self.action(&f.kind);
            out.push_str(&text[at..f.start]);
            match action {
                Action::Refuse => return Err(f.kind.clone()),
                Action::Mask => out.push_str(&mask(&text[f.start..f.end])),
                Action::Placeholder | Action::Off if replaced.is_some() => {
                    if let Some(replaced) = replaced.as_deref_mut() {
                        out.push_str(&replaced.placeholder(&f.kind, &text[f.start..f.end]));
                    }
                }
                Action::Placeholder | Action::Off => {
                    out.push('[');
                    out.push_str(&f.kind.to_ascii_uppercase());
                    out.push(']');
                }
            }
            at = f.end;
        }
        out.push_str(&text[at..]);
        Ok(out)
    }

    /// Matches in `text`, for the stream guard to place its cut.
    pub fn find(&self, text: &str) -> Vec<detect::Found> {
        let recognisers: Vec<&Recogniser> = self.recognisers.iter().map(|(r, _)| r).collect();
        detect::find_refs(&recognisers, text)
    }

    pub fn window(&self) -> usize {
        self.window
    }

    /// Where in `text`, at or after `from`, a value may begin that its end leaves open.
    pub fn open_from(&self, text: &str, from: usize) -> Option<usize> {
        self.tails.open_from(text, from)
    }
}

/// Every letter and digit but the last four as `*`.
fn mask(text: &str) -> String {
    let keep_from = text
        .chars()
        .filter(|c| c.is_alphanumeric())
        .count()
        .saturating_sub(4);
    let mut seen = 0;
    text.chars()
        .map(|c| {
            if !c.is_alphanumeric() {
                return c;
            }
            seen += 1;
            if seen > keep_from { c } else { '*' }
        })
        .collect()
}

/// The refusal of a request or answer that holds a kind to refuse.
pub fn refusal(kind: &str, findings: Vec<Finding>) -> Refusal {
    Refusal {
        reason: format!("the content holds a {kind}, which this gateway's policy forbids"),
        status: 400,
        findings,
    }
}

struct Redact;

impl Guard for Redact {
    type Options = Options;
    type Answer = stream::Answer;

    fn validate(options: &Options) -> Result<GuardInfo, ConfigError> {
        let policy = Policy::new(options)?;
        // The built-in patterns are compiled on first use: compile them once here, so that a
        // broken one fails the config, not a request.
        for (recogniser, _) in policy.recognisers {
            recogniser
                .compiled()
                .map_err(|e| ConfigError::new(format!("a built-in pattern: {e}")))?;
        }
        Ok(GuardInfo {
            max_hold_chars: options.window.saturating_mul(SEGMENTS_HELD),
        })
    }

    fn check_request(options: &Options, request: &str) -> RequestVerdict {
        // Request checks run on warm instances: the compiled policy is kept for the next
        // request with the same options (the options, never a request's content).
        thread_local! {
            static KEPT: std::cell::RefCell<Option<(String, std::rc::Rc<Policy>)>> =
                const { std::cell::RefCell::new(None) };
        }
        let key = format!("{options:?}");
        let kept = KEPT.with_borrow(|kept| {
            kept.as_ref()
                .filter(|(k, _)| *k == key)
                .map(|(_, p)| std::rc::Rc::clone(p))
        });
        let policy = match kept {
            Some(policy) => policy,
            None => match Policy::new(options) {
                Ok(policy) => {
                    let policy = std::rc::Rc::new(policy);
                    KEPT.with_borrow_mut(|kept| *kept = Some((key, std::rc::Rc::clone(&policy))));
                    policy
                }
                Err(e) => panic!("invalid options: {}", e.message),
            },
        };
        check_request(&policy, request)
    }
}

/// What a reversible request had replaced, found again in the client's own request.
pub fn replaced_in(policy: &Policy, request: &str) -> Replaced {
    let mut replaced = Replaced::default();
    if let Ok(mut body) = serde_json::from_str::<Value>(request) {
        request_texts(&mut body, |text| {
            let _ = policy.redact_into(text, &mut Vec::new(), Some(&mut replaced));
        });
    }
    replaced
}

fn check_request(policy: &Policy, request: &str) -> RequestVerdict {
    let Ok(mut body) = serde_json::from_str::<Value>(request) else {
        return RequestVerdict::Allow(Vec::new());
    };
    let mut findings = Vec::new();
    let mut refused = None;
    let mut replaced = Replaced::default();
    request_texts(&mut body, |text| {
        if refused.is_some() {
            return;
        }
        let numbered = policy.reversible.then_some(&mut replaced);
        match policy.redact_into(text, &mut findings, numbered) {
            Ok(redacted) => *text = redacted,
            Err(kind) => refused = Some(kind),
        }
    });
    if let Some(kind) = refused {
        return RequestVerdict::Refuse(refusal(&kind, findings));
    }
    if findings.is_empty() {
        return RequestVerdict::Allow(findings);
    }
    RequestVerdict::Rewrite(Rewrite {
        body: body.to_string(),
        findings,
    })
}

wasmgate_plugin_sdk::export_guard!(Redact);

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    pub(crate) fn policy(options: &str) -> Policy {
        Policy::new(&wasmgate_plugin_sdk::parse_options(options).unwrap()).unwrap()
    }

    #[test]
    fn kinds_are_replaced_masked_or_refused_as_configured() {
        let p = policy(r#"{"kinds": {"email": "mask", "aws-key": "refuse"}}"#);
        let mut findings = Vec::new();
        let out = p
            .redact(
                "card 4111 1111 1111 1111 from bob@example.com",
                &mut findings,
            )
            .unwrap();
        assert_eq!(out, "card [CARD] from ***@******e.com");
        assert_eq!(findings.len(), 2);
        assert_eq!(
            p.redact("AKIAIOSFODNN7EXAMPLE", &mut findings),
            Err("aws-key".to_owned())
        );
    }

    #[test]
    fn requests_are_rewritten_in_every_text_they_carry() {
        let p = policy(r#"{"patterns": [{"name": "employee", "regex": "EMP-[0-9]{6}"}]}"#);
        let request = r#"{"model":"m","messages":[{"role":"system","content":"EMP-123456"},
            {"role":"user","content":[{"type":"text","text":"mail bob@example.com"}]},
            {"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"ip\":\"10.1.2.3\"}"}}]},
            {"role":"tool","tool_call_id":"c","content":"sk-proj-abcdefghijklmnopqrstuvwx"}]}"#;
        let RequestVerdict::Rewrite(rewrite) = check_request(&p, request) else {
            panic!("not rewritten");
        };
        let body: Value = serde_json::from_str(&rewrite.body).unwrap();
        assert_eq!(body["messages"][0]["content"], "[EMPLOYEE]");
        assert_eq!(body["messages"][1]["content"][0]["text"], "mail [EMAIL]");
        assert_eq!(
            body["messages"][2]["tool_calls"][0]["function"]["arguments"],
            r#"{"ip":"[IP]"}"#
        );
        assert_eq!(body["messages"][3]["content"], "[OPENAI-KEY]");
        assert_eq!(rewrite.findings.len(), 4);
        assert!(matches!(
            check_request(&p, r#"{"messages":[{"role":"user","content":"hi"}]}"#),
            RequestVerdict::Allow(f) if f.is_empty()
        ));
    }

    #[test]
    fn a_reversible_request_gets_numbered_placeholders_found_again_from_the_original() {
        let p = policy(r#"{"reversible": true}"#);
        let request = r#"{"messages":[{"role":"user","content":"a@x.io, b@x.io, a@x.io"}]}"#;
        let RequestVerdict::Rewrite(rewrite) = check_request(&p, request) else {
            panic!("not rewritten");
        };
        assert!(
            rewrite.body.contains("[EMAIL_1], [EMAIL_2], [EMAIL_1]"),
            "{}",
            rewrite.body
        );
        let replaced = replaced_in(&p, request);
        assert_eq!(replaced.value("[EMAIL_2]"), Some("b@x.io"));
        assert_eq!(replaced.value("[EMAIL_3]"), None);
    }

    #[test]
    fn bad_options_are_named() {
        let err = Policy::new(
            &wasmgate_plugin_sdk::parse_options(r#"{"kinds": {"cards": "mask"}}"#).unwrap(),
        )
        .err()
        .unwrap();
        assert_eq!(err.key.as_deref(), Some("kinds.cards"));
        let err = Policy::new(
            &wasmgate_plugin_sdk::parse_options(r#"{"patterns": [{"name": "x", "regex": "("}]}"#)
                .unwrap(),
        )
        .err()
        .unwrap();
        assert_eq!(err.key.as_deref(), Some("patterns[0].regex"));
    }
}

#[cfg(test)]
mod timing {
    #![allow(clippy::unwrap_used)]
    #[test]
    #[ignore = "a measurement"]
    fn policy_compile_time() {
        let options = wasmgate_plugin_sdk::parse_options("{}").unwrap();
        let started = std::time::Instant::now();
        for _ in 0..20 {
            let _ = super::Policy::new(&options).unwrap();
        }
        eprintln!("Policy::new: {:?}", started.elapsed() / 20);
        // The benchmark's request: a system prompt and about 1 KiB of text without PII.
        let prompt = "lorem ipsum dolor sit amet ".repeat(33);
        let request = serde_json::json!({"model": "m", "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": prompt}]})
        .to_string();
        let options: super::Options = wasmgate_plugin_sdk::parse_options("{}").unwrap();
        let started = std::time::Instant::now();
        for _ in 0..200 {
            let _ =
                <super::Redact as wasmgate_plugin_sdk::Guard>::check_request(&options, &request);
        }
        eprintln!("check_request, 1 KiB prompt: {:?}", started.elapsed() / 200);
        let card = "My card is 4111 1111 1111 1111, thanks. ".repeat(25);
        let started = std::time::Instant::now();
        let policy = super::Policy::new(&options).unwrap();
        for _ in 0..200 {
            let _ = policy.redact(&card, &mut Vec::new());
        }
        eprintln!("redact 1 KiB with 25 cards: {:?}", started.elapsed() / 200);
        // An answer guard's policy builds the DFA of what to hold on its first push.
        let fastest = (0..20)
            .map(|_| {
                let policy = super::Policy::new(&options).unwrap();
                let started = std::time::Instant::now();
                assert_eq!(policy.open_from("word0 ", 0), None);
                started.elapsed()
            })
            .min();
        eprintln!("first hold check (fastest of 20): {fastest:?}");
    }
}
