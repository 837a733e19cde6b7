//! The columns of `usage_records`, declared once ([`COLUMNS`]): the insert of a batch, the read
//! of a row back into a [`UsageRecord`], the request log's columns and the redaction of a
//! record's text all follow from the one list. A new column is a migration and a line there.
//!
//! A line names the record's field; the column's type, how the insert takes the field and how
//! a row sets it again follow from the field's Rust type ([`Stored`]). The two columns that are
//! not a field as it is say how they differ: `user_key` (the user's row in `usage_users`, found
//! by the batch, never read back) and `user_tags` (the list as JSON text).

use std::sync::LazyLock;

use super::record::UsageRecord;
use super::values::{Row, Value, int, text};

/// A column's type in PostgreSQL (SQLite takes any value in any column).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Type {
    Text,
    BigInt,
    Integer,
    Boolean,
}

impl Type {
    /// The PostgreSQL name of an array of it (a batch's values of one column).
    pub fn array(self) -> &'static str {
        match self {
            Self::Text => "TEXT[]",
            Self::BigInt => "BIGINT[]",
            Self::Integer => "INTEGER[]",
            Self::Boolean => "BOOLEAN[]",
        }
    }
}

/// What the insert binds besides the record's own fields: found or made by the batch.
#[derive(Clone, Copy, Debug)]
pub struct Derived<'a> {
    /// The record's user in `usage_users` (or [`super::rollup::NO_USER`]).
    pub user_key: i64,
    /// The record's tags as JSON.
    pub tags: &'a str,
}

/// Whether a column's text is cleared of known secrets before the record is stored
/// ([`redact`]).
#[derive(Clone, Copy)]
pub enum Redaction {
    /// Text a client or an upstream chose: every secret in it is replaced.
    Redacted(fn(&mut UsageRecord, &dyn Fn(String) -> String)),
    /// Text the gateway bounds or makes itself (each line says why).
    Kept,
    /// Not text.
    None,
}

/// How a row sets a record's field: column `i` of it.
type Get = fn(&dyn Row, usize, &mut UsageRecord) -> anyhow::Result<()>;

/// One column of `usage_records`.
#[derive(Clone, Copy)]
pub struct Column {
    pub name: &'static str,
    pub kind: Type,
    /// Its value in the insert of `record`.
    pub put: for<'a> fn(&'a UsageRecord, Derived<'a>) -> anyhow::Result<Value<'a>>,
    /// Sets the record's field from column `i` of a row. A column read back is one the request
    /// log shows: its statements select exactly these ([`read_list`]). `None` for `user_key`.
    pub get: Option<Get>,
    pub redaction: Redaction,
}

/// One line of [`COLUMNS`]: a field of the record, or one of the two columns that are not a
/// field as it is.
macro_rules! column {
    (user_key) => {
        Column {
            name: "user_key",
            kind: Type::BigInt,
            put: |_, derived| Ok(derived.user_key.into()),
            get: None,
            redaction: Redaction::None,
        }
    };
    (user_tags, $redaction:ident) => {
        Column {
            name: "user_tags",
            kind: Type::Text,
            put: |_, derived| Ok(derived.tags.into()),
            get: Some(|row, i, record| {
                record.user_tags = serde_json::from_str(&text(row, i)?)?;
                Ok(())
            }),
            redaction: column!(@$redaction user_tags),
        }
    };
    ($field:ident $(, $redaction:ident)?) => {
        Column {
            name: stringify!($field),
            kind: type_of(|record| &record.$field),
            put: |record, _| record.$field.put(),
            get: Some(|row, i, record| {
                record.$field = Stored::get(row, i)?;
                Ok(())
            }),
            redaction: column!(@$($redaction)? $field),
        }
    };
    (@redacted $field:ident) => {
        Redaction::Redacted(|record, redact| Redact::redact(&mut record.$field, redact))
    };
    (@kept $field:ident) => {
        Redaction::Kept
    };
    (@ $field:ident) => {
        Redaction::None
    };
}

/// Every column of `usage_records`, in the order of the insert's values and of a row read.
pub const COLUMNS: &[Column] = &[
    column!(request_id, redacted),
    column!(time_us),
    column!(project, redacted),
    column!(api_key_id, redacted),
    column!(user_key),
    column!(user_id, redacted),
    column!(user_name, redacted),
    column!(user_tags, redacted),
    column!(provider, redacted),
    column!(model, redacted),
    column!(operation, redacted),
    column!(input_tokens),
    column!(output_tokens),
    column!(cached_input_tokens),
    column!(cost_micros),
    column!(latency_us),
    column!(status),
    column!(error_type, redacted),
    column!(estimated),
    column!(ttft_us),
    column!(reasoning_tokens),
    column!(cache_write_tokens),
    // Guard names and kinds only, both bounded; never matched text.
    column!(guards, kept),
    column!(cache_hit),
    column!(saved_cost_micros),
    column!(bytes_in),
    column!(bytes_out),
    // The gateway's own id.
    column!(batch_id, kept),
    column!(audio_ms),
    column!(characters),
    column!(search_units),
    // The gateway's own id.
    column!(session_id, kept),
];

/// How many columns the insert binds.
pub const COUNT: usize = COLUMNS.len();

/// One record's values for [`COLUMNS`], in their order.
pub fn insert_values<'a>(
    record: &'a UsageRecord,
    derived: Derived<'a>,
) -> anyhow::Result<[Value<'a>; COUNT]> {
    let mut values = [Value::Int(None); COUNT];
    for (value, column) in values.iter_mut().zip(COLUMNS) {
        *value = (column.put)(record, derived)?;
    }
    Ok(values)
}

/// A record from a row of [`read_list`].
pub fn record_row(row: &dyn Row) -> anyhow::Result<UsageRecord> {
    let mut record = UsageRecord::default();
    for (i, get) in COLUMNS.iter().filter_map(|c| c.get).enumerate() {
        get(row, i, &mut record)?;
    }
    Ok(record)
}

/// The names of [`COLUMNS`], joined for the insert (built once: see `sqlite/write_sql.rs`).
pub fn insert_list() -> &'static str {
    static LIST: LazyLock<String> = LazyLock::new(|| names(|_| true));
    &LIST
}

/// The columns read back, joined for a `SELECT` whose rows [`record_row`] reads: the request
/// log's.
pub fn read_list() -> &'static str {
    static LIST: LazyLock<String> = LazyLock::new(|| names(|c| c.get.is_some()));
    &LIST
}

fn names(which: impl Fn(&Column) -> bool) -> String {
    let names: Vec<&str> = COLUMNS
        .iter()
        .filter(|c| which(c))
        .map(|c| c.name)
        .collect();
    names.join(", ")
}

/// `record` with `redact` applied to the text of every column marked [`Redaction::Redacted`].
pub fn redact(record: &mut UsageRecord, redact: &dyn Fn(String) -> String) {
    for column in COLUMNS {
        if let Redaction::Redacted(apply) = column.redaction {
            apply(record, redact);
        }
    }
}

/// A field's type as a column: its SQL type, its value for the insert, and its reading.
trait Stored: Sized {
    const TYPE: Type;
    fn put(&self) -> anyhow::Result<Value<'_>>;
    fn get(row: &dyn Row, i: usize) -> anyhow::Result<Self>;
}

/// The [`Type`] of the field `field` takes.
const fn type_of<T: Stored>(_field: fn(&UsageRecord) -> &T) -> Type {
    T::TYPE
}

impl Stored for String {
    const TYPE: Type = Type::Text;
    fn put(&self) -> anyhow::Result<Value<'_>> {
        Ok(self.as_str().into())
    }
    fn get(row: &dyn Row, i: usize) -> anyhow::Result<Self> {
        text(row, i)
    }
}

impl Stored for Option<String> {
    const TYPE: Type = Type::Text;
    fn put(&self) -> anyhow::Result<Value<'_>> {
        Ok(self.as_deref().into())
    }
    fn get(row: &dyn Row, i: usize) -> anyhow::Result<Self> {
        row.text(i)
    }
}

impl Stored for i64 {
    const TYPE: Type = Type::BigInt;
    fn put(&self) -> anyhow::Result<Value<'_>> {
        Ok((*self).into())
    }
    fn get(row: &dyn Row, i: usize) -> anyhow::Result<Self> {
        int(row, i)
    }
}

impl Stored for Option<i64> {
    const TYPE: Type = Type::BigInt;
    fn put(&self) -> anyhow::Result<Value<'_>> {
        Ok((*self).into())
    }
    fn get(row: &dyn Row, i: usize) -> anyhow::Result<Self> {
        row.int(i)
    }
}

/// A count: a `BIGINT`, so at most `i64::MAX` (a larger one fails the batch, as before).
impl Stored for u64 {
    const TYPE: Type = Type::BigInt;
    fn put(&self) -> anyhow::Result<Value<'_>> {
        Ok(i64::try_from(*self)?.into())
    }
    fn get(row: &dyn Row, i: usize) -> anyhow::Result<Self> {
        Ok(u64::try_from(int(row, i)?)?)
    }
}

/// An HTTP status.
impl Stored for u16 {
    const TYPE: Type = Type::Integer;
    fn put(&self) -> anyhow::Result<Value<'_>> {
        Ok(i64::from(*self).into())
    }
    fn get(row: &dyn Row, i: usize) -> anyhow::Result<Self> {
        Ok(u16::try_from(int(row, i)?)?)
    }
}

impl Stored for bool {
    const TYPE: Type = Type::Boolean;
    fn put(&self) -> anyhow::Result<Value<'_>> {
        Ok(Value::Bool(*self))
    }
    fn get(row: &dyn Row, i: usize) -> anyhow::Result<Self> {
        Ok(int(row, i)? != 0)
    }
}

/// Text a record's field holds, to clear of secrets.
trait Redact {
    fn redact(&mut self, redact: &dyn Fn(String) -> String);
}

impl Redact for String {
    fn redact(&mut self, redact: &dyn Fn(String) -> String) {
        *self = redact(std::mem::take(self));
    }
}

impl Redact for Option<String> {
    fn redact(&mut self, redact: &dyn Fn(String) -> String) {
        *self = self.take().map(redact);
    }
}

impl Redact for Vec<String> {
    fn redact(&mut self, redact: &dyn Fn(String) -> String) {
        for text in self {
            text.redact(redact);
        }
    }
}
