//! The request log: one project's records, newest first, filtered, a page at a time.
//!
//! Pages follow a keyset on (`time_us`, `request_id`), both descending: a page asks for the
//! records strictly older than the last one it was given, so records written meanwhile with a
//! newer time never shift a page (no repeat, no skip), whatever their number. Both stores build
//! the same statement here, every value a client sent bound as a parameter; only the shape
//! (which filters are present, and the constant bounds of a status class) is in its text.
//!
//! Indexes (see the stores' schemas) keep a first page a short index walk at any size:
//! `(project, time_us, request_id)` for the unfiltered log and for filters that match a fair
//! share of the rows (a model, a provider, a dialect, a key: the walk reads the newest rows of
//! the project until the page is full); `(project, user_key, time_us, request_id)` for a user,
//! whose records are too rare among the project's for that walk; a partial index on the failed
//! requests alone for the error classes, which are rare too.
//!
//! A page is looked for in time windows ([`page`]) rather than over the whole range at once, so
//! that its cost does not hang on the planner choosing that walk: PostgreSQL, with statistics
//! that lag a bulk load, took a filtered month of 700,000 records as a bitmap scan of all of
//! them and a sort (150–250 ms). Within a window, any plan is cheap.

use super::columns;
use super::record::{UsageRecord, UserFilter};

/// How far back from its upper bound a page looks first; each later window is
/// [`WINDOW_GROWTH`] times as long, and the [`WINDOWS`]th takes the rest of the range. A common
/// filter (or none) costs one query over the last hour; a rare one over a month, six.
const FIRST_WINDOW_US: i64 = 3_600_000_000;
const WINDOW_GROWTH: i64 = 4;
const WINDOWS: usize = 7;

/// Where the request log is read: the records themselves. Calls block (they run on a blocking
/// thread).
pub trait RequestLog: Send + Sync + 'static {
    /// The stored record of one request, by its request id, whatever its project (for tests
    /// and diagnostics). The last one if several share it.
    fn record(&self, request_id: &str) -> anyhow::Result<Option<UsageRecord>>;

    /// One page of the request log: up to `query.limit + 1` records (the extra one says that
    /// more follow), newest first, by (`time_us`, `request_id`) descending.
    fn requests(&self, query: &RequestQuery) -> anyhow::Result<Vec<UsageRecord>>;

    /// The newest record of `project` with this request id; never another project's.
    fn project_record(
        &self,
        project: &str,
        request_id: &str,
    ) -> anyhow::Result<Option<UsageRecord>>;
}

/// One page of `q` (up to `q.limit + 1` records, the last telling that there are more), read
/// from `store` one time window at a time, newest first, until the page is full or the range is
/// done. The windows meet end to end, so the page is the one a single query would give.
pub fn page(store: &dyn RequestLog, q: &RequestQuery) -> anyhow::Result<Vec<UsageRecord>> {
    page_in_windows(store, q, FIRST_WINDOW_US)
}

/// [`page`], with the first window's length given (tests use short ones, to cross many
/// window boundaries in a little data).
pub fn page_in_windows(
    store: &dyn RequestLog,
    q: &RequestQuery,
    first_window_us: i64,
) -> anyhow::Result<Vec<UsageRecord>> {
    let want = q.limit.min(LIMIT_MAX) + 1;
    let mut found: Vec<UsageRecord> = Vec::new();
    // Exclusive, as `end_us` is; the cursor's own time may still hold records (older by id).
    let mut end = match &q.after {
        Some(after) => q.end_us.min(after.time_us.saturating_add(1)),
        None => q.end_us,
    };
    let mut window = first_window_us.max(1);
    for n in 1..=WINDOWS {
        if end <= q.start_us || found.len() >= want {
            break;
        }
        let start = if n == WINDOWS {
            q.start_us
        } else {
            end.saturating_sub(window).max(q.start_us)
        };
        let part = RequestQuery {
            start_us: start,
            end_us: end,
            limit: want - found.len() - 1,
            ..q.clone()
        };
        found.extend(store.requests(&part)?);
        end = start;
        window = window.saturating_mul(WINDOW_GROWTH);
    }
    Ok(found)
}

/// Records of one page at most.
pub const LIMIT_MAX: usize = 500;
/// Records of a page when the query names no limit.
pub const LIMIT_DEFAULT: usize = 50;

/// The wire API a client spoke, derived from the record's operation: the `/v1/*` endpoint of the
/// host's own that took it. A registry dialect's records carry its declared name as their
/// operation (`messages`, `responses`, `gemini`, ...), and a pass-through request's
/// `passthrough`: those are their own dialect names, listed by the config's registry rather
/// than here ([`operation_of`] takes them as they are). `anthropic.messages` and
/// `openai.responses` are kept as the names the console and clients used for the first two.
const DIALECTS: [(&str, &str); 7] = [
    ("openai.chat", "chat.completions"),
    ("openai.embeddings", "embeddings"),
    ("openai.images", "images.generations"),
    ("openai.models", "models"),
    ("openai.responses", "responses"),
    ("anthropic.messages", "messages"),
    ("mcp", "mcp.tools.call"),
];

/// The dialect of a record of `operation` (the operation itself for one not listed).
pub fn dialect_of(operation: &str) -> &str {
    DIALECTS
        .iter()
        .find(|(_, op)| *op == operation)
        .map_or(operation, |(dialect, _)| dialect)
}

/// The operation a dialect's records carry, or `None` for a dialect the gateway does not know:
/// one of the host's own, or one of `registry` (the config's dialects, by their declared names,
/// and `passthrough`), which records under its own name.
pub fn operation_of<'a>(dialect: &'a str, registry: &[&str]) -> Option<&'a str> {
    DIALECTS
        .iter()
        .find(|(name, _)| *name == dialect)
        .map(|(_, op)| *op)
        .or_else(|| registry.contains(&dialect).then_some(dialect))
}

/// The known dialects, for error messages: the host's own, then `registry`'s.
pub fn dialects<'a>(registry: &'a [&'a str]) -> impl Iterator<Item = &'a str> {
    DIALECTS
        .iter()
        .map(|(name, _)| *name)
        .chain(registry.iter().copied())
}

/// A class of HTTP status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatusClass {
    Success,
    ClientError,
    ServerError,
    /// Anything but a 2xx.
    Error,
}

impl StatusClass {
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "2xx" => Self::Success,
            "4xx" => Self::ClientError,
            "5xx" => Self::ServerError,
            "error" => Self::Error,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Success => "2xx",
            Self::ClientError => "4xx",
            Self::ServerError => "5xx",
            Self::Error => "error",
        }
    }

    pub fn matches(self, status: u16) -> bool {
        match self {
            Self::Success => (200..300).contains(&status),
            Self::ClientError => (400..500).contains(&status),
            Self::ServerError => (500..600).contains(&status),
            Self::Error => !(200..300).contains(&status),
        }
    }

    /// The condition in SQL. Constants, not parameters: SQLite uses a partial index only when
    /// the query's terms repeat its condition word for word (and a parameter never does).
    fn sql(self) -> &'static str {
        match self {
            Self::Success => "status >= 200 AND status < 300",
            Self::ClientError => {
                "(status < 200 OR status >= 300) AND status >= 400 AND status < 500"
            }
            Self::ServerError => {
                "(status < 200 OR status >= 300) AND status >= 500 AND status < 600"
            }
            Self::Error => "(status < 200 OR status >= 300)",
        }
    }
}

/// The condition of the partial index on failed requests, word for word as [`StatusClass::sql`]
/// writes it.
pub const FAILED: &str = "(status < 200 OR status >= 300)";

/// Where a page starts: strictly older than this record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Position {
    pub time_us: i64,
    pub request_id: String,
}

impl Position {
    pub fn of(record: &UsageRecord) -> Self {
        Self {
            time_us: record.time_us,
            request_id: record.request_id.clone(),
        }
    }
}

/// One page's question. Every field given must match; the range is `[start_us, end_us)`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestQuery {
    pub project: String,
    pub start_us: i64,
    pub end_us: i64,
    pub model: Option<String>,
    pub provider: Option<String>,
    /// As in `/usage/models`: id, name, any of the tags; an empty filter matches every record.
    pub users: UserFilter,
    pub api_key_id: Option<String>,
    /// A Realtime session's responses (`rtsess_…`).
    pub session_id: Option<String>,
    pub status: Option<StatusClass>,
    /// The operation of the dialect asked for (see [`operation_of`]).
    pub operation: Option<String>,
    /// Records with a guard's verdict that matches.
    pub guard: Option<GuardFilter>,
    pub after: Option<Position>,
    pub limit: usize,
}

impl RequestQuery {
    /// Whether `record` belongs to the answer (the stores' SQL says the same; tests compare).
    pub fn matches(&self, r: &UsageRecord) -> bool {
        let user_ok = self.users.is_empty()
            || (r.user_id.is_some()
                && self.users.matches(
                    r.user_id.as_deref().unwrap_or(""),
                    r.user_name.as_deref().unwrap_or(""),
                    &r.user_tags,
                ));
        r.project == self.project
            && r.time_us >= self.start_us
            && r.time_us < self.end_us
            && self
                .model
                .as_ref()
                .is_none_or(|m| r.model.as_ref() == Some(m))
            && self
                .provider
                .as_ref()
                .is_none_or(|p| r.provider.as_ref() == Some(p))
            && self
                .api_key_id
                .as_ref()
                .is_none_or(|k| r.api_key_id.as_ref() == Some(k))
            && (self.session_id.as_ref()).is_none_or(|s| r.session_id.as_ref() == Some(s))
            && self.status.is_none_or(|s| s.matches(r.status))
            && self.operation.as_ref().is_none_or(|o| &r.operation == o)
            && (self.guard.as_ref()).is_none_or(|g| g.matches(r.guards.as_deref()))
            && user_ok
            && self.after.as_ref().is_none_or(|a| {
                (r.time_us, r.request_id.as_str()) < (a.time_us, a.request_id.as_str())
            })
    }
}

/// Which guard verdicts a record must hold: any at all, one by a guard, one with an action, or
/// both (each is looked for in the record's verdicts, which name guards and actions as JSON
/// strings: `"guard":"no-cards"`, `"action":"refuse"`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GuardFilter {
    /// A guard's name (as `guards:` entries name them).
    pub guard: Option<String>,
    /// `allow`, `rewrite`, `refuse`, `stop`, `error`, or one of these with `monitor_` before it.
    pub action: Option<String>,
}

/// The actions a guard's verdict is recorded with.
pub const GUARD_ACTIONS: [&str; 10] = [
    "allow",
    "rewrite",
    "refuse",
    "stop",
    "error",
    "monitor_allow",
    "monitor_rewrite",
    "monitor_refuse",
    "monitor_stop",
    "monitor_error",
];

impl GuardFilter {
    /// The exact texts the record's verdicts must contain.
    fn needles(&self) -> Vec<String> {
        let quoted =
            |key: &str, value: &str| format!("\"{key}\":{}", serde_json::Value::from(value));
        (self.guard.iter().map(|g| quoted("guard", g)))
            .chain(self.action.iter().map(|a| quoted("action", a)))
            .collect()
    }

    fn matches(&self, guards: Option<&str>) -> bool {
        guards.is_some_and(|g| self.needles().iter().all(|n| g.contains(n.as_str())))
    }
}

/// A value bound to a statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Param {
    Text(String),
    Int(i64),
    /// User keys: a JSON array read with `json_each` on SQLite, a `BIGINT[]` on PostgreSQL.
    Keys(Vec<i64>),
}

/// Which store's SQL to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    Sqlite,
    Postgres,
}

/// The statement of one page (`limit + 1` rows, so that the caller knows whether more follow),
/// for the users `user_keys` names (`None`: no user filter).
pub fn select(
    q: &RequestQuery,
    user_keys: Option<Vec<i64>>,
    flavor: Flavor,
) -> (String, Vec<Param>) {
    let mut params = Vec::new();
    let mut bind = |value: Param| {
        params.push(value);
        match flavor {
            Flavor::Sqlite => format!("?{}", params.len()),
            Flavor::Postgres => format!("${}", params.len()),
        }
    };
    // One upper bound on the time, the tighter of the range's end and the cursor's time: with
    // two, SQLite bounds its index walk by either, and the range's end can be far above.
    let upper = match &q.after {
        Some(after) => after.time_us.min(q.end_us.saturating_sub(1)),
        None => q.end_us.saturating_sub(1),
    };
    let mut clauses = vec![
        format!("project = {}", bind(Param::Text(q.project.clone()))),
        format!("time_us >= {}", bind(Param::Int(q.start_us))),
        format!("time_us <= {}", bind(Param::Int(upper))),
    ];
    if let Some(after) = &q.after {
        let (t, id) = (
            bind(Param::Int(after.time_us)),
            bind(Param::Text(after.request_id.clone())),
        );
        clauses.push(format!("(time_us, request_id) < ({t}, {id})"));
    }
    for (column, value) in [
        ("model", &q.model),
        ("provider", &q.provider),
        ("api_key_id", &q.api_key_id),
        ("session_id", &q.session_id),
        ("operation", &q.operation),
    ] {
        if let Some(value) = value {
            clauses.push(format!("{column} = {}", bind(Param::Text(value.clone()))));
        }
    }
    if let Some(status) = q.status {
        clauses.push(status.sql().to_owned());
    }
    if let Some(filter) = &q.guard {
        clauses.push("guards IS NOT NULL".to_owned());
        for needle in filter.needles() {
            // A plain substring test, exact and case-sensitive in both (no LIKE wildcards).
            let needle = bind(Param::Text(needle));
            clauses.push(match flavor {
                Flavor::Sqlite => format!("instr(guards, {needle}) > 0"),
                Flavor::Postgres => format!("strpos(guards, {needle}) > 0"),
            });
        }
    }
    let one_user = user_keys.as_ref().is_some_and(|keys| keys.len() == 1);
    match user_keys {
        None => {}
        Some(keys) if keys.len() == 1 => {
            clauses.push(format!("user_key = {}", bind(Param::Int(keys[0]))));
        }
        Some(keys) => {
            let list = bind(Param::Keys(keys));
            clauses.push(match flavor {
                Flavor::Sqlite => format!("user_key IN (SELECT value FROM json_each({list}))"),
                Flavor::Postgres => format!("user_key = ANY({list}::BIGINT[])"),
            });
        }
    }
    let limit = bind(Param::Int(
        i64::try_from(q.limit.min(LIMIT_MAX) + 1).unwrap_or(1),
    ));
    // One user's records are too rare among the project's for a walk of its time index, and
    // SQLite without statistics (nothing runs ANALYZE) walks it anyway: name the user index.
    let index = match (flavor, one_user) {
        (Flavor::Sqlite, true) => " INDEXED BY usage_records_by_project_user",
        _ => "",
    };
    let sql = format!(
        "SELECT {} FROM usage_records{index} WHERE {}
         ORDER BY time_us DESC, request_id DESC LIMIT {limit}",
        columns::read_list(),
        clauses.join(" AND ")
    );
    (sql, params)
}
