//! The gateway's own compaction item. OpenAI's `POST /v1/responses/compact` answers with the
//! conversation's user messages and one `compaction` item whose `encrypted_content` only OpenAI
//! can read; for a target without that endpoint the Responses dialect writes the summary itself,
//! into a `compaction` item of the same shape whose content begins with [`MARK`]. Wherever such
//! an item goes next it is turned back into a message: by the dialect when it translates a
//! request, and by a provider passing a Responses body through to an upstream that serves the
//! API itself ([`expand`]), which would refuse content it did not seal.
//!
//! Reference: <https://platform.openai.com/docs/api-reference/responses/compact>.

use serde_json::{Map, Value, json};

/// What a gateway compaction item's `encrypted_content` begins with; the summary follows, as
/// written. Versioned, so that a later form can still read items written by this one.
pub const MARK: &str = "wasmgate.compaction.v1:";

/// How the summary is put before the model that continues the conversation.
pub const SUMMARY_INTRO: &str =
    "A summary of the conversation so far, written when its context was compacted:\n\n";

/// A gateway compaction item carrying `summary`.
pub fn item(id: &str, summary: &str) -> Value {
    json!({"id": id, "type": "compaction", "encrypted_content": format!("{MARK}{summary}")})
}

/// The summary a compaction item's `encrypted_content` carries, if the gateway wrote it.
pub fn summary(encrypted_content: &str) -> Option<&str> {
    encrypted_content.strip_prefix(MARK)
}

/// The text the model reads in place of a gateway compaction item.
pub fn text(summary: &str) -> String {
    format!("{SUMMARY_INTRO}{summary}")
}

/// The input message a gateway compaction item stands for: its summary, said by the user.
pub fn message(summary: &str) -> Value {
    json!({
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": text(summary)}],
    })
}

/// A Responses request body (`input` a list of items) with each gateway compaction item turned
/// into the message it stands for; `None` when it has none (or is not a JSON object), so that a
/// body without any goes on byte for byte.
pub fn expand(body: &str) -> Option<String> {
    // Cheap pre-check: nearly every body has none.
    if !body.contains(MARK) {
        return None;
    }
    let mut object: Map<String, Value> = serde_json::from_str(body).ok()?;
    let items = object.get_mut("input")?.as_array_mut()?;
    let mut expanded = false;
    for item in items.iter_mut() {
        let carried = (item["type"] == "compaction")
            .then(|| item["encrypted_content"].as_str().and_then(summary))
            .flatten()
            .map(message);
        if let Some(message) = carried {
            *item = message;
            expanded = true;
        }
    }
    expanded.then(|| Value::Object(object).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_item_reads_back_as_its_summary_and_expands_into_a_message() {
        let made = item("cmp_1", "Ada lives in Paris.");
        let content = made["encrypted_content"].as_str().unwrap();
        assert_eq!(summary(content), Some("Ada lives in Paris."));
        assert_eq!(summary("gAAAAAB0123"), None);
        let body = json!({
            "model": "gpt-4.1",
            "input": [{"role": "user", "content": "Hi"}, made, {"type": "compaction", "encrypted_content": "gAAAAAB0123"}],
        })
        .to_string();
        let expanded: Value = serde_json::from_str(&expand(&body).unwrap()).unwrap();
        assert_eq!(
            expanded["input"][0],
            json!({"role": "user", "content": "Hi"})
        );
        assert_eq!(expanded["input"][1], message("Ada lives in Paris."));
        assert_eq!(
            expanded["input"][1]["content"][0]["text"],
            text("Ada lives in Paris.")
        );
        // Another's compaction item is left to its maker.
        assert_eq!(expanded["input"][2]["encrypted_content"], "gAAAAAB0123");
        assert_eq!(expanded["model"], "gpt-4.1");
    }

    #[test]
    fn a_body_without_the_gateways_items_is_left_as_it_is() {
        assert_eq!(expand(r#"{"model":"m","input":"Hi"}"#), None);
        let foreign = r#"{"input":[{"type":"compaction","encrypted_content":"gAAAAAB0"}]}"#;
        assert_eq!(expand(foreign), None);
        // The mark in a message's text is a text, not an item.
        let quoted = format!(r#"{{"input":[{{"role":"user","content":"{MARK}x"}}]}}"#);
        assert_eq!(expand(&quoted), None);
    }
}
