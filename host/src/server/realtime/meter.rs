//! The session's responses, each a request of its own: a client's `response.create` admitted
//! by the limits waits here until the upstream's `response.created` names it, and its
//! `response.done` ends it with one ledger record, its text and audio tokens (input, cached,
//! output) priced at the catalog's realtime prices. A response the upstream starts itself (a
//! server VAD turn) is recorded the same way, admitted by the limits as it starts
//! (`admission`).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::watch;

use crate::catalog::{ModelInfo, RealtimeTokens, realtime_cost_micros};
use crate::ledger::Written;
use crate::pipeline::Context;
use crate::pipeline::finish::End;
use crate::pipeline::guard::chain::AnswerChain;
use crate::pipeline::guard::verdicts::Guarded;
use crate::plugins::Usage;

/// The responses asked for and under way.
pub struct Meter {
    /// Admitted `response.create`s, oldest first, with the client's `event_id`.
    asked: VecDeque<(Context, Option<String>)>,
    /// Started responses by the upstream's id.
    running: HashMap<String, Context>,
    /// Whether any response is asked for or under way.
    busy: watch::Sender<bool>,
    price: Option<Arc<ModelInfo>>,
    /// The request guards' verdicts on the client's events since the last response started:
    /// they go into its record, as an HTTP request's do.
    heard: Guarded,
}

impl Meter {
    pub fn new(price: Option<Arc<ModelInfo>>, busy: watch::Sender<bool>) -> Self {
        Self {
            asked: VecDeque::new(),
            running: HashMap::new(),
            busy,
            price,
            heard: Guarded::default(),
        }
    }

    /// A `response.create` admitted and sent on.
    pub fn asked(&mut self, cx: Context, client_event: Option<String>) {
        self.asked.push_back((cx, client_event));
        self.changed();
    }

    /// The upstream's `response.created`: the context of the oldest response asked, or `None`
    /// for a response the upstream started itself (the caller admits one for it);
    /// [`Meter::started`] takes it back (the session stays busy meanwhile).
    pub fn starting(&mut self) -> Option<Context> {
        self.asked.pop_front().map(|(cx, _)| cx)
    }

    /// The request guards' verdicts on a client event, for the next response's record.
    pub fn heard(&mut self, verdicts: &mut Guarded) {
        self.heard.absorb(verdicts);
    }

    /// Response `id` started, on `cx` (from [`Meter::starting`]), with the verdicts heard
    /// before it.
    pub fn started(&mut self, id: &str, mut cx: Context) {
        cx.first_output();
        cx.guard.absorb(&mut self.heard);
        self.running.insert(id.to_owned(), cx);
        self.changed();
    }

    /// The upstream's `error` event naming the client's event `client_event`: a
    /// `response.create` it refused ends, recorded as cancelled (it spent nothing).
    pub fn refused(&mut self, client_event: &str) {
        let at = (self.asked.iter()).position(|(_, id)| id.as_deref() == Some(client_event));
        if let Some(at) = at {
            drop(self.asked.remove(at));
            self.changed();
        }
    }

    /// The verdicts of response `id`'s answer guards, into its record.
    pub fn guarded(&mut self, id: &str, chain: &mut AnswerChain) {
        if let Some(cx) = self.running.get_mut(id) {
            cx.guard.verdicts_from(chain);
        }
    }

    /// The upstream's `response.done` (its `response`): the response's record, which the event
    /// waits for before it goes to the client. `None` for a response never started here.
    pub fn done(&mut self, response: &Value) -> Option<Written> {
        let id = response.get("id").and_then(Value::as_str)?;
        let cx = self.running.remove(id)?;
        self.changed();
        let tokens = tokens(response.get("usage").unwrap_or(&Value::Null));
        let cost_micros = (self.price.as_deref()).map(|info| realtime_cost_micros(info, tokens));
        let completed = response.get("status").and_then(Value::as_str) == Some("completed");
        Some(cx.finish(End::Priced {
            usage: usage(tokens),
            cost_micros,
            completed,
        }))
    }

    /// Whether a response is asked for or under way.
    fn changed(&self) {
        self.busy
            .send_replace(!self.asked.is_empty() || !self.running.is_empty());
    }
}

/// A `response.done`'s `usage` as counts: `input_token_details` splits the prompt into text and
/// audio, `cached_tokens_details` its cached part likewise; without details every token is
/// text.
pub fn tokens(usage: &Value) -> RealtimeTokens {
    let count = |v: &Value, name: &str| v.get(name).and_then(Value::as_u64).unwrap_or(0);
    let input = count(usage, "input_tokens");
    let output = count(usage, "output_tokens");
    let (text_input, audio_input, cached_text, cached_audio) =
        match usage.get("input_token_details") {
            Some(details) => {
                let cached = count(details, "cached_tokens");
                let (cached_text, cached_audio) = match details.get("cached_tokens_details") {
                    Some(split) => (count(split, "text_tokens"), count(split, "audio_tokens")),
                    None => (cached, 0),
                };
                let audio = count(details, "audio_tokens");
                // Image tokens are billed as text tokens.
                (
                    input.saturating_sub(audio),
                    audio,
                    cached_text,
                    cached_audio,
                )
            }
            None => (input, 0, 0, 0),
        };
    let (text_output, audio_output) = match usage.get("output_token_details") {
        Some(details) => {
            let audio = count(details, "audio_tokens");
            (output.saturating_sub(audio), audio)
        }
        None => (output, 0),
    };
    RealtimeTokens {
        text_input,
        audio_input,
        cached_text_input: cached_text,
        cached_audio_input: cached_audio,
        text_output,
        audio_output,
    }
}

/// The record's counts: every prompt token, every answer token, the cached ones.
fn usage(tokens: RealtimeTokens) -> Usage {
    Usage {
        input_tokens: tokens.text_input + tokens.audio_input,
        output_tokens: tokens.text_output + tokens.audio_output,
        cached_input_tokens: tokens.cached_text_input + tokens.cached_audio_input,
        cache_write_tokens: 0,
        reasoning_tokens: 0,
        images: 0,
        search_units: 0,
        audio_ms: 0,
        characters: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_done_event_s_usage_splits_into_text_and_audio() {
        let usage = json!({
            "total_tokens": 1500, "input_tokens": 1000, "output_tokens": 500,
            "input_token_details": {"text_tokens": 300, "audio_tokens": 700, "image_tokens": 0,
                "cached_tokens": 400,
                "cached_tokens_details": {"text_tokens": 100, "audio_tokens": 300, "image_tokens": 0}},
            "output_token_details": {"text_tokens": 120, "audio_tokens": 380}
        });
        assert_eq!(
            tokens(&usage),
            RealtimeTokens {
                text_input: 300,
                audio_input: 700,
                cached_text_input: 100,
                cached_audio_input: 300,
                text_output: 120,
                audio_output: 380,
            }
        );
        let bare = json!({"input_tokens": 10, "output_tokens": 4});
        assert_eq!(tokens(&bare).text_input, 10);
        assert_eq!(tokens(&bare).text_output, 4);
        assert_eq!(super::usage(tokens(&usage)).input_tokens, 1000);
    }
}
