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
//!
//! A warm-up (`generate: false`) is answered by the gateway itself ([`Chain::warmed`]): its
//! response is kept here too, with its input, and since no upstream or store holds it, a turn
//! naming it gets its context whatever its `store` says (and the response the warm-up named,
//! if the socket did not hold that one, as its `previous_response_id`).

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
    /// A warm-up the gateway answered itself: only this socket knows it.
    local: bool,
    /// The response a warm-up named that this socket did not hold (the upstream's), which a
    /// turn naming the warm-up names in its place.
    previous: Option<String>,
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
        let named = body.get("previous_response_id").and_then(Value::as_str);
        let names_warm_up =
            (self.last.as_ref()).is_some_and(|last| last.local && Some(last.id.as_str()) == named);
        if !unstored && !names_warm_up {
            return (Sent::default(), None);
        }
        let input = items(body.get("input"));
        let Some(input) = input else {
            return (Sent::default(), None);
        };
        let (input, chained) = match (&self.last, named) {
            (Some(last), Some(named)) if last.id == named => {
                match &last.previous {
                    Some(previous) => {
                        body.insert("previous_response_id".to_owned(), json!(previous));
                    }
                    None => {
                        body.remove("previous_response_id");
                    }
                }
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
        let sent = match unstored {
            true => Sent { input: Some(input) },
            // A stored turn after a warm-up: the upstream keeps its response.
            false => Sent::default(),
        };
        (sent, chained)
    }

    /// A warm-up (`body`, a `response.create` with `generate: false`) answered as response `id`
    /// by the gateway: kept as the last response, its context the input it sent (after the
    /// context of the response it named, when the socket holds that one).
    pub fn warmed(&mut self, id: &str, mut body: Map<String, Value>) {
        let named = (body.get("previous_response_id").and_then(Value::as_str)).map(str::to_owned);
        let held = (self.last.as_ref()).is_some_and(|last| Some(&last.id) == named.as_ref());
        let previous = (self.last.as_ref())
            .filter(|_| held)
            .and_then(|last| last.previous.clone())
            .or(named.filter(|_| !held));
        let context = match held {
            true => self.last.as_ref().map(|last| last.context.clone()),
            false => Some(Vec::new()),
        };
        self.last = None;
        let (Some(mut context), Some(input)) = (context, items(body.remove("input").as_ref()))
        else {
            return;
        };
        context.extend(input);
        self.keep(Kept {
            id: id.to_owned(),
            context,
            local: true,
            previous,
        });
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
        self.keep(Kept {
            id: id.to_owned(),
            context,
            local: false,
            previous: None,
        });
    }

    /// Keeps `kept` as the last response when its context is within the socket's bound.
    fn keep(&mut self, kept: Kept) {
        let bytes: usize = kept.context.iter().map(|item| item.to_string().len()).sum();
        if bytes <= self.max_bytes {
            self.last = Some(kept);
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
    fn a_warm_up_s_input_is_the_context_of_a_turn_naming_it_stored_or_not() {
        let mut chain = Chain::new(1 << 20);
        let warm = body(
            json!({"model": "m", "input": [{"role": "user", "content": "tools ready"}],
            "previous_response_id": "resp_upstream"}),
        );
        chain.warmed("resp_warm", warm);
        for store in [json!(true), json!(false)] {
            let mut next = body(json!({"model": "m", "store": store,
                "previous_response_id": "resp_warm", "input": "go"}));
            chain.expand(&mut next);
            let input = next["input"].as_array().unwrap();
            assert_eq!(input.len(), 2, "{next:?}");
            assert_eq!(input[0]["content"], "tools ready");
            // The response the warm-up named, which the socket does not hold, is named instead.
            assert_eq!(next["previous_response_id"], "resp_upstream");
        }
        // A warm-up after a kept response takes its context along.
        chain.completed(
            Sent {
                input: Some(vec![json!({"role": "user", "content": "hi"})]),
            },
            &completed("resp_1", "hello"),
        );
        chain.warmed(
            "resp_warm2",
            body(json!({"previous_response_id": "resp_1", "input": "more"})),
        );
        let mut next = body(json!({"previous_response_id": "resp_warm2", "input": "go"}));
        chain.expand(&mut next);
        assert!(!next.contains_key("previous_response_id"), "{next:?}");
        assert_eq!(next["input"].as_array().unwrap().len(), 4, "{next:?}");
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
