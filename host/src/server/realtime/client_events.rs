//! What the gateway reads of the client's events before they go upstream: the request guards
//! see the text a client writes into the conversation (`conversation.item.create`'s text parts
//! and transcripts, a function call's output or arguments, `session.update`'s and
//! `response.create`'s instructions, tool descriptions and input text),
//! rewritten in place when a guard redacts; each `response.create` passes the limit rules
//! first. Audio (`input_audio_buffer.append`'s base64) passes unread, as every other event.

use serde_json::Value;

use super::admission::{admit, ends_the_session};
use super::refusal::{error_event, event};
use super::upgraded::Session;
use crate::config::guards::BlindRoute;
use crate::error::ApiError;
use crate::pipeline::Context;
use crate::pipeline::guard::body::Detached;

/// What becomes of one client event.
pub enum Verdict {
    /// Sent on upstream as this text.
    Forward(String),
    /// Not sent: this `error` event goes to the client, and the session lives on.
    Refuse(String),
    /// Not sent: this `error` event goes to the client, then the session closes (a budget is
    /// spent).
    End(String),
    /// Sent on upstream: a `response.create` admitted, whose context waits for its response.
    Create {
        text: String,
        cx: Box<Context>,
        client_event: Option<String>,
    },
}

/// Reads the client's event `text`.
pub async fn inspect(session: &Session, detached: &mut Detached, text: String) -> Verdict {
    let mut event: Value = match serde_json::from_str(&text) {
        Ok(event @ Value::Object(_)) => event,
        Ok(_) | Err(_) => {
            return Verdict::Refuse(self::event(
                "invalid_request_error",
                Some("invalid_json"),
                None,
                "The message is not a JSON object.",
                None,
            ));
        }
    };
    let client_event = (event.get("event_id").and_then(Value::as_str)).map(str::to_owned);
    let kind = (event
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default())
    .to_owned();
    if let Some(error) = unread(session, &kind, &event) {
        return Verdict::Refuse(error_event(&error, client_event.as_deref()));
    }
    if let Err(error) = unheard(session, &kind, &event) {
        return Verdict::Refuse(error_event(&error, client_event.as_deref()));
    }
    let texts = text_paths(&kind, &event);
    let rewritten = match guard(session, detached, &mut event, &texts).await {
        Ok(rewritten) => rewritten,
        Err(error) => return Verdict::Refuse(error_event(&error, client_event.as_deref())),
    };
    let text = if rewritten { event.to_string() } else { text };
    if kind != "response.create" {
        return Verdict::Forward(text);
    }
    match admit(session.context()).await {
        Ok(cx) => Verdict::Create {
            text,
            cx: Box::new(cx),
            client_event,
        },
        Err(error) => {
            let sent = error_event(&error, client_event.as_deref());
            if ends_the_session(&error) {
                Verdict::End(sent)
            } else {
                Verdict::Refuse(sent)
            }
        }
    }
}

/// Refuses an event that asks for what the answer guards cannot read while one of them does
/// not exempt `realtime`: audio output (`output_modalities` of the session or a response;
/// a response asking for none is checked as it starts, see `answers`), or the upstream's own
/// copy of an item (`conversation.item.retrieve`), which an answer's rewrite never reached.
fn unread(session: &Session, kind: &str, event: &Value) -> Option<ApiError> {
    let guard = session.blind.as_deref()?;
    let modalities = match kind {
        "session.update" => event.pointer("/session/output_modalities"),
        "response.create" => event.pointer("/response/output_modalities"),
        _ => None,
    };
    let audio =
        (modalities.and_then(Value::as_array)).is_some_and(|m| m.iter().any(|m| m == "audio"));
    let what = match kind {
        _ if audio => "a realtime session's audio output",
        "conversation.item.retrieve" => "the upstream's copy of a realtime conversation's items",
        _ => return None,
    };
    Some(ApiError::GuardCannotInspect {
        guard: guard.to_owned(),
        what,
        route: BlindRoute::Realtime.name(),
    })
}

/// Refuses the client's audio (`input_audio_buffer.append`, or an item's `input_audio` part)
/// while a request guard applies whose entry does not exempt `realtime`: no guard can hear
/// it, as on the transcription routes. Its transcript is made upstream, past every guard.
fn unheard(session: &Session, kind: &str, event: &Value) -> Result<(), ApiError> {
    let Some(guards) = &session.guards else {
        return Ok(());
    };
    let audio = match kind {
        "input_audio_buffer.append" => true,
        "conversation.item.create" => (event.pointer("/item/content").and_then(Value::as_array))
            .is_some_and(|parts| parts.iter().any(|p| p["type"] == "input_audio")),
        _ => false,
    };
    if !audio {
        return Ok(());
    }
    guards.refuse_blind(
        &session.gateway,
        BlindRoute::Realtime,
        "a realtime session's input audio",
    )
}

/// The JSON pointers of the client's own text in an event of type `kind`.
fn text_paths(kind: &str, event: &Value) -> Vec<String> {
    let mut paths = Vec::new();
    let mut item = |at: &str, item: &Value| {
        // A tool's result the client hands back, or a call it writes into the conversation.
        for field in ["output", "arguments"] {
            if item.get(field).is_some_and(Value::is_string) {
                paths.push(format!("{at}/{field}"));
            }
        }
        let Some(parts) = item.get("content").and_then(Value::as_array) else {
            return;
        };
        for (i, part) in parts.iter().enumerate() {
            for field in ["text", "transcript"] {
                if part.get(field).is_some_and(Value::is_string) {
                    paths.push(format!("{at}/content/{i}/{field}"));
                }
            }
        }
    };
    match kind {
        "conversation.item.create" => {
            if let Some(found) = event.get("item") {
                item("/item", found);
            }
        }
        "response.create" => {
            let inputs = event.pointer("/response/input").and_then(Value::as_array);
            for (i, found) in inputs.into_iter().flatten().enumerate() {
                item(&format!("/response/input/{i}"), found);
            }
        }
        _ => {}
    }
    for at in ["/session/instructions", "/response/instructions"] {
        if event.pointer(at).is_some_and(Value::is_string) {
            paths.push(at.to_owned());
        }
    }
    // The tools' descriptions, as a chat request's are read.
    for at in ["/session/tools", "/response/tools"] {
        let tools = event.pointer(at).and_then(Value::as_array);
        for (i, tool) in tools.into_iter().flatten().enumerate() {
            if tool.get("description").is_some_and(Value::is_string) {
                paths.push(format!("{at}/{i}/description"));
            }
        }
    }
    paths
}

/// The texts at `paths` through the session's request guards, each rewrite written back;
/// whether one was rewritten.
async fn guard(
    session: &Session,
    detached: &mut Detached,
    event: &mut Value,
    paths: &[String],
) -> Result<bool, ApiError> {
    let Some(guards) = &session.guards else {
        return Ok(false);
    };
    if paths.is_empty() {
        return Ok(false);
    }
    let mut texts = Value::Array(
        (paths.iter())
            .map(|at| event.pointer(at).cloned().unwrap_or_default())
            .collect(),
    );
    let mut checker = detached.checker(&session.gateway);
    let rewritten = guards
        .check(&mut checker, (&session.model, "/v1/realtime"), &mut texts)
        .await?;
    if rewritten && let Value::Array(texts) = texts {
        for (at, text) in paths.iter().zip(texts) {
            if let Some(slot) = event.pointer_mut(at) {
                *slot = text;
            }
        }
    }
    Ok(rewritten)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_client_s_text_is_found_where_each_event_carries_it() {
        let item = json!({"type": "conversation.item.create", "item": {"type": "message",
            "role": "user", "content": [{"type": "input_text", "text": "a"},
            {"type": "input_audio", "audio": "AAAA", "transcript": "b"}]}});
        assert_eq!(
            text_paths("conversation.item.create", &item),
            ["/item/content/0/text", "/item/content/1/transcript"]
        );
        let session = json!({"type": "session.update", "session": {"instructions": "c"}});
        assert_eq!(
            text_paths("session.update", &session),
            ["/session/instructions"]
        );
        let create = json!({"type": "response.create", "response": {"instructions": "d",
            "input": [{"type": "message", "content": [{"type": "input_text", "text": "e"}]}]}});
        assert_eq!(
            text_paths("response.create", &create),
            ["/response/input/0/content/0/text", "/response/instructions"]
        );
        let output = json!({"type": "conversation.item.create", "item": {
            "type": "function_call_output", "call_id": "call_1", "output": "f"}});
        assert_eq!(
            text_paths("conversation.item.create", &output),
            ["/item/output"]
        );
        let tools = json!({"type": "session.update", "session": {"tools": [
            {"type": "function", "name": "lookup", "description": "g", "parameters": {}}]}});
        assert_eq!(
            text_paths("session.update", &tools),
            ["/session/tools/0/description"]
        );
        let audio = json!({"type": "input_audio_buffer.append", "audio": "AAAA"});
        assert!(text_paths("input_audio_buffer.append", &audio).is_empty());
    }
}
