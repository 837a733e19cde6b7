//! The `responses` dialect: OpenAI's Responses API (`POST /v1/responses`) decoded into canonical
//! chat completions, and the answers encoded back as a `response` object or its event stream,
//! for targets that do not speak Responses themselves (Codex on an Anthropic model); and
//! `POST /v1/responses/compact`, answered from the target's own summary ([`compact`]).
//!
//! Wire formats are taken from OpenAI's API reference:
//! - Responses: <https://platform.openai.com/docs/api-reference/responses/create>
//! - Streaming events: <https://platform.openai.com/docs/api-reference/responses-streaming>
//! - Errors: <https://platform.openai.com/docs/guides/error-codes>
//!
//! `store`, `previous_response_id`, `include` and `metadata` belong to the host (it keeps stored
//! responses and expands `previous_response_id` into `input` before decoding): they leave the
//! canonical body, and what the response object echoes of the request travels in `echo`.
//! Reasoning items sent back are dropped, and reasoning text in an answer is not reported
//! (a reasoning item without OpenAI's encrypted content would mean nothing to send back).
//!
//! Modules: [`decode`] (the request's fields and the echo), [`input`] (instructions and input
//! items), [`tools`] (tools, tool choice and text format), [`response`] (the response object
//! and complete answers), [`stream`] (streamed answers), [`errors`] (error bodies), [`compact`]
//! (a compaction's request and answer).

mod compact;
mod decode;
mod errors;
mod input;
mod response;
mod stream;
mod tools;

use wasmgate_plugin_sdk::{
    AnswerInfo, Call, Declaration, Decoded, Dialect, Failure, Route, RouteKind, Usage,
};

struct Responses;

impl Dialect for Responses {
    type Encoder = stream::Encoder;

    fn describe() -> Declaration {
        Declaration {
            name: "responses".to_owned(),
            routes: vec![
                Route::new("POST", "/v1/responses", "responses", RouteKind::Call),
                // OpenAI's compaction of a long conversation (Codex calls it): passed on to a
                // target that has it, written from the target's summary for one that has not.
                Route::new(
                    "POST",
                    "/v1/responses/compact",
                    compact::ROUTE,
                    RouteKind::Call,
                ),
                // OpenAI's input token count: the request as `/v1/responses` takes it.
                Route::new(
                    "POST",
                    "/v1/responses/input_tokens",
                    "input_tokens",
                    RouteKind::CountTokens,
                ),
            ],
            // Every route takes `Authorization` and `x-api-key` already.
            keys: Vec::new(),
            typed_events: true,
            answer_id_prefix: "resp_".to_owned(),
            chains_turns: true,
            native_answers_guarded: false,
        }
    }

    fn decode(call: &Call) -> Result<Decoded, Failure> {
        if call.route == compact::ROUTE {
            return compact::decode(&call.body);
        }
        decode::decode(&call.body)
    }

    fn encode(
        info: &AnswerInfo,
        completion: &str,
        usage: Option<Usage>,
    ) -> Result<String, Failure> {
        if info.route == compact::ROUTE {
            return compact::encode(info, completion, usage);
        }
        response::encode(info, completion, usage)
    }

    fn encode_error(status: u16, error: &Failure) -> String {
        errors::body(status, error)
    }

    /// OpenAI's `response.input_tokens` object.
    fn encode_count(_info: &AnswerInfo, tokens: u32) -> String {
        serde_json::json!({ "object": "response.input_tokens", "input_tokens": tokens }).to_string()
    }
}

wasmgate_plugin_sdk::export_dialect!(Responses);

#[cfg(test)]
mod tests;
