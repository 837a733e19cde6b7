//! The canonical form for dialect plugins: the Chat Completions request written from typed
//! values ([`ChatBody`]), and the `chat.completion` answer and `chat.completion.chunk` events
//! read back into types ([`ChatAnswer`], [`ChatChunk`]); and the client's body read field by
//! field ([`Fields`]), with what was left out listed ([`Dropped`]).
//!
//! Only what a translation acts on is read; serde skips the rest. What is written leaves out
//! every absent field, so that an upstream sees only what the client asked for.

mod answer;
mod fields;
mod request;

pub use answer::{
    AnswerChoice, AnswerFunction, AnswerMessage, AnswerToolCall, ChatAnswer, ChatChunk, ChatUsage,
    ChunkChoice, ChunkDelta, ChunkFunction, ChunkToolCall, CompletionDetails, Finish,
    PromptDetails,
};
pub use fields::{Dropped, Fields, read};
pub use request::{
    ChatBody, ChatContent, ChatFile, ChatFunction, ChatImageUrl, ChatJsonSchema, ChatMessage,
    ChatPart, ChatResponseFormat, ChatTool, ChatToolCall, ChatToolChoice, FunctionType, NamedCall,
    NamedFunction, ToolMode,
};
