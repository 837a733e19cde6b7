//! What the store keeps for one key: the answer, its form, its usage and its times.

use serde_json::Value;

use crate::plugins::Usage;

/// What the store keeps for one key.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Entry {
    /// What `completion` (and `events`) hold.
    pub form: Form,
    /// The canonical chat completion (`object: chat.completion`), as the target's plugin wrote
    /// it; or, for a native answer, the dialect's own answer object.
    pub completion: String,
    /// A native stream's events, as the target sent them (their data).
    #[serde(default)]
    pub events: Vec<String>,
    /// A native answer's id, replaced by a fresh one in each replay.
    #[serde(default)]
    pub answer_id: Option<String>,
    pub usage: Option<StoredUsage>,
    /// The target that answered, named in the hit's headers and record.
    pub provider: String,
    pub model: String,
    /// When it was stored and until when it may be served (ms since the Unix epoch): the age a
    /// hit reports, and the TTL every store checks again on read.
    pub stored_ms: u64,
    pub expires_ms: u64,
}

/// How a kept answer was given, and so what it can answer. A canonical completion answers in
/// any form; a native answer (a target that spoke the client's dialect, passed through) answers
/// the same dialect (its key has the dialect in it) in the same form only: whole for whole,
/// streamed for streamed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Form {
    Canonical,
    NativeWhole,
    NativeStream,
}

impl Entry {
    /// Whether it answers a request that is (or is not) streamed.
    pub fn serves(&self, stream: bool) -> bool {
        match self.form {
            Form::Canonical => true,
            Form::NativeWhole => !stream,
            Form::NativeStream => stream,
        }
    }

    /// `text` with the kept answer's id replaced by `fresh`: an answer replayed is a new answer
    /// (a Responses id is kept under it, once).
    pub fn with_fresh_id(&self, text: &str, fresh: &str) -> String {
        match &self.answer_id {
            Some(old) if !old.is_empty() => {
                text.replace(&format!("\"{old}\""), &format!("\"{fresh}\""))
            }
            _ => text.to_owned(),
        }
    }
}

/// [`Usage`], as kept.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StoredUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_input_tokens: u64,
    pub cache_write_tokens: u64,
    pub reasoning_tokens: u64,
    pub images: u32,
}

impl From<Usage> for StoredUsage {
    fn from(u: Usage) -> Self {
        Self {
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            cached_input_tokens: u.cached_input_tokens,
            cache_write_tokens: u.cache_write_tokens,
            reasoning_tokens: u.reasoning_tokens,
            images: u.images,
        }
    }
}

impl From<StoredUsage> for Usage {
    fn from(u: StoredUsage) -> Self {
        Self {
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            cached_input_tokens: u.cached_input_tokens,
            cache_write_tokens: u.cache_write_tokens,
            reasoning_tokens: u.reasoning_tokens,
            images: u.images,
            // Only chat answers are kept, and they carry none of these.
            search_units: 0,
            audio_ms: 0,
            characters: 0,
        }
    }
}

/// Whether a whole answer is one a later request may get: a chat completion whose every choice
/// has finished.
pub fn cacheable(completion: &str) -> bool {
    let Ok(Value::Object(body)) = serde_json::from_str::<Value>(completion) else {
        return false;
    };
    match body.get("choices") {
        Some(Value::Array(choices)) if !choices.is_empty() => choices
            .iter()
            .all(|c| c.get("finish_reason").is_some_and(|f| !f.is_null())),
        _ => false,
    }
}
