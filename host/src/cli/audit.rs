//! `wasmgate audit`: the audit log read from the ledger's database (`list`), and its chain
//! checked entry by entry (`verify`); and how the other commands record what they change.

use std::io::Write;

use crate::cli::table;
use crate::ledger::Store;
use crate::ledger::audit::{self, AuditAction, AuditChange, AuditFilter, PAGE_MAX, Verdict};
use crate::ledger::time::{format_utc, now_us};

/// Bytes of the user or host name an entry names, at most.
const NAME_MAX: usize = 64;

/// Records a change a command made: who ran it (`cli:<user>`) and on which machine.
pub fn record(
    store: &dyn Store,
    action: AuditAction,
    target: &str,
    before: Option<String>,
    after: Option<String>,
) -> anyhow::Result<()> {
    let user = std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .unwrap_or_else(|_| "unknown".to_owned());
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let short = |s: &str| s.trim().chars().take(NAME_MAX).collect::<String>();
    let change = AuditChange {
        actor: format!("cli:{}", short(&user)),
        origin: format!("cli@{}", short(&host)),
        action,
        target: target.to_owned(),
        before,
        after,
    };
    store.append_audit(change, now_us()).map(drop).map_err(|e| {
        anyhow::anyhow!("the change was made but the audit log did not take it: {e:#}")
    })
}

/// Checks the whole chain; prints what it found. `Ok(false)` when it is broken.
pub fn verify(store: &dyn Store, out: &mut dyn Write) -> anyhow::Result<bool> {
    match audit::verify(store)? {
        Verdict::Intact { entries, last_hash } => {
            writeln!(
                out,
                "ok: {entries} entries, the chain is intact; the last hash is {last_hash} (keep \
                 it: a later verify that ends elsewhere means entries were removed from the end)"
            )?;
            Ok(true)
        }
        Verdict::Broken { seq, why } => {
            writeln!(out, "broken at entry {seq}: {why}")?;
            Ok(false)
        }
    }
}

/// The latest `limit` entries (of `action`, if given), oldest first, as a table.
pub fn list(
    store: &dyn Store,
    action: Option<&str>,
    limit: usize,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    if let Some(action) = action
        && AuditAction::parse(action).is_none()
    {
        let known: Vec<&str> = AuditAction::ALL.iter().map(|a| a.name()).collect();
        anyhow::bail!("--action: one of {}", known.join(", "));
    }
    let mut entries = Vec::new();
    let mut after_seq = 0;
    loop {
        let page = store.audit_entries(&AuditFilter {
            action: action.map(str::to_owned),
            after_seq,
            limit: PAGE_MAX,
            ..AuditFilter::default()
        })?;
        let Some(last) = page.last() else { break };
        after_seq = last.seq;
        entries.extend(page);
        // Only the latest `limit` are shown: older ones need not stay in memory.
        let extra = entries.len().saturating_sub(limit);
        entries.drain(..extra);
    }
    if entries.is_empty() {
        writeln!(out, "No audit entries yet.")?;
        return Ok(());
    }
    let rows: Vec<Vec<String>> = entries
        .into_iter()
        .map(|e| {
            vec![
                e.seq.to_string(),
                format_utc(e.at_us),
                e.actor,
                e.origin,
                e.action,
                e.target,
            ]
        })
        .collect();
    let header = ["seq", "time (UTC)", "actor", "origin", "action", "target"];
    out.write_all(table::render(&header, &rows, &[]).as_bytes())?;
    Ok(())
}
