//! `wasmgate keys create|list|revoke`: API keys in the ledger's database, stored hashed.

use std::io::Write;

use crate::auth;
use crate::ledger::Store;
use crate::ledger::time::{format_utc, now_us};

use super::table;

/// Makes a key for `project` and prints it (alone on stdout, so scripts can capture it); it
/// cannot be shown again. The note goes to `note` (stderr).
pub fn create(
    store: &dyn Store,
    project: &str,
    name: Option<&str>,
    out: &mut dyn Write,
    note: &mut dyn Write,
) -> anyhow::Result<()> {
    let project = project.trim();
    // The rule the gateway applies to `x-project-id`: a key for any other id could not be named.
    if let Err(rule) = auth::check_project(project) {
        anyhow::bail!("--project: a project id is {rule}");
    }
    let (key, stored) = auth::generate(project, name, now_us());
    store.insert_key(&stored)?;
    writeln!(out, "{key}")?;
    writeln!(
        note,
        "Created API key {} for project `{project}`. It is shown once: store it now.",
        stored.id
    )?;
    Ok(())
}

/// Lists the keys (never the keys themselves: their id, first characters and state).
pub fn list(store: &dyn Store, project: Option<&str>, out: &mut dyn Write) -> anyhow::Result<()> {
    let keys = store.keys(project)?;
    if keys.is_empty() {
        writeln!(
            out,
            "No API keys yet: `wasmgate keys create --project <project>` makes one."
        )?;
        return Ok(());
    }
    let rows: Vec<Vec<String>> = keys
        .into_iter()
        .map(|k| {
            vec![
                k.id,
                k.project,
                k.name.unwrap_or_default(),
                format!("{}…", k.prefix),
                format_utc(k.created_us),
                k.revoked_us.map_or("active".to_owned(), |at| {
                    format!("revoked {}", format_utc(at))
                }),
            ]
        })
        .collect();
    let header = ["id", "project", "name", "key", "created (UTC)", "state"];
    out.write_all(table::render(&header, &rows, &[]).as_bytes())?;
    Ok(())
}

/// Revokes the key with this id; gateways refuse it within [`auth::CACHE_TTL`].
pub fn revoke(store: &dyn Store, id: &str, out: &mut dyn Write) -> anyhow::Result<()> {
    if !store.revoke_key(id, now_us())? {
        anyhow::bail!("no active API key has the id `{id}` (see `wasmgate keys list`)");
    }
    writeln!(out, "Revoked {id}.")?;
    Ok(())
}
