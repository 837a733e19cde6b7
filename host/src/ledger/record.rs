//! One request's usage record, as the ledger keeps it, and the filter on its user.

/// What one request used and how it ended.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct UsageRecord {
    pub request_id: String,
    /// When the request started, in µs since the Unix epoch.
    pub time_us: i64,
    pub project: String,
    /// The API key's id (never the key); `None` for an anonymous request to an open gateway.
    pub api_key_id: Option<String>,
    pub user_id: Option<String>,
    pub user_name: Option<String>,
    pub user_tags: Vec<String>,
    /// The provider and model that answered (the last one tried for a failed request); `None`
    /// when the request failed before a target was chosen.
    pub provider: Option<String>,
    pub model: Option<String>,
    /// `chat.completions`, `embeddings`, `images.generations`.
    pub operation: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_input_tokens: u64,
    /// The part of `output_tokens` spent on reasoning, as the upstream reported it (0 when it
    /// did not).
    pub reasoning_tokens: u64,
    /// The part of `input_tokens` written to the provider's prompt cache (billed at a premium).
    pub cache_write_tokens: u64,
    /// Micro-USD; `None` when the model has no known price.
    pub cost_micros: Option<i64>,
    /// From the request's arrival to its end (for a stream: its last byte or its drop).
    pub latency_us: i64,
    /// Time to first token: from the request's arrival to the first chunk of a streamed answer
    /// sent to the client. `None` for an answer sent whole, or a stream that sent nothing.
    pub ttft_us: Option<i64>,
    pub status: u16,
    /// The OpenAI error code (`model_not_found`, `upstream_error`, ...) of a failed request.
    pub error_type: Option<String>,
    /// The tokens were counted by the gateway, not reported by the upstream.
    pub estimated: bool,
    /// The guards' verdicts, as JSON: `[{"guard", "side", "action", "counts": {kind: n}}]`
    /// (never the matched text); `None` when no guard applied.
    #[serde(default)]
    pub guards: Option<String>,
    /// Answered from the response cache: no upstream call, `cost_micros` 0.
    #[serde(default)]
    pub cache_hit: bool,
    /// A hit's saving: what the kept answer cost when it was made (micro-USD); `None` for a
    /// miss, or when its model has no known price.
    #[serde(default)]
    pub saved_cost_micros: Option<i64>,
    /// An MCP tool call's bytes: its arguments as sent on, and its result as returned (`None`
    /// for a model request).
    #[serde(default)]
    pub bytes_in: Option<i64>,
    #[serde(default)]
    pub bytes_out: Option<i64>,
    /// The gateway's batch (`batch_…`) this record is one output line of; `None` for a request
    /// answered live. Its cost is at the catalog's batch price.
    #[serde(default)]
    pub batch_id: Option<String>,
    /// Milliseconds of audio transcribed or translated.
    #[serde(default)]
    pub audio_ms: u64,
    /// Characters of text spoken.
    #[serde(default)]
    pub characters: u64,
    /// Rerank search units.
    #[serde(default)]
    pub search_units: u64,
    /// The Realtime session (`rtsess_…`, the gateway's own id) this record is one response of;
    /// `None` for a request of its own.
    #[serde(default)]
    pub session_id: Option<String>,
}

/// Which users' usage `/usage/models` sums: every field given must match (an empty filter
/// matches every record, including those without a user).
///
/// `user_tags` matches a record that has **any** of the tags. Names and tags are those the
/// record was sent with, so a user renamed or retagged is matched by each name for the requests
/// sent under it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserFilter {
    pub user_id: Option<String>,
    pub user_name: Option<String>,
    pub user_tags: Vec<String>,
}

impl UserFilter {
    pub fn is_empty(&self) -> bool {
        self.user_id.is_none() && self.user_name.is_none() && self.user_tags.is_empty()
    }

    /// Whether a user seen as (`id`, `name`, `tags`) passes; `None` and `""` are both "absent".
    pub fn matches(&self, id: &str, name: &str, tags: &[String]) -> bool {
        self.user_id.as_deref().is_none_or(|want| want == id)
            && self.user_name.as_deref().is_none_or(|want| want == name)
            && (self.user_tags.is_empty() || tags.iter().any(|t| self.user_tags.contains(t)))
    }
}
