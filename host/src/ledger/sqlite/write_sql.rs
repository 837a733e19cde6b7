//! The text of the statements a batch write runs, built once per process: they depend only on
//! the schema's column lists, and building them per batch (a `format!` per placeholder) was a
//! third of the heap allocations a lone streamed request cost (`tests/counts.rs`).

use std::sync::LazyLock;

use super::super::columns;
use super::super::rollup::{self, ADD_SUMS};

/// The insert of a record, and the upserts of each rollup, in the order the write runs them.
pub(super) struct WriteSql {
    pub insert: String,
    /// `usage_hourly_models`, then `usage_daily_models`.
    pub models: [String; 2],
    /// `usage_hourly_users`, then `usage_daily_users`.
    pub users: [String; 2],
    /// The hourly, then the daily duration histograms.
    pub durations: [String; 2],
}

pub(super) fn write_sql() -> &'static WriteSql {
    static SQL: LazyLock<WriteSql> = LazyLock::new(build);
    &SQL
}

/// `?first, ?first+1, ...`, one for each column from `first` on.
fn numbered(first: usize, count: usize) -> String {
    (first..first + count)
        .map(|i| format!("?{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn build() -> WriteSql {
    let columns = rollup::SUM_COLUMNS.join(", ");
    let sums = rollup::SUM_COLUMNS.len();
    let models = |table: &str, time: &str| {
        format!(
            "INSERT INTO {table} AS h (project, {time}, provider, model, {columns})
             VALUES (?1, ?2, ?3, ?4, {})
             ON CONFLICT (project, {time}, provider, model) DO UPDATE SET {ADD_SUMS}",
            numbered(5, sums)
        )
    };
    let users = |table: &str, time: &str| {
        format!(
            "INSERT INTO {table} AS h (project, {time}, user_key, provider, model, {columns})
             VALUES (?1, ?2, ?3, ?4, ?5, {})
             ON CONFLICT (project, {time}, user_key, provider, model) DO UPDATE SET {ADD_SUMS}",
            numbered(6, sums)
        )
    };
    let durations = |table: &str, time: &str| {
        format!(
            "INSERT INTO {table} AS h (project, {time}, metric, bucket, records)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (project, {time}, metric, bucket)
             DO UPDATE SET records = h.records + excluded.records"
        )
    };
    let [hourly, daily] = rollup::DURATION_TABLES;
    WriteSql {
        insert: format!(
            "INSERT INTO usage_records ({}) VALUES ({})",
            columns::insert_list(),
            numbered(1, columns::COUNT)
        ),
        models: [
            models("usage_hourly_models", "hour_us"),
            models("usage_daily_models", "day_us"),
        ],
        users: [
            users("usage_hourly_users", "hour_us"),
            users("usage_daily_users", "day_us"),
        ],
        durations: [durations(hourly, "hour_us"), durations(daily, "day_us")],
    }
}
