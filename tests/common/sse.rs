//! Server-sent events as the dialect endpoints send them, parsed for assertions: each event's
//! `event:` name (if any) and its `data:` as JSON.

use serde_json::Value;

/// One event: its `event:` line, if it had one, and its data.
#[derive(Clone, Debug)]
pub struct Event {
    pub name: Option<String>,
    pub data: Value,
}

/// The events of a whole SSE body; panics on data that is not JSON (every event these
/// endpoints send is), so that a malformed stream fails the test that reads it.
pub fn events(body: &str) -> Vec<Event> {
    let mut events = Vec::new();
    for block in body.replace("\r\n", "\n").split("\n\n") {
        let mut name = None;
        let mut data = String::new();
        for line in block.lines() {
            if let Some(value) = line.strip_prefix("event:") {
                name = Some(value.trim().to_owned());
            } else if let Some(value) = line.strip_prefix("data:") {
                if !data.is_empty() {
                    data.push('\n');
                }
                data.push_str(value.strip_prefix(' ').unwrap_or(value));
            }
        }
        if data.is_empty() {
            continue;
        }
        let data: Value = serde_json::from_str(&data)
            .unwrap_or_else(|e| panic!("an event whose data is not JSON ({e}): {data}"));
        events.push(Event { name, data });
    }
    events
}

/// The `type` of each event's data, in order.
pub fn types(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| e.data["type"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Asserts every event names itself: `event:` equal to the data's `type`, as Anthropic and the
/// Responses API send them (and their SDKs dispatch on).
pub fn assert_named_by_type(events: &[Event]) {
    for event in events {
        assert_eq!(
            event.name.as_deref(),
            event.data["type"].as_str(),
            "an event whose `event:` is not its type: {event:?}"
        );
    }
}
