//! What is read of a native answer (a target that spoke the client's dialect, passed through):
//! its id, and whether it finished well enough to keep.

use serde_json::Value;

/// The id of a native answer: a whole one's `id`, or in a stream the id of the message
/// (`message_start`) or response (`response.created`) it opens with.
pub fn native_id(whole: Option<&str>, events: &[String]) -> Option<String> {
    if let Some(body) = whole {
        let value: Value = serde_json::from_str(body).ok()?;
        return value.get("id")?.as_str().map(str::to_owned);
    }
    let first: Value = serde_json::from_str(events.first()?).ok()?;
    ["message", "response"]
        .iter()
        .find_map(|k| first.get(*k)?.get("id")?.as_str().map(str::to_owned))
}

/// Whether a native whole answer finished: a Messages answer with its stop reason, a Responses
/// object `completed`.
pub fn native_cacheable(body: &str) -> bool {
    let Ok(value) = serde_json::from_str::<Value>(body) else {
        return false;
    };
    let message = value.get("type").and_then(Value::as_str) == Some("message")
        && value.get("stop_reason").is_some_and(|r| !r.is_null());
    let response = value.get("object").and_then(Value::as_str) == Some("response")
        && value.get("status").and_then(Value::as_str) == Some("completed");
    message || response
}

/// Whether a native stream finished well: it has the dialect's closing event of success.
pub fn native_stream_finished(events: &[String]) -> bool {
    events.iter().rev().take(4).any(|e| {
        serde_json::from_str::<Value>(e).is_ok_and(|v| {
            matches!(
                v.get("type").and_then(Value::as_str),
                Some("message_stop" | "response.completed")
            )
        })
    })
}
