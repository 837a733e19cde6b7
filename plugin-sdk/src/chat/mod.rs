//! OpenAI chat completions for plugins that translate them to another wire format: the request
//! read into types ([`ChatRequest`]), and the `chat.completion` / `chat.completion.chunk` JSON
//! built back from an upstream's answer ([`completion_body`], [`ChunkWriter`]).
//!
//! Plugins whose upstream speaks OpenAI's format already need none of this: they pass bodies
//! through (see [`openai_compat`](crate::openai_compat)).

mod data_url;
mod output;
mod request;

pub use data_url::DataUrl;
pub use output::{
    ChunkWriter, FinishReason, assistant_message, compact_json, completion_body, tool_call_json,
    unix_now, usage_json,
};
pub use request::{
    ChatRequest, Content, ContentPart, FileData, FunctionCall, FunctionDef, ImageUrl, JsonSchema,
    Message, NamedFunction, ResponseFormat, Stop, Tool, ToolCall, ToolChoice, ToolChoiceMode,
};
