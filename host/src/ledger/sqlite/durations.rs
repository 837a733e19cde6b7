//! The duration histograms' rows, written by each batch (`sqlite.rs`) and by the migration that
//! fills them from older records (`schema.rs`).

use rusqlite::{Connection, params};

use super::write_sql;
use crate::ledger::rollup;

/// Adds `counts` to the duration histograms.
pub(super) fn write_durations(
    conn: &Connection,
    counts: &rollup::DurationCounts,
) -> anyhow::Result<()> {
    let [hourly, daily] = &write_sql::write_sql().durations;
    for (sql, rows) in [(hourly, &counts.hours), (daily, &counts.days)] {
        let mut stmt = conn.prepare_cached(sql)?;
        for ((project, at, metric, bucket), n) in rows {
            stmt.execute(params![project, at, metric, bucket, n])?;
        }
    }
    Ok(())
}
