//! The answer guards on a session's responses: each response the upstream starts opens the
//! request's answer chain (`pipeline::guard::answer`), and the server events that carry its
//! text go through it before they reach the client. Each text stream (an output item's
//! content part, named by `item_id` and `content_index`) is one choice of the chain: its deltas
//! (`response.output_text.delta`, `response.output_audio_transcript.delta`) are pushed as they
//! come, what a guard holds back is held here too, and what it releases is written as the
//! deltas' `delta`, in order. The `.done` event of a part ends its choice; that event, the
//! part's `response.content_part.done`, the item's `response.output_item.done` and the
//! response's `response.done` carry the released text in place of the upstream's (an `.added`
//! event, and a `conversation.item.*` event naming the item, what was released so far). A
//! function call's arguments are a stream too, read as a chat stream's tool call is (one call
//! of its own choice: `response.function_call_arguments.delta`s pushed as they come, `.done`
//! ending it, the item's `arguments` in later events what was released). A guard that stops
//! the answer ends the response: the caller sends the `error` event and cancels it upstream;
//! the response's later events are dropped, but its `response.done` (with the text the client
//! saw). Audio (`response.output_audio.delta`) passes unread: a response with audio output is
//! refused unless every answer guard exempts `realtime`.

use std::collections::HashMap;

use indexmap::IndexMap;
use serde_json::{Value, json};

use crate::config::guards::BlindRoute;
use crate::error::ApiError;
use crate::pipeline::Context;
use crate::pipeline::guard::answer;
use crate::pipeline::guard::chain::AnswerChain;
use crate::plugins::{AnswerEvent, SlotKind, Stop, TextDelta, ToolCallDelta};

/// The guarded responses under way, by the upstream's response id.
pub struct Answers {
    responses: HashMap<String, Guarded>,
    /// The session's `output_modalities` as the upstream last told them
    /// (`session.created`/`session.updated`), for a response that does not say its own.
    session_audio: bool,
}

impl Default for Answers {
    fn default() -> Self {
        // The reference's default is `["audio"]`.
        Self {
            responses: HashMap::new(),
            session_audio: true,
        }
    }
}

/// One response's chain and its text streams.
struct Guarded {
    /// None for a response refused before its chain opened.
    chain: Option<AnswerChain>,
    /// (item id, content index) -> its stream; a stream's place is its choice index.
    parts: IndexMap<(String, u64), Part>,
    /// A guard stopped the answer: the response's events are dropped, but its `response.done`.
    stopped: bool,
    /// The ids of its output items (`response.output_item.added`).
    items: Vec<String>,
}

#[derive(Default)]
struct Part {
    /// The last delta event of the stream, which released text is written into.
    template: Option<Value>,
    /// Whether the template's own `event_id` was used for a delta written from it.
    template_used: bool,
    /// The text released for the client so far.
    released: String,
    /// The upstream ended the stream (its `.done`).
    ended: bool,
    /// Set for a function call's arguments: the call, and whether the chain was told its id
    /// and name (on its first piece, as a chat stream's tool call).
    call: Option<(Call, bool)>,
}

/// The function call whose arguments a stream carries.
#[derive(Clone)]
struct Call {
    call_id: String,
    name: String,
}

impl Call {
    /// The call an event or an item names (`call_id`, `name`).
    fn of(value: &Value) -> Self {
        let field = |name: &str| value.get(name).and_then(Value::as_str).map(str::to_owned);
        Self {
            call_id: field("call_id").unwrap_or_default(),
            name: field("name").unwrap_or_default(),
        }
    }
}

/// What becomes of one upstream event.
pub struct Relayed {
    /// The events to send the client in its place, in order.
    pub events: Vec<String>,
    /// A guard stopped the response: its `error` goes to the client (before the
    /// `response.done` that ends `events`, when it stopped there), `response.cancel` upstream.
    pub stop: Option<ApiError>,
}

impl Relayed {
    fn passed(text: &str) -> Self {
        Self {
            events: vec![text.to_owned()],
            stop: None,
        }
    }
}

/// Where an event of type `kind` carries a stream's text, whether it is a delta, and whether
/// the stream is a function call's arguments.
fn text_field(kind: &str) -> Option<(&'static str, bool, bool)> {
    match kind {
        "response.output_text.delta" | "response.output_audio_transcript.delta" => {
            Some(("delta", true, false))
        }
        "response.output_text.done" => Some(("text", false, false)),
        "response.output_audio_transcript.done" => Some(("transcript", false, false)),
        "response.function_call_arguments.delta" => Some(("delta", true, true)),
        "response.function_call_arguments.done" => Some(("arguments", false, true)),
        _ => None,
    }
}

impl Answers {
    /// Opens the answer guards of response `id` (the upstream's `response.created`'s
    /// `response`) on its context `cx`; none open when no answer guard applies. A response
    /// with audio output is refused (the audio cannot be read) unless every answer guard
    /// exempts `realtime`.
    pub async fn started(
        &mut self,
        cx: &mut Context,
        model: &str,
        response: &Value,
    ) -> Result<(), ApiError> {
        let Some(id) = response.get("id").and_then(Value::as_str) else {
            return Ok(());
        };
        if !answer::pick(cx, model)? {
            return Ok(());
        }
        let audio = match response.get("output_modalities") {
            Some(modalities) => has_audio(modalities),
            None => self.session_audio,
        };
        if audio {
            answer::refuse_blind(cx, BlindRoute::Realtime, "a realtime response's audio")?;
        }
        let Some(chain) = answer::open(cx, SlotKind::Stream).await? else {
            return Ok(());
        };
        let guarded = Guarded {
            chain: Some(chain),
            parts: IndexMap::new(),
            stopped: false,
            items: Vec::new(),
        };
        self.responses.insert(id.to_owned(), guarded);
        Ok(())
    }

    /// The upstream's event `text`, of type `kind` and of response `response` (its
    /// `response_id`, or `response.id` for `response.done`), through the response's guards.
    pub async fn relay(&mut self, kind: &str, response: Option<&str>, text: &str) -> Relayed {
        if matches!(kind, "session.created" | "session.updated")
            && let Ok(event) = serde_json::from_str::<Value>(text)
            && let Some(modalities) = event.pointer("/session/output_modalities")
        {
            self.session_audio = has_audio(modalities);
        }
        let response = match response {
            Some(id) => Some(id.to_owned()),
            None if kind.starts_with("conversation.item.") => self.response_of_item(text),
            None => None,
        };
        let Some(guarded) = response.and_then(|id| self.responses.get_mut(&id)) else {
            return Relayed::passed(text);
        };
        if kind == "response.output_item.added"
            && let Ok(event) = serde_json::from_str::<Value>(text)
            && let Some(item) = event.pointer("/item/id").and_then(Value::as_str)
        {
            guarded.items.push(item.to_owned());
        }
        if guarded.stopped && kind != "response.done" {
            return Relayed {
                events: Vec::new(),
                stop: None,
            };
        }
        let guarded_kind = text_field(kind).is_some()
            || matches!(
                kind,
                "response.content_part.added"
                    | "response.content_part.done"
                    | "response.output_item.added"
                    | "response.output_item.done"
                    | "response.done"
                    | "conversation.item.added"
                    | "conversation.item.done"
            );
        if !guarded_kind {
            return Relayed::passed(text);
        }
        // Unreachable (its head was read), and no text passes unread.
        let Ok(mut event) = serde_json::from_str::<Value>(text) else {
            return Relayed {
                events: Vec::new(),
                stop: None,
            };
        };
        let mut out = Vec::new();
        // A stopped chain is not called again: its response's text is what it released.
        let outcome = match guarded.stopped {
            true => Ok(()),
            false => guarded.event(kind, &mut event, &mut out).await,
        };
        let done = kind == "response.done";
        let stop = outcome.err();
        if stop.is_some() {
            guarded.stopped = true;
            // The stopped event goes no further, but the response's end, whose text is what
            // the client was sent.
            if !done {
                return Relayed { events: out, stop };
            }
        }
        if done {
            guarded.items(event.pointer_mut("/response/output"));
        }
        // A delta's text went out as what the guards released (in `out`).
        if !text_field(kind).is_some_and(|(_, delta, _)| delta) {
            out.push(event.to_string());
        }
        Relayed { events: out, stop }
    }

    /// The guarded response whose output holds the item of a `conversation.item.*` event: the
    /// reference tells of a response's items on the conversation too.
    fn response_of_item(&self, text: &str) -> Option<String> {
        if self.responses.is_empty() {
            return None;
        }
        let event = serde_json::from_str::<Value>(text).ok()?;
        let item = event.pointer("/item/id").and_then(Value::as_str)?;
        let (id, _) = (self.responses.iter()).find(|(_, g)| g.items.iter().any(|i| i == item))?;
        Some(id.clone())
    }

    /// Response `id` was refused as it started (`started` failed): its events are dropped, but
    /// its `response.done`, whose text is withheld.
    pub fn refused(&mut self, id: &str) {
        let guarded = Guarded {
            chain: None,
            parts: IndexMap::new(),
            stopped: true,
            items: Vec::new(),
        };
        self.responses.insert(id.to_owned(), guarded);
    }

    /// Response `id` is done: its chain, whose verdicts go into its record.
    pub fn done(&mut self, id: &str) -> Option<AnswerChain> {
        self.responses.remove(id).and_then(|g| g.chain)
    }
}

impl Guarded {
    /// One text-bearing event through the chain, rewritten in place; the deltas released
    /// before it are written into `out`.
    async fn event(
        &mut self,
        kind: &str,
        event: &mut Value,
        out: &mut Vec<String>,
    ) -> Result<(), ApiError> {
        if let Some((field, delta, call)) = text_field(kind) {
            let key = part_key(event);
            let piece = event.get(field).and_then(Value::as_str).unwrap_or_default();
            let piece = piece.to_owned();
            let call = call.then(|| Call::of(event));
            if delta {
                let (choice, _, part) = self.part(key);
                part.template = Some(event.clone());
                part.template_used = false;
                let piece = part.piece(choice, piece, call);
                self.run(vec![piece], false, out).await?;
            } else {
                self.ensure_read(key.clone(), piece, call, out).await?;
                let released = self.parts.get(&key).map(|p| p.released.clone());
                if let Some(slot) = event.get_mut(field) {
                    *slot = Value::from(released.unwrap_or_default());
                }
            }
            return Ok(());
        }
        match kind {
            "response.content_part.done" => {
                let key = part_key(event);
                if let Some(part) = event.get_mut("part") {
                    self.whole(key, part, out).await?;
                }
            }
            // Added as it starts: what was released of it so far.
            "response.output_item.added" | "conversation.item.added" => {
                if let Some(item) = event.get_mut("item") {
                    self.items_one(item);
                }
            }
            "response.content_part.added" => {
                let key = part_key(event);
                let released = self.parts.get(&key).map(|p| p.released.clone());
                let part = event.get_mut("part").and_then(Value::as_object_mut);
                for (field, text) in part.into_iter().flatten() {
                    if matches!(field.as_str(), "text" | "transcript") && text.is_string() {
                        *text = Value::from(released.clone().unwrap_or_default());
                    }
                }
            }
            "response.output_item.done" | "conversation.item.done" => {
                if let Some(item) = event.get_mut("item") {
                    self.item(item, out).await?;
                }
            }
            _ => {
                // `response.done`: the response ended, the guards release what they hold.
                let mut parts = Vec::new();
                for output in (event.pointer("/response/output").and_then(Value::as_array))
                    .into_iter()
                    .flatten()
                {
                    parts.extend(item_parts(output));
                }
                for (key, piece, call) in parts {
                    self.ensure_read(key, piece, call, out).await?;
                }
                self.run(Vec::new(), true, out).await?;
            }
        }
        Ok(())
    }

    /// An output item's content parts through the chain (those not streamed before), their
    /// text replaced by the released text.
    async fn item(&mut self, item: &mut Value, out: &mut Vec<String>) -> Result<(), ApiError> {
        for (key, piece, call) in item_parts(item) {
            self.ensure_read(key, piece, call, out).await?;
        }
        self.items_one(item);
        Ok(())
    }

    /// A content part (`part`, the stream `key`'s) read whole if it was not streamed, its
    /// text replaced by the released text.
    async fn whole(
        &mut self,
        key: (String, u64),
        part: &mut Value,
        out: &mut Vec<String>,
    ) -> Result<(), ApiError> {
        for field in ["text", "transcript"] {
            let Some(piece) = part.get(field).and_then(Value::as_str) else {
                continue;
            };
            let piece = piece.to_owned();
            self.ensure_read(key.clone(), piece, None, out).await?;
            if let Some(released) = self.parts.get(&key).map(|p| p.released.clone()) {
                part[field] = Value::from(released);
            }
        }
        Ok(())
    }

    /// Ends the stream `key` (of function call `call`, if it is one) in the chain: its whole
    /// `piece` read first if it came without deltas, nothing if it ended already.
    async fn ensure_read(
        &mut self,
        key: (String, u64),
        piece: String,
        call: Option<Call>,
        out: &mut Vec<String>,
    ) -> Result<(), ApiError> {
        let (choice, known, part) = self.part(key);
        let mut events = Vec::new();
        if !known {
            events.push(part.piece(choice, piece, call));
        }
        if !std::mem::replace(&mut part.ended, true) {
            let reason = if part.call.is_some() {
                "tool_calls"
            } else {
                "stop"
            };
            events.push(stop(choice, reason));
        }
        self.run(events, false, out).await
    }

    /// The texts of `output` (a `response.done`'s items) replaced by the released text.
    fn items(&self, output: Option<&mut Value>) {
        for item in output.and_then(Value::as_array_mut).into_iter().flatten() {
            self.items_one(item);
        }
    }

    fn items_one(&self, item: &mut Value) {
        let id = item.get("id").and_then(Value::as_str).unwrap_or_default();
        let id = id.to_owned();
        if item.get("type").and_then(Value::as_str) == Some("function_call") {
            let released = self.parts.get(&(id, 0)).map(|p| p.released.as_str());
            if item.get("arguments").is_some_and(Value::is_string) {
                item["arguments"] = Value::from(released.unwrap_or_default());
            }
            return;
        }
        let parts = item.get_mut("content").and_then(Value::as_array_mut);
        for (i, content) in parts.into_iter().flatten().enumerate() {
            let key = (id.clone(), u64::try_from(i).unwrap_or(u64::MAX));
            let released = self.parts.get(&key).map(|p| p.released.as_str());
            for field in ["text", "transcript"] {
                if content.get(field).is_some_and(Value::is_string) {
                    content[field] = Value::from(released.unwrap_or_default());
                }
            }
        }
    }

    /// The stream `key`: its choice index, whether it was known, and its state.
    fn part(&mut self, key: (String, u64)) -> (u32, bool, &mut Part) {
        let known = self.parts.contains_key(&key);
        let entry = self.parts.entry(key);
        let index = entry.index();
        let part = entry.or_default();
        (u32::try_from(index).unwrap_or(u32::MAX), known, part)
    }

    /// `events` through the chain (with `end`, releasing all), the released text appended to
    /// each stream and written as its deltas into `out`.
    async fn run(
        &mut self,
        events: Vec<AnswerEvent>,
        end: bool,
        out: &mut Vec<String>,
    ) -> Result<(), ApiError> {
        let Some(chain) = &mut self.chain else {
            return Ok(());
        };
        let released = chain.run(events, end).await?;
        for event in released {
            let (choice, text) = match event {
                AnswerEvent::Text(TextDelta { choice, text }) => (choice, text),
                AnswerEvent::ToolCall(call) => (call.choice, call.arguments),
                AnswerEvent::Usage(_) | AnswerEvent::Stop(_) => continue,
            };
            let Some((_, part)) = self.parts.get_index_mut(to_index(choice)) else {
                continue;
            };
            part.released.push_str(&text);
            let Some(template) = &part.template else {
                continue;
            };
            if text.is_empty() {
                continue;
            }
            let mut delta = template.clone();
            delta["delta"] = Value::from(text);
            if std::mem::replace(&mut part.template_used, true) {
                delta["event_id"] = json!(format!("event_{}", uuid::Uuid::now_v7().simple()));
            }
            out.push(delta.to_string());
        }
        Ok(())
    }
}

/// An event's stream: its `item_id` and `content_index`.
fn part_key(event: &Value) -> (String, u64) {
    let item = event
        .get("item_id")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let index = event.get("content_index").and_then(Value::as_u64);
    (item.to_owned(), index.unwrap_or(0))
}

/// An output item's streams: its content parts that carry text, or a function call's
/// arguments (its one stream, index 0); each with its text and its call.
fn item_parts(item: &Value) -> Vec<((String, u64), String, Option<Call>)> {
    let id = item.get("id").and_then(Value::as_str).unwrap_or_default();
    if item.get("type").and_then(Value::as_str) == Some("function_call") {
        let arguments = item.get("arguments").and_then(Value::as_str);
        let arguments = arguments.unwrap_or_default().to_owned();
        return vec![((id.to_owned(), 0), arguments, Some(Call::of(item)))];
    }
    let parts = item.get("content").and_then(Value::as_array);
    let mut found = Vec::new();
    for (i, content) in parts.into_iter().flatten().enumerate() {
        for field in ["text", "transcript"] {
            if let Some(piece) = content.get(field).and_then(Value::as_str) {
                let key = (id.to_owned(), u64::try_from(i).unwrap_or(u64::MAX));
                found.push((key, piece.to_owned(), None));
            }
        }
    }
    found
}

impl Part {
    /// `piece` of this stream (choice `choice`) as the chain reads it: text, or a piece of
    /// function call `call`'s arguments, its id and name on the first.
    fn piece(&mut self, choice: u32, piece: String, call: Option<Call>) -> AnswerEvent {
        if self.call.is_none()
            && let Some(call) = call
        {
            self.call = Some((call, false));
        }
        let Some((call, told)) = &mut self.call else {
            return text(choice, piece);
        };
        let first = !std::mem::replace(told, true);
        AnswerEvent::ToolCall(ToolCallDelta {
            choice,
            index: 0,
            id: first.then(|| call.call_id.clone()),
            name: first.then(|| call.name.clone()),
            arguments: piece,
        })
    }
}

/// Whether `modalities` (an `output_modalities` array) include audio.
fn has_audio(modalities: &Value) -> bool {
    (modalities.as_array()).is_some_and(|m| m.iter().any(|m| m == "audio"))
}

fn text(choice: u32, text: String) -> AnswerEvent {
    AnswerEvent::Text(TextDelta { choice, text })
}

fn stop(choice: u32, reason: &str) -> AnswerEvent {
    AnswerEvent::Stop(Stop {
        choice,
        reason: reason.to_owned(),
    })
}

fn to_index(choice: u32) -> usize {
    usize::try_from(choice).unwrap_or(usize::MAX)
}
