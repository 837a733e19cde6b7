//! The socket's memory of its last response, as the reference keeps one on the connection: a
//! turn that sends `store: false` and `previous_response_id` naming the last response sends
//! only its new input (Codex does), and no store upstream has the response it names. The turn
//! is then sent with the last response's context (its input and its output) before its own
//! input, and without `previous_response_id`: what an upstream over HTTP needs to answer it.
//!
//! Only the last response is kept, as the reference keeps it, and only while its context stays
//! within `server.max_body_bytes`; past that, or for a turn that names another response, the
//! turn goes as it came (a client that gets `previous_response_not_found` sends its whole
//! context, as the reference asks).

use serde_json::{Map, Value, json};

use crate::pipeline::forward::socket::Chained;

/// The last response of the socket.
#[derive(Debug, Default)]
pub struct Chain {
    last: Option<Kept>,
    /// Bytes of context kept at most.
    max_bytes: usize,
}

#[derive(Debug)]
struct Kept {
    id: String,
    context: Vec<Value>,
}

/// A turn's input as it was sent upstream, kept until its response completes.
#[derive(Debug, Default)]
pub struct Sent {
    input: Option<Vec<Value>>,
}

impl Chain {
    pub fn new(max_bytes: usize) -> Self {
        Self {
            last: None,
            max_bytes,
        }
    }

    /// Puts the last response's context before the input of `body` (a `response.create`'s,
    /// as a `POST` body) when it names that response and stores nothing; what the turn sent,
    /// for [`Chain::completed`], and how it was expanded (for an upstream socket that holds
    /// the response, which takes the turn as it came).
    pub fn expand(&self, body: &mut Map<String, Value>) -> (Sent, Option<Chained>) {
        let unstored = body.get("store") == Some(&Value::Bool(false));
        if !unstored {
            return (Sent::default(), None);
        }
        let input = items(body.get("input"));
        let named = body.get("previous_response_id").and_then(Value::as_str);
        let Some(input) = input else {
            return (Sent::default(), None);
        };
        let (input, chained) = match (&self.last, named) {
            (Some(last), Some(named)) if last.id == named => {
                body.remove("previous_response_id");
                let chained = Chained {
                    previous: last.id.clone(),
                    prefix: last.context.len(),
                };
                let mut all = last.context.clone();
                all.extend(input);
                body.insert("input".to_owned(), Value::Array(all.clone()));
                (all, Some(chained))
            }
            // It names a response this socket does not hold: the upstream answers for it.
            (_, Some(_)) => return (Sent::default(), None),
            (_, None) => (input, None),
        };
        (Sent { input: Some(input) }, chained)
    }

    /// Keeps the response of a `response.completed` event (`event`, its JSON) with the input
    /// `sent`, in place of the last.
    pub fn completed(&mut self, sent: Sent, event: &Value) {
        self.last = None;
        let (Some(mut context), Some(id), Some(output)) = (
            sent.input,
            event.pointer("/response/id").and_then(Value::as_str),
            event.pointer("/response/output").and_then(Value::as_array),
        ) else {
            return;
        };
        context.extend(output.iter().cloned());
        let bytes: usize = context.iter().map(|item| item.to_string().len()).sum();
        if bytes <= self.max_bytes {
            self.last = Some(Kept {
                id: id.to_owned(),
                context,
            });
        }
    }
}

/// A Responses `input` as items (a string is one user message); `None` for any other shape.
fn items(input: Option<&Value>) -> Option<Vec<Value>> {
    match input {
        None => Some(Vec::new()),
        Some(Value::String(text)) => Some(vec![
            json!({"type": "message", "role": "user", "content": text}),
        ]),
        Some(Value::Array(items)) => Some(items.clone()),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn body(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    fn completed(id: &str, text: &str) -> Value {
        json!({"type": "response.completed", "response": {"id": id, "output": [
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}]}})
    }

    #[test]
    fn an_unstored_turn_naming_the_last_response_gets_its_context() {
        let mut chain = Chain::new(1 << 20);
        let mut first = body(json!({"model": "m", "store": false, "input": "hi"}));
        let (sent, chained) = chain.expand(&mut first);
        assert_eq!(first["input"], "hi", "a first turn goes as it came");
        assert_eq!(chained, None);
        chain.completed(sent, &completed("resp_1", "hello"));

        let mut next = body(
            json!({"model": "m", "store": false, "previous_response_id": "resp_1",
            "input": [{"type": "function_call_output", "call_id": "c", "output": "42"}]}),
        );
        let (sent, chained) = chain.expand(&mut next);
        assert!(!next.contains_key("previous_response_id"));
        assert_eq!(
            chained,
            Some(Chained {
                previous: "resp_1".to_owned(),
                prefix: 2
            })
        );
        let input = next["input"].as_array().unwrap();
        assert_eq!(input.len(), 3);
        assert_eq!(input[0]["content"], "hi");
        assert_eq!(input[1]["role"], "assistant");
        assert_eq!(input[2]["type"], "function_call_output");
        chain.completed(sent, &completed("resp_2", "done"));
        assert_eq!(chain.last.as_ref().unwrap().context.len(), 4);

        // Another response, a stored one, or a failed turn: as it came.
        for mut other in [
            body(json!({"store": false, "previous_response_id": "resp_9", "input": "x"})),
            body(json!({"previous_response_id": "resp_2", "input": "x"})),
        ] {
            let before = other.clone();
            chain.expand(&mut other);
            assert_eq!(other, before);
        }
        chain.completed(Sent::default(), &completed("resp_3", "x"));
        assert!(
            chain.last.is_none(),
            "a turn it did not follow is forgotten"
        );
    }

    #[test]
    fn a_context_past_the_bound_is_not_kept() {
        let mut chain = Chain::new(64);
        let mut first = body(json!({"store": false, "input": "x".repeat(100)}));
        let (sent, _) = chain.expand(&mut first);
        chain.completed(sent, &completed("resp_1", "y"));
        assert!(chain.last.is_none());
    }
}
