//! The `messages` dialect: Anthropic's Messages API (`POST /v1/messages`) decoded into canonical
//! chat completions, and the answers encoded back as a `message` or its event stream, for
//! targets that do not speak Messages themselves (Claude Code on a Gemini or OpenAI model).
//!
//! Wire formats are taken from Anthropic's API reference:
//! - Messages: <https://docs.anthropic.com/en/api/messages>
//! - Streaming events: <https://docs.anthropic.com/en/docs/build-with-claude/streaming>
//! - Errors: <https://docs.anthropic.com/en/api/errors>
//!
//! What the canonical form cannot carry is dropped and listed (`top_k`, `thinking`, every
//! `cache_control`, server tools, thinking blocks sent back, ...). `thinking` is dropped rather
//! than mapped to `reasoning_effort`: Claude Code sends it by default, and an OpenAI model that
//! does not reason refuses `reasoning_effort` with a 400, which is the failure other gateways'
//! users report.
//!
//! Modules: [`decode`] (the request's fields), [`conversation`] (system prompt and messages),
//! [`tools`] (tools and tool choice), [`encode`] (complete answers), [`stream`] (streamed
//! answers), [`errors`] (error bodies and types).

mod conversation;
mod decode;
mod encode;
mod errors;
mod stream;
mod tools;

use wasmgate_plugin_sdk::{
    AnswerInfo, Call, Declaration, Decoded, Dialect, Failure, Route, RouteKind, Usage,
};

struct Messages;

impl Dialect for Messages {
    type Encoder = stream::Encoder;

    fn describe() -> Declaration {
        Declaration {
            name: "messages".to_owned(),
            routes: vec![
                Route::new("POST", "/v1/messages", "messages", RouteKind::Call),
                Route::new(
                    "POST",
                    "/v1/messages/count_tokens",
                    "count_tokens",
                    RouteKind::CountTokens,
                ),
            ],
            // Every route takes `Authorization` and `x-api-key` already.
            keys: Vec::new(),
            typed_events: true,
            answer_id_prefix: "msg_".to_owned(),
            chains_turns: false,
            native_answers_guarded: true,
        }
    }

    fn decode(call: &Call) -> Result<Decoded, Failure> {
        if call.route == "count_tokens" {
            return decode::decode(&decode::with_max_tokens(&call.body)?);
        }
        decode::decode(&call.body)
    }

    fn encode(
        info: &AnswerInfo,
        completion: &str,
        usage: Option<Usage>,
    ) -> Result<String, Failure> {
        encode::encode(info, completion, usage)
    }

    fn encode_error(status: u16, error: &Failure) -> String {
        errors::body(status, &error.message)
    }
}

wasmgate_plugin_sdk::export_dialect!(Messages);

#[cfg(test)]
mod tests;
