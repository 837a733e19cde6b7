//! A native stream's guards: a second decoder of the provider reads the same upstream bytes into
//! canonical chunks for the answer guards, and the native events wait for them. Events go as soon
//! as the text they carry is decided (the guards hold only the last of it back, their
//! `max-hold-chars`), with what the guards changed changed in their text, a value split over
//! events changed where it lies; an event whose text the guards still hold waits, and every
//! event after it.

use std::sync::Arc;

use axum::body::Bytes;
use serde_json::Value;
use similar::DiffOp;

use super::chain::AnswerChain;
use super::edits::{diff, rewrite_segments};
use super::failure::failed_with;
use crate::error::ApiError;
use crate::plugins::{PluginError, PluginFailure, ProviderStream, StreamOutput};
use crate::redact::Redactor;

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
    waiting: Waiting,
}

/// The native events waiting for the guards, and their text.
#[derive(Default)]
struct Waiting {
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
            waiting: Waiting::default(),
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
        self.waiting.held.extend(events);
        self.waiting.pieces.extend(texts(&chunks));
        let mut released = self.chain.push(chunks).await?;
        if end {
            released.extend(self.chain.finish().await?);
        }
        self.waiting.released.push_str(&texts(&released).concat());
        let holding = if end { 0 } else { self.chain.held() as usize };
        self.waiting.release(holding).ok_or_else(|| {
            failed_with(
                "answer",
                "its rewrite could not be carried into the native stream",
            )
        })
    }
}

impl Waiting {
    /// The held events that may go while the guards hold the last `holding` characters of the
    /// text back: those before the first piece of text not wholly decided (and not in an event
    /// with one that is not), their text rewritten into what the guards released for it;
    /// `None` when a rewrite cannot be placed.
    fn release(&mut self, holding: usize) -> Option<Vec<String>> {
        let input: Vec<char> = self.pieces.iter().flat_map(|p| p.chars()).collect();
        let out: Vec<char> = self.released.chars().collect();
        let Some(places) = locate(&self.held, &self.pieces) else {
            // Text the native events do not carry as such: they go at the end, unchanged.
            return match holding {
                0 if input == out => {
                    self.pieces.clear();
                    self.released.clear();
                    Some(std::mem::take(&mut self.held))
                }
                0 => None,
                _ => Some(Vec::new()),
            };
        };
        let decided = input.len().saturating_sub(holding);
        let ops = diff(&input[..decided], &out);
        let bounds: Vec<usize> = std::iter::once(0)
            .chain(self.pieces.iter().scan(0, |sum, p| {
                *sum += p.chars().count();
                Some(*sum)
            }))
            .collect();
        let n = self.pieces.len();
        let mut k = bounds[1..].iter().take_while(|&&b| b <= decided).count();
        let cut = loop {
            let between = k == 0 || k == n || places[k - 1].0 < places[k].0;
            if between && let Some(cut) = output_at(&ops, bounds[k]) {
                break cut;
            }
            k -= 1;
        };
        let split = if k == n { self.held.len() } else { places[k].0 };
        let events: Vec<String> = self.held.drain(..split).collect();
        let pieces: Vec<String> = self.pieces.drain(..k).collect();
        let after: String = out[..cut].iter().collect();
        self.released = out[cut..].iter().collect();
        if pieces.concat() == after {
            return Some(events);
        }
        rewritten(events, &places[..k], &pieces, &after)
    }
}

/// Where input position `p` falls in the output of `ops`; `None` inside a change.
fn output_at(ops: &[DiffOp], p: usize) -> Option<usize> {
    if p == 0 {
        return Some(0);
    }
    for op in ops {
        let (old, new) = (op.old_range(), op.new_range());
        match op {
            DiffOp::Equal { .. } if old.start <= p && p <= old.end => {
                return Some(new.start + (p - old.start));
            }
            DiffOp::Equal { .. } => {}
            _ if old.start < p && p < old.end => return None,
            _ if p == old.end => return Some(new.end),
            _ => {}
        }
    }
    None
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

/// Where each of `pieces` stands, in order, as a string of its own in `events`: (event, JSON
/// pointer); `None` when one is not found.
fn locate(events: &[String], pieces: &[String]) -> Option<Vec<(usize, String)>> {
    let mut places = Vec::with_capacity(pieces.len());
    let mut leaves: Option<(usize, Vec<(String, String)>)> = None;
    let mut event = 0;
    let mut used = 0;
    for piece in pieces {
        loop {
            if leaves.as_ref().is_none_or(|(e, _)| *e != event) {
                let value = serde_json::from_str::<Value>(events.get(event)?).ok();
                leaves = Some((event, value.as_ref().map(string_leaves).unwrap_or_default()));
            }
            let found = (leaves.as_ref()?.1.iter().enumerate().skip(used))
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
    Some(places)
}

/// `events` with each of `pieces`, at its place, rewritten so that they join into `after`.
fn rewritten(
    events: Vec<String>,
    places: &[(usize, String)],
    pieces: &[String],
    after: &str,
) -> Option<Vec<String>> {
    let mut values: Vec<Option<Value>> = (events.iter())
        .map(|e| serde_json::from_str(e).ok())
        .collect();
    let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
    let texts = rewrite_segments(&refs, after);
    let mut changed = vec![false; events.len()];
    for ((event, pointer), text) in places.iter().zip(texts) {
        let slot = values.get_mut(*event)?.as_mut()?.pointer_mut(pointer)?;
        *slot = Value::String(text);
        changed[*event] = true;
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

    use serde_json::json;

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
        let places = locate(&events, &pieces).unwrap();
        assert_eq!(places[1].0, 3, "{places:?}");
        let out = rewritten(events.clone(), &places, &pieces, "It is 4111.").unwrap();
        assert_eq!(out[0], events[0]);
        assert_eq!(out[2], events[2]);
        let text = |e: &str| {
            serde_json::from_str::<Value>(e).unwrap()["delta"]["text"]
                .as_str()
                .unwrap()
                .to_owned()
        };
        assert_eq!(text(&out[1]) + &text(&out[3]), "It is 4111.");
        assert!(locate(&events, &["absent".to_owned()]).is_none());
    }

    #[test]
    fn only_what_the_guards_decided_is_placed_and_a_change_is_never_cut() {
        let ops = diff(
            &"ab 4111 cd".chars().collect::<Vec<_>>(),
            &"ab [C] cd".chars().collect::<Vec<_>>(),
        );
        assert_eq!(output_at(&ops, 3), Some(3));
        assert_eq!(output_at(&ops, 5), None, "inside the change");
        assert_eq!(output_at(&ops, 10), Some(9));
    }

    /// While the guards hold the end of the text back, the events before it go (with the
    /// guards' change made in them), and the event whose text is held waits with all after it.
    #[test]
    fn events_go_as_their_text_is_decided() {
        let delta = |t: &str| {
            json!({"type": "content_block_delta", "index": 0,
                   "delta": {"type": "text_delta", "text": t}})
            .to_string()
        };
        let mut waiting = Waiting {
            held: vec![
                r#"{"type":"message_start"}"#.to_owned(),
                delta("It is [CA"),
                r#"{"type":"ping"}"#.to_owned(),
                delta("RD_1] and"),
                delta(" more"),
            ],
            pieces: vec!["It is [CA".into(), "RD_1] and".into(), " more".into()],
            // The guard restored the value and holds the last 5 characters back.
            released: "It is 4111 and".into(),
        };
        let text = |e: &str| {
            serde_json::from_str::<Value>(e).unwrap()["delta"]["text"]
                .as_str()
                .map(str::to_owned)
        };
        let first = waiting.release(5).unwrap();
        assert_eq!(first.len(), 4, "{first:?}");
        let joined: String = first.iter().filter_map(|e| text(e)).collect();
        assert_eq!(joined, "It is 4111 and");
        assert_eq!(waiting.held.len(), 1);
        waiting.released.push_str(" more");
        let rest = waiting.release(0).unwrap();
        assert_eq!(text(&rest[0]).unwrap(), " more");
        assert!(waiting.held.is_empty() && waiting.pieces.is_empty());
        // A change that straddles two events holds the first until the second is decided.
        let mut waiting = Waiting {
            held: vec![delta("It is [CA"), delta("RD_1] and")],
            pieces: vec!["It is [CA".into(), "RD_1] and".into()],
            released: "It is 4111 an".into(),
        };
        assert!(waiting.release(1).unwrap().is_empty());
        // Nothing decided yet: only what comes before the text goes.
        let mut waiting = Waiting {
            held: vec![r#"{"type":"message_start"}"#.to_owned(), delta("abc")],
            pieces: vec!["abc".into()],
            released: String::new(),
        };
        assert_eq!(waiting.release(3).unwrap().len(), 1);
    }
}
