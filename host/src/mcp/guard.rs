//! Guards on tool calls: the config's guards (the same plugins that check model traffic) see a
//! tool call's arguments before it leaves, and its result before it reaches the client.
//!
//! A guard sees one form, Chat Completions JSON, so a call is shown to it as a conversation: the
//! arguments as an assistant's tool call (guards whose `apply` includes `request`), the result's
//! texts as tool messages, one per text block (guards whose `apply` includes `answer`). A guard
//! may refuse either (the call fails with its reason) or rewrite it (redacted arguments go
//! upstream; redacted texts go to the client). A guard applies to a call when its scope does,
//! with `mcp/<server>` as the model. Verdicts (guard, side, action, counts by kind, never the
//! matched text) go into the call's usage record and the guard metrics.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use super::error::McpError;
use crate::guards::{Guard, GuardError, Guards, Who};
use crate::plugins::{Finding, RequestVerdict};

/// Kinds one verdict keeps at most, and bytes of a kind's name.
const KINDS_MAX: usize = 16;
const KIND_MAX: usize = 32;

/// The verdicts on one call, for its record.
#[derive(Default)]
pub struct Verdicts {
    list: Vec<Verdict>,
}

/// One guard's verdict on one side of a call.
struct Verdict {
    guard: Arc<str>,
    side: &'static str,
    action: &'static str,
    /// Findings by kind (never the matched text).
    counts: BTreeMap<String, u64>,
}

impl Verdicts {
    fn push(
        &mut self,
        guard: &Guard,
        side: &'static str,
        action: &'static str,
        findings: &[Finding],
    ) {
        let action = match (guard.mode, action) {
            (crate::config::guards::GuardMode::Enforce, a) => a,
            (crate::config::guards::GuardMode::Monitor, "allow") => "monitor_allow",
            (crate::config::guards::GuardMode::Monitor, "rewrite") => "monitor_rewrite",
            (crate::config::guards::GuardMode::Monitor, "refuse") => "monitor_refuse",
            (crate::config::guards::GuardMode::Monitor, _) => "monitor_error",
        };
        let mut counts = BTreeMap::new();
        for finding in findings.iter().take(KINDS_MAX) {
            let kind: String = finding
                .kind
                .chars()
                .filter(|c| !c.is_control())
                .take(KIND_MAX)
                .collect();
            *counts.entry(kind).or_default() += u64::from(finding.count);
        }
        self.list.push(Verdict {
            guard: Arc::clone(&guard.name),
            side,
            action,
            counts,
        });
    }

    /// The verdicts as a record keeps them (JSON), counted in `metrics`; `None` without any.
    pub fn summary(self, metrics: &crate::telemetry::Metrics) -> Option<String> {
        if self.list.is_empty() {
            return None;
        }
        let list: Vec<Value> = self
            .list
            .into_iter()
            .map(|v| {
                metrics.guard_verdicts.inc([&v.guard, v.action], 1);
                json!({"guard": &*v.guard, "side": v.side, "action": v.action, "counts": v.counts})
            })
            .collect();
        Some(Value::Array(list).to_string())
    }
}

/// The guards that apply to a call to `server` by `who`.
pub fn applying(guards: &Guards, project: &str, key_id: Option<&str>, server: &str) -> Vec<usize> {
    let model = format!("mcp/{server}");
    guards
        .applying(&Who {
            project,
            key_id,
            model: &model,
            // Guards a key names apply to its model requests; MCP calls take the config's scopes.
            named: &[],
        })
        .unwrap_or_default()
}

/// Runs the request-side guards on a call's `arguments` (a JSON object, as text); returns the
/// arguments to send (rewritten or not).
pub async fn arguments(
    guards: &Guards,
    applying: &[usize],
    server: &str,
    tool: &str,
    mut arguments: String,
    verdicts: &mut Verdicts,
) -> Result<String, McpError> {
    for guard in applying.iter().filter_map(|i| guards.get(*i)) {
        if !guard.apply.request() {
            continue;
        }
        let body = json!({
            "model": format!("mcp/{server}"),
            "messages": [{"role": "assistant", "content": null, "tool_calls": [{
                "id": "call_0", "type": "function",
                "function": {"name": tool, "arguments": arguments},
            }]}],
        });
        if let Some(rewritten) = check(guard, "request", &body, verdicts).await? {
            match rewritten["messages"][0]["tool_calls"][0]["function"]["arguments"].as_str() {
                Some(new) if serde_json::from_str::<Value>(new).is_ok() => {
                    arguments = new.to_owned()
                }
                // A rewrite that lost the arguments' shape cannot be sent: fail closed.
                _ => return Err(McpError::GuardFailed),
            }
        }
    }
    Ok(arguments)
}

/// Runs the answer-side guards on a tool result (`CallToolResult` JSON), rewriting its texts in
/// place: text blocks, embedded resources' text, and `structuredContent` (as JSON text; dropped
/// should a rewrite leave it unparseable).
pub async fn result(
    guards: &Guards,
    applying: &[usize],
    server: &str,
    result: &mut Value,
    verdicts: &mut Verdicts,
) -> Result<(), McpError> {
    for guard in applying.iter().filter_map(|i| guards.get(*i)) {
        if !guard.apply.answer() {
            continue;
        }
        let mut texts = texts(result);
        if texts.is_empty() {
            continue;
        }
        let messages: Vec<Value> = texts
            .iter()
            .map(|(_, text)| json!({"role": "tool", "tool_call_id": "call_0", "content": text}))
            .collect();
        let body = json!({"model": format!("mcp/{server}"), "messages": messages});
        let Some(rewritten) = check(guard, "answer", &body, verdicts).await? else {
            continue;
        };
        for (i, (_, text)) in texts.iter_mut().enumerate() {
            match rewritten["messages"][i]["content"].as_str() {
                Some(new) => new.clone_into(text),
                None => return Err(McpError::GuardFailed),
            }
        }
        put_texts(result, texts);
    }
    Ok(())
}

/// Where a text sits in a result.
#[derive(Clone, Copy)]
enum Place {
    Block(usize),
    Resource(usize),
    Structured,
}

fn texts(result: &Value) -> Vec<(Place, String)> {
    let mut out = Vec::new();
    if let Some(blocks) = result["content"].as_array() {
        for (i, block) in blocks.iter().enumerate() {
            if let Some(text) = block["text"].as_str() {
                out.push((Place::Block(i), text.to_owned()));
            } else if let Some(text) = block["resource"]["text"].as_str() {
                out.push((Place::Resource(i), text.to_owned()));
            }
        }
    }
    if let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null()) {
        out.push((Place::Structured, structured.to_string()));
    }
    out
}

fn put_texts(result: &mut Value, texts: Vec<(Place, String)>) {
    for (place, text) in texts {
        match place {
            Place::Block(i) => result["content"][i]["text"] = text.into(),
            Place::Resource(i) => result["content"][i]["resource"]["text"] = text.into(),
            Place::Structured => match serde_json::from_str::<Value>(&text) {
                Ok(value) => result["structuredContent"] = value,
                Err(_) => {
                    if let Some(object) = result.as_object_mut() {
                        object.remove("structuredContent");
                    }
                }
            },
        }
    }
}

/// One guard's verdict on `body`, with the outside calls it asks for made as on the chat path
/// (to its entry's endpoint, under its deadline): `Some(rewritten body)` when it is to be
/// changed.
async fn check(
    guard: &Guard,
    side: &'static str,
    body: &Value,
    verdicts: &mut Verdicts,
) -> Result<Option<Value>, McpError> {
    let monitor = guard.mode == crate::config::guards::GuardMode::Monitor;
    let verdict = match guard.check_request(&body.to_string()).await {
        Ok(checked) => {
            if checked.outside_failed {
                // Its endpoint failed and its entry let the call through: on the record.
                verdicts.push(guard, side, "error", &[]);
            }
            checked.verdict
        }
        Err(failure) => {
            verdicts.push(guard, side, "error", &[]);
            tracing::warn!(
                guard = &*guard.name,
                "guard failed on an MCP call: {failure}"
            );
            // An endpoint that failed refuses unless the entry's `on_failure` let it through
            // (then there is no error here): `fail_open` is about the plugin, not the service.
            let unavailable = matches!(failure, GuardError::Unavailable(_));
            return if monitor || (guard.fail_open && !unavailable) {
                Ok(None)
            } else {
                Err(McpError::GuardFailed)
            };
        }
    };
    match verdict {
        RequestVerdict::Allow(findings) => {
            verdicts.push(guard, side, "allow", &findings);
            Ok(None)
        }
        RequestVerdict::Rewrite(rewrite) => {
            verdicts.push(guard, side, "rewrite", &rewrite.findings);
            if monitor {
                return Ok(None);
            }
            serde_json::from_str(&rewrite.body)
                .map(Some)
                .map_err(|_| McpError::GuardFailed)
        }
        RequestVerdict::Refuse(refusal) => {
            verdicts.push(guard, side, "refuse", &refusal.findings);
            if monitor {
                return Ok(None);
            }
            Err(McpError::Refused {
                guard: guard.name.to_string(),
                reason: refusal.reason,
            })
        }
        // `check_request` answers consults itself and never returns one.
        RequestVerdict::Consult(_) => {
            verdicts.push(guard, side, "error", &[]);
            Err(McpError::GuardFailed)
        }
    }
}
