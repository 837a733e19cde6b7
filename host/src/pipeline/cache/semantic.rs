//! The cache's semantic mode, after an exact miss: the request's last user turn is embedded by
//! the configured embeddings model (a request of its own through the route and attempt stages,
//! recorded in the ledger under the caller's project like any other), and compared with the
//! turns of earlier answers under the same exact scope: the exact key of everything else in the
//! request (project, model, system prompt, tools, sampling, every field that shapes an answer),
//! so that only the last turn's wording may differ. A hit is the earlier answer's exact entry,
//! replayed as an exact hit is.

use std::time::Duration;

use http::HeaderMap;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::cache::key::{self, Key, Scope, Shape};
use crate::cache::vectors::Nearest;
use crate::config::cache::SemanticConfig;
use crate::error::Dialect;
use crate::pipeline::attempt::Sent;
use crate::pipeline::context::{Context, Incoming};
use crate::pipeline::finish::End;
use crate::pipeline::request::ClientRequest;
use crate::pipeline::route::{self, Answered};
use crate::plugins::Operation;
use crate::state::AppState;

/// The conversation's field in each dialect: Chat Completions' and Messages' `messages`,
/// Responses' `input`, Google's `contents`.
const CONVERSATION: &[&str] = &["messages", "input", "contents"];

/// A request as the semantic mode sees it: the scope it may hit under, and its last user turn.
pub struct Probe {
    pub scope: String,
    pub text: String,
}

/// Why a request is not looked up semantically (it is still looked up exactly).
#[derive(Debug, PartialEq, Eq)]
pub enum Skip {
    /// It carries tool results, and the config does not allow them.
    ToolResults,
    /// It has no last user turn made of text alone (images, files, none at all).
    NoTextTurn,
    /// Its last user turn is longer than `max_text_bytes`.
    TooLong,
}

/// The probe of a request with the top-level `fields` (as its exact key was made of them) under
/// `scope` and `shape`. `canonical` is its Chat Completions form, where tool results look alike
/// in every dialect.
pub fn probe<'f>(
    config: &SemanticConfig,
    scope: &Scope<'_>,
    shape: &Shape<'_>,
    fields: impl Iterator<Item = (&'f str, &'f RawValue)>,
    canonical: &ClientRequest,
) -> Result<Probe, Skip> {
    if !config.tool_results && carries_tool_results(canonical) {
        return Err(Skip::ToolResults);
    }
    let fields: Vec<(&str, &RawValue)> = fields.collect();
    let (name, conversation) = fields
        .iter()
        .find(|(name, _)| CONVERSATION.contains(name))
        .ok_or(Skip::NoTextTurn)?;
    let conversation: Value =
        serde_json::from_str(conversation.get()).map_err(|_| Skip::NoTextTurn)?;
    let (rest, text) = split_last_turn(conversation).ok_or(Skip::NoTextTurn)?;
    if text.len() > config.max_text_bytes as usize {
        return Err(Skip::TooLong);
    }
    let rest = rest
        .map(|rest| serde_json::value::to_raw_value(&rest))
        .transpose()
        .map_err(|_| Skip::NoTextTurn)?;
    let operation = format!("semantic/{}", shape.operation);
    let shape = Shape {
        operation: &operation,
        target: shape.target,
        headers: shape.headers,
    };
    let without_turn = fields.iter().filter_map(|(field, raw)| {
        if field == name {
            rest.as_deref().map(|rest| (*field, rest))
        } else {
            Some((*field, *raw))
        }
    });
    let Key(scope) = key::key(scope, &shape, without_turn);
    Ok(Probe { scope, text })
}

/// Whether the canonical request has a `tool` message (a tool's result, in any dialect).
fn carries_tool_results(canonical: &ClientRequest) -> bool {
    canonical
        .fields()
        .find(|(name, _)| *name == "messages")
        .and_then(|(_, raw)| serde_json::from_str::<Vec<Value>>(raw.get()).ok())
        .is_some_and(|messages| messages.iter().any(|m| m["role"] == "tool"))
}

/// The conversation without its last user turn (`None` when nothing is left of it: a
/// Responses `input` given as one string) and that turn's text.
fn split_last_turn(conversation: Value) -> Option<(Option<Value>, String)> {
    match conversation {
        Value::String(text) => Some((None, text)),
        Value::Array(mut turns) => {
            let last = turns.iter().rposition(|t| t["role"] == "user")?;
            let text = turn_text(&turns[last])?;
            turns.remove(last);
            Some((Some(Value::Array(turns)), text))
        }
        _ => None,
    }
}

/// A user turn's text: its `content` string, or its parts (`content` or Google's `parts`) when
/// every one is text. `None` for a turn with anything else in it (an image changes what is
/// asked in a way its words do not show).
fn turn_text(turn: &Value) -> Option<String> {
    if let Some(text) = turn["content"].as_str() {
        return Some(text.to_owned());
    }
    let parts = turn["content"]
        .as_array()
        .or_else(|| turn["parts"].as_array())?;
    let mut text = String::new();
    for part in parts {
        let kind = part["type"].as_str().unwrap_or("text");
        if !matches!(kind, "text" | "input_text") {
            return None;
        }
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(part["text"].as_str()?);
    }
    (!text.is_empty()).then_some(text)
}

/// The embedding of `text` by `config.model`, through the gateway's own routing, as a request
/// of the caller's: its record is in the ledger (with `.embedding` after the request's id). It
/// is not admitted by the caller's limits: it is the gateway's lookup, not the client's
/// request. `None` when it failed or took longer than `timeout_ms`.
pub async fn embed(
    state: &AppState,
    cx: &Context,
    config: &SemanticConfig,
    text: &str,
) -> Option<Vec<f32>> {
    let body = serde_json::json!({ "model": config.model, "input": text }).to_string();
    let incoming = Incoming {
        dialect: Dialect::Chat,
        operation: Operation::Embeddings,
        request_id: format!("{}.embedding", cx.request_id),
        headers: HeaderMap::new(),
        body: axum::body::Body::empty(),
        edge: None,
        socket: None,
    };
    let mut sub = Context::new(state, &incoming);
    sub.gateway = std::sync::Arc::clone(&cx.gateway);
    sub.caller = cx.caller.clone();
    sub.request = match ClientRequest::parse(Operation::Embeddings, body.as_bytes()) {
        Ok(request) => request,
        Err(error) => {
            sub.finish(End::Failed(&error)).wait().await;
            return None;
        }
    };
    let timeout = Duration::from_millis(config.timeout_ms);
    // A timeout drops the sub-request's context: it is recorded as cancelled.
    let answered = tokio::time::timeout(timeout, route::route(state, &mut sub)).await;
    match answered {
        Ok(Ok(Answered {
            sent: Sent::Whole { body, usage, .. },
            ..
        })) => {
            sub.finish(End::Answered(usage)).wait().await;
            let vector = first_embedding(&body);
            if vector.is_none() {
                tracing::warn!("the semantic cache's embeddings model answered no vector");
            }
            vector
        }
        Ok(Ok(_)) => {
            tracing::warn!("the semantic cache's embeddings model answered in a form not known");
            None
        }
        Ok(Err(error)) => {
            tracing::warn!(
                "the semantic cache's embedding failed: {}",
                error.detail().message
            );
            sub.finish(End::Failed(&error)).wait().await;
            None
        }
        Err(_) => {
            tracing::warn!("the semantic cache's embedding took over {timeout:?}");
            None
        }
    }
}

/// `data[0].embedding` of an embeddings answer, as floats.
fn first_embedding(body: &str) -> Option<Vec<f32>> {
    #[derive(serde::Deserialize)]
    struct Answer {
        data: Vec<Datum>,
    }
    #[derive(serde::Deserialize)]
    struct Datum {
        embedding: Vec<f32>,
    }
    let answer: Answer = serde_json::from_str(body).ok()?;
    let vector = answer.data.into_iter().next()?.embedding;
    (!vector.is_empty()).then_some(vector)
}

/// The nearest earlier turn under `probe`'s scope, when it is at least `threshold` alike. A
/// store that fails is no hit (logged).
pub async fn nearest(
    state: &AppState,
    scope: &str,
    vector: &[f32],
    threshold: f32,
) -> Result<Option<Nearest>, String> {
    let Some(vectors) = &state.cache.vectors else {
        return Ok(None);
    };
    let found = vectors.nearest(scope, vector).await?;
    Ok(found.filter(|n| n.similarity >= threshold))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use serde_json::json;

    #[test]
    fn the_last_user_turn_is_taken_out_in_every_dialect() {
        let chat = json!([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
                          {"role": "assistant", "content": "Hello"}, {"role": "user", "content": "Capital of France?"}]);
        let (rest, text) = split_last_turn(chat).unwrap();
        assert_eq!(text, "Capital of France?");
        assert_eq!(rest.unwrap().as_array().unwrap().len(), 3);
        let messages = json!([{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]);
        assert_eq!(split_last_turn(messages).unwrap().1, "a\nb");
        let google = json!([{"role": "user", "parts": [{"text": "Hola"}]}]);
        assert_eq!(split_last_turn(google).unwrap().1, "Hola");
        let responses = json!("What is 2+2?");
        assert_eq!(
            split_last_turn(responses),
            Some((None, "What is 2+2?".to_owned()))
        );
        let image = json!([{"role": "user", "content": [{"type": "text", "text": "this?"},
                            {"type": "image_url", "image_url": {"url": "data:,"}}]}]);
        assert_eq!(split_last_turn(image), None, "an image is not words");
        assert_eq!(
            split_last_turn(json!([{"role": "system", "content": "x"}])),
            None
        );
    }

    #[test]
    fn the_first_embedding_is_read() {
        let body =
            r#"{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,-1]}]}"#;
        assert_eq!(first_embedding(body), Some(vec![0.5, -1.0]));
        assert_eq!(first_embedding(r#"{"data":[]}"#), None);
    }
}
