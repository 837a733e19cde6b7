//! The canonical answer as guards see it: `chat.completion.chunk` events read into typed answer
//! events (text, tool-call pieces, usage, stop) and written back as chunks after the guards;
//! and a whole `chat.completion` taken apart into the same events and put back together.

use serde_json::{Map, Value, json};

use crate::plugins::{AnswerEvent, Stop, TextDelta, ToolCallDelta, Usage};

/// Model text the guard contract has no event for (a reasoning model's thoughts, which providers
/// name these ways): withheld from a guarded answer rather than passed on unchecked, since a
/// model may think the very value a guard keeps out of its answer.
const UNGUARDED_TEXT: [&str; 3] = ["reasoning_content", "reasoning", "reasoning_details"];

/// Removes [`UNGUARDED_TEXT`] from a delta or a message; whether there was any.
fn withhold(object: &mut Map<String, Value>) -> bool {
    let mut any = false;
    for field in UNGUARDED_TEXT {
        any |= object.remove(field).is_some();
    }
    any
}

/// `chunk` with the unguarded text of its deltas withheld, re-serialised only when it had some.
fn withheld(mut value: Map<String, Value>, chunk: String) -> String {
    let mut any = false;
    let deltas = (value.get_mut("choices").and_then(Value::as_array_mut))
        .into_iter()
        .flatten()
        .filter_map(|choice| match choice.get_mut("delta") {
            Some(Value::Object(delta)) => Some(delta),
            _ => None,
        });
    for delta in deltas {
        any |= withhold(delta);
    }
    if any {
        Value::Object(value).to_string()
    } else {
        chunk
    }
}

/// What rewritten chunks are written with: the stream's id, model and time, from the chunks
/// read so far, and whether each choice has been given its role.
#[derive(Default)]
pub struct Template {
    id: Value,
    created: Value,
    model: Value,
    fingerprint: Option<Value>,
    /// The upstream's last usage object, as it wrote it.
    usage: Option<Value>,
    roles_sent: Vec<u32>,
    /// The stream is a legacy completion's (`text_completion` chunks, each choice a `text`).
    legacy: bool,
}

/// The events of `chunks`, and the chunks that carry none (a role-only first chunk), which go
/// on as they are.
pub fn read_chunks(
    template: &mut Template,
    chunks: Vec<String>,
) -> (Vec<AnswerEvent>, Vec<String>) {
    let mut events = Vec::new();
    let mut plain = Vec::new();
    for chunk in chunks {
        let Ok(Value::Object(value)) = serde_json::from_str::<Value>(&chunk) else {
            plain.push(chunk);
            continue;
        };
        template.learn(&value);
        let before = events.len();
        read_chunk(template, &value, &mut events);
        if events.len() == before {
            for choice in choices(&value) {
                if let Some(index) = choice_index(choice)
                    && choice.pointer("/delta/role").is_some()
                {
                    template.roles_sent.push(index);
                }
            }
            plain.push(withheld(value, chunk));
        }
    }
    (events, plain)
}

fn choices(value: &Map<String, Value>) -> impl Iterator<Item = &Value> {
    value
        .get("choices")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn choice_index(choice: &Value) -> Option<u32> {
    choice
        .get("index")
        .and_then(Value::as_u64)
        .and_then(|i| u32::try_from(i).ok())
}

fn read_chunk(template: &mut Template, value: &Map<String, Value>, events: &mut Vec<AnswerEvent>) {
    for choice_value in choices(value) {
        let choice = choice_index(choice_value).unwrap_or(0);
        let delta = choice_value.get("delta");
        // A legacy completion's chunk carries its text on the choice.
        let text = (delta.and_then(|d| d.get("content")))
            .or_else(|| choice_value.get("text"))
            .and_then(Value::as_str);
        if let Some(text) = text
            && !text.is_empty()
        {
            events.push(AnswerEvent::Text(TextDelta {
                choice,
                text: text.to_owned(),
            }));
        }
        let calls = delta
            .and_then(|d| d.get("tool_calls"))
            .and_then(Value::as_array);
        for (n, call) in calls.into_iter().flatten().enumerate() {
            let index = call
                .get("index")
                .and_then(Value::as_u64)
                .and_then(|i| u32::try_from(i).ok())
                .unwrap_or(u32::try_from(n).unwrap_or(0));
            let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
            events.push(AnswerEvent::ToolCall(ToolCallDelta {
                choice,
                index,
                id: text(call.get("id")),
                name: text(call.pointer("/function/name")),
                arguments: text(call.pointer("/function/arguments")).unwrap_or_default(),
            }));
        }
        if let Some(reason) = choice_value.get("finish_reason").and_then(Value::as_str) {
            events.push(AnswerEvent::Stop(Stop {
                choice,
                reason: reason.to_owned(),
            }));
        }
    }
    if let Some(usage) = value.get("usage").filter(|u| u.is_object()) {
        template.usage = Some(usage.clone());
        events.push(AnswerEvent::Usage(usage_of(usage)));
    }
}

/// Chat Completions usage as the contract's record.
fn usage_of(usage: &Value) -> Usage {
    let n = |pointer: &str| usage.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
    Usage {
        input_tokens: n("/prompt_tokens"),
        output_tokens: n("/completion_tokens"),
        cached_input_tokens: n("/prompt_tokens_details/cached_tokens"),
        cache_write_tokens: 0,
        reasoning_tokens: n("/completion_tokens_details/reasoning_tokens"),
        images: 0,
        search_units: 0,
        audio_ms: 0,
        characters: 0,
    }
}

impl Template {
    fn learn(&mut self, value: &Map<String, Value>) {
        for (key, slot) in [
            ("id", &mut self.id),
            ("created", &mut self.created),
            ("model", &mut self.model),
        ] {
            if let Some(v) = value.get(key) {
                *slot = v.clone();
            }
        }
        if let Some(v) = value.get("system_fingerprint") {
            self.fingerprint = Some(v.clone());
        }
        if value.get("object").and_then(Value::as_str) == Some("text_completion") {
            self.legacy = true;
        }
    }

    fn chunk(&self, choices: Value, usage: Option<Value>) -> String {
        let mut chunk = Map::new();
        chunk.insert("id".into(), self.id.clone());
        let object = match self.legacy {
            true => "text_completion",
            false => "chat.completion.chunk",
        };
        chunk.insert("object".into(), object.into());
        chunk.insert("created".into(), self.created.clone());
        chunk.insert("model".into(), self.model.clone());
        if let Some(fingerprint) = &self.fingerprint {
            chunk.insert("system_fingerprint".into(), fingerprint.clone());
        }
        chunk.insert("choices".into(), choices);
        if let Some(usage) = usage {
            chunk.insert("usage".into(), usage);
        }
        Value::Object(chunk).to_string()
    }

    /// `delta` for `choice`, with the role on the choice's first delta.
    fn choice(&mut self, choice: u32, mut delta: Map<String, Value>, finish: Value) -> Value {
        if self.legacy {
            let text = delta.remove("content").unwrap_or_else(|| "".into());
            return json!([{"index": choice, "text": text, "logprobs": null, "finish_reason": finish}]);
        }
        if !self.roles_sent.contains(&choice) {
            self.roles_sent.push(choice);
            delta.insert("role".into(), "assistant".into());
        }
        json!([{"index": choice, "delta": delta, "logprobs": null, "finish_reason": finish}])
    }

    /// The guards' events as chunks, consecutive text of one choice in one chunk.
    pub fn write(&mut self, events: Vec<AnswerEvent>) -> Vec<String> {
        let mut chunks = Vec::new();
        let mut text: Option<(u32, String)> = None;
        for event in events {
            match (&mut text, event) {
                (Some((c, t)), AnswerEvent::Text(delta)) if *c == delta.choice => {
                    t.push_str(&delta.text)
                }
                (_, event) => {
                    if let Some((choice, t)) = text.take() {
                        chunks.push(self.text_chunk(choice, t));
                    }
                    match event {
                        AnswerEvent::Text(delta) => text = Some((delta.choice, delta.text)),
                        AnswerEvent::ToolCall(call) => {
                            let mut function = Map::new();
                            if let Some(name) = call.name {
                                function.insert("name".into(), name.into());
                            }
                            function.insert("arguments".into(), call.arguments.into());
                            let mut item = Map::new();
                            item.insert("index".into(), call.index.into());
                            if let Some(id) = call.id {
                                item.insert("id".into(), id.into());
                                item.insert("type".into(), "function".into());
                            }
                            item.insert("function".into(), Value::Object(function));
                            let mut delta = Map::new();
                            delta.insert("tool_calls".into(), json!([item]));
                            let choices = self.choice(call.choice, delta, Value::Null);
                            chunks.push(self.chunk(choices, None));
                        }
                        AnswerEvent::Stop(stop) => {
                            let choices = self.choice(stop.choice, Map::new(), stop.reason.into());
                            chunks.push(self.chunk(choices, None));
                        }
                        AnswerEvent::Usage(usage) => {
                            let raw = self.usage.clone().unwrap_or_else(|| {
                                json!({
                                    "prompt_tokens": usage.input_tokens,
                                    "completion_tokens": usage.output_tokens,
                                    "total_tokens": usage.input_tokens + usage.output_tokens,
                                })
                            });
                            chunks.push(self.chunk(json!([]), Some(raw)));
                        }
                    }
                }
            }
        }
        if let Some((choice, t)) = text {
            chunks.push(self.text_chunk(choice, t));
        }
        chunks
    }

    fn text_chunk(&mut self, choice: u32, text: String) -> String {
        let mut delta = Map::new();
        delta.insert("content".into(), text.into());
        let choices = self.choice(choice, delta, Value::Null);
        self.chunk(choices, None)
    }
}

/// A whole `chat.completion` as events: each choice's text, tool calls and stop.
pub fn read_completion(completion: &Value) -> Vec<AnswerEvent> {
    if completion.get("choices").is_none() {
        return read_transcript(completion);
    }
    let mut events = Vec::new();
    for (n, choice) in completion
        .get("choices")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let index = choice_index(choice).unwrap_or(u32::try_from(n).unwrap_or(0));
        let message = choice.get("message");
        // A legacy completion's choice carries its text itself.
        let text = (message.and_then(|m| m.get("content")))
            .or_else(|| choice.get("text"))
            .and_then(Value::as_str);
        if let Some(text) = text {
            events.push(AnswerEvent::Text(TextDelta {
                choice: index,
                text: text.to_owned(),
            }));
        }
        let calls = message
            .and_then(|m| m.get("tool_calls"))
            .and_then(Value::as_array);
        for (i, call) in calls.into_iter().flatten().enumerate() {
            let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
            events.push(AnswerEvent::ToolCall(ToolCallDelta {
                choice: index,
                index: u32::try_from(i).unwrap_or(u32::MAX),
                id: text(call.get("id")),
                name: text(call.pointer("/function/name")),
                arguments: text(call.pointer("/function/arguments")).unwrap_or_default(),
            }));
        }
        let reason = choice.get("finish_reason").and_then(Value::as_str);
        events.push(AnswerEvent::Stop(Stop {
            choice: index,
            reason: reason.unwrap_or("stop").to_owned(),
        }));
    }
    events
}

/// Puts the guards' events back into `completion`: each choice's content is the text released
/// for it, each tool call's arguments what was released for it.
pub fn write_completion(completion: &mut Value, events: &[AnswerEvent]) {
    let released = |index: u32| -> String {
        (events.iter())
            .filter_map(|e| match e {
                AnswerEvent::Text(t) if t.choice == index => Some(t.text.as_str()),
                _ => None,
            })
            .collect()
    };
    let Some(choices) = completion.get_mut("choices").and_then(Value::as_array_mut) else {
        return write_transcript(completion, released);
    };
    for (n, choice) in choices.iter_mut().enumerate() {
        let index = choice_index(choice).unwrap_or(u32::try_from(n).unwrap_or(0));
        if choice.get("text").is_some_and(Value::is_string) {
            choice["text"] = released(index).into();
        }
        let Some(Value::Object(message)) = choice.get_mut("message") else {
            continue;
        };
        withhold(message);
        if message.get("content").is_some_and(Value::is_string) {
            message.insert("content".into(), released(index).into());
        }
        if let Some(Value::Array(calls)) = message.get_mut("tool_calls") {
            for (i, call) in calls.iter_mut().enumerate() {
                let arguments: String = (events.iter())
                    .filter_map(|e| match e {
                        AnswerEvent::ToolCall(c)
                            if c.choice == index && usize::try_from(c.index) == Ok(i) =>
                        {
                            Some(c.arguments.as_str())
                        }
                        _ => None,
                    })
                    .collect();
                if let Some(Value::Object(function)) = call.get_mut("function") {
                    function.insert("arguments".into(), arguments.into());
                }
            }
        }
    }
}

/// A transcription's or translation's text (`json`, `verbose_json`) as the events of choice 0,
/// and each segment's as those of choice 1, 2, ...
fn read_transcript(transcript: &Value) -> Vec<AnswerEvent> {
    let segments = transcript.get("segments").and_then(Value::as_array);
    let texts = std::iter::once(transcript.get("text"))
        .chain(segments.into_iter().flatten().map(|s| s.get("text")));
    let mut events = Vec::new();
    for (n, text) in texts.enumerate() {
        let Some(text) = text.and_then(Value::as_str) else {
            continue;
        };
        let choice = u32::try_from(n).unwrap_or(u32::MAX);
        events.push(AnswerEvent::Text(TextDelta {
            choice,
            text: text.to_owned(),
        }));
        events.push(AnswerEvent::Stop(Stop {
            choice,
            reason: "stop".to_owned(),
        }));
    }
    events
}

/// Puts the guards' events back into a transcript ([`read_transcript`]). Its `words` are
/// dropped when a text changed: a value split across words is no guard's to find.
fn write_transcript(transcript: &mut Value, released: impl Fn(u32) -> String) {
    let mut changed = false;
    let mut put = |slot: Option<&mut Value>, choice: usize| {
        if let Some(slot) = slot.filter(|s| s.is_string()) {
            let text = released(u32::try_from(choice).unwrap_or(u32::MAX));
            changed |= slot.as_str() != Some(text.as_str());
            *slot = text.into();
        }
    };
    put(transcript.get_mut("text"), 0);
    if let Some(Value::Array(segments)) = transcript.get_mut("segments") {
        for (n, segment) in segments.iter_mut().enumerate() {
            put(segment.get_mut("text"), n + 1);
        }
    }
    if changed && let Value::Object(fields) = transcript {
        fields.remove("words");
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A reasoning model's thoughts have no guard event: a guarded answer, streamed or whole,
    /// goes on without them rather than with them unchecked.
    #[test]
    fn reasoning_is_withheld_from_a_guarded_answer() {
        let mut template = Template::default();
        let chunks = vec![
            r#"{"id":"c1","object":"chat.completion.chunk","created":7,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"the card is 4111 1111 1111 1111"},"finish_reason":null}]}"#.to_owned(),
            r#"{"id":"c1","object":"chat.completion.chunk","created":7,"model":"m","choices":[{"index":0,"delta":{"reasoning":"so 4111"},"finish_reason":null}]}"#.to_owned(),
        ];
        let (events, plain) = read_chunks(&mut template, chunks);
        assert!(events.is_empty());
        assert_eq!(plain.len(), 2);
        for chunk in &plain {
            assert!(!chunk.contains("4111"), "{chunk}");
        }
        assert!(plain[0].contains(r#""role":"assistant""#), "{}", plain[0]);

        let mut completion = json!({"choices": [{"index": 0, "finish_reason": "stop", "message":
            {"role": "assistant", "content": "ok", "reasoning_content": "4111 1111 1111 1111"}}]});
        let events = read_completion(&completion);
        write_completion(&mut completion, &events);
        assert!(!completion.to_string().contains("4111"), "{completion}");
        assert_eq!(completion["choices"][0]["message"]["content"], "ok");
    }

    #[test]
    fn chunks_read_into_events_are_written_back_with_the_streams_identity() {
        let mut template = Template::default();
        let chunks = vec![
            r#"{"id":"c1","object":"chat.completion.chunk","created":7,"model":"m","system_fingerprint":"fp","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#.to_owned(),
            r#"{"id":"c1","object":"chat.completion.chunk","created":7,"model":"m","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}"#.to_owned(),
            r#"{"id":"c1","object":"chat.completion.chunk","created":7,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"t","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}"#.to_owned(),
            r#"{"id":"c1","object":"chat.completion.chunk","created":7,"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}"#.to_owned(),
        ];
        let (events, plain) = read_chunks(&mut template, chunks);
        assert_eq!(plain.len(), 1, "the role chunk goes as it is");
        assert_eq!(events.len(), 4);
        let written: Vec<Value> = template
            .write(events)
            .iter()
            .map(|c| serde_json::from_str(c).unwrap())
            .collect();
        assert_eq!(written[0]["choices"][0]["delta"], json!({"content": "Hi"}));
        assert_eq!(written[0]["system_fingerprint"], "fp");
        assert_eq!(
            written[1]["choices"][0]["delta"]["tool_calls"][0]["function"]["name"],
            "f"
        );
        assert_eq!(written[2]["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(written[3]["usage"]["total_tokens"], 5);
    }

    #[test]
    fn a_completion_goes_through_events_and_back() {
        let mut completion = json!({"choices":[{"index":0,"message":{"role":"assistant","content":"a b",
            "tool_calls":[{"id":"t","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}}]},
            "finish_reason":"tool_calls"}]});
        let mut events = read_completion(&completion);
        if let AnswerEvent::Text(t) = &mut events[0] {
            t.text = "[X]".into();
        }
        write_completion(&mut completion, &events);
        assert_eq!(completion["choices"][0]["message"]["content"], "[X]");
        assert_eq!(
            completion["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
            "{\"x\":1}"
        );
    }

    #[test]
    fn a_legacy_completion_s_text_is_read_and_written_back() {
        let mut whole = json!({"object": "text_completion",
            "choices": [{"index": 0, "text": "Once upon", "finish_reason": "length"}]});
        let events = read_completion(&whole);
        assert!(matches!(&events[0], AnswerEvent::Text(t) if t.text == "Once upon"));
        let released = vec![AnswerEvent::Text(TextDelta {
            choice: 0,
            text: "Once [TALE]".into(),
        })];
        write_completion(&mut whole, &released);
        assert_eq!(whole["choices"][0]["text"], "Once [TALE]");

        let mut template = Template::default();
        let chunk = json!({"id": "cmpl-1", "object": "text_completion", "created": 1,
            "model": "m", "choices": [{"index": 0, "text": " upon", "logprobs": null,
            "finish_reason": null}]});
        let (events, plain) = read_chunks(&mut template, vec![chunk.to_string()]);
        assert!(plain.is_empty());
        let written: Value = serde_json::from_str(&template.write(events)[0]).unwrap();
        assert_eq!(written["object"], "text_completion");
        assert_eq!(written["choices"][0]["text"], " upon");
        assert!(written["choices"][0].get("delta").is_none(), "{written}");
    }

    #[test]
    fn a_transcript_s_text_and_segments_are_read_and_its_words_dropped_when_changed() {
        let mut transcript = json!({"text": "Hello there", "words": [{"word": "Hello"}],
            "segments": [{"id": 0, "text": "Hello there"}]});
        let events = read_completion(&transcript);
        let texts: Vec<&str> = (events.iter())
            .filter_map(|e| match e {
                AnswerEvent::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(texts, ["Hello there", "Hello there"]);
        let same = transcript.clone();
        write_completion(&mut transcript, &events);
        assert_eq!(transcript, same, "unchanged when nothing changed");
        let released: Vec<AnswerEvent> = (0..2)
            .map(|choice| {
                AnswerEvent::Text(TextDelta {
                    choice,
                    text: "[X] there".into(),
                })
            })
            .collect();
        write_completion(&mut transcript, &released);
        assert_eq!(transcript["text"], "[X] there");
        assert_eq!(transcript["segments"][0]["text"], "[X] there");
        assert!(transcript.get("words").is_none());
    }
}
