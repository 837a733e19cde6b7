//! The canonical answers a dialect encodes: `chat.completion` bodies and
//! `chat.completion.chunk` events, read into types.

use serde::Deserialize;

use crate::{Failure, Usage};

/// Why the model stopped, in OpenAI's terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finish {
    /// A natural end or a stop sequence (and reasons this reader does not know).
    Stop,
    /// The token limit.
    Length,
    /// The model called tools (`tool_calls`, or the older `function_call`).
    ToolCalls,
    /// A safety filter stopped it.
    ContentFilter,
}

impl Finish {
    /// The reason of a `finish_reason` value.
    pub fn parse(reason: &str) -> Self {
        match reason {
            "length" => Finish::Length,
            "tool_calls" | "function_call" => Finish::ToolCalls,
            "content_filter" => Finish::ContentFilter,
            _ => Finish::Stop,
        }
    }
}

/// A `chat.completion` body: its first choice is the answer (dialects ask for one).
#[derive(Debug, Deserialize)]
pub struct ChatAnswer {
    /// The choices; the first is the answer.
    #[serde(default)]
    pub choices: Vec<AnswerChoice>,
    /// The token counts, when the provider wrote them.
    pub usage: Option<ChatUsage>,
}

/// One choice of a `chat.completion`.
#[derive(Debug, Deserialize)]
pub struct AnswerChoice {
    /// The answer.
    pub message: AnswerMessage,
    /// Why it stopped.
    pub finish_reason: Option<String>,
}

/// The assistant message of an answer.
#[derive(Debug, Default, Deserialize)]
pub struct AnswerMessage {
    /// The text, or `null`.
    pub content: Option<String>,
    /// The model's refusal, if it refused.
    pub refusal: Option<String>,
    /// The reasoning text some providers return (DeepSeek, vLLM, ...).
    pub reasoning_content: Option<String>,
    /// The tools it called.
    pub tool_calls: Option<Vec<AnswerToolCall>>,
}

/// A tool call of an answer.
#[derive(Debug, Deserialize)]
pub struct AnswerToolCall {
    /// The call's id.
    #[serde(default)]
    pub id: String,
    /// The function called.
    pub function: AnswerFunction,
}

/// The function of a tool call.
#[derive(Debug, Deserialize)]
pub struct AnswerFunction {
    /// Its name.
    #[serde(default)]
    pub name: String,
    /// Its arguments, as JSON text.
    #[serde(default)]
    pub arguments: String,
}

impl ChatAnswer {
    /// Reads a `chat.completion` body.
    pub fn parse(body: &str) -> Result<Self, Failure> {
        serde_json::from_str(body)
            .map_err(|_| Failure::upstream("the provider's answer is not a chat completion"))
    }

    /// The answer's message (empty when there is no choice) and why it stopped.
    pub fn into_message(self) -> (AnswerMessage, Finish) {
        match self.choices.into_iter().next() {
            Some(choice) => {
                let finish = choice
                    .finish_reason
                    .as_deref()
                    .map_or(Finish::Stop, Finish::parse);
                (choice.message, finish)
            }
            None => (AnswerMessage::default(), Finish::Stop),
        }
    }
}

/// OpenAI's `usage` object, as far as the dialects report it.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
pub struct ChatUsage {
    /// Prompt tokens, cached ones included.
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Completion tokens, reasoning ones included.
    #[serde(default)]
    pub completion_tokens: u64,
    /// The cached part of the prompt.
    #[serde(default)]
    pub prompt_tokens_details: Option<PromptDetails>,
    /// The reasoning part of the completion.
    #[serde(default)]
    pub completion_tokens_details: Option<CompletionDetails>,
}

/// `usage.prompt_tokens_details`.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
pub struct PromptDetails {
    /// Prompt tokens read from the cache.
    #[serde(default)]
    pub cached_tokens: Option<u64>,
}

/// `usage.completion_tokens_details`.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
pub struct CompletionDetails {
    /// Completion tokens spent reasoning.
    #[serde(default)]
    pub reasoning_tokens: Option<u64>,
}

impl ChatUsage {
    /// As the host counts it (no cache writes: OpenAI's usage has no place for them).
    pub fn to_usage(self) -> Usage {
        Usage {
            cached_input_tokens: self
                .prompt_tokens_details
                .and_then(|d| d.cached_tokens)
                .unwrap_or(0),
            ..Usage::tokens(self.prompt_tokens, self.completion_tokens)
        }
    }

    /// The reasoning tokens, when the provider reported them.
    pub fn reasoning_tokens(&self) -> Option<u64> {
        self.completion_tokens_details
            .and_then(|d| d.reasoning_tokens)
    }
}

/// One `chat.completion.chunk` event.
#[derive(Debug, Default, Deserialize)]
pub struct ChatChunk {
    /// The choices: one with a delta, or none in the closing usage chunk.
    #[serde(default)]
    pub choices: Vec<ChunkChoice>,
    /// The token counts, in the last chunk.
    pub usage: Option<ChatUsage>,
}

/// One choice of a chunk.
#[derive(Debug, Deserialize)]
pub struct ChunkChoice {
    /// What this chunk adds.
    #[serde(default)]
    pub delta: ChunkDelta,
    /// Why the answer stopped, in its last chunk.
    pub finish_reason: Option<String>,
}

/// What a chunk adds to the answer.
#[derive(Debug, Default, Deserialize)]
pub struct ChunkDelta {
    /// More text.
    pub content: Option<String>,
    /// More reasoning text (DeepSeek, vLLM, ...).
    pub reasoning_content: Option<String>,
    /// More of a refusal.
    pub refusal: Option<String>,
    /// Tool calls started or continued.
    pub tool_calls: Option<Vec<ChunkToolCall>>,
}

/// A piece of a streamed tool call: its first piece has the id and name.
#[derive(Debug, Deserialize)]
pub struct ChunkToolCall {
    /// Which call of the answer, from 0.
    #[serde(default)]
    pub index: u32,
    /// The call's id, in its first piece.
    pub id: Option<String>,
    /// The function's name and a piece of its arguments.
    pub function: Option<ChunkFunction>,
}

/// The function part of a streamed tool call.
#[derive(Debug, Default, Deserialize)]
pub struct ChunkFunction {
    /// The name, in the call's first piece.
    pub name: Option<String>,
    /// A piece of the arguments.
    pub arguments: Option<String>,
}

impl ChatChunk {
    /// Reads one chunk. `[DONE]`, the end marker of OpenAI's stream, reads as an empty chunk.
    pub fn parse(chunk: &str) -> Result<Self, Failure> {
        if chunk.trim() == "[DONE]" {
            return Ok(ChatChunk::default());
        }
        serde_json::from_str(chunk)
            .map_err(|_| Failure::upstream("the provider sent a chunk that could not be read"))
    }

    /// The first choice's delta and finish reason, if the chunk has a choice.
    pub fn into_delta(self) -> Option<(ChunkDelta, Option<Finish>)> {
        let choice = self.choices.into_iter().next()?;
        Some((
            choice.delta,
            choice.finish_reason.as_deref().map(Finish::parse),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_an_answer_with_tool_calls_and_usage() {
        let body = r#"{"id":"x","object":"chat.completion","choices":[{"index":0,
            "message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function",
            "function":{"name":"f","arguments":"{\"a\":1}"}}]},"finish_reason":"tool_calls"}],
            "usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,
            "prompt_tokens_details":{"cached_tokens":4},
            "completion_tokens_details":{"reasoning_tokens":2}}}"#;
        let answer = ChatAnswer::parse(body).unwrap();
        let usage = answer.usage.unwrap();
        assert_eq!(usage.to_usage().cached_input_tokens, 4);
        assert_eq!(usage.reasoning_tokens(), Some(2));
        let (message, finish) = answer.into_message();
        assert_eq!(finish, Finish::ToolCalls);
        assert_eq!(
            message.tool_calls.unwrap()[0].function.arguments,
            r#"{"a":1}"#
        );
        assert!(ChatAnswer::parse("[]").is_err());
    }

    #[test]
    fn reads_chunks() {
        let chunk = ChatChunk::parse(
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,
            "function":{"arguments":"{\"a"}}]},"finish_reason":null}],"usage":null}"#,
        )
        .unwrap();
        let (delta, finish) = chunk.into_delta().unwrap();
        assert_eq!(finish, None);
        let call = &delta.tool_calls.unwrap()[0];
        assert_eq!((call.index, call.id.as_deref()), (1, None));
        let last =
            ChatChunk::parse(r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#)
                .unwrap();
        assert_eq!(last.usage.map(|u| u.prompt_tokens), Some(3));
        assert!(last.into_delta().is_none());
        assert!(ChatChunk::parse("[DONE]").unwrap().into_delta().is_none());
        assert!(ChatChunk::parse("{").is_err());
    }

    #[test]
    fn finish_reasons() {
        assert_eq!(Finish::parse("stop"), Finish::Stop);
        assert_eq!(Finish::parse("length"), Finish::Length);
        assert_eq!(Finish::parse("function_call"), Finish::ToolCalls);
        assert_eq!(Finish::parse("content_filter"), Finish::ContentFilter);
        assert_eq!(Finish::parse("something_new"), Finish::Stop);
    }
}
