//! What a reload changed, for the audit log: the config file's SHA-256 before and after, and the
//! names of its top-level sections that changed. Never a value: a section holds secrets.

use std::collections::BTreeMap;

use serde_json::json;
use sha2::{Digest, Sha256};

use crate::config::ConfigSource;
use crate::ledger::audit::{AuditAction, AuditChange};

/// The config file as a reload saw it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// SHA-256 of the file's bytes (of the embedded default when there is no file).
    sha256: String,
    /// Each top-level section's YAML, to tell which changed (kept in memory only).
    sections: BTreeMap<String, String>,
}

impl Snapshot {
    /// The source's text now; an unreadable file gives an empty snapshot (the reload that reads
    /// it fails anyway).
    pub fn of(source: &ConfigSource) -> Self {
        let text = match source.path() {
            Some(path) => std::fs::read_to_string(path).unwrap_or_default(),
            None => crate::config::DEFAULT_CONFIG.to_owned(),
        };
        let sections = match serde_yaml::from_str::<serde_yaml::Value>(&text) {
            Ok(serde_yaml::Value::Mapping(map)) => map
                .into_iter()
                .filter_map(|(key, value)| {
                    let key = key.as_str()?.to_owned();
                    Some((key, serde_yaml::to_string(&value).unwrap_or_default()))
                })
                .collect(),
            _ => BTreeMap::new(),
        };
        Self {
            sha256: hex::encode(Sha256::digest(text.as_bytes())),
            sections,
        }
    }

    /// The sections that differ from `before`'s, added and removed ones too.
    fn changed<'a>(&'a self, before: &'a Self) -> Vec<&'a str> {
        let names: std::collections::BTreeSet<&String> =
            self.sections.keys().chain(before.sections.keys()).collect();
        names
            .into_iter()
            .filter(|name| self.sections.get(*name) != before.sections.get(*name))
            .map(String::as_str)
            .collect()
    }
}

/// The audit log's entry for a reload from `before` to `after` (generation `generation`).
pub fn change(
    source: &ConfigSource,
    trigger: &str,
    before: &Snapshot,
    after: &Snapshot,
    generation: u64,
) -> AuditChange {
    let target = source.path().map_or_else(
        || "embedded default config".to_owned(),
        |p| p.display().to_string(),
    );
    AuditChange {
        actor: "config file".to_owned(),
        origin: trigger.to_owned(),
        action: AuditAction::ConfigReload,
        target,
        before: Some(json!({"sha256": before.sha256}).to_string()),
        after: Some(
            json!({
                "sha256": after.sha256,
                "changed_sections": after.changed(before),
                "generation": generation,
            })
            .to_string(),
        ),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn names_the_changed_sections_and_no_value() {
        let dir =
            std::env::temp_dir().join(format!("wasmgate-reload-audit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("config.yaml");
        let source = ConfigSource::File(path.clone());
        std::fs::write(
            &path,
            "server: {port: 1}\nproviders: {a: {api_key: sk-old-secret}}\n",
        )
        .unwrap();
        let before = Snapshot::of(&source);
        std::fs::write(
            &path,
            "server: {port: 1}\nproviders: {a: {api_key: sk-new-secret}}\nguards: []\n",
        )
        .unwrap();
        let after = Snapshot::of(&source);
        let change = change(&source, "SIGHUP", &before, &after, 2);
        let after_value: serde_json::Value =
            serde_json::from_str(change.after.as_deref().unwrap()).unwrap();
        assert_eq!(
            after_value["changed_sections"],
            json!(["guards", "providers"])
        );
        let all = format!("{change:?}");
        assert!(!all.contains("secret"), "{all}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
