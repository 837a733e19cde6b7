//! One row a provider: its entry, its mock, what the mock answers and what the provider's wire
//! looks like. The behaviours read nothing else about a provider.

use serde_json::{Value, json};

use crate::common::mock_providers::{MockProvider, anthropic, azure, cohere, gemini};

/// Which mock of tests/common/mock_providers.rs plays the upstream.
#[derive(Clone, Copy)]
pub enum Mock {
    Anthropic,
    Gemini,
    Cohere,
    Azure,
}

impl Mock {
    pub async fn start(self) -> MockProvider {
        match self {
            Mock::Anthropic => MockProvider::anthropic().await,
            Mock::Gemini => MockProvider::gemini().await,
            Mock::Cohere => MockProvider::cohere().await,
            Mock::Azure => MockProvider::azure().await,
        }
    }
}

/// Token counts as the client sees them.
pub struct Usage {
    pub prompt: u64,
    pub completion: u64,
    pub cached: u64,
}

/// How the provider's API carries the key.
pub struct Key {
    pub header: &'static str,
    /// What precedes the key in the header's value (`Bearer `).
    pub prefix: &'static str,
}

/// The tool call the mock answers a request with the weather tool, as the client gets it.
pub struct ToolCall {
    /// `None`: the provider makes no ids, the plugin does (any non-empty one).
    pub id: Option<&'static str>,
    /// The arguments, as JSON.
    pub arguments: &'static str,
    /// The message's text beside the call, where the provider sends one (Cohere's tool plan).
    pub content: Option<&'static str>,
    /// What the test's tool answers.
    pub result: &'static str,
    /// Checks the provider's own shape of the exchange: the call as the client got it, the
    /// request that asked with the tool, the request that sent the result back.
    pub wire: fn(call: &Value, asked: &Value, answered: &Value),
}

/// The streamed answer to a request with the weather tool.
pub struct StreamedTools {
    /// The text deltas beside the calls.
    pub text: &'static [&'static str],
    /// `None`: ids the plugin makes (distinct, non-empty).
    pub ids: Option<&'static [&'static str]>,
    /// Each call's arguments, as JSON.
    pub arguments: &'static [&'static str],
}

/// What the client gets when the upstream's stream stops after its first delta.
pub enum Cut {
    /// An error event, and no `[DONE]`.
    ErrorEvent,
    /// The stream ends with `[DONE]` as if it were whole: an OpenAI-wire decoder takes a stream
    /// that ends without a finish chunk or `[DONE]` for a whole one. Known, and pinned here so
    /// that a fix shows up as this row changing.
    PassedOffAsWhole,
}

pub struct Row {
    /// The entry's name and plugin.
    pub plugin: &'static str,
    pub mock: Mock,
    /// The chat model.
    pub model: &'static str,
    /// Models the entry serves besides `model` and the mock's `error-429`, `error-500` and
    /// `stream-cut`.
    pub more_models: &'static [&'static str],
    pub text: &'static str,
    pub usage: Usage,
    pub stream_deltas: &'static [&'static str],
    pub stream_usage: Usage,
    /// The path (and query) of a chat request, and of a streamed one.
    pub path: &'static str,
    pub stream_path: &'static str,
    pub key: Key,
    /// Whether the native body names the model (otherwise only the path does).
    pub model_in_body: bool,
    /// Whether a streamed request says `stream: true` in its body (otherwise its path does).
    pub stream_flag: bool,
    /// Whether the native body takes OpenAI's `stream_options` (otherwise none is sent).
    pub stream_options: bool,
    pub tool_call: ToolCall,
    pub streamed_tools: StreamedTools,
    /// The status and a piece of the message the client gets for a wrong key.
    pub wrong_key: (u16, &'static str),
    pub cut: Cut,
}

impl Row {
    /// `plugin/model` for a model of this entry.
    pub fn routed(&self, model: &str) -> String {
        format!("{}/{model}", self.plugin)
    }
}

pub const CLAUDE: &str = "claude-sonnet-4-20250514";
pub const GEMINI_MODEL: &str = "gemini-2.0-flash";
pub const GEMINI_EMBED: &str = "text-embedding-004";
pub const COMMAND: &str = "command-a-03-2025";
pub const COHERE_EMBED: &str = "embed-v4.0";
pub const GPT: &str = "gpt-4o";

/// The weather tool every tool behaviour offers.
pub fn weather_tool() -> Value {
    json!({"type": "function", "function": {
        "name": "get_weather", "description": "Get the current weather in a given location",
        "parameters": {"type": "object", "properties": {"location": {"type": "string"}},
                       "required": ["location"]}}})
}

const ANTHROPIC_PROMPT: u64 =
    anthropic::INPUT_TOKENS + anthropic::CACHE_CREATION_TOKENS + anthropic::CACHE_READ_TOKENS;

/// Cache writes and reads count as prompt tokens; reads are also the cached ones.
const ANTHROPIC_USAGE: Usage = Usage {
    prompt: ANTHROPIC_PROMPT,
    completion: anthropic::OUTPUT_TOKENS,
    cached: anthropic::CACHE_READ_TOKENS,
};

pub const ANTHROPIC: Row = Row {
    plugin: "anthropic",
    mock: Mock::Anthropic,
    model: CLAUDE,
    more_models: &["stream-overloaded"],
    text: anthropic::TEXT,
    usage: ANTHROPIC_USAGE,
    stream_deltas: &anthropic::STREAM_DELTAS,
    stream_usage: ANTHROPIC_USAGE,
    path: "/v1/messages",
    stream_path: "/v1/messages",
    key: Key {
        header: "x-api-key",
        prefix: "",
    },
    model_in_body: true,
    stream_flag: true,
    stream_options: false,
    tool_call: ToolCall {
        id: Some(anthropic::TOOL_USE_ID),
        arguments: r#"{"location": "San Francisco, CA", "unit": "celsius"}"#,
        content: None,
        result: "15 degrees",
        wire: anthropic_tool_wire,
    },
    streamed_tools: StreamedTools {
        text: &anthropic::STREAM_DELTAS,
        ids: Some(&[anthropic::TOOL_USE_ID]),
        arguments: &[r#"{"location": "San Francisco, CA"}"#],
    },
    wrong_key: (401, "invalid x-api-key"),
    cut: Cut::ErrorEvent,
};

/// Tools go as `input_schema`; the call comes back as a `tool_use` block of the assistant and
/// its result as a `tool_result` block of a user turn.
fn anthropic_tool_wire(_call: &Value, asked: &Value, answered: &Value) {
    assert_eq!(
        asked["tools"][0],
        json!({"name": "get_weather", "description": "Get the current weather in a given location",
               "input_schema": weather_tool()["function"]["parameters"]})
    );
    let messages = &answered["messages"];
    assert_eq!(messages.as_array().unwrap().len(), 3, "{messages}");
    let assistant = &messages[1];
    assert_eq!(assistant["role"], "assistant");
    let tool_use = assistant["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "tool_use")
        .unwrap_or_else(|| panic!("no tool_use block: {assistant}"));
    assert_eq!(tool_use["id"], anthropic::TOOL_USE_ID);
    assert_eq!(tool_use["name"], "get_weather");
    assert_eq!(tool_use["input"]["location"], "San Francisco, CA");
    assert_eq!(messages[2]["role"], "user");
    assert_eq!(
        messages[2]["content"][0],
        json!({"type": "tool_result", "tool_use_id": anthropic::TOOL_USE_ID, "content": "15 degrees"})
    );
}

pub const GEMINI: Row = Row {
    plugin: "gemini",
    mock: Mock::Gemini,
    model: GEMINI_MODEL,
    more_models: &[GEMINI_EMBED],
    text: gemini::TEXT,
    // Thought tokens are billed as output.
    usage: Usage {
        prompt: gemini::PROMPT_TOKENS,
        completion: gemini::CANDIDATES_TOKENS + gemini::THOUGHTS_TOKENS,
        cached: gemini::CACHED_TOKENS,
    },
    stream_deltas: &gemini::STREAM_DELTAS,
    // The last chunk's counts.
    stream_usage: Usage {
        prompt: gemini::PROMPT_TOKENS,
        completion: 9 + gemini::THOUGHTS_TOKENS,
        cached: gemini::CACHED_TOKENS,
    },
    path: "/v1beta/models/gemini-2.0-flash:generateContent",
    stream_path: "/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse",
    key: Key {
        header: "x-goog-api-key",
        prefix: "",
    },
    model_in_body: false,
    stream_flag: false,
    stream_options: false,
    tool_call: ToolCall {
        id: None,
        arguments: r#"{"city": "Paris"}"#,
        content: None,
        result: r#"{"temperature": 15}"#,
        wire: gemini_tool_wire,
    },
    streamed_tools: StreamedTools {
        text: &[gemini::STREAM_TOOL_TEXT],
        ids: None,
        arguments: &[r#"{"city": "Paris"}"#, r#"{"city": "Rome"}"#],
    },
    // Gemini answers a bad key with 400 INVALID_ARGUMENT; the plugin classes it as
    // authentication and the gateway keeps the upstream's 4xx status.
    wrong_key: (400, "API key not valid"),
    cut: Cut::ErrorEvent,
};

/// Tools go as `functionDeclarations`; the call comes back as the model's `functionCall` and
/// its result as a user's `functionResponse` named for the function the call id refers to
/// (Gemini's calls have no ids).
fn gemini_tool_wire(_call: &Value, asked: &Value, answered: &Value) {
    assert_eq!(
        asked["tools"][0]["functionDeclarations"][0]["name"],
        "get_weather"
    );
    let contents = &answered["contents"];
    assert_eq!(contents.as_array().unwrap().len(), 3, "{contents}");
    assert_eq!(contents[1]["role"], "model");
    assert_eq!(
        contents[1]["parts"][0]["functionCall"],
        json!({"name": "get_weather", "args": {"city": "Paris"}})
    );
    assert_eq!(contents[2]["role"], "user");
    assert_eq!(
        contents[2]["parts"][0]["functionResponse"],
        json!({"name": "get_weather", "response": {"temperature": 15}}),
        "the name comes from the tool call the id refers to"
    );
}

/// Cohere's billed units are what the client is told.
const COHERE_USAGE: Usage = Usage {
    prompt: cohere::BILLED_INPUT_TOKENS,
    completion: cohere::BILLED_OUTPUT_TOKENS,
    cached: cohere::CACHED_TOKENS,
};

pub const COHERE: Row = Row {
    plugin: "cohere",
    mock: Mock::Cohere,
    model: COMMAND,
    more_models: &[COHERE_EMBED],
    text: cohere::TEXT,
    usage: COHERE_USAGE,
    stream_deltas: &cohere::STREAM_DELTAS,
    stream_usage: COHERE_USAGE,
    path: "/v2/chat",
    stream_path: "/v2/chat",
    key: Key {
        header: "authorization",
        prefix: "Bearer ",
    },
    model_in_body: true,
    stream_flag: true,
    stream_options: false,
    tool_call: ToolCall {
        id: Some(cohere::TOOL_CALL_ID),
        arguments: r#"{"location": "Toronto"}"#,
        // The tool plan is the content.
        content: Some(cohere::TOOL_PLAN),
        result: r#"[{"temperature": 30}]"#,
        wire: cohere_tool_wire,
    },
    streamed_tools: StreamedTools {
        text: &cohere::STREAM_TOOL_PLAN,
        ids: Some(&cohere::STREAM_TOOL_CALL_IDS),
        arguments: &[r#"{"location": "Toronto"}"#, r#"{"location": "Madrid"}"#],
    },
    wrong_key: (401, "invalid api token"),
    cut: Cut::ErrorEvent,
};

/// The call goes back with its tool plan, the result as a `tool` message.
fn cohere_tool_wire(_call: &Value, _asked: &Value, answered: &Value) {
    let messages = &answered["messages"];
    assert_eq!(messages.as_array().unwrap().len(), 3, "{messages}");
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(messages[1]["tool_plan"], cohere::TOOL_PLAN);
    assert_eq!(messages[1]["tool_calls"][0]["id"], cohere::TOOL_CALL_ID);
    assert_eq!(
        messages[1]["tool_calls"][0]["function"]["name"],
        "get_weather"
    );
    assert_eq!(
        messages[2],
        json!({"role": "tool", "tool_call_id": cohere::TOOL_CALL_ID,
               "content": r#"[{"temperature": 30}]"#})
    );
}

const AZURE_USAGE: Usage = Usage {
    prompt: azure::PROMPT_TOKENS,
    completion: azure::COMPLETION_TOKENS,
    cached: azure::CACHED_TOKENS,
};

pub const AZURE: Row = Row {
    plugin: "azure-openai",
    mock: Mock::Azure,
    model: GPT,
    more_models: &[],
    text: azure::TEXT,
    usage: AZURE_USAGE,
    // The prompt filter chunk before them carries no choices and is skipped.
    stream_deltas: &azure::STREAM_DELTAS,
    stream_usage: AZURE_USAGE,
    path: "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21",
    stream_path: "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21",
    // Azure keys are api-key, not bearer tokens.
    key: Key {
        header: "api-key",
        prefix: "",
    },
    // The deployment is in the path; the body is OpenAI's, model and all.
    model_in_body: true,
    stream_flag: true,
    stream_options: true,
    tool_call: ToolCall {
        id: Some(azure::TOOL_CALL_ID),
        arguments: r#"{"location": "Boston, MA"}"#,
        content: None,
        result: "22 degrees",
        wire: azure_tool_wire,
    },
    streamed_tools: StreamedTools {
        text: &[],
        ids: Some(&[azure::TOOL_CALL_ID]),
        arguments: &[r#"{"location": "Boston, MA"}"#],
    },
    wrong_key: (401, "Access denied"),
    cut: Cut::PassedOffAsWhole,
};

/// OpenAI's shape passes through: the arguments as the upstream wrote them, the call and its
/// result sent back as they were given.
fn azure_tool_wire(call: &Value, _asked: &Value, answered: &Value) {
    assert_eq!(
        call["function"]["arguments"],
        "{\"location\":\"Boston, MA\"}"
    );
    let messages = &answered["messages"];
    assert_eq!(messages[1]["tool_calls"][0]["id"], azure::TOOL_CALL_ID);
    assert_eq!(
        messages[2],
        json!({"role": "tool", "tool_call_id": azure::TOOL_CALL_ID, "content": "22 degrees"})
    );
}
