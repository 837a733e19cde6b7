//! What the alerts need of the ledger: a provider's requests, failures and slow answers since a
//! time (read through `usage_records_by_time`, so a look reads the window's records only), and
//! the record of alerts fired (once each, across replicas: the insert that takes the row sends
//! it) and of their deliveries. The rules and sinks are `crate::alerts`.

use super::sql::{Sql, SqlStore};
use super::values::{Row, int, text};

/// One alert, as fired: the rule, what it is about, the threshold crossed and the start of the
/// period it counts in (a budget's period, an error-rate window).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fired {
    pub rule: String,
    pub subject: String,
    pub threshold: i64,
    pub period_us: i64,
    pub fired_us: i64,
    pub message: String,
}

/// One sink's outcome for an alert.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    pub sink: String,
    pub attempts: i64,
    pub delivered_us: Option<i64>,
    pub last_error: Option<String>,
}

/// A provider's requests and failed ones (5xx, or no answer) over a span.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProviderErrors {
    pub provider: String,
    pub requests: i64,
    pub failed: i64,
}

/// A provider's (or model's) answered requests over a span, and how many of them took longer
/// than a latency.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlowAnswers {
    /// The provider entry, or `provider/model`.
    pub subject: String,
    pub answered: i64,
    pub slower: i64,
}

/// Whose spend [`AlertStore::spend_by`] sums: each project's, or each user's (by user id,
/// across projects, as the `budget` limit's `user` scope counts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpendScope {
    Project,
    User,
}

/// Calls block.
pub trait AlertStore: Send + Sync + 'static {
    /// Takes `fired`'s place; `false` when the alert was fired already (here or by a replica).
    fn claim_alert(&self, fired: &Fired) -> anyhow::Result<bool>;
    fn record_delivery(&self, fired: &Fired, delivery: &Delivery) -> anyhow::Result<()>;
    /// The deliveries of alerts, newest first, at most `limit`.
    fn deliveries(&self, limit: i64) -> anyhow::Result<Vec<(Fired, Delivery)>>;
    /// Each provider's requests and failures since `since_us`.
    fn provider_errors(&self, since_us: i64) -> anyhow::Result<Vec<ProviderErrors>>;
    /// Each provider's (with `by_model`, each `provider/model`'s) answered requests (2xx) since
    /// `since_us`, and those of them whose latency was above `above_us`.
    fn slow_answers(
        &self,
        since_us: i64,
        above_us: i64,
        by_model: bool,
    ) -> anyhow::Result<Vec<SlowAnswers>>;
    /// Each project's or user's spend, in micro-USD, in the UTC days from the one `since_us`
    /// falls in (read from the daily rollups: a day is one row per model).
    fn spend_by(&self, scope: SpendScope, since_us: i64) -> anyhow::Result<Vec<(String, i64)>>;
}

fn fired_row(row: &dyn Row) -> anyhow::Result<Fired> {
    Ok(Fired {
        rule: text(row, 0)?,
        subject: text(row, 1)?,
        threshold: int(row, 2)?,
        period_us: int(row, 3)?,
        fired_us: int(row, 4)?,
        message: text(row, 5)?,
    })
}

fn each(
    db: &mut dyn Sql,
    sql: &str,
    params: &[super::values::Value<'_>],
    mut read: impl FnMut(&dyn Row) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    db.query(sql, params, &mut read)
}

/// The rows of `sql`, each a subject and two counts (PostgreSQL sums BIGINTs as NUMERIC: the
/// queries cast the sums back).
fn subject_counts<S: SqlStore>(
    store: &S,
    sql: &str,
    params: &[super::values::Value<'_>],
) -> anyhow::Result<Vec<(String, i64, i64)>> {
    store.read_sql(|db| {
        let mut all = Vec::new();
        each(db, sql, params, |row| {
            all.push((text(row, 0)?, int(row, 1)?, int(row, 2)?));
            Ok(())
        })?;
        Ok(all)
    })
}

impl<S: SqlStore> AlertStore for S {
    fn claim_alert(&self, fired: &Fired) -> anyhow::Result<bool> {
        self.write_sql(|db| {
            let taken = db.execute(
                "INSERT INTO alerts_fired (rule, subject, threshold, period_us, fired_us, message)
                 VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
                &[
                    fired.rule.as_str().into(),
                    fired.subject.as_str().into(),
                    fired.threshold.into(),
                    fired.period_us.into(),
                    fired.fired_us.into(),
                    fired.message.as_str().into(),
                ],
            )?;
            Ok(taken == 1)
        })
    }

    fn record_delivery(&self, fired: &Fired, delivery: &Delivery) -> anyhow::Result<()> {
        self.write_sql(|db| {
            db.execute(
                "INSERT INTO alert_deliveries (rule, subject, threshold, period_us, sink, attempts,
                     delivered_us, last_error)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                &[
                    fired.rule.as_str().into(),
                    fired.subject.as_str().into(),
                    fired.threshold.into(),
                    fired.period_us.into(),
                    delivery.sink.as_str().into(),
                    delivery.attempts.into(),
                    delivery.delivered_us.into(),
                    delivery.last_error.as_deref().into(),
                ],
            )
            .map(drop)
        })
    }

    fn deliveries(&self, limit: i64) -> anyhow::Result<Vec<(Fired, Delivery)>> {
        self.read_sql(|db| {
            let mut all = Vec::new();
            each(
                db,
                "SELECT f.rule, f.subject, f.threshold, f.period_us, f.fired_us, f.message,
                        d.sink, d.attempts, d.delivered_us, d.last_error
                 FROM alert_deliveries d JOIN alerts_fired f ON f.rule = d.rule
                   AND f.subject = d.subject AND f.threshold = d.threshold
                   AND f.period_us = d.period_us
                 ORDER BY f.fired_us DESC LIMIT $1",
                &[limit.into()],
                |row| {
                    let delivery = Delivery {
                        sink: text(row, 6)?,
                        attempts: int(row, 7)?,
                        delivered_us: row.int(8)?,
                        last_error: row.text(9)?,
                    };
                    all.push((fired_row(row)?, delivery));
                    Ok(())
                },
            )?;
            Ok(all)
        })
    }

    fn provider_errors(&self, since_us: i64) -> anyhow::Result<Vec<ProviderErrors>> {
        let counts = subject_counts(
            self,
            "SELECT provider, CAST(COUNT(*) AS BIGINT),
                    CAST(SUM(CASE WHEN status >= 500 OR status = 0 THEN 1 ELSE 0 END) AS BIGINT)
             FROM usage_records WHERE time_us >= $1 AND provider IS NOT NULL
             GROUP BY provider ORDER BY provider",
            &[since_us.into()],
        )?;
        Ok(counts
            .into_iter()
            .map(|(provider, requests, failed)| ProviderErrors {
                provider,
                requests,
                failed,
            })
            .collect())
    }

    fn slow_answers(
        &self,
        since_us: i64,
        above_us: i64,
        by_model: bool,
    ) -> anyhow::Result<Vec<SlowAnswers>> {
        // `||` joins text in both databases; a record without a model counts under `?`.
        let subject = if by_model {
            "provider || '/' || COALESCE(model, '?')"
        } else {
            "provider"
        };
        let counts = subject_counts(
            self,
            &format!(
                "SELECT {subject}, CAST(COUNT(*) AS BIGINT),
                        CAST(SUM(CASE WHEN latency_us > $2 THEN 1 ELSE 0 END) AS BIGINT)
                 FROM usage_records
                 WHERE time_us >= $1 AND provider IS NOT NULL AND status >= 200 AND status < 300
                 GROUP BY {subject} ORDER BY {subject}"
            ),
            &[since_us.into(), above_us.into()],
        )?;
        Ok(counts
            .into_iter()
            .map(|(subject, answered, slower)| SlowAnswers {
                subject,
                answered,
                slower,
            })
            .collect())
    }

    fn spend_by(&self, scope: SpendScope, since_us: i64) -> anyhow::Result<Vec<(String, i64)>> {
        let day = super::time::bucket_start(since_us, super::time::Unit::Day);
        // PostgreSQL sums BIGINTs as NUMERIC: the casts bring the sums back.
        let sql = match scope {
            SpendScope::Project => {
                "SELECT project, CAST(SUM(cost_micros) AS BIGINT) FROM usage_daily_models
                 WHERE day_us >= $1 GROUP BY project ORDER BY project"
            }
            SpendScope::User => {
                "SELECT u.user_id, CAST(SUM(d.cost_micros) AS BIGINT)
                 FROM usage_daily_users d JOIN usage_users u ON u.user_key = d.user_key
                 WHERE d.day_us >= $1 AND u.user_id <> ''
                 GROUP BY u.user_id ORDER BY u.user_id"
            }
        };
        self.read_sql(|db| {
            let mut all = Vec::new();
            each(db, sql, &[day.into()], |row| {
                all.push((text(row, 0)?, int(row, 1)?));
                Ok(())
            })?;
            Ok(all)
        })
    }
}
