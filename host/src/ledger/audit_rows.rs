//! The statements of [`AuditStore`], the same in SQLite and PostgreSQL (see [`super::sql`]).

use super::audit::{AuditChange, AuditEntry, AuditFilter, AuditStore, PAGE_MAX};
use super::sql::{Sql, SqlStore};
use super::values::{Row, Value, int, text};

const COLUMNS: &str =
    "seq, at_us, actor, origin, action, target, before_value, after_value, prev_hash, hash";

/// Attempts at taking the chain's next place when other writers keep taking it first.
const ATTEMPTS: usize = 8;

fn entry_row(row: &dyn Row) -> anyhow::Result<AuditEntry> {
    Ok(AuditEntry {
        seq: int(row, 0)?,
        at_us: int(row, 1)?,
        actor: text(row, 2)?,
        origin: text(row, 3)?,
        action: text(row, 4)?,
        target: text(row, 5)?,
        before: row.text(6)?,
        after: row.text(7)?,
        prev_hash: text(row, 8)?,
        hash: text(row, 9)?,
    })
}

/// The last entry's place and hash, if there is one.
fn last(db: &mut dyn Sql) -> anyhow::Result<Option<(i64, String)>> {
    let mut found = None;
    db.query(
        "SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1",
        &[],
        &mut |row| {
            found = Some((int(row, 0)?, text(row, 1)?));
            Ok(())
        },
    )?;
    Ok(found)
}

impl<S: SqlStore> AuditStore for S {
    fn append_audit(&self, change: AuditChange, at_us: i64) -> anyhow::Result<AuditEntry> {
        let change = change.bounded();
        let mut failure = None;
        for _ in 0..ATTEMPTS {
            // `seq` is the primary key: a writer that read the same last entry as another
            // fails its insert here and reads the new last entry again.
            let attempt = self.write_sql(|db| {
                let prev = last(db)?;
                let entry = AuditEntry::next(
                    prev.as_ref().map(|(seq, hash)| (*seq, hash.as_str())),
                    at_us,
                    change.clone(),
                );
                db.execute(
                    &format!(
                        "INSERT INTO audit_log ({COLUMNS}) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
                    ),
                    &[
                        entry.seq.into(),
                        entry.at_us.into(),
                        entry.actor.as_str().into(),
                        entry.origin.as_str().into(),
                        entry.action.as_str().into(),
                        entry.target.as_str().into(),
                        entry.before.as_deref().into(),
                        entry.after.as_deref().into(),
                        entry.prev_hash.as_str().into(),
                        entry.hash.as_str().into(),
                    ],
                )?;
                Ok(entry)
            });
            match attempt {
                Ok(entry) => return Ok(entry),
                Err(e) => failure = Some(e),
            }
        }
        Err(failure.unwrap_or_else(|| anyhow::anyhow!("the audit log could not be appended to")))
    }

    fn audit_entries(&self, filter: &AuditFilter) -> anyhow::Result<Vec<AuditEntry>> {
        let limit = i64::try_from(filter.limit.clamp(1, PAGE_MAX))?;
        self.read_sql(|db| {
            let mut all = Vec::new();
            db.query(
                &format!(
                    "SELECT {COLUMNS} FROM audit_log WHERE seq > $1 \
                     AND (CAST($2 AS TEXT) IS NULL OR actor = $2) \
                     AND (CAST($3 AS TEXT) IS NULL OR action = $3) \
                     AND (CAST($4 AS TEXT) IS NULL OR target = $4) \
                     AND (CAST($5 AS BIGINT) IS NULL OR at_us >= $5) \
                     AND (CAST($6 AS BIGINT) IS NULL OR at_us < $6) \
                     ORDER BY seq LIMIT $7"
                ),
                &[
                    filter.after_seq.into(),
                    filter.actor.as_deref().into(),
                    filter.action.as_deref().into(),
                    filter.target.as_deref().into(),
                    Value::from(filter.since_us),
                    Value::from(filter.until_us),
                    limit.into(),
                ],
                &mut |row| {
                    all.push(entry_row(row)?);
                    Ok(())
                },
            )?;
            Ok(all)
        })
    }
}
