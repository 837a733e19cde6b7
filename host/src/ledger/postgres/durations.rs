//! The duration histograms' rows, written by each batch (`postgres.rs`) and by the migration that
//! fills them from older records (`schema.rs`).

use postgres::Transaction;

use crate::ledger::rollup;

/// Adds `counts` to the duration histograms, one UPSERT per table, rows in key order.
pub(super) fn write_durations(
    tx: &mut Transaction<'_>,
    counts: &rollup::DurationCounts,
) -> anyhow::Result<()> {
    let [hourly, daily] = rollup::DURATION_TABLES;
    for (table, time, rows) in [
        (hourly, "hour_us", &counts.hours),
        (daily, "day_us", &counts.days),
    ] {
        if rows.is_empty() {
            continue;
        }
        let projects: Vec<&str> = rows.keys().map(|k| k.0.as_str()).collect();
        let times: Vec<i64> = rows.keys().map(|k| k.1).collect();
        let metrics: Vec<i32> = rows.keys().map(|k| k.2).collect();
        let buckets: Vec<i32> = rows.keys().map(|k| k.3).collect();
        let counts: Vec<i64> = rows.values().copied().collect();
        tx.execute(
            &format!(
                "INSERT INTO {table} AS h (project, {time}, metric, bucket, records)
                 SELECT * FROM UNNEST($1::TEXT[], $2::BIGINT[], $3::INTEGER[], $4::INTEGER[],
                    $5::BIGINT[])
                 ON CONFLICT (project, {time}, metric, bucket)
                 DO UPDATE SET records = h.records + excluded.records"
            ),
            &[&projects, &times, &metrics, &buckets, &counts],
        )?;
    }
    Ok(())
}
