//! `wasmgate keys create|update|list|revoke` and `wasmgate admin-key create|list|revoke`: API
//! keys (with their own limits) and admin keys in the ledger's database, stored hashed.

use std::io::Write;

use crate::auth;
use crate::ledger::audit::{AuditAction, admin_key_value, key_value};
use crate::ledger::keys::{Spend, format_usd, parse_expiry, usd_to_micros};
use crate::ledger::time::{format_utc, now_us};
use crate::ledger::{ApiKey, BudgetPeriod, KeyChanges, KeyLimits, Store};

use super::{audit, table};

/// A key's limits as typed on the command line (`None`: not given). `none` clears a value
/// (`--rpm none`), `never` an expiry; `--models ''` allows every model again.
#[derive(Clone, Debug, Default)]
pub struct LimitArgs {
    pub name: Option<String>,
    /// Comma-separated model ids or patterns (`openai/*`).
    pub models: Option<String>,
    pub expires: Option<String>,
    pub rpm: Option<String>,
    pub tpm: Option<String>,
    /// Dollars.
    pub budget: Option<String>,
    pub budget_period: Option<String>,
    /// Comma-separated guard names (the config's `guards:` entries).
    pub guards: Option<String>,
    /// Comma-separated MCP tool patterns (`<server>/<tool>`, `search/*`).
    pub tools: Option<String>,
    /// Comma-separated pass-through patterns (`openai/files*`).
    pub passthrough: Option<String>,
}

/// A comma-separated list, its items trimmed, the empty ones left out.
fn list_of(text: &str) -> Vec<String> {
    (text.split(','))
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .map(str::to_owned)
        .collect()
}

impl LimitArgs {
    /// The changes these arguments make, read at `now_us`; errors name the flag.
    pub fn changes(&self, now_us: i64) -> anyhow::Result<KeyChanges> {
        let count = |flag: &str, text: &str| -> anyhow::Result<Option<i64>> {
            match text.trim() {
                "none" => Ok(None),
                n => n.parse().map(Some).map_err(|_| {
                    anyhow::anyhow!("--{flag}: a whole number of at least 1, or none")
                }),
            }
        };
        let budget = |text: &str| -> anyhow::Result<Option<i64>> {
            match text.trim() {
                "none" => Ok(None),
                usd => usd
                    .trim_start_matches('$')
                    .parse::<f64>()
                    .ok()
                    .and_then(usd_to_micros)
                    .map(Some)
                    .ok_or_else(|| anyhow::anyhow!("--budget: dollars (e.g. 5 or 0.25), or none")),
            }
        };
        Ok(KeyChanges {
            passthrough: self.passthrough.as_deref().map(list_of),
            name: self.name.clone().map(|n| Some(n).filter(|n| !n.is_empty())),
            models: self.models.as_deref().map(list_of),
            guards: self.guards.as_deref().map(list_of),
            expires_us: self
                .expires
                .as_deref()
                .map(|e| parse_expiry(e, now_us))
                .transpose()
                .map_err(|e| anyhow::anyhow!("--{e}"))?,
            requests_per_minute: self.rpm.as_deref().map(|t| count("rpm", t)).transpose()?,
            tokens_per_minute: self.tpm.as_deref().map(|t| count("tpm", t)).transpose()?,
            budget_micros: self.budget.as_deref().map(budget).transpose()?,
            budget_period: self
                .budget_period
                .as_deref()
                .map(|p| {
                    BudgetPeriod::parse(p.trim()).ok_or_else(|| {
                        anyhow::anyhow!("--budget-period: day, month or total, not `{p}`")
                    })
                })
                .transpose()?,
            tools: self.tools.as_deref().map(|t| {
                t.split(',')
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .map(str::to_owned)
                    .collect()
            }),
        })
    }
}

/// Makes a key for `project` with `limits` and prints it (alone on stdout, so scripts can
/// capture it); it cannot be shown again. The note goes to `note` (stderr).
pub fn create(
    store: &dyn Store,
    project: &str,
    limits: &LimitArgs,
    out: &mut dyn Write,
    note: &mut dyn Write,
) -> anyhow::Result<()> {
    let project = project.trim();
    // The rule the gateway applies to `x-project-id`: a key for any other id could not be named.
    if let Err(rule) = auth::check_project(project) {
        anyhow::bail!("--project: a project id is {rule}");
    }
    let now = now_us();
    let (name, limits) = limits
        .changes(now)?
        .apply(None, &KeyLimits::default())
        .map_err(|e| anyhow::anyhow!("--{e}"))?;
    let (key, mut stored) = auth::generate(project, name.as_deref(), now);
    stored.limits = limits;
    store.insert_key(&stored)?;
    let after = Some(key_value(&stored));
    audit::record(store, AuditAction::KeyCreate, &stored.id, None, after)?;
    writeln!(out, "{key}")?;
    writeln!(
        note,
        "Created API key {} for project `{project}`. It is shown once: store it now.",
        stored.id
    )?;
    Ok(())
}

/// Changes a key's name or limits; gateways apply them within [`auth::CACHE_TTL`].
pub fn update(
    store: &dyn Store,
    id: &str,
    limits: &LimitArgs,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let Some(key) = store.key(id)?.filter(|k| k.revoked_us.is_none()) else {
        anyhow::bail!("no active API key has the id `{id}` (see `wasmgate keys list`)");
    };
    let before = Some(key_value(&key));
    let (name, new) = limits
        .changes(now_us())?
        .apply(key.name, &key.limits)
        .map_err(|e| anyhow::anyhow!("--{e}"))?;
    if !store.update_key(id, name.as_deref(), &new)? {
        anyhow::bail!("the API key `{id}` was revoked meanwhile");
    }
    let after = store.key(id)?.as_ref().map(key_value);
    audit::record(store, AuditAction::KeyUpdate, id, before, after)?;
    writeln!(out, "Updated {id}: {}.", describe(&new))?;
    Ok(())
}

/// A key's limits in a few words: `models openai/*, gpt-4o; 10 rpm; $5.00 per day`.
pub fn describe(limits: &KeyLimits) -> String {
    let mut parts = Vec::new();
    if !limits.models.is_empty() {
        parts.push(format!("models {}", limits.models.join(", ")));
    }
    if !limits.tools.is_empty() {
        parts.push(format!("tools {}", limits.tools.join(", ")));
    }
    if let Some(at) = limits.expires_us {
        parts.push(format!("expires {} UTC", format_utc(at)));
    }
    if let Some(n) = limits.requests_per_minute {
        parts.push(format!("{n} rpm"));
    }
    if let Some(n) = limits.tokens_per_minute {
        parts.push(format!("{n} tpm"));
    }
    if let Some(budget) = limits.budget {
        parts.push(format!(
            "${} {}",
            format_usd(budget.micros),
            per(budget.period)
        ));
    }
    if !limits.guards.is_empty() {
        parts.push(format!("guards {}", limits.guards.join(", ")));
    }
    if !limits.passthrough.is_empty() {
        parts.push(format!("pass-through {}", limits.passthrough.join(", ")));
    }
    if parts.is_empty() {
        "no limits of its own".to_owned()
    } else {
        parts.join("; ")
    }
}

fn per(period: BudgetPeriod) -> &'static str {
    match period {
        BudgetPeriod::Day => "per day",
        BudgetPeriod::Month => "per month",
        BudgetPeriod::Total => "in total",
    }
}

/// Lists the keys (never the keys themselves: their id, first characters, limits, spend so far
/// and state).
pub fn list(store: &dyn Store, project: Option<&str>, out: &mut dyn Write) -> anyhow::Result<()> {
    let keys = store.keys(project)?;
    if keys.is_empty() {
        writeln!(
            out,
            "No API keys yet: `wasmgate keys create --project <project>` makes one."
        )?;
        return Ok(());
    }
    let now = now_us();
    let mut rows = Vec::with_capacity(keys.len());
    for k in keys {
        rows.push(row(store, k, now)?);
    }
    let header = [
        "id",
        "project",
        "name",
        "key",
        "limits",
        "spent (USD)",
        "created (UTC)",
        "state",
    ];
    out.write_all(table::render(&header, &rows, &["spent (USD)"]).as_bytes())?;
    Ok(())
}

fn row(store: &dyn Store, k: ApiKey, now: i64) -> anyhow::Result<Vec<String>> {
    let spend = Spend::of(store, &k, now)?;
    let spent = match spend.period {
        BudgetPeriod::Day => format!("{} today", format_usd(spend.micros)),
        BudgetPeriod::Month => format!("{} this month", format_usd(spend.micros)),
        BudgetPeriod::Total => format_usd(spend.micros),
    };
    let state = match k.revoked_us {
        Some(at) => format!("revoked {}", format_utc(at)),
        None if k.limits.expired(now) => "expired".to_owned(),
        None => "active".to_owned(),
    };
    Ok(vec![
        k.id,
        k.project,
        k.name.unwrap_or_default(),
        format!("{}…", k.prefix),
        describe(&k.limits),
        spent,
        format_utc(k.created_us),
        state,
    ])
}

/// Revokes the key with this id; gateways refuse it within [`auth::CACHE_TTL`].
pub fn revoke(store: &dyn Store, id: &str, out: &mut dyn Write) -> anyhow::Result<()> {
    let before = store.key(id)?.as_ref().map(key_value);
    if !store.revoke_key(id, now_us())? {
        anyhow::bail!("no active API key has the id `{id}` (see `wasmgate keys list`)");
    }
    let after = store.key(id)?.as_ref().map(key_value);
    audit::record(store, AuditAction::KeyRevoke, id, before, after)?;
    writeln!(out, "Revoked {id}.")?;
    Ok(())
}

/// Makes an admin key and prints it alone on stdout; it cannot be shown again.
pub fn create_admin(
    store: &dyn Store,
    name: Option<&str>,
    out: &mut dyn Write,
    note: &mut dyn Write,
) -> anyhow::Result<()> {
    let (secret, stored) = auth::generate_admin(name, now_us());
    store.insert_admin_key(&stored)?;
    let after = Some(admin_key_value(&stored));
    audit::record(store, AuditAction::AdminKeyCreate, &stored.id, None, after)?;
    writeln!(out, "{secret}")?;
    writeln!(
        note,
        "Created admin key {}. It is shown once: store it now. Send it as \
         `Authorization: Bearer <key>` to /admin/keys.",
        stored.id
    )?;
    Ok(())
}

/// Lists the admin keys (their id, name, first characters and state).
pub fn list_admin(store: &dyn Store, out: &mut dyn Write) -> anyhow::Result<()> {
    let keys = store.admin_keys()?;
    if keys.is_empty() {
        writeln!(
            out,
            "No admin keys yet: `wasmgate admin-key create` makes one."
        )?;
        return Ok(());
    }
    let rows: Vec<Vec<String>> = keys
        .into_iter()
        .map(|k| {
            vec![
                k.id,
                k.name.unwrap_or_default(),
                format!("{}…", k.prefix),
                format_utc(k.created_us),
                k.revoked_us.map_or("active".to_owned(), |at| {
                    format!("revoked {}", format_utc(at))
                }),
            ]
        })
        .collect();
    let header = ["id", "name", "key", "created (UTC)", "state"];
    out.write_all(table::render(&header, &rows, &[]).as_bytes())?;
    Ok(())
}

/// Revokes the admin key with this id (at once: admin keys are not cached).
pub fn revoke_admin(store: &dyn Store, id: &str, out: &mut dyn Write) -> anyhow::Result<()> {
    let admin_key = |store: &dyn Store| -> anyhow::Result<Option<String>> {
        let keys = store.admin_keys()?;
        Ok(keys.iter().find(|k| k.id == id).map(admin_key_value))
    };
    let before = admin_key(store)?;
    if !store.revoke_admin_key(id, now_us())? {
        anyhow::bail!("no active admin key has the id `{id}` (see `wasmgate admin-key list`)");
    }
    let after = admin_key(store)?;
    audit::record(store, AuditAction::AdminKeyRevoke, id, before, after)?;
    writeln!(out, "Revoked {id}.")?;
    Ok(())
}
