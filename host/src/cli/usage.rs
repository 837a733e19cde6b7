//! `wasmgate usage`: what `/usage/total` and `/usage/models` answer, as tables, read from a local
//! ledger (the config's `ledger.url`) or asked of a running gateway (`--gateway URL --key KEY`).

use std::io::Write;
use std::sync::Arc;

use anyhow::Context;
use serde_json::{Value, json};

use crate::ledger::time::{DAY_US, HOUR_US, format_utc, parse_utc};
use crate::ledger::{ModelBucket, Store, Totals, Unit, UserFilter};
use crate::secret::Secret;

use super::table;

/// Where the answers come from.
pub enum Source {
    Local(Arc<dyn Store>),
    Remote { url: String, key: Secret },
}

/// What to ask.
pub struct Query {
    pub project: String,
    pub start_us: i64,
    pub end_us: i64,
    /// `None`: the range's totals; `Some(unit)`: per model and `unit` bucket.
    pub per_model: Option<Unit>,
    /// Only these users' usage (per model only: totals are per project).
    pub users: UserFilter,
}

/// Reads `2025-01-01`, `2025-01-01 12:00[:00]` (UTC), or a span back from now: `90m`, `24h`, `7d`.
pub fn parse_time(text: &str, now_us: i64) -> anyhow::Result<i64> {
    let text = text.trim();
    if let Some(us) = parse_utc(text) {
        return Ok(us);
    }
    let unit = match text.chars().last() {
        Some('m') => 60_000_000,
        Some('h') => HOUR_US,
        Some('d') => DAY_US,
        _ => 0,
    };
    match text[..text.len().saturating_sub(1)].parse::<i64>() {
        Ok(n) if unit > 0 && n >= 0 => Ok(now_us - n * unit),
        _ => anyhow::bail!(
            "`{text}` is not a time: write 2025-01-31, 2025-01-31 12:00 (UTC), or 90m, 24h, 7d ago"
        ),
    }
}

/// Asks `source` and writes the answer as a table.
pub async fn report(source: &Source, query: &Query, out: &mut dyn Write) -> anyhow::Result<()> {
    let title = format!(
        "project {}, {} to {} UTC\n",
        query.project,
        format_utc(query.start_us),
        format_utc(query.end_us)
    );
    out.write_all(title.as_bytes())?;
    let text = match query.per_model {
        None => {
            let t = totals(source, query).await?;
            let rows = vec![vec![
                table::thousands(t.input_tokens),
                table::thousands(t.output_tokens),
                table::usd(t.cost_micros),
            ]];
            let header = ["input tokens", "output tokens", "cost (USD)"];
            table::render(&header, &rows, &header)
        }
        Some(unit) => {
            let buckets = models(source, query, unit).await?;
            if buckets.is_empty() {
                "no usage in this range\n".to_owned()
            } else {
                models_table(unit, &buckets)
            }
        }
    };
    out.write_all(text.as_bytes())?;
    Ok(())
}

fn models_table(unit: Unit, buckets: &[ModelBucket]) -> String {
    let mut sum = Totals::default();
    let mut rows: Vec<Vec<String>> = buckets
        .iter()
        .map(|b| {
            sum.add(b.totals);
            vec![
                format_utc(b.bucket_us),
                b.provider.clone(),
                b.model.clone(),
                table::thousands(b.totals.input_tokens),
                table::thousands(b.totals.output_tokens),
                table::usd(b.totals.cost_micros),
            ]
        })
        .collect();
    rows.push(vec![
        "total".to_owned(),
        String::new(),
        String::new(),
        table::thousands(sum.input_tokens),
        table::thousands(sum.output_tokens),
        table::usd(sum.cost_micros),
    ]);
    let numbers = ["input tokens", "output tokens", "cost (USD)"];
    let header = [
        unit.name(),
        "provider",
        "model",
        numbers[0],
        numbers[1],
        numbers[2],
    ];
    table::render(&header, &rows, &numbers)
}

async fn totals(source: &Source, query: &Query) -> anyhow::Result<Totals> {
    match source {
        Source::Local(store) => {
            let (store, q) = (Arc::clone(store), (query.project.clone(), query.start_us));
            let end = query.end_us;
            tokio::task::spawn_blocking(move || store.total(&q.0, q.1, end)).await?
        }
        Source::Remote { .. } => {
            let body = ask(source, query, "/usage/total", json!({})).await?;
            sums(&body["total"])
        }
    }
}

async fn models(source: &Source, query: &Query, unit: Unit) -> anyhow::Result<Vec<ModelBucket>> {
    match source {
        Source::Local(store) => {
            let store = Arc::clone(store);
            let (project, start, end) = (query.project.clone(), query.start_us, query.end_us);
            let users = query.users.clone();
            tokio::task::spawn_blocking(move || store.models(&project, start, end, unit, &users))
                .await?
        }
        Source::Remote { .. } => {
            let body = ask(
                source,
                query,
                "/usage/models",
                json!({"min_unit": unit.name()}),
            )
            .await?;
            let entries = body["models"]
                .as_array()
                .context("the gateway's answer has no `models` list")?;
            entries
                .iter()
                .map(|entry| {
                    let bucket = entry[unit.name()].as_str().unwrap_or_default();
                    Ok(ModelBucket {
                        bucket_us: parse_utc(bucket)
                            .with_context(|| format!("bad bucket `{bucket}` from the gateway"))?,
                        provider: entry["provider"].as_str().unwrap_or_default().to_owned(),
                        model: entry["model_name"].as_str().unwrap_or_default().to_owned(),
                        totals: sums(entry)?,
                    })
                })
                .collect()
        }
    }
}

fn sums(value: &Value) -> anyhow::Result<Totals> {
    let count = |name: &str| value[name].as_u64().context("a total is missing");
    Ok(Totals {
        input_tokens: count("total_input_tokens")?,
        output_tokens: count("total_output_tokens")?,
        cost_micros: (value["total_cost"]
            .as_f64()
            .context("total_cost is missing")?
            * 1e6)
            .round() as i64,
        ..Totals::default()
    })
}

async fn ask(source: &Source, query: &Query, path: &str, mut body: Value) -> anyhow::Result<Value> {
    let Source::Remote { url, key } = source else {
        anyhow::bail!("not a remote source");
    };
    body["start_time_us"] = query.start_us.into();
    body["end_time_us"] = query.end_us.into();
    let url = format!("{}{path}", url.trim_end_matches('/'));
    let response = crate::upstream::client()?
        .post(&url)
        .bearer_auth(key.expose())
        .header("x-project-id", &query.project)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body.to_string())
        .send()
        .await
        .with_context(|| format!("cannot reach {url}"))?;
    let status = response.status();
    let text = response
        .bytes()
        .await
        .with_context(|| format!("{url} did not answer ({status})"))?;
    let answer: Value = serde_json::from_slice(&text)
        .with_context(|| format!("{url} did not answer JSON ({status})"))?;
    if !status.is_success() {
        let message = answer["error"]["message"].as_str().unwrap_or("no message");
        anyhow::bail!("{url} answered {status}: {message}");
    }
    Ok(answer)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::ledger::sqlite::SqliteStore;
    use crate::ledger::{UsageRecord, UsageStore};

    #[test]
    fn times_are_dates_or_spans_back_from_now() {
        let now = 10 * DAY_US;
        assert_eq!(parse_time("1970-01-02", now).unwrap(), DAY_US);
        assert_eq!(parse_time("7d", now).unwrap(), 3 * DAY_US);
        assert_eq!(parse_time("24h", now).unwrap(), 9 * DAY_US);
        assert_eq!(parse_time("90m", now).unwrap(), now - 90 * 60_000_000);
        assert!(parse_time("soon", now).is_err());
        assert!(parse_time("d", now).is_err());
    }

    #[tokio::test]
    async fn a_local_ledger_prints_totals_and_models() {
        let store = Arc::new(SqliteStore::in_memory().unwrap());
        let at = parse_utc("2025-03-04 10:30").unwrap();
        let record = |model: &str, input, cost| UsageRecord {
            request_id: format!("r-{model}-{input}"),
            time_us: at,
            project: "acme".to_owned(),
            provider: Some("openai".to_owned()),
            model: Some(model.to_owned()),
            input_tokens: input,
            output_tokens: 10,
            cost_micros: Some(cost),
            status: 200,
            ..UsageRecord::default()
        };
        store
            .write(&[
                record("gpt-4o", 1200, 1_500_000),
                record("gpt-4o-mini", 34, 7),
            ])
            .unwrap();
        let source = Source::Local(store);
        let mut query = Query {
            project: "acme".to_owned(),
            start_us: parse_utc("2025-03-01").unwrap(),
            end_us: parse_utc("2025-03-08").unwrap(),
            per_model: None,
            users: UserFilter::default(),
        };
        let mut out = Vec::new();
        report(&source, &query, &mut out).await.unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("project acme, 2025-03-01 00:00:00 to 2025-03-08 00:00:00 UTC\n"));
        assert!(text.contains("1,234             20    1.500007"), "{text}");
        query.per_model = Some(Unit::Day);
        let mut out = Vec::new();
        report(&source, &query, &mut out).await.unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5, "{text}");
        assert!(lines[1].starts_with("day"), "{text}");
        assert!(
            lines[2].starts_with("2025-03-04 00:00:00  openai    gpt-4o  "),
            "{text}"
        );
        assert!(
            lines[2].ends_with("1,200             10    1.500000"),
            "{text}"
        );
        assert!(
            lines[4].starts_with("total") && lines[4].ends_with("1.500007"),
            "{text}"
        );
    }
}
