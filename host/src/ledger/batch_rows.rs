//! The statements of [`BatchStore`], the same in SQLite and PostgreSQL (see [`super::sql`]).

use super::batches::{BatchStore, Order, StoredBatch, StoredFile};
use super::sql::SqlStore;
use super::values::{Row, Value, int, text};

const FILE_COLUMNS: &str = "project, id, provider, upstream_id, purpose, filename, bytes, \
                            created_us, model, lines, estimate_micros, estimate_tokens";

const BATCH_COLUMNS: &str = "project, id, provider, upstream_id, api_key_id, model, \
                             input_file_id, created_us, status, object, metered_us, metered_lines";

fn file_row(row: &dyn Row) -> anyhow::Result<StoredFile> {
    Ok(StoredFile {
        project: text(row, 0)?,
        id: text(row, 1)?,
        provider: text(row, 2)?,
        upstream_id: text(row, 3)?,
        purpose: text(row, 4)?,
        filename: text(row, 5)?,
        bytes: int(row, 6)?,
        created_us: int(row, 7)?,
        model: row.text(8)?,
        lines: int(row, 9)?,
        estimate_micros: row.int(10)?,
        estimate_tokens: int(row, 11)?,
    })
}

fn batch_row(row: &dyn Row) -> anyhow::Result<StoredBatch> {
    Ok(StoredBatch {
        project: text(row, 0)?,
        id: text(row, 1)?,
        provider: text(row, 2)?,
        upstream_id: text(row, 3)?,
        api_key_id: row.text(4)?,
        model: text(row, 5)?,
        input_file_id: text(row, 6)?,
        created_us: int(row, 7)?,
        status: text(row, 8)?,
        object: text(row, 9)?,
        metered_us: row.int(10)?,
        metered_lines: int(row, 11)?,
    })
}

fn collect<T>(
    db: &mut dyn super::sql::Sql,
    sql: &str,
    params: &[Value<'_>],
    read: fn(&dyn Row) -> anyhow::Result<T>,
) -> anyhow::Result<Vec<T>> {
    let mut all = Vec::new();
    db.query(sql, params, &mut |row| {
        all.push(read(row)?);
        Ok(())
    })?;
    Ok(all)
}

/// The row `after` names starts the page after it: (created_us, id) of that row, or a start
/// past every row when it is not the project's.
fn after_key(
    db: &mut dyn super::sql::Sql,
    table: &str,
    project: &str,
    after: Option<&str>,
    order: Order,
) -> anyhow::Result<(i64, String)> {
    // With no cursor, a key before every row in the list's order; with one that names no row of
    // the project, a key past every row, so the page is empty.
    let (before_all, past_all) = match order {
        Order::Desc => (i64::MAX, i64::MIN),
        Order::Asc => (i64::MIN, i64::MAX),
    };
    let Some(after) = after else {
        return Ok((before_all, String::new()));
    };
    let found = collect(
        db,
        &format!("SELECT created_us, id FROM {table} WHERE project = $1 AND id = $2"),
        &[project.into(), after.into()],
        |row| Ok((int(row, 0)?, text(row, 1)?)),
    )?;
    Ok(found
        .into_iter()
        .next()
        .unwrap_or((past_all, String::new())))
}

impl<S: SqlStore> BatchStore for S {
    fn put_file(&self, f: &StoredFile) -> anyhow::Result<()> {
        self.write_sql(|db| {
            db.execute(
                &format!(
                    "INSERT INTO gateway_files ({FILE_COLUMNS})
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
                     ON CONFLICT (project, id) DO NOTHING"
                ),
                &[
                    f.project.as_str().into(),
                    f.id.as_str().into(),
                    f.provider.as_str().into(),
                    f.upstream_id.as_str().into(),
                    f.purpose.as_str().into(),
                    f.filename.as_str().into(),
                    f.bytes.into(),
                    f.created_us.into(),
                    f.model.as_deref().into(),
                    f.lines.into(),
                    f.estimate_micros.into(),
                    f.estimate_tokens.into(),
                ],
            )
            .map(drop)
        })
    }

    fn file(&self, project: &str, id: &str) -> anyhow::Result<Option<StoredFile>> {
        self.read_sql(|db| {
            Ok(collect(
                db,
                &format!("SELECT {FILE_COLUMNS} FROM gateway_files WHERE project = $1 AND id = $2"),
                &[project.into(), id.into()],
                file_row,
            )?
            .into_iter()
            .next())
        })
    }

    fn files(
        &self,
        project: &str,
        purpose: Option<&str>,
        after: Option<&str>,
        order: Order,
        limit: usize,
    ) -> anyhow::Result<Vec<StoredFile>> {
        let (past, direction) = match order {
            Order::Desc => ("<", "DESC"),
            Order::Asc => (">", "ASC"),
        };
        self.read_sql(|db| {
            let (at, id) = after_key(db, "gateway_files", project, after, order)?;
            collect(
                db,
                &format!(
                    "SELECT {FILE_COLUMNS} FROM gateway_files
                     WHERE project = $1 AND (CAST($2 AS TEXT) IS NULL OR purpose = CAST($2 AS TEXT))
                        AND (created_us {past} $3 OR (created_us = $3 AND id {past} $4))
                     ORDER BY created_us {direction}, id {direction} LIMIT $5"
                ),
                &[
                    project.into(),
                    purpose.into(),
                    at.into(),
                    id.as_str().into(),
                    i64::try_from(limit)?.into(),
                ],
                file_row,
            )
        })
    }

    fn delete_file(&self, project: &str, id: &str) -> anyhow::Result<bool> {
        self.write_sql(|db| {
            Ok(db.execute(
                "DELETE FROM gateway_files WHERE project = $1 AND id = $2",
                &[project.into(), id.into()],
            )? > 0)
        })
    }

    fn put_batch(&self, b: &StoredBatch) -> anyhow::Result<()> {
        self.write_sql(|db| {
            db.execute(
                &format!(
                    "INSERT INTO gateway_batches ({BATCH_COLUMNS})
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"
                ),
                &[
                    b.project.as_str().into(),
                    b.id.as_str().into(),
                    b.provider.as_str().into(),
                    b.upstream_id.as_str().into(),
                    b.api_key_id.as_deref().into(),
                    b.model.as_str().into(),
                    b.input_file_id.as_str().into(),
                    b.created_us.into(),
                    b.status.as_str().into(),
                    b.object.as_str().into(),
                    b.metered_us.into(),
                    b.metered_lines.into(),
                ],
            )
            .map(drop)
        })
    }

    fn batch(&self, project: &str, id: &str) -> anyhow::Result<Option<StoredBatch>> {
        self.read_sql(|db| {
            Ok(collect(
                db,
                &format!(
                    "SELECT {BATCH_COLUMNS} FROM gateway_batches WHERE project = $1 AND id = $2"
                ),
                &[project.into(), id.into()],
                batch_row,
            )?
            .into_iter()
            .next())
        })
    }

    fn batches(
        &self,
        project: &str,
        after: Option<&str>,
        limit: usize,
    ) -> anyhow::Result<Vec<StoredBatch>> {
        self.read_sql(|db| {
            let (at, id) = after_key(db, "gateway_batches", project, after, Order::Desc)?;
            collect(
                db,
                &format!(
                    "SELECT {BATCH_COLUMNS} FROM gateway_batches
                     WHERE project = $1 AND (created_us < $2 OR (created_us = $2 AND id < $3))
                     ORDER BY created_us DESC, id DESC LIMIT $4"
                ),
                &[
                    project.into(),
                    at.into(),
                    id.as_str().into(),
                    i64::try_from(limit)?.into(),
                ],
                batch_row,
            )
        })
    }

    fn update_batch(
        &self,
        project: &str,
        id: &str,
        status: &str,
        object: &str,
    ) -> anyhow::Result<()> {
        self.write_sql(|db| {
            db.execute(
                "UPDATE gateway_batches SET status = $3, object = $4
                 WHERE project = $1 AND id = $2",
                &[project.into(), id.into(), status.into(), object.into()],
            )
            .map(drop)
        })
    }

    fn unmetered_batches(&self, limit: usize) -> anyhow::Result<Vec<StoredBatch>> {
        self.read_sql(|db| {
            collect(
                db,
                &format!(
                    "SELECT {BATCH_COLUMNS} FROM gateway_batches WHERE metered_us IS NULL
                     ORDER BY created_us LIMIT $1"
                ),
                &[i64::try_from(limit)?.into()],
                batch_row,
            )
        })
    }

    fn claim_metering(
        &self,
        project: &str,
        id: &str,
        now_us: i64,
        until_us: i64,
    ) -> anyhow::Result<bool> {
        self.write_sql(|db| {
            Ok(db.execute(
                "UPDATE gateway_batches SET claim_until_us = $4
                 WHERE project = $1 AND id = $2 AND metered_us IS NULL
                    AND (claim_until_us IS NULL OR claim_until_us < $3)",
                &[project.into(), id.into(), now_us.into(), until_us.into()],
            )? == 1)
        })
    }

    fn metered(&self, project: &str, id: &str, at_us: i64, lines: i64) -> anyhow::Result<()> {
        self.write_sql(|db| {
            db.execute(
                "UPDATE gateway_batches SET metered_us = $3, metered_lines = $4,
                    claim_until_us = NULL
                 WHERE project = $1 AND id = $2",
                &[project.into(), id.into(), at_us.into(), lines.into()],
            )
            .map(drop)
        })
    }
}
