//! Complete answers: a canonical `chat.completion` as a Messages `message`.

use serde::Serialize;
use serde_json::value::RawValue;
use wasmgate_plugin_sdk::canonical::{ChatAnswer, ChatUsage, Finish};
use wasmgate_plugin_sdk::{AnswerInfo, Failure, Usage, log};

/// Anthropic's `stop_reason` for a finish reason. A stop with tool calls is `tool_use`: some
/// providers report a plain stop when the model called tools, and Claude Code runs the tools of
/// a `tool_use` turn.
pub fn stop_reason(finish: Finish, called_tools: bool) -> &'static str {
    match finish {
        Finish::Length => "max_tokens",
        Finish::ContentFilter => "refusal",
        Finish::ToolCalls | Finish::Stop if called_tools => "tool_use",
        Finish::ToolCalls | Finish::Stop => "end_turn",
    }
}

/// Anthropic's usage: `input_tokens` counts only what was neither read from nor written to the
/// cache, which come on top.
#[derive(Debug, Serialize)]
pub struct MessageUsage {
    input_tokens: u64,
    output_tokens: u64,
    cache_creation_input_tokens: u64,
    cache_read_input_tokens: u64,
}

impl MessageUsage {
    pub fn new(usage: &Usage) -> Self {
        MessageUsage {
            input_tokens: usage
                .input_tokens
                .saturating_sub(usage.cached_input_tokens)
                .saturating_sub(usage.cache_write_tokens),
            output_tokens: usage.output_tokens,
            cache_creation_input_tokens: usage.cache_write_tokens,
            cache_read_input_tokens: usage.cached_input_tokens,
        }
    }
}

/// A `message` object. Written from types, so that a tool call's `input` goes out as the
/// model wrote it (a `Value` would reorder its keys).
#[derive(Serialize)]
struct MessageOut<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    role: &'static str,
    model: &'a str,
    content: Vec<BlockOut>,
    stop_reason: &'static str,
    stop_sequence: Option<String>,
    usage: MessageUsage,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockOut {
    Thinking {
        thinking: String,
        signature: String,
    },
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: Box<RawValue>,
    },
}

/// The host's usage if it has one, else the answer's own.
pub fn usage_of(host: Option<Usage>, answer: Option<ChatUsage>) -> Usage {
    host.or(answer.map(ChatUsage::to_usage)).unwrap_or_default()
}

/// A tool call's arguments as the `input` object. Arguments that are not a JSON object (a
/// model's broken output) become `{}`, since clients read `input` as an object.
pub fn tool_input(name: &str, arguments: &str) -> Box<RawValue> {
    let arguments = arguments.trim();
    match RawValue::from_string(arguments.to_owned()) {
        Ok(raw) if arguments.starts_with('{') => raw,
        _ => {
            if !arguments.is_empty() {
                log::warn(&format!(
                    "the arguments of a call to `{name}` are not a JSON object"
                ));
            }
            RawValue::from_string("{}".to_owned()).unwrap_or_else(|_| RawValue::NULL.to_owned())
        }
    }
}

pub fn encode(
    info: &AnswerInfo,
    completion: &str,
    usage: Option<Usage>,
) -> Result<String, Failure> {
    let answer = ChatAnswer::parse(completion)?;
    let usage = usage_of(usage, answer.usage);
    let (message, finish) = answer.into_message();
    let mut content = Vec::new();
    if let Some(thinking) = message.reasoning_content.filter(|t| !t.is_empty()) {
        // No signature: the reasoning did not come from Anthropic, and none can be made.
        content.push(BlockOut::Thinking {
            thinking,
            signature: String::new(),
        });
    }
    for text in [message.content, message.refusal].into_iter().flatten() {
        if !text.is_empty() {
            content.push(BlockOut::Text { text });
        }
    }
    let calls = message.tool_calls.unwrap_or_default();
    let called_tools = !calls.is_empty();
    for call in calls {
        let input = tool_input(&call.function.name, &call.function.arguments);
        content.push(BlockOut::ToolUse {
            id: call.id,
            name: call.function.name,
            input,
        });
    }
    let message = MessageOut {
        id: &info.id,
        kind: "message",
        role: "assistant",
        model: &info.model,
        content,
        stop_reason: stop_reason(finish, called_tools),
        stop_sequence: None,
        usage: MessageUsage::new(&usage),
    };
    serde_json::to_string(&message).map_err(|_| Failure::upstream("could not write the message"))
}
