//! A stream's canonical chunks assembled, as they pass, into the completion they make.

use serde_json::{Map, Value, json};

use super::head::HEAD;

/// Assembles a stream's canonical chunks into the completion they make, or gives up (and then
/// nothing is kept) on what it cannot rebuild exactly or past `limit` bytes of chunks.
pub struct Assembler {
    limit: usize,
    seen: usize,
    head: Map<String, Value>,
    choices: Vec<Choice>,
    usage: Option<Value>,
    given_up: bool,
}

#[derive(Default)]
struct Choice {
    role: Option<String>,
    content: Option<String>,
    reasoning: Option<String>,
    refusal: Option<String>,
    tool_calls: Vec<Map<String, Value>>,
    finish_reason: Option<Value>,
}

/// Choices a stream may have (`n`), at most.
const CHOICES_MAX: usize = 128;

impl Assembler {
    pub fn new(limit: usize) -> Self {
        Self {
            limit,
            seen: 0,
            head: Map::new(),
            choices: Vec::new(),
            usage: None,
            given_up: false,
        }
    }

    pub fn given_up(&self) -> bool {
        self.given_up
    }

    /// Takes in the next canonical chunks.
    pub fn push(&mut self, events: &[String]) {
        for event in events {
            if self.given_up {
                return;
            }
            self.seen += event.len();
            if self.seen > self.limit || self.take(event).is_none() {
                self.give_up();
            }
        }
    }

    fn give_up(&mut self) {
        self.given_up = true;
        self.choices = Vec::new();
        self.head = Map::new();
    }

    fn take(&mut self, event: &str) -> Option<()> {
        let Value::Object(mut chunk) = serde_json::from_str::<Value>(event).ok()? else {
            return None;
        };
        if let Some(usage) = chunk.remove("usage").filter(|u| !u.is_null()) {
            self.usage = Some(usage);
        }
        let Value::Array(choices) = chunk.remove("choices").unwrap_or(Value::Array(Vec::new()))
        else {
            return None;
        };
        for key in HEAD {
            if let Some(value) = chunk.remove(key) {
                self.head.entry(key).or_insert(value);
            }
        }
        chunk.remove("object");
        for choice in choices {
            self.choice(choice)?;
        }
        Some(())
    }

    fn choice(&mut self, choice: Value) -> Option<()> {
        let Value::Object(mut choice) = choice else {
            return None;
        };
        let index = usize::try_from(choice.get("index")?.as_u64()?).ok()?;
        if index >= CHOICES_MAX {
            return None;
        }
        if self.choices.len() <= index {
            self.choices.resize_with(index + 1, Choice::default);
        }
        let slot = &mut self.choices[index];
        // Log probabilities are not kept: a stream that carries them is not cached.
        if choice.get("logprobs").is_some_and(|l| !l.is_null()) {
            return None;
        }
        if let Some(reason) = choice.remove("finish_reason").filter(|r| !r.is_null()) {
            slot.finish_reason = Some(reason);
        }
        let Some(Value::Object(delta)) = choice.remove("delta") else {
            return Some(());
        };
        for (name, value) in delta {
            match (name.as_str(), value) {
                (_, Value::Null) => {}
                ("role", Value::String(role)) => slot.role = Some(role),
                ("content", Value::String(text)) => append(&mut slot.content, &text),
                ("reasoning_content", Value::String(text)) => append(&mut slot.reasoning, &text),
                ("refusal", Value::String(text)) => append(&mut slot.refusal, &text),
                ("tool_calls", Value::Array(calls)) => {
                    for call in calls {
                        tool_call(&mut slot.tool_calls, call)?;
                    }
                }
                // Something this assembler cannot put back as it was.
                _ => return None,
            }
        }
        Some(())
    }

    /// The completion the stream made, if it was taken in whole and every choice finished.
    pub fn finish(self) -> Option<String> {
        if self.given_up
            || self.choices.is_empty()
            || self.choices.iter().any(|c| c.finish_reason.is_none())
        {
            return None;
        }
        let mut body = self.head;
        body.insert("object".to_owned(), Value::from("chat.completion"));
        let choices = self
            .choices
            .into_iter()
            .enumerate()
            .map(|(index, c)| {
                let mut message = Map::new();
                message.insert(
                    "role".to_owned(),
                    Value::from(c.role.unwrap_or_else(|| "assistant".to_owned())),
                );
                message.insert(
                    "content".to_owned(),
                    c.content.map_or(Value::Null, Value::from),
                );
                if let Some(reasoning) = c.reasoning {
                    message.insert("reasoning_content".to_owned(), Value::from(reasoning));
                }
                if let Some(refusal) = c.refusal {
                    message.insert("refusal".to_owned(), Value::from(refusal));
                }
                if !c.tool_calls.is_empty() {
                    let calls = c.tool_calls.into_iter().map(Value::Object).collect();
                    message.insert("tool_calls".to_owned(), Value::Array(calls));
                }
                json!({
                    "index": index,
                    "message": message,
                    "logprobs": null,
                    "finish_reason": c.finish_reason,
                })
            })
            .collect();
        body.insert("choices".to_owned(), Value::Array(choices));
        if let Some(usage) = self.usage {
            body.insert("usage".to_owned(), usage);
        }
        Some(Value::Object(body).to_string())
    }
}

fn append(slot: &mut Option<String>, text: &str) {
    slot.get_or_insert_with(String::new).push_str(text);
}

/// Adds one tool-call delta: the first for an index names the call, later ones extend its
/// arguments.
fn tool_call(calls: &mut Vec<Map<String, Value>>, delta: Value) -> Option<()> {
    let Value::Object(mut delta) = delta else {
        return None;
    };
    let index = usize::try_from(delta.remove("index")?.as_u64()?).ok()?;
    if index > calls.len() || index >= CHOICES_MAX {
        return None;
    }
    if index == calls.len() {
        calls.push(Map::new());
    }
    let call = &mut calls[index];
    for (name, value) in delta {
        match (name.as_str(), value) {
            ("function", Value::Object(function)) => {
                let Value::Object(into) = call
                    .entry("function")
                    .or_insert_with(|| json!({"name": "", "arguments": ""}))
                else {
                    return None;
                };
                for (field, part) in function {
                    let Value::String(part) = part else {
                        continue;
                    };
                    let slot = into.entry(field).or_insert_with(|| Value::from(""));
                    let Value::String(text) = slot else {
                        return None;
                    };
                    text.push_str(&part);
                }
            }
            (_, Value::Null) => {}
            ("id" | "type", value) => {
                call.insert(name, value);
            }
            _ => return None,
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::cache::answer::{cacheable, chunks};

    const STREAM: &[&str] = &[
        r#"{"id":"c1","object":"chat.completion.chunk","created":5,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
        r#"{"id":"c1","object":"chat.completion.chunk","created":5,"model":"m","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}"#,
        r#"{"id":"c1","object":"chat.completion.chunk","created":5,"model":"m","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":null}]}"#,
        r#"{"id":"c1","object":"chat.completion.chunk","created":5,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\""}}]},"finish_reason":null}]}"#,
        r#"{"id":"c1","object":"chat.completion.chunk","created":5,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]},"finish_reason":null}]}"#,
        r#"{"id":"c1","object":"chat.completion.chunk","created":5,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        r#"{"id":"c1","object":"chat.completion.chunk","created":5,"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}"#,
    ];

    fn events(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_stream_assembles_into_its_completion_and_back() {
        let mut assembler = Assembler::new(1 << 20);
        assembler.push(&events(STREAM));
        let completion = assembler.finish().expect("assembled");
        let body: Value = serde_json::from_str(&completion).unwrap();
        assert_eq!(body["object"], "chat.completion");
        let message = &body["choices"][0]["message"];
        assert_eq!(message["content"], "Hello");
        assert_eq!(
            message["tool_calls"][0]["function"]["arguments"],
            "{\"a\":1}"
        );
        assert_eq!(message["tool_calls"][0]["id"], "call_1");
        assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(body["usage"]["total_tokens"], 7);
        assert!(cacheable(&completion));

        // Replayed and assembled again: the same completion.
        let replayed = chunks(&completion).unwrap();
        assert!(replayed.last().unwrap().contains("\"choices\":[]"));
        let mut again = Assembler::new(1 << 20);
        again.push(&replayed);
        assert_eq!(again.finish().unwrap(), completion);
    }

    #[test]
    fn an_unfinished_or_oversized_stream_is_not_kept() {
        let mut cut = Assembler::new(1 << 20);
        cut.push(&events(&STREAM[..3]));
        assert!(cut.finish().is_none(), "no finish reason");
        let mut big = Assembler::new(200);
        big.push(&events(STREAM));
        assert!(big.given_up());
        assert!(big.finish().is_none());
        let mut odd = Assembler::new(1 << 20);
        odd.push(&events(&[
            r#"{"id":"c","choices":[{"index":0,"delta":{"audio":{"id":"a"}},"finish_reason":null}]}"#,
        ]));
        assert!(odd.given_up(), "an unknown delta field");
    }
}
