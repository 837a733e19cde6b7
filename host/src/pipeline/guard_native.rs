//! Guards on a request whose target speaks the client's dialect. The client's native body stays
//! the truth; the guards check a canonical view of it, and what they change there is changed in
//! the native text (`guard_edits.rs`), so that every other field (Anthropic's `thinking`,
//! `metadata`, `cache_control`, its signed thinking blocks in the answer) goes on untouched.
//!
//! - The request: the guards' rewrite is carried into the native body and checked by having the
//!   dialect plugin read the edited body back; when it does not read as the guards' canonical
//!   request, the request is translated instead (as every guarded request was before).
//! - A whole answer: the provider plugin reads the native answer into a canonical view as well,
//!   the answer guards check that, and their rewrite is made in the native answer's text.
//! - A stream: a second decoder of the provider reads the same upstream bytes into canonical
//!   chunks for the guards ([`Watch`]); the native events wait while the guards hold text back,
//!   and go once the guards have released all of it, their text changed where the guards
//!   changed it.

use std::sync::Arc;

use axum::body::Bytes;
use serde_json::Value;

use super::context::Context;
use super::error::ApiError;
use super::guard::failed_with;
use super::guard_answer::{AnswerChain, open};
use super::guard_edits::{Edits, rewrite_segments};
use super::guard_events;
use super::request::ClientRequest;
use crate::plugins::{
    Operation, PluginError, PluginFailure, ProviderStream, SlotKind, StreamOutput,
};
use crate::redact::Redactor;

/// Carries the guards' rewrite of the canonical request (`before` → `after`) into the client's
/// native body; when it cannot be carried exactly, the request is translated.
pub(super) async fn carry_request(cx: &mut Context, before: &str, after: &str) {
    let Some(translation) = &cx.translation else {
        return;
    };
    let carried = async {
        let before: Value = serde_json::from_str(before).ok()?;
        let mut after: Value = serde_json::from_str(after).ok()?;
        let edits = Edits::between(&before, &after)?;
        let mut native = translation.native_value()?;
        edits.apply(&mut native);
        let decoded = translation.decoded_body(&native).await?;
        // Read as the client's first reading was: the dialect's decoding, then the host's.
        let decoded = ClientRequest::parse(Operation::ChatCompletions, decoded.as_bytes()).ok()?;
        let mut decoded: Value = serde_json::from_str(&decoded.body_json()).ok()?;
        // The model is the client's in both; only the texts are compared.
        for body in [&mut decoded, &mut after] {
            if let Value::Object(fields) = body {
                fields.remove("model");
            }
        }
        (decoded == after).then_some(native)
    }
    .await;
    let set = match (carried, cx.translation.as_mut()) {
        (Some(native), Some(translation)) => translation.set_native(&native),
        _ => false,
    };
    if !set {
        tracing::debug!("a guard's rewrite could not be carried into the native body");
        cx.guard.translate = true;
    }
}

/// A native whole answer through the answer guards, checked on `view` (the provider plugin's
/// canonical reading of it); the native answer with the guards' changes made in its text.
pub(super) async fn whole(
    cx: &mut Context,
    native: String,
    view: &str,
) -> Result<String, ApiError> {
    let Some(mut chain) = open(cx, SlotKind::Call).await? else {
        return Ok(native);
    };
    let Ok(mut before) = serde_json::from_str::<Value>(view) else {
        return Err(failed_with(
            "answer",
            "the answer's canonical view is not JSON",
        ));
    };
    let events = guard_events::read_completion(&before);
    let passed = chain.run(events.clone(), true).await;
    cx.guard.verdicts_from(&mut chain);
    let released = passed?;
    // Both sides written back the same way, so that they differ only where the guards did.
    let mut after = before.clone();
    guard_events::write_completion(&mut before, &events);
    guard_events::write_completion(&mut after, &released);
    let edits = Edits::between(&before, &after)
        .ok_or_else(|| failed_with("answer", "the guards changed the answer's shape"))?;
    if edits.is_empty() {
        return Ok(native);
    }
    let mut body: Value = serde_json::from_str(&native)
        .map_err(|_| failed_with("answer", "the native answer is not JSON"))?;
    if !edits.every_one_applies(&mut body) {
        return Err(failed_with(
            "answer",
            "its rewrite could not be carried into the native answer",
        ));
    }
    Ok(body.to_string())
}

/// A native stream's canonical shadow: a decoder reading the same bytes into canonical chunks,
/// the answer guards, and the native events waiting for them.
pub struct Watch {
    decoder: ProviderStream,
    chain: AnswerChain,
    /// Names the provider in an error of the decoder's, cleared of the request's secrets.
    provider: Arc<str>,
    redactor: Redactor,
    /// Upstream bytes the decoder has not read yet: it reads only when there are native events
    /// to release, since what it read before them would only wait with them.
    unread: Vec<u8>,
    /// The canonical chunks it read that the guards have not seen.
    seen: Vec<String>,
    /// Native events not yet released, in order.
    held: Vec<String>,
    /// The canonical text pieces of the held events (content and tool arguments), in order.
    pieces: Vec<String>,
    /// What the guards released of them.
    released: String,
}

impl Watch {
    pub fn new(
        decoder: ProviderStream,
        chain: AnswerChain,
        provider: Arc<str>,
        redactor: Redactor,
    ) -> Self {
        Self {
            decoder,
            chain,
            provider,
            redactor,
            unread: Vec::new(),
            seen: Vec::new(),
            held: Vec::new(),
            pieces: Vec::new(),
            released: String::new(),
        }
    }

    /// Upstream bytes, for the decoder to read when it is next asked to.
    pub fn take(&mut self, chunks: &[Bytes]) {
        chunks.iter().for_each(|c| self.unread.extend_from_slice(c));
    }

    /// The decoder reads what it has not (with `end`, and the upstream's end).
    pub async fn read(&mut self, end: bool) -> Result<(), ApiError> {
        if !self.unread.is_empty() {
            let output = self.decoder.push(&self.unread).await;
            self.unread.clear();
            self.seen(output)?;
        }
        if end {
            let output = self.decoder.finish().await;
            self.seen(output)?;
        }
        Ok(())
    }

    fn seen(
        &mut self,
        output: Result<Result<StreamOutput, PluginError>, PluginFailure>,
    ) -> Result<(), ApiError> {
        match output {
            Ok(Ok(output)) => {
                self.seen.extend(output.events);
                Ok(())
            }
            Ok(Err(error)) => Err(ApiError::provider(&self.provider, error, &self.redactor)),
            Err(failure) => Err(ApiError::PluginFailed(failure)),
        }
    }

    /// The guards' verdicts, for the request's record.
    pub fn chain(&mut self) -> &mut AnswerChain {
        &mut self.chain
    }

    /// Native `events` and the canonical chunks read with them through the guards: the native
    /// events that may go now (with `end`, all of them).
    pub async fn pass(&mut self, events: Vec<String>, end: bool) -> Result<Vec<String>, ApiError> {
        let chunks = std::mem::take(&mut self.seen);
        self.held.extend(events);
        self.pieces.extend(texts(&chunks));
        let mut released = self.chain.push(chunks).await?;
        if end {
            released.extend(self.chain.finish().await?);
        }
        self.released.push_str(&texts(&released).concat());
        if self.chain.held() > 0 && !end {
            return Ok(Vec::new());
        }
        let events = std::mem::take(&mut self.held);
        let pieces = std::mem::take(&mut self.pieces);
        let after = std::mem::take(&mut self.released);
        if pieces.concat() == after {
            return Ok(events);
        }
        rewritten(events, &pieces, &after).ok_or_else(|| {
            failed_with(
                "answer",
                "its rewrite could not be carried into the native stream",
            )
        })
    }
}

/// The text pieces of canonical chunks: each choice's content delta and tool-call arguments.
fn texts(chunks: &[String]) -> Vec<String> {
    let mut pieces = Vec::new();
    for chunk in chunks {
        let Ok(value) = serde_json::from_str::<Value>(chunk) else {
            continue;
        };
        let choices = value.get("choices").and_then(Value::as_array);
        for delta in choices.into_iter().flatten().filter_map(|c| c.get("delta")) {
            if let Some(text) = delta.get("content").and_then(Value::as_str) {
                pieces.push(text.to_owned());
            }
            let calls = delta.get("tool_calls").and_then(Value::as_array);
            for call in calls.into_iter().flatten() {
                if let Some(args) = call.pointer("/function/arguments").and_then(Value::as_str) {
                    pieces.push(args.to_owned());
                }
            }
        }
    }
    pieces.retain(|p| !p.is_empty());
    pieces
}

/// `events` with each of `pieces` found, in order, as a string of its own in them and rewritten
/// so that they join into `after`; `None` when a piece is not found.
fn rewritten(events: Vec<String>, pieces: &[String], after: &str) -> Option<Vec<String>> {
    let mut values: Vec<Option<Value>> = (events.iter())
        .map(|e| serde_json::from_str(e).ok())
        .collect();
    // Where each piece stands: (event, JSON pointer).
    let mut places = Vec::with_capacity(pieces.len());
    let mut event = 0;
    let mut used = 0;
    for piece in pieces {
        loop {
            let value = values.get(event)?;
            let leaves = value.as_ref().map(string_leaves).unwrap_or_default();
            let found = (leaves.iter().enumerate().skip(used))
                .find(|(_, (_, text))| text == piece)
                .map(|(i, (pointer, _))| (i, pointer.clone()));
            match found {
                Some((i, pointer)) => {
                    places.push((event, pointer));
                    used = i + 1;
                    break;
                }
                None => {
                    event += 1;
                    used = 0;
                }
            }
        }
    }
    let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
    let texts = rewrite_segments(&refs, after);
    let mut changed = vec![false; events.len()];
    for ((event, pointer), text) in places.into_iter().zip(texts) {
        let slot = values[event].as_mut()?.pointer_mut(&pointer)?;
        *slot = Value::String(text);
        changed[event] = true;
    }
    Some(
        (events.into_iter().zip(values).zip(changed))
            .map(|((event, value), changed)| match value {
                Some(value) if changed => value.to_string(),
                _ => event,
            })
            .collect(),
    )
}

/// The string values of `value`, in order, each with its JSON pointer.
fn string_leaves(value: &Value) -> Vec<(String, String)> {
    fn walk(value: &Value, path: &mut String, out: &mut Vec<(String, String)>) {
        match value {
            // A `type` names an event or a block (`text`, `message`): never the model's text.
            Value::String(_) if path.ends_with("/type") => {}
            Value::String(text) => out.push((path.clone(), text.clone())),
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    let len = path.len();
                    path.push_str(&format!("/{i}"));
                    walk(item, path, out);
                    path.truncate(len);
                }
            }
            Value::Object(fields) => {
                for (key, item) in fields {
                    let len = path.len();
                    path.push('/');
                    path.push_str(&key.replace('~', "~0").replace('/', "~1"));
                    walk(item, path, out);
                    path.truncate(len);
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
    let mut out = Vec::new();
    walk(value, &mut String::new(), &mut out);
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_rewrite_is_made_in_the_native_events_that_carried_the_text() {
        let events = vec![
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#.to_owned(),
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"It is [CA"}}"#.to_owned(),
            r#"{"type":"ping"}"#.to_owned(),
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"RD_1]."}}"#.to_owned(),
        ];
        let pieces = vec!["It is [CA".to_owned(), "RD_1].".to_owned()];
        let out = rewritten(events.clone(), &pieces, "It is 4111.").unwrap();
        assert_eq!(out[0], events[0]);
        assert_eq!(out[2], events[2]);
        let text = |e: &str| {
            serde_json::from_str::<Value>(e).unwrap()["delta"]["text"]
                .as_str()
                .unwrap()
                .to_owned()
        };
        assert_eq!(text(&out[1]) + &text(&out[3]), "It is 4111.");
        assert!(rewritten(events, &["absent".to_owned()], "x").is_none());
    }
}
