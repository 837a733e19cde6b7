//! Responses kept for OpenAI's Responses API (`store`), in the ledger's database: what
//! `GET /v1/responses/{id}` answers and what a later request's `previous_response_id` continues.
//!
//! The gateway keeps them itself, whichever upstream answered, so a conversation can move between
//! providers (a translated turn after a native one) and replicas sharing a PostgreSQL ledger see
//! each other's responses. Each is scoped to the project that created it: another project's id
//! is "not found", never read.

/// One stored response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredResponse {
    /// The response's id (`resp_…`), as the client saw it.
    pub id: String,
    pub project: String,
    /// When it was created, in µs since the Unix epoch.
    pub created_us: i64,
    /// The `previous_response_id` its request continued, if any.
    pub previous_id: Option<String>,
    /// Its request's input items, a JSON array (a string `input` as one user `message` item).
    pub input_items: String,
    /// The response object as the client received it (JSON).
    pub response: String,
}

/// How far back a conversation is followed at most: past this many turns, or this many bytes of
/// stored items, the request is refused rather than held in memory whole.
pub const MAX_TURNS: usize = 1_000;
pub const MAX_HISTORY_BYTES: usize = 64 << 20;

/// Why a conversation cannot be continued.
#[derive(Debug, PartialEq, Eq)]
pub enum HistoryError {
    /// The previous response does not exist in this project (or was deleted).
    NotFound,
    /// The conversation is longer than [`MAX_TURNS`] or [`MAX_HISTORY_BYTES`].
    TooLong,
    /// A stored response does not parse: the database was edited by hand, or is corrupt.
    Corrupt(String),
    Store(String),
}

/// Where stored responses are kept. Calls block (they run on a blocking thread).
pub trait ResponseStore: Send + Sync + 'static {
    /// Keeps a response for the Responses API (replacing one of the same project and id).
    fn put_response(&self, response: &StoredResponse) -> anyhow::Result<()>;

    /// The project's stored response with this id; never another project's.
    fn response(&self, project: &str, id: &str) -> anyhow::Result<Option<StoredResponse>>;

    /// Forgets the project's stored response; `false` when it had none of that id.
    fn delete_response(&self, project: &str, id: &str) -> anyhow::Result<bool>;
}

/// The items a request continuing `previous_id` starts from, oldest first: each earlier turn's
/// input items followed by its response's `output` items. Instructions are not carried over
/// (as OpenAI documents for `previous_response_id`). An older turn that was deleted ends the walk
/// there: the conversation continues from what remains.
pub fn history(
    store: &dyn ResponseStore,
    project: &str,
    previous_id: &str,
) -> Result<Vec<serde_json::Value>, HistoryError> {
    let mut turns = Vec::new();
    let mut bytes = 0;
    let mut next = Some(previous_id.to_owned());
    while let Some(id) = next.take() {
        let stored = store
            .response(project, &id)
            .map_err(|e| HistoryError::Store(e.to_string()))?;
        let Some(stored) = stored else {
            if turns.is_empty() {
                return Err(HistoryError::NotFound);
            }
            break;
        };
        bytes += stored.input_items.len() + stored.response.len();
        if turns.len() == MAX_TURNS || bytes > MAX_HISTORY_BYTES {
            return Err(HistoryError::TooLong);
        }
        next = stored.previous_id.clone();
        turns.push(stored);
    }
    let mut items = Vec::new();
    for turn in turns.iter().rev() {
        let corrupt = |what: &str| HistoryError::Corrupt(format!("response {}: {what}", turn.id));
        let input: Vec<serde_json::Value> =
            serde_json::from_str(&turn.input_items).map_err(|_| corrupt("input items"))?;
        let mut response: serde_json::Value =
            serde_json::from_str(&turn.response).map_err(|_| corrupt("response"))?;
        items.extend(input);
        if let Some(serde_json::Value::Array(output)) = response.get_mut("output").map(|o| o.take())
        {
            items.extend(output);
        }
    }
    Ok(items)
}
