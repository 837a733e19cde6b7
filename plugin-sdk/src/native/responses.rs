//! OpenAI's Responses stream, passed through: the usage comes in the closing event's
//! `response.usage`, an `error` event is the upstream failing mid-stream.
//!
//! Events: <https://platform.openai.com/docs/api-reference/responses-streaming>. A complete
//! (non-streamed) Responses body is read by `openai_compat::parse_response`, since its `usage`
//! has the names `openai_usage` reads.

use serde::Deserialize;
use serde_json::Value;

use super::{NativeDialect, NativeStream};
use crate::{PluginError, Usage, openai_usage};

/// The decoder of a Responses stream.
pub type ResponsesStream = NativeStream<ResponsesEvents>;

/// The [`NativeDialect`] of OpenAI's Responses streams.
#[derive(Debug, Default)]
pub struct ResponsesEvents {
    usage: Option<Usage>,
    closed: bool,
}

/// A closing event: `response.completed`, `response.incomplete` or `response.failed`.
#[derive(Deserialize)]
struct Closing {
    response: ClosingResponse,
}

#[derive(Deserialize)]
struct ClosingResponse {
    usage: Option<Value>,
}

/// An `error` event: `{"type": "error", "code", "message", "param", "sequence_number"}`.
#[derive(Deserialize)]
struct ErrorEvent {
    code: Option<Value>,
    message: Option<String>,
    param: Option<String>,
}

impl NativeDialect for ResponsesEvents {
    fn observe(&mut self, kind: &str, data: &str) -> Result<(), PluginError> {
        match kind {
            // A failed response is still an answer in the client's dialect (its `error` says
            // why), and it may have used tokens: it passes on, with its usage.
            "response.completed" | "response.incomplete" | "response.failed" => {
                let closing: Closing = serde_json::from_str(data).map_err(|_| {
                    PluginError::upstream(
                        "upstream sent a closing Responses event without a response",
                    )
                })?;
                if let Some(usage) = closing.response.usage.as_ref().and_then(openai_usage) {
                    self.usage = Some(usage);
                }
                self.closed = true;
                Ok(())
            }
            "error" => {
                let event: ErrorEvent = serde_json::from_str(data)
                    .map_err(|_| PluginError::upstream("upstream failed during the stream"))?;
                let mut err = PluginError::upstream(
                    event
                        .message
                        .filter(|m| !m.is_empty())
                        .unwrap_or_else(|| "upstream failed during the stream".to_owned()),
                );
                err.code = event.code.and_then(|c| match c {
                    Value::String(s) => Some(s),
                    Value::Number(n) => Some(n.to_string()),
                    _ => None,
                });
                err.param = event.param;
                Err(err)
            }
            _ => Ok(()),
        }
    }

    fn end(&self) -> Result<(), PluginError> {
        if self.closed {
            Ok(())
        } else {
            Err(PluginError::upstream(
                "the Responses stream ended before the response was complete",
            ))
        }
    }

    fn usage(&self) -> Option<Usage> {
        self.usage
    }
}
