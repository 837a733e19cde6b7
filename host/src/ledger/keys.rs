//! What a project key may do on its own (models, expiry, rate, budget) and the admin keys that
//! manage project keys: the shapes the ledger stores, and the rules read from them.
//!
//! Values come from `wasmgate keys` and `/admin/keys`, which check them with
//! [`KeyLimits::check`] before storing: a stored key's limits are always valid ones.

use super::glob::glob_match;
use super::passthrough_patterns::{PATTERNS_MAX, check_passthrough_pattern, passthrough_allows};
use super::time::{Unit, bucket_start};

/// Bytes of a project id, at most.
pub const PROJECT_MAX: usize = 64;

/// Whether `id` can name a project: 1 to [`PROJECT_MAX`] ASCII letters, digits, `.`, `_` or `-`.
/// Project ids reach the ledger's records and rollups, and a keyless client may send one, so
/// the rule is narrow. The error says what the rule is.
pub fn check_project(id: &str) -> Result<(), &'static str> {
    let allowed = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-');
    if !id.is_empty() && id.len() <= PROJECT_MAX && id.bytes().all(allowed) {
        Ok(())
    } else {
        Err("1 to 64 ASCII letters, digits, `.`, `_` or `-`")
    }
}

/// Bytes of a key id, at most (ids are `key_` and 16 hex digits).
pub const KEY_ID_MAX: usize = 64;
/// Patterns a key's `models` list may hold, at most (a list is read on every request).
pub const MODELS_MAX: usize = 64;
/// Bytes of one model pattern, at most.
pub const MODEL_PATTERN_MAX: usize = 200;
/// The largest budget accepted, in micro-USD ($1e12, as the `budget` limiter's own cap).
pub const BUDGET_MAX_MICROS: i64 = 1_000_000_000_000_000_000;

/// The window of a key's budget: a UTC calendar day or month, or never reset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BudgetPeriod {
    Day,
    Month,
    Total,
}

impl BudgetPeriod {
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "day" => Self::Day,
            "month" => Self::Month,
            "total" => Self::Total,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Day => "day",
            Self::Month => "month",
            Self::Total => "total",
        }
    }

    /// The `budget` limiter's option for this period.
    pub fn option(self) -> &'static str {
        match self {
            Self::Day => "daily_usd",
            Self::Month => "monthly_usd",
            Self::Total => "total_usd",
        }
    }

    /// Where the window holding `now_us` starts, in µs since the epoch.
    pub fn start_us(self, now_us: i64) -> i64 {
        match self {
            Self::Day => bucket_start(now_us, Unit::Day),
            Self::Month => bucket_start(now_us, Unit::Month),
            Self::Total => 0,
        }
    }
}

/// A key's budget: micro-USD per period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    pub micros: i64,
    pub period: BudgetPeriod,
}

/// What one key may do, beyond what the config's limit rules allow everyone. Empty: no limit of
/// its own.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyLimits {
    /// Model names or patterns (`*` stands for any run of characters), matched against the
    /// model as the client names it; empty allows every model.
    pub models: Vec<String>,
    /// When the key stops working, in µs since the epoch.
    pub expires_us: Option<i64>,
    pub requests_per_minute: Option<i64>,
    pub tokens_per_minute: Option<i64>,
    pub budget: Option<Budget>,
    /// Guards (the config's `guards:` entries, by name) applied to the key's requests besides
    /// those whose scope takes them.
    pub guards: Vec<String>,
    /// The MCP tools it may list and call, as `<server>/<tool>` patterns (`*` stands for any run
    /// of characters); empty allows every tool its project may use.
    pub tools: Vec<String>,
    /// The pass-through routes it may reach, as `<entry>/<path>` patterns; empty leaves it to
    /// the config's `passthrough.allow`.
    pub passthrough: Vec<String>,
}

/// Guards a key may name, at most.
pub const GUARDS_MAX: usize = 16;
/// Bytes of a guard's name, at most (as `guards:` entries are named).
const GUARD_NAME_MAX: usize = 64;

impl KeyLimits {
    /// Whether the key may reach `path` of entry `entry` by a pass-through route: by its own
    /// patterns if it has any, else by the config's (`fallback`).
    pub fn allows_passthrough(&self, fallback: &[String], entry: &str, path: &str) -> bool {
        let patterns = if self.passthrough.is_empty() {
            fallback
        } else {
            &self.passthrough
        };
        passthrough_allows(patterns, entry, path)
    }

    /// Whether the key may ask for `model` (as the client named it).
    pub fn allows_model(&self, model: &str) -> bool {
        self.models.is_empty() || self.models.iter().any(|p| glob_match(p, model))
    }

    /// Whether the key may list and call the MCP tool `tool` of `server` (the tool's own name).
    pub fn allows_tool(&self, server: &str, tool: &str) -> bool {
        self.tools.is_empty() || tools_match(&self.tools, server, tool)
    }

    /// Whether the key has expired at `now_us`.
    pub fn expired(&self, now_us: i64) -> bool {
        self.expires_us.is_some_and(|at| now_us >= at)
    }

    /// Whether the key has counters of its own (a rate or a budget) to check.
    pub fn has_counters(&self) -> bool {
        self.requests_per_minute.is_some()
            || self.tokens_per_minute.is_some()
            || self.budget.is_some()
    }

    /// Checks every value, naming the failing one as the CLI's flag (`--rpm`) would.
    pub fn check(&self) -> Result<(), String> {
        if self.passthrough.len() > PATTERNS_MAX {
            return Err(format!("passthrough: at most {} patterns", PATTERNS_MAX));
        }
        for pattern in &self.passthrough {
            check_passthrough_pattern(pattern)?;
        }
        if self.models.len() > MODELS_MAX {
            return Err(format!("models: at most {MODELS_MAX} patterns"));
        }
        for pattern in &self.models {
            let printable = pattern.chars().all(|c| !c.is_control());
            if pattern.is_empty() || pattern.len() > MODEL_PATTERN_MAX || !printable {
                return Err(format!(
                    "models: each pattern is 1 to {MODEL_PATTERN_MAX} bytes without control \
                     characters"
                ));
            }
        }
        check_tool_patterns(&self.tools).map_err(|e| format!("tools: {e}"))?;
        for (name, value) in [
            ("rpm", self.requests_per_minute),
            ("tpm", self.tokens_per_minute),
        ] {
            if let Some(n) = value
                && n < 1
            {
                return Err(format!("{name}: a whole number of at least 1, not {n}"));
            }
        }
        if let Some(budget) = self.budget
            && !(1..=BUDGET_MAX_MICROS).contains(&budget.micros)
        {
            return Err("budget: dollars above 0 (at least 0.000001) and at most 1e12".to_owned());
        }
        if self.guards.len() > GUARDS_MAX {
            return Err(format!("guards: at most {GUARDS_MAX} names"));
        }
        // The rule of guard names in `guards:` (the ledger does not import the config).
        let name = |g: &String| {
            (1..=GUARD_NAME_MAX).contains(&g.len())
                && g.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        };
        if let Some(bad) = self.guards.iter().find(|g| !name(g)) {
            return Err(format!(
                "guards: `{}` is not a guard name (1 to 64 letters, digits, `-` or `_`)",
                crate::clip::echo(bad)
            ));
        }
        Ok(())
    }

    /// The `rate-limit` limiter's options for this key, if it has a rate.
    pub fn rate_options(&self) -> Option<String> {
        if self.requests_per_minute.is_none() && self.tokens_per_minute.is_none() {
            return None;
        }
        let mut options = serde_json::Map::new();
        if let Some(n) = self.requests_per_minute {
            options.insert("requests_per_minute".to_owned(), n.into());
        }
        if let Some(n) = self.tokens_per_minute {
            options.insert("tokens_per_minute".to_owned(), n.into());
        }
        Some(serde_json::Value::Object(options).to_string())
    }

    /// The `budget` limiter's options for this key, if it has a budget.
    pub fn budget_options(&self) -> Option<String> {
        let budget = self.budget?;
        // Exact: the limiter multiplies by 1e6 and rounds, and a micro count below 2^53 survives
        // the trip through f64.
        let usd = budget.micros as f64 / 1e6;
        Some(serde_json::json!({ budget.period.option(): usd }).to_string())
    }
}

/// What a key has spent so far: in its budget's window (today, this month, or in all), or in
/// all for a key without a budget. From the ledger, so it lags the requests by a batch (well
/// under a second) and counts every replica's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spend {
    pub micros: i64,
    pub period: BudgetPeriod,
}

impl Spend {
    pub fn of(store: &dyn KeyStore, key: &ApiKey, now_us: i64) -> anyhow::Result<Self> {
        let period = key.limits.budget.map_or(BudgetPeriod::Total, |b| b.period);
        let micros = store.key_spend(&key.id, period.start_us(now_us))?;
        Ok(Self { micros, period })
    }
}

/// `micros` as dollars with cents, and further digits as needed: `5.00`, `0.000123`.
pub fn format_usd(micros: i64) -> String {
    let sign = if micros < 0 { "-" } else { "" };
    let abs = micros.unsigned_abs();
    let fraction = format!("{:06}", abs % 1_000_000);
    let digits = fraction.trim_end_matches('0').len().max(2);
    format!("{sign}{}.{}", abs / 1_000_000, &fraction[..digits])
}

/// Micro-USD from dollars as typed (`5`, `0.25`); `None` for a negative, non-finite or
/// too-large amount.
pub fn usd_to_micros(usd: f64) -> Option<i64> {
    let micros = (usd * 1e6).round();
    (usd.is_finite() && micros >= 0.0 && micros <= BUDGET_MAX_MICROS as f64)
        .then_some(micros as i64)
}

/// Whether any of `patterns` (`<server>/<tool>` globs) matches `tool` of `server`.
pub fn tools_match(patterns: &[String], server: &str, tool: &str) -> bool {
    patterns.iter().any(|p| match p.split_once('/') {
        Some((s, t)) => glob_match(s, server) && glob_match(t, tool),
        None => false,
    })
}

/// Checks a list of `<server>/<tool>` patterns, saying what is wrong.
pub fn check_tool_patterns(patterns: &[String]) -> Result<(), String> {
    if patterns.len() > MODELS_MAX {
        return Err(format!("at most {MODELS_MAX} patterns"));
    }
    for pattern in patterns {
        let printable = pattern.chars().all(|c| !c.is_control());
        if pattern.len() > MODEL_PATTERN_MAX || !printable || !pattern.contains('/') {
            return Err(format!(
                "each pattern is `<server>/<tool>` (`*` for any run of characters), at most \
                 {MODEL_PATTERN_MAX} bytes without control characters"
            ));
        }
    }
    Ok(())
}

/// Changes to a key, as `keys create|update` and `/admin/keys` take them: each `Some` replaces
/// the value (`Some(None)` clears it), each `None` keeps it.
#[derive(Clone, Debug, Default)]
pub struct KeyChanges {
    pub name: Option<Option<String>>,
    pub models: Option<Vec<String>>,
    pub expires_us: Option<Option<i64>>,
    pub requests_per_minute: Option<Option<i64>>,
    pub tokens_per_minute: Option<Option<i64>>,
    /// The budget in micro-USD and its period. A period without an amount changes the period of
    /// the key's budget; an amount without a period keeps the key's period (`day` for a new one).
    pub budget_micros: Option<Option<i64>>,
    pub budget_period: Option<BudgetPeriod>,
    pub guards: Option<Vec<String>>,
    /// MCP tool patterns (`<server>/<tool>`); an empty list allows every tool.
    pub tools: Option<Vec<String>>,
    /// The pass-through patterns; an empty list leaves the key to the config's.
    pub passthrough: Option<Vec<String>>,
}

impl KeyChanges {
    /// `name` and `limits` with these changes, checked.
    pub fn apply(
        self,
        name: Option<String>,
        limits: &KeyLimits,
    ) -> Result<(Option<String>, KeyLimits), String> {
        let name = self.name.unwrap_or(name);
        if let Some(name) = &name
            && (name.len() > NAME_MAX || name.chars().any(char::is_control))
        {
            return Err(format!(
                "name: at most {NAME_MAX} bytes without control characters"
            ));
        }
        let budget = match (self.budget_micros, self.budget_period) {
            (Some(None), _) => None,
            (Some(Some(micros)), period) => Some(Budget {
                micros,
                period: period
                    .or(limits.budget.map(|b| b.period))
                    .unwrap_or(BudgetPeriod::Day),
            }),
            (None, Some(period)) => match limits.budget {
                Some(budget) => Some(Budget { period, ..budget }),
                None => return Err("budget-period: set a budget too (--budget)".to_owned()),
            },
            (None, None) => limits.budget,
        };
        let limits = KeyLimits {
            models: self.models.unwrap_or_else(|| limits.models.clone()),
            expires_us: self.expires_us.unwrap_or(limits.expires_us),
            requests_per_minute: self
                .requests_per_minute
                .unwrap_or(limits.requests_per_minute),
            tokens_per_minute: self.tokens_per_minute.unwrap_or(limits.tokens_per_minute),
            budget,
            guards: self.guards.unwrap_or_else(|| limits.guards.clone()),
            tools: self.tools.unwrap_or_else(|| limits.tools.clone()),
            passthrough: self
                .passthrough
                .unwrap_or_else(|| limits.passthrough.clone()),
        };
        limits.check()?;
        Ok((name, limits))
    }
}

/// Bytes of a key's name, at most.
pub const NAME_MAX: usize = 200;

/// An expiry as typed: `never`, a UTC time (`2026-12-31`, `2026-12-31 18:00`), or a time from
/// now (`90m`, `24h`, `30d`). `Ok(None)` is `never`.
pub fn parse_expiry(text: &str, now_us: i64) -> Result<Option<i64>, String> {
    let text = text.trim();
    if text == "never" {
        return Ok(None);
    }
    let unit_us = |c: char| match c {
        'm' => Some(super::time::MINUTE_US),
        'h' => Some(super::time::HOUR_US),
        'd' => Some(super::time::DAY_US),
        _ => None,
    };
    if let Some(last) = text.chars().last()
        && let Some(unit) = unit_us(last)
        && let Ok(n) = text[..text.len() - 1].parse::<i64>()
        && n > 0
    {
        return n
            .checked_mul(unit)
            .and_then(|d| now_us.checked_add(d))
            .map(Some)
            .ok_or_else(|| format!("expires: `{text}` is too far away"));
    }
    super::time::parse_utc(text).map(Some).ok_or_else(|| {
        format!(
            "expires: `{}` is not a time: write never, 2026-12-31, 2026-12-31 18:00 (UTC), or \
             90m, 24h, 30d from now",
            crate::clip::echo(text)
        )
    })
}

/// A credential for `/admin/*`, stored as the SHA-256 of the secret like a project key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdminKey {
    /// Public and stable (`adm_…`).
    pub id: String,
    pub name: Option<String>,
    /// Lower-case hex SHA-256 of the whole secret.
    pub hash: String,
    /// The secret's first characters, to tell keys apart.
    pub prefix: String,
    pub created_us: i64,
    pub revoked_us: Option<i64>,
}

/// An API key as stored: the SHA-256 of the key, never the key itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiKey {
    /// Public and stable (`key_…`): what records, logs and `keys revoke` name.
    pub id: String,
    pub project: String,
    pub name: Option<String>,
    /// Lower-case hex SHA-256 of the whole key.
    pub hash: String,
    /// The key's first characters, so that `keys list` can show which key is which.
    pub prefix: String,
    pub created_us: i64,
    pub revoked_us: Option<i64>,
    /// What the key may do on its own.
    pub limits: KeyLimits,
}

/// The `api_keys` columns of a key's limits as stored: (models, expires, rpm, tpm, budget
/// micros, budget period, guards). `models` and `guards` are joined by newlines (neither a
/// pattern nor a guard name holds a control character).
pub type LimitColumns = (
    String,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<&'static str>,
    String,
);

/// A key's limits as columns, in [`LIMIT_COLUMNS`]' order.
pub fn limits_to_columns(limits: &KeyLimits) -> LimitColumns {
    (
        limits.models.join("\n"),
        limits.expires_us,
        limits.requests_per_minute,
        limits.tokens_per_minute,
        limits.budget.map(|b| b.micros),
        limits.budget.map(|b| b.period.name()),
        limits.guards.join("\n"),
    )
}

/// A key's limits from its columns. Only this code writes them; should a period ever be unknown
/// the budget is taken as a total one, which never resets (the strictest reading).
/// A list as its column stores it: items joined by newlines (no item holds a control character).
pub fn stored_list(column: &str) -> Vec<String> {
    (column.split('\n'))
        .filter(|item| !item.is_empty())
        .map(str::to_owned)
        .collect()
}

pub fn limits_from_columns(
    models: &str,
    expires_us: Option<i64>,
    rpm: Option<i64>,
    tpm: Option<i64>,
    budget_micros: Option<i64>,
    budget_period: Option<&str>,
    guards: &str,
) -> KeyLimits {
    KeyLimits {
        models: stored_list(models),
        expires_us,
        requests_per_minute: rpm,
        tokens_per_minute: tpm,
        budget: budget_micros.map(|micros| Budget {
            micros,
            period: budget_period
                .and_then(BudgetPeriod::parse)
                .unwrap_or(BudgetPeriod::Total),
        }),
        guards: stored_list(guards),
        tools: Vec::new(),
        passthrough: Vec::new(),
    }
}

/// Where the keys are kept: project keys (hashed) and admin keys, in the ledger's database.
/// Calls block (they run on a blocking thread).
pub trait KeyStore: Send + Sync + 'static {
    /// Stores a new key; its id and hash are unique.
    fn insert_key(&self, key: &ApiKey) -> anyhow::Result<()>;

    /// Every key (revoked ones too), of one project or of all, oldest first.
    fn keys(&self, project: Option<&str>) -> anyhow::Result<Vec<ApiKey>>;

    /// Marks the key revoked at `at_us`; `false` when no unrevoked key has that id.
    fn revoke_key(&self, id: &str, at_us: i64) -> anyhow::Result<bool>;

    /// The key whose hash is `hash`, revoked or not.
    fn key_by_hash(&self, hash: &str) -> anyhow::Result<Option<ApiKey>>;

    /// The key with this id, revoked or not.
    fn key(&self, id: &str) -> anyhow::Result<Option<ApiKey>>;

    /// Replaces the name and limits of the unrevoked key with this id; `false` when there is none.
    fn update_key(&self, id: &str, name: Option<&str>, limits: &KeyLimits) -> anyhow::Result<bool>;

    /// What the key's requests since `since_us` cost, in micro-USD (records written so far).
    fn key_spend(&self, key_id: &str, since_us: i64) -> anyhow::Result<i64>;

    /// Stores a new admin key; its id and hash are unique.
    fn insert_admin_key(&self, key: &AdminKey) -> anyhow::Result<()>;

    /// The admin key whose hash is `hash`, revoked or not.
    fn admin_key_by_hash(&self, hash: &str) -> anyhow::Result<Option<AdminKey>>;

    /// Every admin key, revoked ones too, oldest first.
    fn admin_keys(&self) -> anyhow::Result<Vec<AdminKey>>;

    /// Marks the admin key revoked at `at_us`; `false` when no unrevoked one has that id.
    fn revoke_admin_key(&self, id: &str, at_us: i64) -> anyhow::Result<bool>;
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn an_empty_list_allows_every_model_and_a_list_only_its_own() {
        let mut limits = KeyLimits::default();
        assert!(limits.allows_model("anything"));
        limits.models = vec!["openai/gpt-4o".to_owned(), "anthropic/*".to_owned()];
        assert!(limits.allows_model("openai/gpt-4o"));
        assert!(limits.allows_model("anthropic/claude-sonnet-4"));
        assert!(!limits.allows_model("openai/o1"));
    }

    #[test]
    fn a_keys_guards_are_guard_names_and_few() {
        let with = |guards: &[&str]| KeyLimits {
            guards: guards.iter().map(|g| (*g).to_owned()).collect(),
            ..KeyLimits::default()
        };
        assert!(with(&["no-cards", "pii_2"]).check().is_ok());
        for bad in ["", "no cards", "x\n", &"a".repeat(65)] {
            let error = with(&[bad]).check().unwrap_err();
            assert!(error.starts_with("guards:"), "{bad:?}: {error}");
        }
        let many: Vec<String> = (0..=GUARDS_MAX).map(|i| format!("g{i}")).collect();
        let refs: Vec<&str> = many.iter().map(String::as_str).collect();
        assert!(with(&refs).check().is_err());
    }

    #[test]
    fn expiry_is_inclusive_of_its_instant() {
        let limits = KeyLimits {
            expires_us: Some(100),
            ..KeyLimits::default()
        };
        assert!(!limits.expired(99));
        assert!(limits.expired(100));
        assert!(!KeyLimits::default().expired(i64::MAX));
    }

    #[test]
    fn limiter_options_carry_the_keys_values() {
        let limits = KeyLimits {
            requests_per_minute: Some(3),
            budget: Some(Budget {
                micros: 5_000_000,
                period: BudgetPeriod::Day,
            }),
            ..KeyLimits::default()
        };
        assert_eq!(
            limits.rate_options().as_deref(),
            Some(r#"{"requests_per_minute":3}"#)
        );
        assert_eq!(
            limits.budget_options().as_deref(),
            Some(r#"{"daily_usd":5.0}"#)
        );
        assert_eq!(KeyLimits::default().rate_options(), None);
        assert_eq!(usd_to_micros(0.25), Some(250_000));
        assert_eq!(usd_to_micros(-1.0), None);
        assert_eq!(usd_to_micros(f64::NAN), None);
    }

    #[test]
    fn changes_replace_clear_or_keep_each_value() {
        let before = KeyLimits {
            models: vec!["a".to_owned()],
            requests_per_minute: Some(5),
            budget: Some(Budget {
                micros: 9,
                period: BudgetPeriod::Month,
            }),
            ..KeyLimits::default()
        };
        let changes = KeyChanges {
            requests_per_minute: Some(None),
            tokens_per_minute: Some(Some(100)),
            budget_micros: Some(Some(5_000_000)),
            ..KeyChanges::default()
        };
        let (name, after) = changes.apply(Some("n".to_owned()), &before).unwrap();
        assert_eq!(name.as_deref(), Some("n"));
        assert_eq!(after.models, ["a"]);
        assert_eq!(after.requests_per_minute, None);
        assert_eq!(after.tokens_per_minute, Some(100));
        assert_eq!(
            after.budget,
            Some(Budget {
                micros: 5_000_000,
                period: BudgetPeriod::Month
            }),
            "the period is kept"
        );
        let period_alone = KeyChanges {
            budget_period: Some(BudgetPeriod::Day),
            ..KeyChanges::default()
        };
        assert!(period_alone.apply(None, &KeyLimits::default()).is_err());
    }

    #[test]
    fn expiries_are_read_as_times_or_from_now() {
        let now = 1_000_000_000_000_000;
        assert_eq!(parse_expiry("never", now), Ok(None));
        assert_eq!(parse_expiry("2h", now), Ok(Some(now + 2 * 3_600_000_000)));
        assert_eq!(
            parse_expiry("2026-12-31", now),
            Ok(super::super::time::parse_utc("2026-12-31"))
        );
        assert!(parse_expiry("soon", now).is_err());
        assert!(parse_expiry("-2d", now).is_err());
    }

    #[test]
    fn invalid_values_are_named() {
        let bad = KeyLimits {
            requests_per_minute: Some(0),
            ..KeyLimits::default()
        };
        assert!(bad.check().unwrap_err().starts_with("rpm:"));
        let bad = KeyLimits {
            models: vec![String::new()],
            ..KeyLimits::default()
        };
        assert!(bad.check().unwrap_err().starts_with("models:"));
    }
}
