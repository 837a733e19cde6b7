//! What a statement binds ([`Value`]) and what a row reads ([`Row`]), the same for both stores.

/// A value bound to a statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value<'a> {
    Text(Option<&'a str>),
    Int(Option<i64>),
    Bool(bool),
}

impl<'a> From<&'a str> for Value<'a> {
    fn from(text: &'a str) -> Self {
        Self::Text(Some(text))
    }
}

impl<'a> From<Option<&'a str>> for Value<'a> {
    fn from(text: Option<&'a str>) -> Self {
        Self::Text(text)
    }
}

impl From<i64> for Value<'_> {
    fn from(n: i64) -> Self {
        Self::Int(Some(n))
    }
}

impl From<Option<i64>> for Value<'_> {
    fn from(n: Option<i64>) -> Self {
        Self::Int(n)
    }
}

/// A row read, by column index: text, or an integer (a boolean reads as 0 or 1).
pub trait Row {
    fn text(&self, i: usize) -> anyhow::Result<Option<String>>;
    fn int(&self, i: usize) -> anyhow::Result<Option<i64>>;
}

pub fn text(row: &dyn Row, i: usize) -> anyhow::Result<String> {
    row.text(i)?
        .ok_or_else(|| anyhow::anyhow!("column {i} is NULL"))
}

pub fn int(row: &dyn Row, i: usize) -> anyhow::Result<i64> {
    row.int(i)?
        .ok_or_else(|| anyhow::anyhow!("column {i} is NULL"))
}
